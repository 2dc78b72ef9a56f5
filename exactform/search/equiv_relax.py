"""``|A(x) − B(x)|∞ < ε`` on a box by the linear relaxation ``exactform verify`` uses (``relaxation.Relaxation``
and the checker's leaf rows, driven by ``bab.expand`` as ``verify``'s search is), with the
differences of paired nodes bounded directly (``checker.relax``: ReluDiff's
differential bounds), so that a network and its quantised copy cancel instead of adding up.

The box is bisected at coordinate hyperplanes, depth first.  On a cell each atom ``±(A − B)_k − ε ≥ 0``
is bounded in floating point by the relaxation (``relaxation.Relaxation``); a cell where every atom is
negative is a leaf once the checker's exact test accepts, per atom, a Farkas witness built from the
bound (the atom's row plus the rows of the pairs it reads, ``direct``) or, failing that, from its
back-substitution (``Relaxation.atom_plan``: the rows it adds; on the φ1 region of ACAS Xu 1_1 the leaf
LP closed none of the 100 cells back-substitution left open, and is not solved).  The corner where an
open atom's bound is largest and the cell centre are evaluated exactly (``exactform.models``): a point
with ``|A − B|∞ > ε`` is the answer.  Floats only choose
cells, witnesses and points; every leaf is closed by exact arithmetic (the certificate's check), and
the tree is the E1 certificate's (docs/equiv.md: coordinate splits ``{"split": i, "at": c}``, ``checker.splits``; leaves ``{"relaxed": ...}``).
A cell that stays open is handed back (``open``) for the exact cell search when |A − B|∞ at one of
its points is at least ε/2 (a maximum near ε: the relaxation would split around it without end) or
when it is narrower than ``MIN_WIDTH`` of the box on the side it would split."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..checker.reader import ONE, combine
from ..checker.relax import LeafRows, pairs, through
from ..checker.splits import coordinate_sides
from ..numbers import format_rational
from .bab import LOOKAHEAD, MARGIN, ONE_THREAD, bisect, corners, expand, widest
from .relaxation import Relaxation
from .tree import sparse_text, tighten_text

MIN_WIDTH = 2.0 ** -16       # a cell this narrow (relative to the box) that the relaxation cannot close goes to the cell search


class Relaxed:
    """The relaxation of ``±(A − B)_k − ε`` over the node table ``F`` (A's maxes the calls before ``mark``)."""

    def __init__(self, F, mark: int, diff: list, box: list, eps: Fraction, gap):
        self.box, self.eps, self.gap = box, eps, gap
        atoms = [combine([(sign, f)], -eps) for f in diff for sign in (1, -1)]
        self.p = Relaxation(F, box, atoms, pairs(F, mark))
        known = {b: (j, a, s, t) for j, (a, s, b, t, _, _) in enumerate(self.p.pairs)}
        self.reads = [through(f, known) for f in atoms]         # each atom: (rest, [(pair, coefficient)])
        self.leaves = self.splits = 0
        self.closed = 0.0                                     # the leaves' share of the box's volume (floats: shown only)
        self.point: list | None = None

    def share(self, cube: list) -> float:
        """The cube's volume over the box's, in floats (a flat side counts as whole)."""
        return float(np.prod([float(hi - lo) / float(H - L) for (lo, hi), (L, H) in zip(cube, self.box) if H > L]))

    def direct(self, j: int) -> np.ndarray:
        """Float multipliers for atom j: its row, and each pair it reads with the row bounding that
        difference on the side its coefficient needs (the rest at the variables' bounds)."""
        p, w = self.p, np.zeros(self.p.rows)
        w[p.atoms_at + j] = 1.0
        for i, c in self.reads[j][1]:
            w[p.pairs_at + 2 * i + (c > 0)] += abs(float(c))
        return w

    def upper(self, j: int, bounds: tuple) -> np.ndarray:
        """``direct(j)``'s bound as an affine function of x above atom j on the cell (floats: d coefficients,
        then the constant)."""
        L, U, _, dfns = bounds[:4]
        rest, terms = self.reads[j]
        d = self.p.d
        f = np.zeros(d + 1)
        f[d] = float(rest.get(ONE, 0))
        for k, a in rest.items():
            if k != ONE:
                f[d] += float(a) * (U[k] if a > 0 else L[k])
        for i, c in terms:
            f += float(c) * dfns[i][c > 0]
        return f

    @ONE_THREAD
    def run(self, cons: list, cube: list, wait: int | None = None, progress=None) -> tuple[list, list, list]:
        """``(root, open, waiting)``: ``root[0]`` the subtree over ``cube`` (whose cell constraints are
        ``cons``) with relaxed leaves, and the cells ``[(cons, cube, slot, index)]`` left open (each
        slot[index] to be filled by the cell search, the root's own slot included) and, with ``wait``,
        those still waiting when that many did (expanded breadth first; depth first to the end without);
        stopped when ``point`` (|A − B|∞ > ε, exact) was found.  ``progress()``: once per cell, and
        ``progress(0, v)`` when a leaf closes v of the box's volume."""
        width0 = np.array([float(hi - lo) for lo, hi in self.box])
        root, left = [None], []
        waiting = expand([(cons, cube, root, 0, None)], lambda cell: self._step(width0, left, *cell, progress), wait)
        return (root, [], []) if waiting is None else (root, left, [e[:4] for e in waiting])

    def _step(self, width0: np.ndarray, left: list, cons: list, cube: list, slot: list, n: int, known: tuple | None,
              progress=None) -> list | None:
        """One cell of ``run``: ``[]`` when closed (``slot[n]`` its leaf) or handed back (in ``left``), its
        halves when bisected (each with its assessment when the look-ahead made one), None once ``point``
        is found."""
        if progress:
            progress()
        bounds, plans, top, worst, spread = known or self._assess(cube)
        leaf = self._close(cube, plans, bounds[4]) if top is None else None
        if leaf is not None:
            self.leaves += 1
            self.closed += (v := self.share(cube))
            if progress:
                progress(0, v)
            slot[n] = leaf
            return []
        lo, hi = corners(cube)
        near = Fraction(0)
        for x in ([worst] if worst is not None else []) + [(lo + hi) / 2]:
            near = max(near, self._gap(x, cube))
            if self.point is not None:
                return None
        wide = [i for i in (np.argsort(-spread, kind="stable").tolist() if spread is not None and spread.max() > 0
                            else widest(lo, hi, width0)[:1]) if hi[i] - lo[i] > MIN_WIDTH * max(width0[i], 1e-300)]
        if 2 * near >= self.eps or not wide:
            left.append((cons, cube, slot, n))
            return []
        i, (below, above), assessed = bisect(cube, wide[:LOOKAHEAD] if spread is not None else wide[:1], self._assess,
                                             lambda a: -np.inf if a[2] is None else a[2], top)
        c = above[i][0]
        children = [None, None]
        slot[n] = {"split": i, "at": format_rational(c), "children": children}
        self.splits += 1
        low, high = coordinate_sides(i, c)                 # the constraints the checker adds to each half's cell
        return [(cons + [(high, "ge")], above, children, 1, assessed[1]),
                (cons + [(low, "ge")], below, children, 0, assessed[0])]

    def _assess(self, cube: list) -> tuple:
        """``(bounds, plans, top, worst, spread)`` of a cell in floating point: the node bounds, and per atom
        a plan (``direct``, else ``Relaxation.atom_plan``) while each bound is negative; at the first atom
        whose bound is not, that bound ``top``, the corner ``worst`` where it is largest and ``spread``
        (per coordinate, |coefficient| × width in its direct bound); ``top`` None when every atom has a plan."""
        p = self.p
        lo, hi = corners(cube)
        bounds = p.bounds(lo, hi, tighten=True)
        plans = []
        for j in range(len(p.forms)):
            f = self.upper(j, bounds)
            if f[:-1] @ np.where(f[:-1] > 0, hi, lo) + f[-1] < -MARGIN:
                plans.append(self.direct(j))
                continue
            top, w, slope = p.atom_plan(j, bounds)
            if top >= -MARGIN:
                return bounds, plans, top, np.where(slope > 0, hi, lo), np.abs(f[:-1]) * (hi - lo)
            plans.append(w)
        return bounds, plans, None, None, None

    def _close(self, cube: list, plans: list, tight: dict) -> dict | None:
        """The leaf ``{"relaxed": [[w⁺, w⁻] per output], "tighten": [[node, side]]}`` when every float plan
        rounds to an exact witness of its atom (the checker's ``relax.infeasible``) on the rows that the
        back-substitutions ``tight`` (``{key: [side]}``) give, else None."""
        rows = LeafRows(self.p.F, cube, self.p.forms, self.p.pairs, tight)
        out = []
        for w in plans:
            witness = self.p.witness(cube, w, rows)
            if witness is None:
                return None
            out.append(sparse_text(witness, len(rows)))
        return {"relaxed": [out[k:k + 2] for k in range(0, len(out), 2)]} | tighten_text(self.p, tight)

    def _gap(self, x: np.ndarray, cube: list) -> Fraction:
        """|A − B|∞ exactly at the float point x (rounded to 9 digits, else read exactly, clamped into the
        cell); a point where it exceeds ε is ``point``."""
        top = Fraction(0)
        for point in ([Fraction(f"{float(v):.9g}") for v in x], [Fraction(float(v)) for v in x]):
            point = [min(max(v, lo), hi) for v, (lo, hi) in zip(point, cube)]
            top = max(top, gap := self.gap(point))
            if gap > self.eps:
                self.point = point
                break
        return top

