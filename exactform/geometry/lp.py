"""Exact linear programming over rationals (flint ``fmpq``): a two-phase tableau simplex with Bland's
rule (``solve``), and a dual simplex over d × d bases for polytopes inside a box, where the box
vertex that maximises the objective is a dual-feasible start (``dual_simplex``).

Invariant: every pivot is exact rational arithmetic, so the optimum returned is the true optimum
of the rational LP (Bland's rule guarantees termination; no tolerance appears anywhere).
"""
from __future__ import annotations

import flint

ZERO, ONE = flint.fmpq(0), flint.fmpq(1)


class Unbounded(ArithmeticError):
    """The objective is unbounded above on the feasible set."""


def maximize(c: list, A: list[list], b: list) -> flint.fmpq | None:
    """``max c·x`` subject to ``A x ≤ b`` with ``x`` free; ``None`` when infeasible.

    Free variables are split as ``x = x⁺ − x⁻``; raises ``Unbounded`` on an unbounded objective.
    """
    solution = argmaximize(c, A, b)
    return None if solution is None else solution[0]


def argmaximize(c: list, A: list[list], b: list) -> tuple[flint.fmpq, list] | None:
    """``maximize`` with a point attaining the optimum: ``(max c·x, x)``, or ``None`` when infeasible."""
    solution = solve(c, A, b)
    return None if solution is None else solution[:2]


def solve(c: list, A: list[list], b: list) -> tuple[flint.fmpq, list, list] | None:
    """``(max c·x, x, y)``: an optimal point and the dual multipliers ``y ≥ 0`` of the rows, with
    ``yᵀA = c`` and ``y·b = max c·x`` at the optimum (LP duality); ``None`` when infeasible."""
    n = len(c)
    rows = [list(a) + [-v for v in a] for a in A]
    solution = _maximize_nonneg(list(c) + [-v for v in c], rows, list(b), 2 * n)
    if solution is None:
        return None
    value, x, y = solution
    return value, [x[j] - x[n + j] for j in range(n)], y


def _maximize_nonneg(c, A, b, n):
    m = len(A)
    N = n + m + 1                        # structural, slacks, one artificial (last)
    art = N - 1
    tab = []
    for i in range(m):
        row = list(A[i]) + [ZERO] * m + [-ONE]
        row[n + i] = ONE
        tab.append(row + [b[i]])
    basis = [n + i for i in range(m)]
    obj = [ZERO] * N + [ZERO]            # z = obj[-1] + Σ obj[j] x_j
    if m and min(b) < 0:
        obj[art] = -ONE
        r = min(range(m), key=lambda i: (b[i], basis[i]))
        _pivot(tab, obj, basis, r, art)
        _run(tab, obj, basis, N)
        if obj[-1] < 0:
            return None
        if art in basis:                 # degenerate: drive the artificial out of the basis
            r = basis.index(art)
            e = next((j for j in range(N - 1) if tab[r][j] != 0), None)
            if e is not None:
                _pivot(tab, obj, basis, r, e)
    for row in tab:
        row[art] = ZERO
    obj = [ZERO] * (N + 1)
    for j in range(n):
        obj[j] = c[j]
    for i, j in enumerate(basis):       # express the objective in the non-basic variables
        if j < n and obj[j] != 0:
            f = obj[j]
            for k in range(N + 1):
                obj[k] -= f * tab[i][k] if k < N else -f * tab[i][k]
    _run(tab, obj, basis, N - 1)
    x = [ZERO] * n
    for i, j in enumerate(basis):
        if j < n:
            x[j] = tab[i][-1]
    return obj[-1], x, [-obj[n + i] for i in range(m)]


def _pivot(tab, obj, basis, r, e) -> None:
    pr = tab[r]
    p = pr[e]
    if p != 1:
        tab[r] = pr = [v / p for v in pr]
    for i, row in enumerate(tab):
        f = row[e]
        if i != r and f != 0:
            tab[i] = [v - f * w for v, w in zip(row, pr)]
    f = obj[e]
    if f != 0:
        last = len(obj) - 1
        for k in range(last):
            obj[k] -= f * pr[k]
        obj[last] += f * pr[last]
    basis[r] = e


def _run(tab, obj, basis, ncols) -> None:
    while True:
        e = next((j for j in range(ncols) if obj[j] > 0), None)
        if e is None:
            return
        best = None
        for i, row in enumerate(tab):
            if row[e] > 0:
                key = (row[-1] / row[e], basis[i])
                if best is None or key < best[0]:
                    best = (key, i)
        if best is None:
            raise Unbounded("objective unbounded")
        _pivot(tab, obj, basis, best[1], e)


def dual_simplex(c: list, A: list[list], b: list, basis: list[int]) -> tuple[flint.fmpq, list, list] | None:
    """``solve`` from a dual-feasible basis: ``basis`` names d rows of ``A`` (x ∈ Qᵈ) with independent
    gradients such that c is a non-negative combination of them (for a polytope inside a box: at
    each coordinate the bound row that c's sign points at).  Each step the violated row of least
    index enters and the basis row of least ratio ``y_k / w_k`` leaves (least index on ties: Bland's
    rule, so it terminates); the multipliers stay ≥ 0 and the iterate is optimal once no row is
    violated.  A step costs one d × d inverse and one m × d product (flint, exact).  ``None`` when
    infeasible (a violated row no leaving row can balance: ``a_r = Σ w_k a_k`` with w ≤ 0)."""
    d, m = len(c), len(A)
    rows = flint.fmpq_mat(m, d, [v for row in A for v in row])
    cost = flint.fmpq_mat(1, d, list(c))
    basis = list(basis)
    while True:
        inverse = flint.fmpq_mat(d, d, [v for i in basis for v in A[i]]).inv()
        x = inverse * flint.fmpq_mat(d, 1, [b[i] for i in basis])
        values = (rows * x).entries()
        r = next((i for i in range(m) if values[i] > b[i]), None)
        y = (cost * inverse).entries()
        if r is None:
            duals = [ZERO] * m
            for i, v in zip(basis, y):
                duals[i] += v
            x = x.entries()
            return sum((ci * xi for ci, xi in zip(c, x)), ZERO), x, duals
        w = (flint.fmpq_mat(1, d, list(A[r])) * inverse).entries()
        ratios = [(y[k] / w[k], basis[k], k) for k in range(d) if w[k] > 0]
        if not ratios:
            return None
        basis[min(ratios)[2]] = r
