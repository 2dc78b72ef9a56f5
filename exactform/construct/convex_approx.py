"""Convex Lipschitz approximation (claim C6): a convex function on a box → the max of rational
tangent planes at a rational grid, a one-layer Maxout net, with a proven uniform error bound.

Bound.  Every x lies in the box ``B_p = [p − h/2, p + h/2] ∩ domain`` of a grid point p, and the
segment [p, x] stays in B_p, so ``0 ≤ f(x) − T_p(x) ≤ ½ M_p |x − p|²`` with ``M_p`` a Gershgorin
bound on the Hessian over B_p (certified by flint ``arb`` interval evaluation).  Each plane is
stored with rational value and slopes within ``δ_v``, ``δ_g`` of the true ones (exact when f is a
polynomial with rational coefficients), so ``|P̃_p − T_p| ≤ δ_v + Σ_k δ_g,k · max|x_k − p_k|`` on
the domain.  Hence ``|f − max_p P̃_p| ≤ max_p ½ M_p r_p² + max_p (that rounding term)``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

import flint
import sympy

from ..models import Box, MaxoutLayer, MaxoutNet
from ..numbers import to_fraction
from ..prove.enclosure import ball, bounds
from .expression import ExpressionError, Parser

ZERO = Fraction(0)
SLOPE_BITS = 40


class _AnalyticBuilder:
    """Grammar meaning for C6: + − × ÷, integer powers, log, exp; builds a SymPy expression
    object from the tokens (the input string itself is never handed to SymPy)."""

    def number(self, v):
        return sympy.Rational(v.numerator, v.denominator)

    def name(self, name, pos):
        if name in ("log", "exp"):
            raise ExpressionError(pos, f"{name!r} is a function, not a variable")
        return sympy.Symbol(name, real=True)

    def add(self, a, b):
        return a + b

    def neg(self, a):
        return -a

    def mul(self, a, b, pos):
        return a * b

    def div(self, a, b, pos):
        if b == 0:
            raise ExpressionError(pos, "division by zero")
        return a / b

    def pow(self, a, n, pos):
        return a ** n

    def call(self, name, args, pos):
        if name in ("log", "exp") and len(args) == 1:
            return sympy.log(args[0]) if name == "log" else sympy.exp(args[0])
        raise ExpressionError(pos, f"unknown function {name!r} (allowed: log, exp, each with one argument)")


def parse_analytic(text: str) -> sympy.Expr:
    return Parser(text, _AnalyticBuilder()).parse()


def _arb(expr, env: dict) -> flint.arb:
    """Certified enclosure of ``expr`` with each symbol replaced by the ball ``env[name]``."""
    if isinstance(expr, sympy.Symbol):
        return env[expr.name]
    if isinstance(expr, sympy.Rational):
        return flint.arb(flint.fmpq(int(expr.p), int(expr.q)))
    if isinstance(expr, sympy.Add):
        out = flint.arb(0)
        for a in expr.args:
            out += _arb(a, env)
        return out
    if isinstance(expr, sympy.Mul):
        out = flint.arb(1)
        for a in expr.args:
            out *= _arb(a, env)
        return out
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer:
        base, n = _arb(expr.base, env), int(expr.exp)
        return base ** n if n >= 0 else 1 / base ** (-n)
    if isinstance(expr, sympy.exp):
        return _arb(expr.args[0], env).exp()
    if isinstance(expr, sympy.log):
        return _arb(expr.args[0], env).log()
    raise ValueError(f"cannot enclose {type(expr).__name__}")


def _ball(lo: Fraction, hi: Fraction) -> flint.arb:
    return ball(lo).union(ball(hi))


def _rounded(b: flint.arb) -> tuple[Fraction, Fraction]:
    """A rational with at most SLOPE_BITS fractional bits and its certified distance to the value."""
    lo, hi = bounds(b)
    v = Fraction(round((lo + hi) / 2 * 2 ** SLOPE_BITS), 2 ** SLOPE_BITS)
    return v, max(hi - v, v - lo)


@dataclass(frozen=True)
class TangentApproximation:
    net: MaxoutNet
    bound: Fraction               # proven: |f − net| ≤ bound on the domain
    taylor_term: Fraction
    rounding_term: Fraction
    exact_worst_error: Fraction | None   # quadratics in ≤ 2-D: max |f − net|, computed exactly
    sampled_worst_error: Fraction         # certified upper value of |f − net| at the samples
    samples: int

    def to_json(self) -> dict:
        def s(v):
            return None if v is None else str(v)
        return {"planes": self.net.layers[0].ranks[0], "bound": s(self.bound), "bound_float": float(self.bound),
                "taylor_term": s(self.taylor_term), "rounding_term": s(self.rounding_term),
                "exact_worst_error": s(self.exact_worst_error),
                "sampled_worst_error": float(self.sampled_worst_error), "samples": self.samples}


def tangent_plane_net(f, box: Box, n: int, samples: int = 200, seed: int = 0) -> TangentApproximation:
    """Max of tangent planes of the convex ``f`` (string or SymPy expression) at an n^d grid."""
    expr = parse_analytic(f) if isinstance(f, str) else f
    names = sorted(s.name for s in expr.free_symbols)
    if len(names) != box.dim:
        raise ValueError(f"{len(names)} variables but a {box.dim}-D box")
    syms = [sympy.Symbol(v, real=True) for v in names]
    expr = expr.subs({s: t for s, t in zip(sorted(expr.free_symbols, key=lambda s: s.name), syms)})
    grad = [sympy.diff(expr, s) for s in syms]
    hess = [[sympy.diff(g, s) for s in syms] for g in grad]
    exact = expr.is_polynomial(*syms) and all(c.is_Rational for c in sympy.Poly(expr, *syms).coeffs())
    steps = [(hi - lo) / (n - 1) for lo, hi in zip(box.lower, box.upper)]
    grid = [tuple(lo + h * k for lo, h, k in zip(box.lower, steps, ks)) for ks in product(range(n), repeat=box.dim)]
    weights, biases, taylor, rounding = [], [], ZERO, ZERO
    for p in grid:
        point = {v: _ball(x, x) for v, x in zip(names, p)}
        if exact:
            subs = {s: sympy.Rational(x.numerator, x.denominator) for s, x in zip(syms, p)}
            value, dv = to_fraction(expr.subs(subs)), ZERO
            slopes = [(to_fraction(g.subs(subs)), ZERO) for g in grad]
        else:
            value, dv = _rounded(_arb(expr, point))
            slopes = [_rounded(_arb(g, point)) for g in grad]
        weights.append([g for g, _ in slopes])
        biases.append(value - sum((g * x for (g, _), x in zip(slopes, p)), ZERO))
        reach = [max(x - lo, hi - x) for x, lo, hi in zip(p, box.lower, box.upper)]
        rounding = max(rounding, dv + sum((dg * r for (_, dg), r in zip(slopes, reach)), ZERO))
        cell = [(max(lo, x - h / 2), min(hi, x + h / 2)) for x, h, lo, hi in zip(p, steps, box.lower, box.upper)]
        env = {v: _ball(a, b) for v, (a, b) in zip(names, cell)}
        M = max(sum((bounds(abs(_arb(h, env)))[1] for h in row), ZERO) for row in hess)
        r2 = sum((max(x - a, b - x) ** 2 for x, (a, b) in zip(p, cell)), ZERO)
        taylor = max(taylor, M * r2 / 2)
    net = MaxoutNet(box, [MaxoutLayer([weights], [biases])], [[Fraction(1)]], [ZERO])
    worst = _exact_worst(expr, syms, net) if exact and expr.is_polynomial(*syms) and \
        sympy.Poly(expr, *syms).total_degree() <= 2 and box.dim <= 2 else None
    rng = random.Random(seed)
    sampled = ZERO
    for _ in range(samples):
        x = [lo + (hi - lo) * Fraction(rng.randrange(10 ** 6), 10 ** 6) for lo, hi in zip(box.lower, box.upper)]
        approx = net(x)[0]
        lo, hi = bounds(_arb(expr, {v: _ball(c, c) for v, c in zip(names, x)}))
        sampled = max(sampled, hi - approx, approx - lo)
    return TangentApproximation(net, taylor + rounding, taylor, rounding, worst, sampled, samples)


def _exact_worst(expr, syms, net: MaxoutNet) -> Fraction:
    """``max |f − net|`` for a convex quadratic: on the cell where plane j is the max, f − P_j is a
    convex quadratic, so its maximum is at a vertex; all vertices are rational, f is exact there."""
    from ..prove.regions import cells_in_box
    worst = ZERO
    for piece in cells_in_box(net, net.domain):
        cell = piece.cell
        vertices = [(cell.lo,), (cell.hi,)] if hasattr(cell, "lo") else list(cell.vertices)
        for v in vertices:
            point = [to_fraction(c) for c in v]
            fv = to_fraction(expr.subs({s: sympy.Rational(c.numerator, c.denominator) for s, c in zip(syms, point)}))
            worst = max(worst, abs(fv - net(point)[0]))
    return worst
