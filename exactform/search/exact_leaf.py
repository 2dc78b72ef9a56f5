"""A leaf of claim V1 decided in rational arithmetic, where floating point could not close it.

``leaf_lp(rows)`` solves, exactly (``geometry.lp.dual_simplex``), max t subject to g ≥ t for each of the
leaf's rows g (``relax.LeafRows``: the rows the checker writes, with the property's atoms), every variable
within its bounds and t ≤ 1 (always feasible: t may be as low as it needs).  Invariant: when t* < 0 the optimal dual
multipliers of the rows (the bound rows left implicit, as the checker's ``relax.infeasible`` takes them) are
a Farkas witness the checker accepts; when t* ≥ 0 the optimal point meets every row and every atom, so it is
the network's point with an atom-violating output wherever each node's value is its pieces' maximum there
(``first_relaxed``)."""
from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np

from ..checker.reader import ONE
from ..checker.relax import LeafRows
from ..geometry.lp import dual_simplex


def _rational(q: Fraction) -> flint.fmpq:
    return flint.fmpq(q.numerator, q.denominator)


def _fraction(q: flint.fmpq) -> Fraction:
    return Fraction(int(q.p), int(q.q))


def _is_bound(rows: LeafRows, i: int) -> bool:
    """Whether row i is a variable's bound (x_i − l_i, u_i − x_i, z − L, U − z), which the LP and the checker
    take as the variables' box instead."""
    k, j = rows.slots[i]
    return k is None or k >= 0 and j < 2


def leaf_lp(rows: LeafRows) -> tuple[Fraction, dict, list]:
    """``(t*, w, v*)``: the exact optimum of max t subject to g ≥ t for every row g of ``rows``, the variables
    within ``rows.bounds`` and t ≤ 1; ``w``: the positive dual multipliers of the rows (``{row: q}``, summing
    to 1 when t* < 1), ``v*``: an optimal point (the variables in order; none when a variable's bounds are
    empty, t* then their negative width).  The dual simplex starts from the
    basis HiGHS ends at when it is exactly dual feasible (``_warm``: usually optimal as it is), else from
    every variable at its lower bound and t at 1."""
    n = len(rows.bounds)
    for v, (lo, hi) in enumerate(rows.bounds):
        if lo > hi:                             # no point: the variable's two bound rows sum to hi − lo < 0
            first = 2 * v if v < rows.F.d else rows.starts[v - rows.F.d]
            return hi - lo, {first: Fraction(1), first + 1: Fraction(1)}, []
    A, b, index = [], [], []
    for i in range(len(rows)):
        if _is_bound(rows, i):
            continue
        g = rows[i][0]
        a = [flint.fmpq(0)] * (n + 1)
        for v, q in g.items():
            if v != ONE:
                a[v] = -_rational(q)
        a[n] = flint.fmpq(1)                    # −g + t ≤ g's constant
        A.append(a)
        b.append(_rational(g.get(ONE, Fraction(0))))
        index.append(i)
    start = []
    for v, (lo, hi) in enumerate(rows.bounds):       # v ≤ hi, −v ≤ −lo
        for sign, end in ((1, hi), (-1, lo)):
            a = [flint.fmpq(0)] * (n + 1)
            a[v] = flint.fmpq(sign)
            A.append(a)
            b.append(sign * _rational(end))
        start.append(len(A) - 1)
    A.append([flint.fmpq(0)] * n + [flint.fmpq(1)])
    b.append(flint.fmpq(1))
    start.append(len(A) - 1)
    c = [flint.fmpq(0)] * n + [flint.fmpq(1)]
    value, point, duals = dual_simplex(c, A, b, _warm(c, A, b) or start)
    w = {i: _fraction(y) for i, y in zip(index, duals) if y > 0}
    return _fraction(value), w, [_fraction(v) for v in point[:n]]


def _warm(c: list, A: list, b: list) -> list | None:
    """The rows of HiGHS's optimum of max c·v subject to A v ≤ b (floats): those of positive dual first, then
    the tightest, as many as are independent (Gram–Schmidt in floats), when they are len(c) and
    c = yᵀ B with y ≥ 0 exactly (a dual-feasible basis for ``dual_simplex``); else None."""
    from scipy.optimize import linprog  # imported where first needed (search/verify.py)

    n = len(c)
    M = np.array([[float(q) for q in a] for a in A])
    result = linprog(-np.array([float(q) for q in c]), A_ub=M, b_ub=np.array([float(q) for q in b]),
                     bounds=[(None, None)] * n, method="highs")
    if result.status != 0:
        return None
    order = sorted(range(len(A)), key=lambda i: (result.ineqlin.marginals[i] >= 0, result.ineqlin.marginals[i],
                                                 result.ineqlin.residual[i]))
    basis, directions = [], np.zeros((0, n))
    for i in order:
        r = M[i] - directions.T @ (directions @ M[i])
        if np.linalg.norm(r) > 1e-9 * max(np.linalg.norm(M[i]), 1.0):
            basis.append(i)
            directions = np.vstack([directions, r / np.linalg.norm(r)])
            if len(basis) == n:
                break
    if len(basis) < n:
        return None
    try:
        y = (flint.fmpq_mat(1, n, list(c)) * flint.fmpq_mat(n, n, [q for i in basis for q in A[i]]).inv()).entries()
    except ZeroDivisionError:
        return None
    return basis if all(q >= 0 for q in y) else None


def first_relaxed(F, v: list) -> int | None:
    """The first node of ``F`` whose value in the point ``v`` (the variables in order) is not its pieces'
    maximum there (a max node) — every earlier node's value is then the network's —, or None when every
    node's is (a hardmax node's value is never taken as the network's: it is returned)."""
    for k, (kind, data) in enumerate(F.nodes):
        if kind != "max":
            return k
        top = max(sum((q * (v[i] if i != ONE else 1) for i, q in piece), Fraction(0)) for piece in data)
        if v[F.d + k] != top:
            return k
    return None
