"""Exact equivalence of two models on a box, by splitting the box into cells (claim E1).

Both models are read as exact affine forms over the inputs and max / hardmax nodes
(``exactform.checker.forms``, the node table the checker builds: the same semantics it verifies).  The difference A − B is
evaluated on a cell, starting from the box; a node it needs whose choice (the winning piece, the
argmax tokens) the cell does not fix, as decided by exact rational LP (``geometry.lp``), splits the
cell by the hyperplane of two pieces (closed halves: a max is continuous) or two scores (g > 0,
g = 0, g < 0: on a tie set the hardmax averages, so the tie set is a cell of its own).  On a leaf
A − B is one affine map: zero (or within ε) with Farkas witnesses, or an LP vertex (moved into the
cell's relative interior when a strict constraint excludes it) is a counterexample, re-evaluated
with ``exactform.models`` before it is reported.
"""
from __future__ import annotations

import collections
import functools
import pickle
import random
from dataclasses import dataclass
from fractions import Fraction

import flint
import numpy as np

from ..checker.equiv import box_constraints, evaluate, implied
from ..checker.forms import negated
from ..checker.reader import ONE, combine, interval
from ..models import MaxoutNet
from ..numbers import format_rational
from ..geometry.lp import argmaximize, dual_simplex
from .equiv_bound import DiffBound
from .bab import per_worker
from .equiv_relax import Relaxed
from .tree import affine_text, document, sparse_text

Q = flint.fmpq


class Split(Exception):
    """The cell does not fix a node: split it by ``g`` (``kind`` "closed" or "strict").  ``sides``:
    for a max node of two pieces, the decision ``(node, winner)`` that holds on each closed half."""

    def __init__(self, g: dict, kind: str, sides: list | None = None):
        self.g, self.kind, self.sides = g, kind, sides


@dataclass
class Outcome:
    """``point`` (with ``a``, ``b``): where |A − B|∞ exceeds the tolerance, or attains ``maximum``;
    when ``attained`` is False (a hardmax discontinuity), ``maximum`` is a supremum that no point of
    the box attains and ``point`` a point of the box it is approached towards."""
    equal: bool
    point: list | None = None
    a: list | None = None
    b: list | None = None
    maximum: Fraction | None = None
    attained: bool = True
    tree: dict | None = None
    leaves: int = 0
    splits: int = 0
    pruned: int = 0
    nodes: int = 0


def _fraction(q) -> Fraction:
    return Fraction(int(q.p), int(q.q))


class Cell:
    """A cell of the box: constraints ``(g, "ge" | "gt" | "eq")`` on x, decided by exact LP."""

    def __init__(self, d: int, cons: list, point: list | None = None):
        self.d, self.cons, self._point = d, cons, point

    @property
    def point(self) -> list | None:
        """A point of the cell, or None when it is empty (computed once)."""
        if self._point is None:
            self._point = self.interior() or []
        return self._point or None

    def _dense(self, g: dict) -> list:
        return [Q(g.get(i, 0).numerator, g.get(i, 0).denominator) if g.get(i) else Q(0) for i in range(self.d)]

    def witness(self, h: dict, strict: bool = False) -> dict | None:
        """Multipliers proving h ≥ 0 (h > 0) on the cell, or None.  First the box alone (the first 2d
        constraints: the multipliers of h's lower bound over the box), then a point of the cell that
        violates h, then the LP duals of ``min h``, then the dual LP itself."""
        d = self.d
        low = h.get(ONE, Fraction(0))
        box = {}
        for i in range(d):
            a = h.get(i, Fraction(0))
            if a:
                lower, upper = -self.cons[2 * i][0][ONE], self.cons[2 * i + 1][0][ONE]
                low += a * (lower if a > 0 else upper)
                box[2 * i if a > 0 else 2 * i + 1] = abs(a)
        if low > 0 or (low == 0 and not strict):
            return box
        if self.point is not None and (_value(h, self.point) < 0 or (strict and _value(h, self.point) == 0)):
            return None
        w = self._primal_witness(h, strict)
        return None if w is False else w if w is not None else self._dual_witness(h, strict)

    def _primal_witness(self, h: dict, strict: bool) -> dict | bool | None:
        """From ``min h`` over the closure (one primal LP, m × 2d): False when the minimum is < 0 (h is
        not implied), its dual multipliers when the minimum is ≥ 0 (> 0 when strict) and they verify
        exactly, None when undecided (the dual LP decides)."""
        best = self._maximize([-a for a in self._dense(h)])
        if best is None:
            return None
        low = h.get(ONE, Fraction(0)) - _fraction(best[0])
        if low < 0:
            return False
        if strict and low == 0:
            return None
        rows = [i for i, (_, kind) in enumerate(self.cons) for _ in range(2 if kind == "eq" else 1)]
        signs = [s for _, kind in self.cons for s in ((1, -1) if kind == "eq" else (1,))]
        w = {}
        for i, sign, y in zip(rows, signs, best[2]):
            if y:
                w[i] = w.get(i, Fraction(0)) + sign * _fraction(y)
        w = {i: q for i, q in w.items() if q}
        return w if implied(self.cons, h, strict, w) else None

    def _dual_witness(self, h: dict, strict: bool) -> dict | None:
        """The dual LP ``max h_c − Σ w_i g_i(0)`` over ``Σ w_i ∇g_i = ∇h``, w ≥ 0 on inequalities
        (capped at 1), and for a strict claim with minimum 0 a positive weight on a strict constraint."""
        m, d = len(self.cons), self.d
        grads = [self._dense(g) for g, _ in self.cons]
        consts = [Q(g.get(ONE, Fraction(0)).numerator, g.get(ONE, Fraction(0)).denominator) for g, _ in self.cons]
        hg, hc = self._dense(h), Q(h.get(ONE, Fraction(0)).numerator, h.get(ONE, Fraction(0)).denominator)
        A, b = [], []
        for j in range(d):
            A += [[grads[i][j] for i in range(m)], [-grads[i][j] for i in range(m)]]
            b += [hg[j], -hg[j]]
        for i, (_, kind) in enumerate(self.cons):
            if kind != "eq":
                A.append([Q(-1) if k == i else Q(0) for k in range(m)])
                b.append(Q(0))
        A.append([-c for c in consts])
        b.append(Q(1) - hc)
        best = argmaximize([-c for c in consts], A, b)
        if best is None or hc + best[0] < 0:
            return None
        w = best[1]
        if strict and hc + best[0] == 0:
            strict_rows = [Q(1) if kind == "gt" else Q(0) for _, kind in self.cons]
            best = argmaximize(strict_rows, A + [consts, strict_rows], b + [hc, Q(1)])
            if best is None or best[0] <= 0:
                return None
            w = best[1]
        return {i: _fraction(q) for i, q in enumerate(w) if q}

    @functools.cached_property
    def _primal(self) -> tuple[list, list]:
        """The closed cell as ``A x ≤ b`` (fmpq; an equality as two rows), built once per cell."""
        A, b = [], []
        for g, kind in self.cons:
            grad, c = self._dense(g), Q(g.get(ONE, Fraction(0)).numerator, g.get(ONE, Fraction(0)).denominator)
            A.append([-a for a in grad])
            b.append(c)
            if kind == "eq":
                A.append(grad)
                b.append(-c)
        return A, b

    def _maximize(self, c: list) -> tuple | None:
        """``(max c·x, x, y)`` over the closure of the cell, by the dual simplex from the box vertex
        that maximises c (rows 2j and 2j + 1 are x_j's lower and upper bounds); None when empty."""
        A, b = self._primal
        return dual_simplex(c, A, b, [2 * j + (c[j] > 0) for j in range(self.d)])

    def extreme(self, h: dict) -> tuple[Fraction, list]:
        """``max h`` over the closure of the cell and a vertex attaining it."""
        value, x, _ = self._maximize(self._dense(h))
        return _fraction(value) + h.get(ONE, Fraction(0)), [_fraction(v) for v in x]

    def interior(self) -> list | None:
        """A point of the cell (strict constraints hold), or None when it is empty."""
        A, b = self._primal
        strict = [i for i, (_, kind) in enumerate(self.cons) if kind == "gt"]
        A = [row + [Q(0)] for row in A]
        k = 0
        for _, kind in self.cons:                        # one row per constraint, two per equality
            if kind == "gt":
                A[k][-1] = Q(1)
            k += 2 if kind == "eq" else 1
        A.append([Q(0)] * self.d + [Q(1)])
        best = dual_simplex([Q(0)] * self.d + [Q(1) if strict else Q(0)], A, b + [Q(1)], [2 * j for j in range(self.d)] + [len(A) - 1])
        if best is None or (strict and best[0] <= 0):
            return None
        return [_fraction(v) for v in best[1][:self.d]]

    def sign(self, h: dict, box: list) -> int | None:
        """1 when h ≥ 0 on the cell, −1 when h ≤ 0, None when it takes both signs: h's exact range over
        ``box`` (a box containing the cell), else its value at the cell's point and one LP or two."""
        lo, hi = interval(h, box)
        if lo >= 0 or hi <= 0:
            return 1 if lo >= 0 else -1
        v = _value(h, self.point)
        if v >= 0 and self.extreme(negated(h))[0] <= 0:
            return 1
        if v <= 0 and self.extreme(h)[0] <= 0:
            return -1
        return None

    def attaining(self, h: dict, top: Fraction, x: list) -> list | None:
        """A point of the cell where h = top, given ``top = max h`` over the closure at ``x``; None when
        the cell's strict constraints exclude the whole face where h = top (h's supremum on the cell is
        not attained)."""
        if self.contains(x):
            return x
        return Cell(self.d, self.cons + [(combine([(1, h)], -top), "ge")]).interior()

    def contains(self, x: list) -> bool:
        values = [(_value(g, x), kind) for g, kind in self.cons]
        return all(v > 0 if kind == "gt" else v == 0 if kind == "eq" else v >= 0 for v, kind in values)


def narrowed(box: list, g: dict, kind: str) -> list:
    """A box containing ``box ∩ {g ≥ 0}`` (``g = 0`` for "eq"; strict constraints closed): each
    coordinate bounded by g and the other coordinates' intervals (the exact bounding box of a box
    cut by one half-space)."""
    box = list(box)
    for h in (g, {k: -a for k, a in g.items()}) if kind == "eq" else (g,):
        rest = h.get(ONE, Fraction(0)) + sum(a * (box[k][1] if a > 0 else box[k][0]) for k, a in h.items() if k != ONE)
        for i, a in h.items():                 # a·x_i ≥ −(rest − a·(x_i's best end))
            if i != ONE:
                lo, hi = box[i]
                limit = -(rest - a * (hi if a > 0 else lo)) / a
                box[i] = (max(lo, limit), hi) if a > 0 else (lo, min(hi, limit))
    return box


def _parts(s: Split) -> list:
    """The constraints of the children of a split: g ≥ 0, g ≤ 0 (closed) or g > 0, g = 0, g < 0."""
    neg = {k: -a for k, a in s.g.items()}
    return [(s.g, "ge"), (neg, "ge")] if s.kind == "closed" else [(s.g, "gt"), (s.g, "eq"), (neg, "gt")]


def _subtree_task(context: bytes, task: tuple) -> Tally:
    """A worker's task: ``Search.subtree`` of one cell."""
    return per_worker(context, Search).subtree(*task)


def _relaxed_task(context: bytes, task: tuple) -> tuple:
    """A worker's task: ``Search.relaxed_subtree`` of one cell."""
    return per_worker(context, Search).relaxed_subtree(*task)


def _float_outputs(net: MaxoutNet, x: np.ndarray) -> np.ndarray:
    """The net's outputs at the rows of ``x`` in float64 (a guide to which points to evaluate exactly)."""
    h = x
    for layer in net.layers:
        w = np.array([[float(a) for a in row] for rows in layer.weight for row in rows])
        b = np.array([float(v) for vs in layer.bias for v in vs])
        h = np.maximum.reduceat(h @ w.T + b, layer.offsets[:-1], axis=1)
    return h @ np.array([[float(a) for a in row] for row in net.readout_weight]).T + \
        np.array([float(v) for v in net.readout_bias])


def _value(g: dict, x: list) -> Fraction:
    return sum((a * x[k] for k, a in g.items() if k != ONE), g.get(ONE, Fraction(0)))


SUBTREES = 64       # the pruned search expands cells until this many wait, then searches each as a task
RELAXED_SUBTREES = 8    # the relaxation's cells waiting per worker (each is ~1 s of exact work at a leaf: fewer tasks)
BISECT = 6          # halvings of the box by the box bound before the cell search (--tolerance)
PROBES, GRID = 64, 4096     # random points evaluated exactly before any search, coordinates on a 1/GRID grid
SCREEN, SCREENED = 4096, 16     # grid points evaluated in float64 (Maxout nets), the largest gaps then exactly


@dataclass
class Tally:
    """What a search of some cells found: the largest exact |A − B|∞ seen (``value`` at ``point``;
    None: none computed; ``attained``: at ``point``, else a supremum approached towards it, which an
    attained equal value replaces) and the counters.  ``refuted``: a point exceeding ε was found (and the
    search of these cells stopped there)."""
    value: Fraction | None = None
    point: list | None = None
    attained: bool = True
    leaves: int = 0
    splits: int = 0
    pruned: int = 0
    cells: int = 0
    refuted: bool = False

    def add(self, other: "Tally") -> None:
        if other.value is not None and (self.value is None or other.best > self.best):
            self.value, self.point, self.attained = other.value, other.point, other.attained
        self.leaves, self.splits = self.leaves + other.leaves, self.splits + other.splits
        self.pruned, self.cells = self.pruned + other.pruned, self.cells + other.cells
        self.refuted |= other.refuted

    @property
    def best(self) -> tuple:
        """The order of findings: a larger value, then an attained one."""
        return (self.value or Fraction(0), self.attained)


class Search:
    """The split tree of one comparison, depth first: with a certificate (``run``), or skipping what
    exact bounds show cannot change the answer (``run_pruned``)."""

    def __init__(self, a_json: dict, b_json: dict, box: list, tolerance: Fraction | None, max_diff: bool,
                 relax: bool = True):
        self.context = (a_json, b_json, box, tolerance, max_diff)
        self.relax = relax and bool(tolerance) and not max_diff
        self.models = [_exact(doc) for doc in (a_json, b_json)]
        self.box = box
        self.d = len(box)
        self.bound = DiffBound.between(a_json, b_json, box)
        self.F, self.diff = self.bound.F, self.bound.diff
        self.tolerance, self.max_diff = tolerance or Fraction(0), max_diff
        self.outcome = Outcome(True, nodes=len(self.F.nodes))
        self.cons = box_constraints(box)

    def run(self, executor=None, progress=None) -> Outcome:
        first = None if self.max_diff else self.probe()
        if first is not None and first.value > self.tolerance:
            self.outcome.equal, self.outcome.point = False, first.point
            return self.outcome
        if self.relax:
            self.relaxed(executor, progress)
        else:
            self.outcome.tree = self._solve(Cell(self.d, self.cons), {}, {})
        return self.outcome

    def relaxed(self, executor=None, progress=None, prune: bool = False) -> None:
        """|A − B|∞ ≤ ε by the differential relaxation (``equiv_relax``): its tree, with the cells it
        leaves open proved by the exact cell search; or the point it finds.  With an ``executor`` of
        several workers the cells are expanded breadth first until ``RELAXED_SUBTREES`` per worker wait, and
        each is proved as a task (``relaxed_subtree``), merged in order: the tree does not depend on the executor."""
        r = self._relaxation()
        workers = getattr(executor, "workers", 1)
        root, left, waiting = r.run(self.cons, self.box, RELAXED_SUBTREES * workers if workers > 1 else None, progress)
        out = self.outcome
        out.leaves, out.splits = out.leaves + r.leaves, out.splits + r.splits
        if r.point is not None:
            out.equal, out.point = False, r.point
            return
        if waiting:
            if not isinstance(self.context, bytes):
                self.context = pickle.dumps(self.context)
            done = executor.map(functools.partial(_relaxed_task, self.context),
                                [(c, cube, prune) for c, cube, _, _ in waiting])
            for (_, _, slot, n), (tree, point, leaves, splits, closed) in zip(waiting, done):
                out.leaves, out.splits = out.leaves + leaves, out.splits + splits
                if progress:
                    progress(leaves + splits, closed)
                if point is not None:
                    out.equal, out.point = False, point
                    return
                slot[n] = tree
        if not self.fill(left, prune):
            return
        out.tree = None if prune else root[0]

    def _relaxation(self) -> Relaxed:
        return Relaxed(self.F, self.bound.mark, self.diff, self.box, self.tolerance, self._gap)

    def fill(self, left: list, prune: bool = False) -> bool:
        """The cells the relaxation left open, each proved by the cell search in its slot (``prune``: the
        pruned search, no witnesses, no subtree); False once a counterexample is found."""
        for cons, cube, slot, n in left:
            if prune:
                tally = self.subtree((cons, {}, cube, {}, None), None)
                self.outcome.leaves, self.outcome.splits = self.outcome.leaves + tally.leaves, self.outcome.splits + tally.splits
                if tally.refuted:
                    self.outcome.equal, self.outcome.point = False, tally.point
                    return False
                continue
            slot[n] = self._solve(Cell(self.d, cons), {}, {})
            if slot[n] is None:
                return False
        return True

    def relaxed_subtree(self, cons: list, cube: list, prune: bool = False) -> tuple:
        """``(tree, point, leaves, splits, closed)`` of the relaxation (and the cell search where it stops) on one
        cell, for a worker; ``closed``: its relaxed leaves' share of the box's volume."""
        r = self._relaxation()
        root, left, _ = r.run(cons, cube)
        self.outcome = Outcome(True)
        if r.point is None and not self.fill(left, prune):
            return None, self.outcome.point, r.leaves + self.outcome.leaves, r.splits + self.outcome.splits, r.closed
        return root[0], r.point, r.leaves + self.outcome.leaves, r.splits + self.outcome.splits, r.closed

    def probe(self) -> Tally:
        """The largest exact |A − B|∞ (``exactform.models``, one batch per model) at the box's centre,
        ``PROBES`` seeded random points of the box on a 1/``GRID`` grid, and, for two Maxout nets,
        the ``SCREENED`` points of ``SCREEN`` more where |A − B|∞ is largest in float64 (floats only
        choose points; every value is exact): a counterexample found before any cell is split, and
        for --max-diff a first value to skip leaves by."""
        rng = random.Random(0)
        grid = lambda ks: [lo + (hi - lo) * Fraction(int(k), GRID) for (lo, hi), k in zip(self.box, ks)]  # noqa: E731
        points = [[(lo + hi) / 2 for lo, hi in self.box]] + \
            [grid(rng.randrange(GRID + 1) for _ in self.box) for _ in range(PROBES)]
        if all(isinstance(m, MaxoutNet) for m in self.models):
            ks = np.array([[rng.randrange(GRID + 1) for _ in self.box] for _ in range(SCREEN)])
            lo, width = (np.array([float(v) for v in vs]) for vs in zip(*((lo, hi - lo) for lo, hi in self.box)))
            x = lo + width * ks / GRID
            gap = np.max(np.abs(_float_outputs(self.models[0], x) - _float_outputs(self.models[1], x)), axis=1)
            points += [grid(ks[i]) for i in np.argsort(-gap, kind="stable")[:SCREENED]]
        gaps = [max(abs(p - q) for p, q in zip(a, b)) for a, b in zip(*(m.evaluate_batch(points) for m in self.models))]
        top = max(range(len(points)), key=gaps.__getitem__)
        return Tally(gaps[top], points[top])

    def run_pruned(self, executor=None, progress=None) -> Outcome:
        """The search without a certificate tree, skipping work that cannot change the answer.
        The box is bounded once (``DiffBound``): when the bound is at most ε the claim holds on the
        whole box, and a --max-diff of bound 0 is 0.  On a leaf A − B is one affine map h; its maximum
        over the cell (an exact LP) is computed only when h's exact range over the cell's bounding box
        exceeds ε, or for --max-diff the largest exact |A − B|∞ found so far (a leaf where no LP was
        needed counts as pruned).  The answer is therefore that of the unpruned search.

        Cells are expanded here breadth first until ``SUBTREES`` wait; each is then searched to the
        end, depth first, as a task (``subtree``, on ``executor``'s workers) from the value found so
        far (for --max-diff, with |A − B|∞ at each waiting cell's point), and the tallies are merged in the queue's order — up to the first that refutes ε — so
        the answer, the point and the counters do not depend on the executor.  ``progress(n)``: n
        more cells expanded."""
        out, first = self.outcome, self.probe()
        if not self.max_diff and first.value > self.tolerance:
            out.equal, out.point = False, first.point
            return out
        if self.relax:
            self.relaxed(executor, progress, prune=True)
            return out
        upper = self.bound.upper(self.box)
        if upper <= self.tolerance and (upper == 0 or not self.max_diff):
            out.pruned, out.maximum = 1, Fraction(0) if self.max_diff else None
            return out
        boxes = [self.box] if self.max_diff else self.unproved(upper)
        queue = collections.deque((box_constraints(b), {}, b, {}, None) for b in boxes)
        tally = first if self.max_diff else Tally(pruned=out.pruned)
        while queue and len(queue) < SUBTREES and not tally.refuted:
            tally.add(self.subtree(queue.popleft(), tally.best, queue))
            if progress:
                progress(1)
        cells = [] if tally.refuted else list(queue)
        for c in cells if self.max_diff else ():      # exact values at the cells' points: a threshold to skip by
            tally.add(Tally(self._gap(c[4]), c[4]))
        threshold = tally.best
        if cells and getattr(executor, "workers", 1) > 1:
            if not isinstance(self.context, bytes):          # pickled once: the workers key their Search by it
                self.context = pickle.dumps(self.context)
            tallies = [None] * len(cells)
            for i, t in executor.as_completed(functools.partial(_subtree_task, self.context),
                                              [(c, threshold) for c in cells]):
                tallies[i] = t
                if progress:
                    progress(t.cells)
        else:
            tallies = []
            for c in cells:
                tallies.append(self.subtree(c, threshold, progress=progress))
                if tallies[-1].refuted:
                    break
        for t in tallies:
            tally.add(t)
            if t.refuted:
                break
        out.leaves, out.splits, out.pruned = tally.leaves, tally.splits, tally.pruned
        if self.max_diff:
            out.maximum, out.point, out.attained = tally.value or Fraction(0), tally.point, tally.attained
        elif tally.refuted:
            out.equal, out.point = False, tally.point
        return out

    def unproved(self, upper: Fraction) -> list:
        """The sub-boxes where the box bound does not show |A − B|∞ ≤ ε, in order: a box whose bound
        (``upper`` for the whole box) exceeds ε is halved across its widest side relative to the whole
        box's, ``BISECT`` times deep at most; the boxes proved count as pruned."""
        todo, left = [(self.box, upper, 0)], []
        while todo:
            box, bound, depth = todo.pop()
            if bound <= self.tolerance:
                self.outcome.pruned += 1
                continue
            if depth == BISECT:
                left.append(box)
                continue
            i = max(range(self.d), key=lambda i: (box[i][1] - box[i][0]) / (self.box[i][1] - self.box[i][0]))
            lo, hi = box[i]
            halves = [box[:i] + [side] + box[i + 1:] for side in ((lo, (lo + hi) / 2), ((lo + hi) / 2, hi))]
            todo += [(h, self.bound.upper(h), depth + 1) for h in halves[::-1]]
        return left

    def subtree(self, cell: tuple, threshold: tuple | None, queue=None, progress=None) -> Tally:
        """The search of ``cell`` and the cells it splits into, depth first, skipping leaves that
        cannot beat ``threshold`` (a ``Tally.best``) or the best value found since (--max-diff).  With ``queue``, only
        ``cell`` is expanded and its children are appended there."""
        tally, todo = Tally(), [cell]
        while todo:
            known = max(tally.best, threshold or tally.best) if self.max_diff else (self.tolerance, True)
            value, x, attained, children, skipped = self.expand(*todo.pop(), known)
            tally.add(Tally(value, x, attained, leaves=not children, splits=bool(children), pruned=skipped, cells=1))
            if progress:
                progress(1)
            if not self.max_diff and value is not None and value > self.tolerance:
                tally.refuted = True
                break
            if queue is None:
                todo.extend(children[::-1])
            else:
                queue.extend(children)
        return tally

    def expand(self, cons: list, decided: dict, box: list, memo: dict, point: list | None,
               known: tuple) -> tuple:
        """One cell of the pruned search: ``(value, point, attained, children, skipped)``.  The cell has the
        constraints ``cons``, lies in ``box``, holds ``point`` (None: found by LP), ``decided`` holds on it
        (``memo``: the nodes its ancestors fixed).  ``children``: the non-empty cells of a split in
        the same form, ``[]`` on a leaf.  On a leaf ``value`` is |A − B|∞ at ``point`` of the cell,
        exactly — the maximum over the cell's closure (--max-diff: at an LP vertex) or a point
        exceeding ε (--tolerance) — when it beats ``known`` (a ``Tally.best``: ``(ε, True)`` for
        --tolerance), else None; ``attained``: whether a point of the cell attains it (a hardmax cell's
        strict constraints may exclude the face where the maximum over its closure lies; ``point`` is
        then on that face); ``skipped``: a leaf where no LP was needed."""
        cell, decided, memo = Cell(self.d, cons, point), dict(decided), dict(memo)

        def decide(kind, content):
            if (kind, content) not in decided:
                decided[kind, content] = self._choose(cell, box, kind, content)
            return decided[kind, content]
        try:
            diff = [evaluate(self.F, f, memo, decide) for f in self.diff]
        except Split as s:
            children = []
            for n, part in enumerate(_parts(s)):
                child = Cell(self.d, cons + [part])
                if child.point is not None:
                    sides = {s.sides[0]: s.sides[1 + n]} if s.sides else {}
                    children.append((child.cons, decided | sides, narrowed(box, *part), memo, child.point))
            return None, None, True, children, False
        value, point, attained, skipped = None, None, True, True
        for D in diff:
            lo, hi = interval(D, box)
            for h, high in ((D, hi), (negated(D), -lo)) if D else ():
                bar = max(known, (value, attained)) if value is not None else known
                if high < bar[0] or (high == bar[0] and bar[1]):
                    continue                    # on the cell h cannot beat what is known (or exceed ε)
                top, x = cell.extreme(h)
                skipped = False
                if self.max_diff:
                    if top > bar[0] or (top == bar[0] and not bar[1]):
                        y = cell.attaining(h, top, x)
                        if top > bar[0] or y is not None:
                            value, point, attained = top, x if y is None else y, y is not None
                elif top > self.tolerance:
                    point = self._exceeding(cell, h, self.tolerance)
                    return self._gap(point), point, True, [], False
        return value, point, attained, [], skipped

    def _gap(self, x: list) -> Fraction:
        """|A(x) − B(x)|∞, exactly (``exactform.models``)."""
        return max(abs(p - q) for p, q in zip(*(m(x) for m in self.models)))

    def _choose(self, cell: Cell, box: list, kind: str, content: tuple):
        """The decision fixing a node on the cell, without witnesses (the pruned search): for a max, the
        piece largest at the cell's point, checked against every other piece by the sign of their
        difference on the cell (``Cell.sign``: the range over ``box``, else one LP), and replaced by a
        piece that is at least as large on the whole cell; a hardmax by ``_decide``."""
        if kind != "max":
            return self._decide(cell, kind, content)[0]
        forms = [dict(k) for k in content]
        values = [_value(f, cell.point) for f in forms]
        best, settled = values.index(max(values)), set()
        while len(settled) < len(forms) - 1:        # each change of best is to a piece ≥ it on the cell, ≠ it
            i = next(i for i in range(len(forms)) if i != best and i not in settled)
            g = combine([(1, forms[best]), (-1, forms[i])])
            sign = cell.sign(g, box)
            if sign is None:
                raise Split(g, "closed", [("max", content), content[best], content[i]] if len(forms) == 2 else None)
            if sign > 0:
                settled.add(i)
            else:
                best, settled = i, set()
        return content[best]

    def _decide(self, cell: Cell, kind: str, content: tuple) -> tuple:
        """The decision fixing a node on the cell and its certificate entry, or ``Split``."""
        forms = [dict(k) for k in content]
        if kind == "max":
            best, witnesses, tries = 0, {}, 0
            while tries <= len(forms) ** 2:
                tries += 1
                for i, p in enumerate(forms):
                    if i == best or i in witnesses:
                        continue
                    g = combine([(1, forms[best]), (-1, p)])
                    w = cell.witness(g)
                    if w is not None:
                        witnesses[i] = w
                        continue
                    if cell.witness(combine([(-1, g)])) is not None:
                        best, witnesses = i, {}
                        break
                    raise Split(g, "closed", [("max", content), content[best], content[i]] if len(forms) == 2 else None)
                else:
                    entry = {"max": [affine_text(f, self.d) for f in forms], "top": [best],
                             "witness": [sparse_text(witnesses.get(i, {}), len(cell.cons)) for i in range(len(forms))]}
                    return content[best], entry
            raise ArithmeticError("no maximal piece found")          # unreachable: the order is total
        values = [_value(s, cell.point) for s in forms]
        top = max(values)
        lead = values.index(top)
        witnesses, members = [], [lead]
        for i, s in enumerate(forms):
            g = combine([(1, forms[lead]), (-1, s)])
            if i == lead:
                witnesses.append([])
            elif values[i] == top:
                pair = [cell.witness(g), cell.witness(combine([(-1, g)]))]
                if None in pair:
                    raise Split(g, "strict")
                witnesses.append([sparse_text(w, len(cell.cons)) for w in pair])
                members.append(i)
            else:
                w = cell.witness(g, strict=True)
                if w is None:
                    raise Split(g, "strict")
                witnesses.append(sparse_text(w, len(cell.cons)))
        entry = {"hardmax": [affine_text(f, self.d) for f in forms], "top": members, "witness": witnesses}
        return {content[i] for i in members}, entry

    def _solve(self, cell: Cell, decided: dict, memo: dict) -> dict | None:
        """The subtree proving the claim on ``cell`` (where ``decided`` holds, and ``memo``: the nodes
        its ancestors fixed); None once a counterexample is found.  Depth first, the children in order,
        with an explicit stack: each entry is a cell and the slot its subtree fills."""
        root = [None]
        todo = [(cell, decided, memo, root, 0)]
        while todo:
            cell, decided, memo, slot, n = todo.pop()
            entries, decided, memo = [], dict(decided), dict(memo)

            def decide(kind, content, cell=cell, decided=decided, entries=entries):
                if (kind, content) not in decided:
                    decided[kind, content], entry = self._decide(cell, kind, content)
                    entries.append(entry)
                return decided[kind, content]
            try:
                diff = [evaluate(self.F, f, memo, decide) for f in self.diff]
            except Split as s:
                self.outcome.splits += 1
                parts = _parts(s)
                children, waiting = [None] * len(parts), []
                for i, part in enumerate(parts):
                    child = Cell(self.d, cell.cons + [part])
                    if child.interior() is None:
                        children[i] = {"empty": sparse_text(child.witness({}, strict=True), len(child.cons))}
                    else:
                        waiting.append((child, decided, memo, children, i))
                todo += waiting[::-1]
                slot[n] = {"decide": entries, "split": affine_text(s.g, self.d), "children": children}
                continue
            self.outcome.leaves += 1
            slot[n] = self._leaf(cell, diff, entries)
            if slot[n] is None:
                return None
        return root[0]

    def _leaf(self, cell: Cell, diff: list, entries: list) -> dict | None:
        eps = self.tolerance
        bounds = []
        for D in diff:
            if self.max_diff:
                out = self.outcome
                for h in (D, negated(D)) if D else ():
                    value, x = cell.extreme(h)
                    best = (out.maximum if out.maximum is not None else Fraction(0), out.attained)
                    if value > best[0] or (value == best[0] and not best[1]):
                        y = cell.attaining(h, value, x)
                        if value > best[0] or y is not None:
                            out.maximum, out.point, out.attained = value, x if y is None else y, y is not None
                continue
            pair = [cell.witness(combine([(s, D)], eps)) if D else {} for s in (-1, 1)]
            if None in pair:
                h = D if pair[0] is None else negated(D)
                self.outcome.equal, self.outcome.point = False, self._exceeding(cell, h, eps)
                return None
            bounds.append([sparse_text(w, len(cell.cons)) for w in pair])
        return {"decide": entries, "bound": bounds}

    def _exceeding(self, cell: Cell, h: dict, eps: Fraction) -> list:
        """A point of the cell where h > eps (h exceeds eps somewhere on the cell)."""
        value, x = cell.extreme(h)
        if cell.contains(x):
            return x
        y = cell.interior()
        hy = _value(h, y)
        if hy > eps:
            return y
        lam = min(Fraction(1, 2), (value - eps) / (value - hy) / 2)
        return [(1 - lam) * a + lam * b for a, b in zip(x, y)]


def compare(a_json: dict, b_json: dict, box: list, tolerance: Fraction | None = None,
            max_diff: bool = False, prune: bool | None = None, executor=None, progress=None,
            relax: bool = True) -> Outcome:
    """Decide ``A = B`` (``|A − B|∞ ≤ tolerance``) on the box, or find ``max |A − B|∞`` (``max_diff``).
    ``prune`` (default: with ``max_diff``): the search that skips what exact bounds show cannot change
    the answer, and returns no certificate tree; ``executor`` (``exactform.executor``) expands its
    cells, ``progress()`` is called per cell.  Every reported point is re-evaluated exactly with
    ``exactform.models``.  ``relax`` (with a tolerance ε > 0): the differential relaxation first
    (``equiv_relax``), the cell search only on the cells it leaves open; else the cell search alone."""
    search = Search(a_json, b_json, box, tolerance, max_diff, relax)
    outcome = search.run_pruned(executor, progress) if (max_diff if prune is None else prune) else search.run(executor, progress)
    if max_diff and outcome.point is None:                   # |A − B| = 0 everywhere
        outcome.maximum, outcome.point = Fraction(0), [lo for lo, _ in box]
    if outcome.point is not None:
        outcome.a, outcome.b = (_exact(doc)(outcome.point) for doc in (a_json, b_json))
        gap = max(abs(p - q) for p, q in zip(outcome.a, outcome.b))
        inside = all(lo <= x <= hi for x, (lo, hi) in zip(outcome.point, box))
        found = (gap == outcome.maximum if outcome.attained else gap < outcome.maximum) if max_diff else \
            gap > (tolerance or 0)
        if not (inside and found):
            raise ArithmeticError("internal error: the reported point does not re-evaluate as found")
    return outcome


def check_work(a_json: dict, b_json: dict, tree: dict, box: list) -> int:
    """The checker's work figure for the certificate of ``tree`` on ``box`` (``check --max-work`` must be at
    least this; its numbers' lengths are the models', a witness's are short dyadics)."""
    from ..checker.equiv import work
    from ..checker.forms import Forms, outputs, read_model
    models = read_model(a_json, "a"), read_model(b_json, "b")
    F = Forms(box)
    for m in models:
        outputs(F, m)
    return work(tree, models, len(box), F)


def _exact(doc: dict):
    from ..formats import Reader
    from ..models import MaxoutNet, Transformer
    return (Transformer if doc["format"] == Transformer.FORMAT else MaxoutNet).from_json(Reader(doc))


def certificate(a_json: dict, b_json: dict, box: list, tolerance: Fraction | None, tree: dict) -> dict:
    """The ``exactform/certificate`` document of claim E1 for a proved comparison."""
    from ..checker.equiv import statement
    return document("equivalence", {"a": a_json, "b": b_json}, "E1", statement(box, tolerance),
                    {"box": {"lower": [format_rational(lo) for lo, _ in box], "upper": [format_rational(hi) for _, hi in box]},
                     "tolerance": None if tolerance is None else format_rational(tolerance), "tree": tree})
