"""The branch-and-bound driver that ``verify`` (V1) and ``equiv --tolerance`` (E1 by the relaxation) both
run: a stack of cells, each closed, handed back or split by the search's ``step``, depth first to the end
or breadth first until enough cells wait to be handed to workers; and the bisection they share, the
coordinate whose halves the float relaxation leaves fewest open (``bisect``, ``lookahead``).  Floats choose
cells and splits; a cell is closed only by the exact test of its step."""
from __future__ import annotations

import hashlib
import pickle
import time

import numpy as np
from threadpoolctl import threadpool_limits

from ..checker.splits import halves

MARGIN = 1e-9          # a float bound (an atom's, or −t* of the LP) above −MARGIN is not worth an exact attempt
STRETCH = 3           # times a closing half is stretched toward an open one (``bisect``)
LOOKAHEAD = 5          # split coordinates whose halves are bounded ahead (ACAS Xu 1_1 prop_3: 247 leaves → 33)
ONE_THREAD = threadpool_limits.wrap(limits=1, user_api="blas")   # the searches' matrices are small: BLAS threads
#   only spin (ACAS Xu 1_1 on φ1, 2 cores: 13.3 → 10.5 CPU s for a third of the region; workers run in parallel instead)


class Deadline(Exception):
    """The search ran past its time."""


def past(deadline: float | None) -> None:
    """Raise ``Deadline`` once ``time.monotonic()`` is past ``deadline`` (None: never)."""
    if deadline is not None and time.monotonic() > deadline:
        raise Deadline()


def expand(cells: list, step, wait: int | None = None, deadline: float | None = None) -> list | None:
    """Branch and bound over ``cells``: ``step(cell)`` returns the cell's children (expanded before the cells
    after it), ``[]`` when it closed the cell or kept it aside, or None when the search is decided (a
    counterexample, or a cell that can be neither closed nor split).  Depth first to the end, or with
    ``wait``, breadth first until that many cells wait.  Returns the cells waiting (none when run to the
    end), or None when a step decided the search; ``Deadline`` past ``deadline``."""
    stack = list(cells)
    while stack and (wait is None or len(stack) < wait):
        past(deadline)
        children = step(stack.pop() if wait is None else stack.pop(0))
        if children is None:
            return None
        stack += children[::-1] if wait is None else children
    return stack


_BUILT: dict = {}


def per_worker(context: bytes, build):
    """``build(*pickle.loads(context))``, built once per worker process for the latest context (a search's
    tables, read again by every task of one command)."""
    digest = hashlib.sha256(context).digest()
    if digest not in _BUILT:
        _BUILT.clear()
        _BUILT[digest] = build(*pickle.loads(context))
    return _BUILT[digest]


def corners(cube: list) -> tuple[np.ndarray, np.ndarray]:
    """The exact cube's lower and upper corners in floating point."""
    return tuple(np.array([float(v) for v in e]) for e in zip(*cube))


def widest(lo: np.ndarray, hi: np.ndarray, width0: np.ndarray) -> list:
    """The coordinates, widest relative to the box first.  (The LP's dual weight on the box rows, the rule
    before the leaves had back-substitutions, left ACAS Xu 3_1 prop_3 open after 60 s and 249 leaves;
    bisecting the widest closes it in 9.4 s and 32.)"""
    return np.argsort(-(hi - lo) / np.where(width0 > 0, width0, 1), kind="stable").tolist()


def bisect(cube: list, coordinates: list, assess, bound, top: float | None = None) -> tuple:
    """``(i, (below, above), their assessments)``: the cube cut across the coordinate ``lookahead`` picks of
    ``coordinates`` by its halves, each half assessed by ``assess(half)`` (kept for when it is expanded) and
    scored by ``bound(assessment)``, its largest atom bound (below ``−MARGIN``: closed); ``top``: the cube's
    own.  One coordinate is not assessed ahead.  Where one half closes and the other does not, the cut is moved
    toward the open side, halving the distance, while the larger part still closes (``STRETCH`` times at most):
    the part left open is smaller (its assessment then made when it is expanded)."""
    mid = {i: (cube[i][0] + cube[i][1]) / 2 for i in coordinates}
    if len(coordinates) == 1:
        return coordinates[0], halves(cube, coordinates[0], mid[coordinates[0]]), (None, None)
    assessed = {i: [assess(part) for part in halves(cube, i, mid[i])] for i in coordinates}
    bounds = {i: [bound(a) for a in assessed[i]] for i in coordinates}
    i = lookahead(coordinates, bounds.__getitem__, top)
    c, ahead = mid[i], tuple(assessed[i])
    closed = [b < -MARGIN for b in bounds[i]]
    if closed[0] != closed[1]:
        side = 0 if closed[0] else 1                  # the closed part: below (0) or above (1) the cut
        step = (cube[i][1 - side] - c) / 2
        for _ in range(STRETCH):                      # the cut searched between the midpoint and the far end
            moved = c + step
            step /= 2
            if bound(a := assess(halves(cube, i, moved)[side])) < -MARGIN:
                c, ahead = moved, (a, None) if side == 0 else (None, a)
    return i, halves(cube, i, c), ahead


def lookahead(coordinates: list, bounded, top: float | None = None) -> int:
    """The split coordinate: of ``coordinates``, the one whose two halves the relaxation leaves fewest open,
    then the one of the smaller sum of the halves' bounds, the first on ties; ``bounded(i)``: the halves'
    largest atom bounds when split at i (below ``−MARGIN``: closed), each capped at the cell's own bound
    ``top`` (which holds on its halves too).  By the worse half alone, a coordinate that leaves both halves
    as open as the cell won over one that nearly closes a half, again and again (ACAS Xu 3_1 on φ1: 2,168+
    leaves against 257).  Uncapped, a half whose relaxation came out looser than the cell's (its bound 1.05
    against the cell's 0.58) ruled out the split that nearly closed the other half, and narrow coordinates were
    halved instead, again and again (ACAS Xu 3_6 prop_3: past 60 s; capped, 5 leaves).  The relaxation gives a
    closed half −∞: of the splits that close one half, the first then wins."""
    def score(i):
        tops = [t if top is None else min(t, top) for t in bounded(i)]
        return sum(t >= -MARGIN for t in tops), sum(tops)
    return min(coordinates, key=score)
