"""Deciding a VNN-LIB property of a network exactly (claim V1): ``unsat`` with a certificate, ``sat``
with an exact counterexample, or ``unknown`` / ``timeout`` — never a guess.

The search runs in floating point and decides nothing.  Per disjunct of the property (an input box
and linear atoms over X and Y, ``importers.vnnlib``) it first looks for a violating point (random
points, then finite-difference ascent of the least atom's value); then it splits the box at
coordinate hyperplanes, depth first.  On a cell it bounds every node of the network (with the
back-substitutions worth stating) and each atom by back-substitution through the leaf's rows
(``relax.LeafRows``: the rows the checker writes; ``Relaxation.atom_plan``): an atom negative on the
cell gives a Farkas witness in floating point, the rows it added.  Else (unless the disjunct has one atom,
bounded above 0) it solves the leaf's linear relaxation with HiGHS, as ``min t`` over ``g(v) + t ≥ 0``:
when ``t* > 0`` the LP's dual multipliers are such a witness.  They are rounded to dyadic rationals and the
leaf is closed only when the checker's own exact test accepts them (``relax.infeasible``:
the combination computed with ``fractions``, the gradient left by rounding taken at the variables'
bounds); a witness that fails exactly splits the cell again, at the coordinate whose halves the float
bounds close best (``lookahead``).  A point the LP or the sampling proposes is a counterexample only once
the exact model (``exactform.models``) puts it in the box and makes every atom true.  A cell the floats
leave undecided is decided exactly (``Search._decide``, ``exact_leaf``): the leaf's LP in rationals gives a
witness, a counterexample, or a node to split on at its gap (an affine split: each side fixes its piece),
so that floating point never leaves a cell ``unknown`` for lack of precision.
"""
from __future__ import annotations

import pickle
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..checker.forms import negated, read_model
from ..checker.reader import ONE
from ..checker.relax import LeafRows, gap_signs, infeasible
from ..checker.verify_cert import CLAIM, KIND, loosened, statement
from ..checker.vnnlib import rows
from ..numbers import format_rational
from .bab import LOOKAHEAD, MARGIN, ONE_THREAD, Deadline, bisect, corners, expand, past, per_worker, widest
from .exact_leaf import first_relaxed, leaf_lp
from .relaxation import Relaxation
from .tree import document, sparse_text, tighten_text

MIN_WIDTH = 1e-12      # a cell narrower than this (relative to the box) is not split again: unknown
ASPECT = 1024          # a coordinate this many times narrower (relative to the box) than the widest is not split
#   (a 2-D Maxout net under two atoms: x_0 halved toward a face of the relaxation down to 10⁻¹² while x_1 stayed
#   1 wide, past 120 s; with the rule 948 leaves, 22 s; ACAS Xu 1_1 and 3_1 prop_3 unchanged, 33 and 2 leaves)
SUBTREES = 4           # cells per worker waiting when the parallel search hands them out


@dataclass
class Verdict:
    """``verdict``: "unsat" (``trees``: one proof tree per disjunct; ``tables``: per disjunct its node table and
    output forms, ``verify_cert.tables``' ``built``), "sat" (``x``, ``y``: the exact counterexample,
    ``disjunct``: the one it meets), "unknown" or "timeout" (``reason``); ``leaves`` closed, ``lps`` solved,
    ``inexact``: cells whose float witness failed exactly (split again)."""
    verdict: str
    trees: list | None = None
    x: list | None = None
    y: list | None = None
    disjunct: int | None = None
    reason: str = ""
    leaves: int = 0
    lps: int = 0
    inexact: int = 0
    tables: list | None = None


class Search:
    """The verdict of one network on one property (``run``)."""

    def __init__(self, model_json: dict, disjuncts: list, deadline: float | None = None, seed: int = 0, exact=None):
        """``exact``: the model of ``model_json`` (``exactform.models``), when the caller has it: not read again."""
        from ..formats import Reader
        from ..models import MaxoutNet, Transformer
        self.json = model_json
        self.exact = exact or (Transformer if model_json["format"] == Transformer.FORMAT else MaxoutNet).from_json(
            Reader(model_json))
        self.model = read_model(model_json, "model")
        self.disjuncts = disjuncts
        self.deadline = deadline
        self.rng = np.random.default_rng(seed)
        self.out = Verdict("unknown")

    def run(self, executor=None) -> Verdict:
        """Every disjunct attacked, then proved; with an ``executor`` of several workers each proof's
        cells are expanded breadth first until ``SUBTREES`` per worker wait, and each is proved as a
        task (the trees and the verdict do not depend on the executor)."""
        try:
            problems = []
            for k, (cube, atoms) in enumerate(self.disjuncts):
                past(self.deadline)
                problems.append(Relaxation.of(self.model, cube, atoms))
                if self._attack(problems[-1], k):
                    return self.out
            trees = []
            for k, p in enumerate(problems):
                root: dict = {}
                cells = [(list(p.cube), root, [])]
                workers = getattr(executor, "workers", 1)
                if workers > 1:
                    cells = self._expand(p, k, cells, SUBTREES * workers)
                    if cells is None:
                        return self.out
                    if cells:
                        until = None if self.deadline is None else time.time() + self.deadline - time.monotonic()
                        tasks = [(self.json, self.disjuncts[k], k, cube, cuts, until) for cube, _, cuts in cells]
                        for (_, node, _), sub in zip(cells, executor.map(_subtree_task, tasks)):
                            self.out.leaves, self.out.lps = self.out.leaves + sub.leaves, self.out.lps + sub.lps
                            self.out.inexact += sub.inexact
                            if sub.verdict != "unsat":
                                self.out.verdict, self.out.reason = sub.verdict, sub.reason
                                self.out.x, self.out.y, self.out.disjunct = sub.x, sub.y, sub.disjunct
                                return self.out
                            node.update(sub.trees[0])
                        cells = []
                if self._expand(p, k, cells) is None:
                    return self.out
                trees.append(root)
            self.out.verdict, self.out.trees, self.out.tables = "unsat", trees, [(p.F, p.ys) for p in problems]
        except Deadline:
            self.out.verdict, self.out.reason = "timeout", "the search ran past --timeout"
        return self.out

    def _confirm(self, p: Relaxation, k: int, x: np.ndarray) -> bool:
        """Whether the float point x — rounded to 9 significant digits, else read exactly — clamped
        into the box violates the property exactly (then it is the outcome)."""
        return any(self._violates(k, [min(max(v, lo), hi) for v, (lo, hi) in zip(point, p.cube)])
                   for point in ([Fraction(f"{float(v):.9g}") for v in x], [Fraction(float(v)) for v in x]))

    def _violates(self, k: int, point: list) -> bool:
        """Whether the exact ``point`` lies in disjunct k's box and violates the property there, the model
        evaluated exactly (then it is the outcome, ``out``)."""
        if any(not lo <= v <= hi for v, (lo, hi) in zip(point, self.disjuncts[k][0])):
            return False
        y = list(self.exact(point))
        values = point + y + [Fraction(1)]
        if all(sum((q * values[i] for i, q in a.items()), Fraction(0)) >= 0 for a in self.disjuncts[k][1]):
            self.out.verdict, self.out.x, self.out.y, self.out.disjunct = "sat", point, y, k
            return True
        return False

    @ONE_THREAD
    def _attack(self, p: Relaxation, k: int, samples: int = 4096, steps: int = 40) -> bool:
        """Random points, then finite-difference ascent of the least atom from the best few, each point's step
        halved where it finds nothing better.  (ACAS Xu 1_2 and 1_6 prop_2: no violation among 512 random
        points and none by the ascent from them, in 0.4 s; among 4,096 the ascent finds one in 0.2 s.)"""
        lo, hi = corners(p.cube)
        X = lo + (hi - lo) * self.rng.random((samples, p.d))
        m = p.margin(X)
        best = np.argsort(-m)[:8]
        for i in best[m[best] >= 0]:
            if self._confirm(p, k, X[i]):
                return True
        if p.d > 64:
            return False
        X, m, step = X[best], m[best], np.tile((hi - lo) / 8, (len(best), 1))
        h = np.maximum((hi - lo) * 1e-6, 1e-12)
        for _ in range(steps):
            past(self.deadline)
            probes = np.concatenate([X] + [X + h[j] * np.eye(p.d)[j] for j in range(p.d)])
            mp = p.margin(probes).reshape(p.d + 1, len(X))
            grad = (mp[1:] - mp[0]).T / h
            Xn = np.clip(X + step * np.sign(grad), lo, hi)
            mn = p.margin(Xn)
            better = mn > m
            X[better], m[better] = Xn[better], mn[better]
            step[~better] /= 2
            for i in np.flatnonzero(m >= 0):
                if self._confirm(p, k, X[i]):
                    return True
        return False

    @ONE_THREAD
    def _expand(self, p: Relaxation, k: int, cells: list, wait: int | None = None) -> list | None:
        """Close or split ``cells`` (``[(cube, tree node, cuts)]``, the node filled in place; ``cuts``: the rows
        g ≥ 0 of the affine splits above it) by ``bab.expand``: depth first to the end, or with ``wait``, breadth
        first until that many cells wait (returned); None when a counterexample was found (``out``) or a cell
        could be neither closed nor split (unknown)."""
        width0 = np.array([float(hi - lo) for lo, hi in p.cube])
        left = expand([(cube, node, cuts, None) for cube, node, cuts in cells],
                      lambda cell: self._step(p, k, width0, *cell), wait, self.deadline)
        return None if left is None else [(cube, node, cuts) for cube, node, cuts, _ in left]

    def _step(self, p: Relaxation, k: int, width0: np.ndarray, cube: list, node: dict, cuts: list,
              bounds: tuple | None) -> list | None:
        """One cell of ``_expand``: ``[]`` when closed (its witness written in ``node``), its two children when
        split (a bisection's halves carry the float bounds the look-ahead computed for them), None when it
        decides the search.  A cell the floats leave undecided (the LP's optimum within ``MARGIN`` of 0, no LP,
        a cell too narrow to bisect, or a relaxation without an unstable node) is decided exactly (``_decide``)."""
        lo, hi = corners(cube)
        signs = gap_signs(p.F, cuts)
        bounds = bounds or p.bounds(lo, hi, tighten=True, signs=signs)
        exact = None                       # the leaf's rows with its back-substitutions, built when first tried
        top, mult, _ = p.least_plan(bounds)
        if top < -MARGIN:                  # one atom is false on the whole cell: its back-substitution
            exact = LeafRows(p.F, cube, p.forms + cuts, p.pairs, bounds[4], signs)
            if (w := p.witness(cube, mult, exact)) is not None:
                node.update(witness=sparse_text(w, len(exact)), **tighten_text(p, bounds[4]))
                self.out.leaves += 1
                return []
        wide = [i for i in widest(lo, hi, width0) if hi[i] - lo[i] > MIN_WIDTH * width0[i]]
        # The LP is worth solving where it may close the cell or must decide it.  Not for one atom that its
        # back-substitution bounds above 0 on a cell still to bisect: the LP maximises the same atom over the
        # same rows, and on ACAS Xu 1_2 prop_1 it closed none of 38 such cells (1.4 of 11 CPU s).
        solve = len(p.forms) > 1 or top <= MARGIN or not wide or p.fixed(bounds)
        solved = p.lp(lo, hi, bounds) if solve else None
        self.out.lps += solve
        if solved is not None and solved[0] > MARGIN:
            exact = exact or LeafRows(p.F, cube, p.forms + cuts, p.pairs, bounds[4], signs)
            if (w := p.witness(cube, solved[1], exact)) is not None:
                node.update(witness=sparse_text(w, len(exact)), **tighten_text(p, bounds[4]))
                self.out.leaves += 1
                return []
            self.out.inexact += 1
        points = ([np.clip(solved[2], lo, hi)] if solved is not None else []) + [(lo + hi) / 2]
        for x in points:                   # exact evaluation only where the floats see a violation
            if p.margin(x[None])[0] >= -MARGIN and self._confirm(p, k, x):
                return None
        if solve and (solved is None or abs(solved[0]) <= MARGIN) or not wide or p.fixed(bounds):
            exact = exact or LeafRows(p.F, cube, p.forms + cuts, p.pairs, bounds[4], signs)
            decided = self._decide(p, k, exact)
            if decided == "sat":
                return None
            if isinstance(decided, dict):
                node.update(witness=sparse_text(decided, len(exact)), **tighten_text(p, bounds[4]))
                self.out.leaves += 1
                return []
            if decided is not None:        # a node to split on: its gap g ≥ 0, then g ≤ 0
                g = p.gap(decided)
                node.update(split=sparse_text({p.d + p.N if v == ONE else v: q for v, q in g.items()}, p.d + p.N + 1),
                            children=[{}, {}])
                return [(cube, node["children"][0], cuts + [g], None), (cube, node["children"][1], cuts + [negated(g)], None)]
        if not wide:
            self.out.verdict = "unknown"
            self.out.reason = (f"disjunct {k}: a cell of width {np.max(hi - lo):.3g} is still open (the exact LP on "
                               "its rows is feasible at a point that is not the network's, and no unit split applies)")
            return None
        relative = (hi - lo) / np.where(width0 > 0, width0, 1)
        candidates = [i for i in wide[:LOOKAHEAD] if relative[i] * ASPECT >= relative[wide[0]]]
        i, (below, above), ahead = bisect(cube, candidates, lambda half: p.bounds(*corners(half), tighten=True, signs=signs),
                                          lambda b: p.least_plan(b)[0], top)
        node.update(split=i, at=format_rational(below[i][1]), children=[{}, {}])
        return [(below, node["children"][0], cuts, ahead[0]), (above, node["children"][1], cuts, ahead[1])]

    def _decide(self, p: Relaxation, k: int, rows: LeafRows):
        """The cell of ``rows`` decided exactly (``exact_leaf.leaf_lp``): a Farkas witness (``{row: q}``) when
        the exact LP is infeasible; "sat" when its optimal point is the network's and violates the property
        in the disjunct's box (``out``); else the first node whose value there is not the network's, when it
        is a two-piece max whose gap the cell leaves open (an affine split on it fixes its piece on both
        sides); else None."""
        value, w, v = leaf_lp(rows)
        if value < 0:                          # kept once the checker's own test accepts it, as every witness
            return w if infeasible(rows, w) else None
        node = first_relaxed(p.F, v)
        if node is None:
            return "sat" if self._violates(k, v[:p.d]) else None
        gl, gu = rows.gaps.get(node, (0, 0))          # gaps: the two-piece max nodes'
        return node if gl < 0 < gu else None


def _worker_search(model_json: dict, disjunct: tuple) -> tuple:
    """A worker's search of one disjunct and its relaxation (``bab.per_worker``)."""
    search = Search(model_json, [disjunct])
    return search, Relaxation.of(search.model, *disjunct)


def _subtree_task(task: tuple) -> Verdict:
    """A worker's task: the proof of one cell of disjunct k below the affine splits' rows ``cuts`` (``trees``: its
    subtree), or what stopped it.
    The node table is the disjunct's (built on its whole box, once per process), as the checker's is.  ``until``:
    the command's deadline as a wall-clock time (a task waiting for a worker gets what is left, not more)."""
    model_json, disjunct, k, cube, cuts, until = task
    search, problem = per_worker(pickle.dumps((model_json, disjunct)), _worker_search)
    search.deadline = None if until is None else time.monotonic() + until - time.time()
    search.out = Verdict("unknown")
    try:
        node: dict = {}
        if search._expand(problem, 0, [(list(cube), node, cuts)]) is not None:
            search.out.verdict, search.out.trees = "unsat", [node]
    except Deadline:
        search.out.verdict, search.out.reason = "timeout", "the search ran past --timeout"
    if search.out.disjunct is not None:
        search.out.disjunct = k
    return search.out


def check_work(cert: dict, tables: list | None = None) -> int:
    """The checker's work figure for the V1 certificate ``cert`` (``check --max-work`` must be at least this),
    computed by the checker's own ``verify_cert.work``; ``tables``: the search's node tables (``Verdict.tables``),
    not built again."""
    from ..checker.verify_cert import read_model, read_property, work
    model, ev = read_model(cert["models"]["net"], "models.net"), cert["claims"][0]["evidence"]
    return work(model, read_property(ev["property"], len(model.box), len(model.readout)), ev["trees"], built=tables)


def property_json(prop) -> dict:
    """The property as read (``importers.vnnlib.Property``), in the certificate's form."""
    n, m = prop.inputs, prop.outputs

    def atom(a):
        r = {i: q for i, q in a.x.items()} | {n + j: q for j, q in a.y.items()} | ({n + m: a.c} if a.c else {})
        return sparse_text(r, n + m + 1)
    return {"inputs": n, "outputs": m, "disjuncts": [
        {"box": {"lower": [format_rational(lo) for lo, _ in d.box], "upper": [format_rational(hi) for _, hi in d.box]},
         "atoms": [atom(a) for a in d.atoms]} for d in prop.disjuncts]}


def exact_disjuncts(prop, eps: Fraction | None = None) -> list:
    """``[(box, [atom as {index: q}])]``: the checker's reading of ``property_json`` (each atom
    ``verify_cert.loosened`` by ``eps`` when given)."""
    out = rows(prop)
    return out if eps is None else [(cube, [loosened(a, prop.inputs, prop.outputs, eps) for a in atoms]) for cube, atoms in out]


def verify(model_json: dict, prop, seconds: float | None = None, executor=None, eps: Fraction | None = None,
           exact=None) -> Verdict:
    """Decide ``prop`` (``importers.vnnlib.Property``) for the model (``exact``: the same, read, when the caller
    has it); ``seconds``: the time limit;
    ``executor`` (``exactform.executor``): where the subtrees are proved; ``eps``: decide the property
    with every atom loosened by ε (a softmax Transformer within ε of the model: a ``sat`` of the
    loosened property says nothing about the Transformer, so it is reported as ``unknown``)."""
    deadline = None if seconds is None else time.monotonic() + seconds
    out = Search(model_json, exact_disjuncts(prop, eps), deadline, exact=exact).run(executor)
    if eps is not None and out.verdict == "sat":
        out.verdict, out.reason = "unknown", (f"the Maxout net violates the property tightened by eps = {eps} at an "
                                              "exact point; the softmax Transformer itself has no exact value there")
        out.x = out.y = None
    return out


def certificate(model_json: dict, prop, trees: list, sources: dict, c5: dict | None = None) -> dict:
    """The ``exactform/certificate`` document of claim V1; with ``c5`` (a checked C5 certificate whose
    Maxout net is the model), about its softmax Transformer, the trees proving the loosened atoms."""
    eps = None if c5 is None else next(c["eps"] for c in c5["claims"] if c["id"] == "C5")
    evidence = {"sources": sources, "property": property_json(prop), "trees": trees}
    if c5 is not None:
        evidence["margin"] = {"eps": eps, "softmax": c5}
    return document(KIND, {"net": model_json}, CLAIM,
                    statement(sources, len(prop.disjuncts), None if eps is None else Fraction(eps)), evidence)
