"""Convex Lipschitz approximation (claim C6): a convex function on a box → the max of rational
supporting planes at the centres of an n^d grid of cells, a one-layer Maxout net of rank P = n^d,
with a proven uniform error bound.  Convexity is *proved* first (``prove.convexity``), never assumed.

Bound.  Let C be a cell, t ∈ C its tangent point, P̃(y) = ṽ + g̃·(y − t) its rational plane, and let
interval enclosures (``construct.analytic`` jets) give f(t) ∈ [a⁻, a⁺], ∂f(t) ⊆ G_t, ∂f(C) ⊆ G_C.

- f − net ≤ max over cells of (a⁺ − ṽ) + min(T₁, T₂, T₃) on C, because for x ∈ C convexity gives
  f(x) − f(t) ≤ γ·(x − t) with γ ∈ ∂f(x) ⊆ G_C, hence
  T₁ = Σₖ maxₖ|G_C − g̃ₖ|·ρₖ (ρₖ = the reach of t in C along axis k), and its Lipschitz form
  T₂ = (L_C + |g̃|)·|ρ| with L_C ≥ sup|G_C| a Lipschitz bound of f on C — so the error is
  ≤ 2·L·r + rounding, r the covering radius: O(L·D·P^{−1/d}) on a box of diameter D;
  T₃ = Σₖ δₖρₖ + ½·(Σᵢ Hᵢᵢ⁺ρᵢ² + Σ_{i≠j} |Hᵢⱼ|ρᵢρⱼ) (Taylor, only where the Hessian enclosure H on
  C exists: f is C² there; at most ½·M·|ρ|² with M Gershgorin's bound) — O(P^{−2/d}) for smooth f.
- net − f ≤ max over planes of (ṽ − a⁻) + Σₖ δₖ·Rₖ, because some g ∈ ∂f(t) lies in G_t, so
  f(x) ≥ f(t) + g·(x − t) for all x in the box; δₖ = the distance of g̃ₖ to the ends of G_t, and
  Rₖ the reach of t in the box.

All quantities are combined in ball arithmetic from the certified enclosures; the upper end of
each resulting ball, an exact rational, is rounded up.  When
t is a kink (G_t wide), t moves off the centre inside the cell (``OFFSETS``) and the cheapest
candidate is kept: the bound stays proven, at most about twice the kink-free one in that cell.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product

import flint

from ..models import Box, MaxoutLayer, MaxoutNet
from ..prove.convexity import Step, prove_convex
from ..prove.enclosure import ball, bounds, precision
from ..prove.intervals import round_up, sqrt_upper
from .analytic import Jet, Node, box_env, evaluate, parse_analytic

MAX_RANK = 4096            # planes (n^d); --eps searches ranks up to this
MAX_DIM = 6
MAX_WORK = 300_000         # rank × expression nodes × jet size (1 + d + d²): refused beyond, before any work
HESSIAN_MAX_DIM = 4        # the Taylor bound (d² Hessian entries per cell) up to this dimension
SLOPE_BITS = 40
DIGITS = 40                # working precision of the enclosures, decimal digits
KINK = Fraction(1, 2 ** 30)
OFFSETS = (Fraction(1, 16), Fraction(-1, 16), Fraction(1, 5), Fraction(-1, 5))
AXIS_SKEW = (Fraction(1), Fraction(5, 7), Fraction(7, 11), Fraction(11, 13), Fraction(13, 17), Fraction(17, 19))
ZERO = Fraction(0)
MAX_BITS = 200
_LARGEST = flint.arb(2) ** MAX_BITS


class ApproxError(ValueError):
    """An input outside what C6 handles (not convex, not Lipschitz on the box, beyond the limits)."""


@dataclass(frozen=True)
class ConvexApproximation:
    expression: str
    variables: list[str]
    net: MaxoutNet
    grid: int                  # n planes per axis
    bound: Fraction            # proven: |f − net| ≤ bound on the domain
    lipschitz_bound: Fraction  # proven, the Lipschitz-only form (2·L·r + rounding)
    lipschitz: Fraction        # proven Lipschitz bound of f on the box (Euclidean norm)
    diameter: Fraction         # ≥ the box's diameter
    eps: Fraction | None
    convexity: list[Step]
    methods: dict = field(default_factory=dict)   # cells bounded by the Taylor / subgradient term,
    #                                               cells whose tangent point moved off a kink

    @property
    def rank(self) -> int:
        return self.grid ** self.net.domain.dim

    @property
    def rate(self) -> Fraction:
        """``L·D·P^{−1/d}`` = L·D/n, the Lipschitz rate (≥ 2·L·r since r ≤ D/(2n))."""
        return round_up(self.lipschitz * self.diameter / self.grid)

    @property
    def meets(self) -> bool:
        return self.eps is None or self.bound <= self.eps

    def to_json(self) -> dict:
        return {"expression": self.expression, "variables": self.variables, "rank": self.rank,
                "grid": [self.grid] * len(self.variables), "bound": str(self.bound),
                "bound_float": float(self.bound), "lipschitz_bound": str(self.lipschitz_bound),
                "eps": None if self.eps is None else str(self.eps), "meets": self.meets,
                "lipschitz": str(self.lipschitz), "diameter": str(self.diameter), "rate": str(self.rate),
                "methods": self.methods, "convexity": [s.to_json() for s in self.convexity]}


def approx(expr: str | Node, domain, eps=None, rank: int | None = None,
           variables: list[str] | None = None) -> ConvexApproximation:
    """A Maxout net within a proven uniform error of the convex ``expr`` on ``domain`` (a ``Box``,
    ``[(lo, hi), ...]`` or ``"L:U,..."``): of rank ≤ ``rank`` if given, else the smallest rank
    ``n^d ≤ MAX_RANK`` found whose bound is ≤ ``eps`` (``meets`` is False when none is)."""
    root = parse_analytic(expr) if isinstance(expr, str) else expr
    names = list(variables) if variables else sorted(root.variables())
    missing = root.variables() - set(names)
    if len(set(names)) != len(names) or not all(v.isidentifier() for v in names):
        raise ApproxError(f"variables {names}: distinct names required")
    if not names or missing:
        raise ApproxError(f"variables {sorted(missing)} are not in the variable list" if missing
                          else "the expression has no variables (give variables=...)")
    box = _box(domain, len(names))
    eps = None if eps is None else _exact(eps)
    if eps is not None and eps <= 0:
        raise ApproxError(f"eps must be positive, got {eps}")
    if eps is None and rank is None:
        raise ApproxError("give eps or rank")
    d = box.dim
    if d > MAX_DIM:
        raise ApproxError(f"{d} variables: at most {MAX_DIM}")
    limit = rank_limit(root, d)
    if rank is not None and not 1 <= rank <= limit:
        raise ApproxError(f"rank {rank}: must be between 1 and {limit} (the rank limit for this "
                          f"expression in {d}-D, see rank_limit)")
    with precision(DIGITS):
        steps = prove_convex(root, box_env(names, box.lower, box.upper), names)
        if rank is not None:
            return _planes(root, names, box, _root(rank, d), eps, steps, str(expr))
        return _search(root, names, box, eps, steps, str(expr))


def _exact(eps) -> Fraction:
    """ε as an exact rational: a string (``"1/10"``, ``"0.001"``) or an exact number (no floats)."""
    from ..numbers import RationalSyntaxError, parse_decimal, parse_rational, to_fraction
    try:
        if isinstance(eps, str):
            return parse_rational(eps) if "/" in eps else parse_decimal(eps)
        return to_fraction(eps)
    except (RationalSyntaxError, TypeError) as e:
        raise ApproxError(f"eps: {e}") from None


def _root(p: int, d: int) -> int:
    """⌊p^{1/d}⌋ exactly."""
    n = max(1, round(p ** (1 / d)))
    while n ** d > p:
        n -= 1
    while (n + 1) ** d <= p:
        n += 1
    return n


def _nodes(n: Node) -> int:
    return 1 + sum(_nodes(a) for a in n.args)


def rank_limit(root: Node, d: int) -> int:
    """The largest rank allowed: ``MAX_RANK`` planes and ``rank × nodes × jet size ≤ MAX_WORK``."""
    jet = 1 + d + (d * d if d <= HESSIAN_MAX_DIM else 0)
    return max(1, min(MAX_RANK, MAX_WORK // (_nodes(root) * jet)))


def _box(domain, dim: int) -> Box:
    from ..formats import InputError
    from ..models.box import domain_box, parse_domain
    if isinstance(domain, Box):
        box = domain
    else:
        try:
            pairs = parse_domain(domain) if isinstance(domain, str) else [(Fraction(lo), Fraction(hi))
                                                                         for lo, hi in domain]
            box = domain_box(pairs, dim)
        except InputError as e:
            raise ApproxError(str(e)) from None
    if box.dim != dim:
        raise ApproxError(f"a {box.dim}-D domain for {dim} variables")
    for k, (lo, hi) in enumerate(zip(box.lower, box.upper)):
        if not lo < hi:
            raise ApproxError(f"domain[{k}]: the lower bound must be below the upper bound")
    return box


def _search(root, names, box, eps, steps, text) -> ConvexApproximation:
    """n doubles until the bound meets eps; then the power law through the last failing and the
    first passing n predicts n, and bisection corrects it.  The bound is proven for whatever n is
    returned; bounds are not monotone in n, so it is the smallest passing n *found*, not always
    the least."""
    d, tried = box.dim, {}

    def at(n):
        if n not in tried:
            tried[n] = _planes(root, names, box, n, eps, steps, text)
        return tried[n]

    top = _root(rank_limit(root, d), d)
    lo, n = 0, 1
    while not at(n).meets:
        if n == top:
            return at(top)
        lo, n = n, min(2 * n, top)
    if lo and at(lo).bound > 0 and at(n).bound > 0:
        b_lo, b_hi = float(at(lo).bound), float(at(n).bound)
        k = math.log(b_lo / b_hi) / math.log(n / lo) if b_lo > b_hi else 0
        if k > 0:
            guess = math.ceil(lo * (b_lo / float(eps)) ** (1 / k))
            if lo < guess < n:      # the guess and its neighbour usually settle it
                lo, n = (lo, guess) if at(guess).meets else (guess, n)
                nxt = n - 1 if n == guess else lo + 1
                if lo < nxt < n:
                    lo, n = (lo, nxt) if at(nxt).meets else (nxt, n)
    while n - lo > 1:
        mid = (lo + n) // 2
        lo, n = (lo, mid) if at(mid).meets else (mid, n)
    return at(n)


def _dyadic(q: Fraction) -> Fraction:
    return Fraction(round(q * 2 ** SLOPE_BITS), 2 ** SLOPE_BITS)


@dataclass(frozen=True)
class _Plane:
    weights: list[Fraction]
    bias: Fraction
    upper: Fraction          # bound on f − P̃ over the cell
    lipschitz_upper: Fraction
    lower: Fraction          # bound on P̃ − f over the box
    taylor: bool
    moved: bool = False      # tangent point moved off a kink at the cell's centre


def _planes(root, names, box: Box, n: int, eps, steps, text) -> ConvexApproximation:
    d = box.dim
    h = [(hi - lo) / n for lo, hi in zip(box.lower, box.upper)]
    order = 2 if d <= HESSIAN_MAX_DIM else 1
    planes, lip = [], ZERO
    for idx in product(range(n), repeat=d):
        lo = [a + i * s for a, i, s in zip(box.lower, idx, h)]
        hi = [x + s for x, s in zip(lo, h)]
        env = box_env(names, lo, hi)
        cell = evaluate(root, env, names, order)
        if cell.h is None:      # a kink may cross the cell: gradients at generic points are enough
            generic = evaluate(root, env, names, 1, generic=True)
            cell = Jet(cell.v, [a.intersect(b) for a, b in zip(cell.g, generic.g)], None)
        if not cell.v.is_finite():
            _up(cell.v.hi)                          # raises the magnitude error
        if not all(g.is_finite() for g in cell.g):
            raise ApproxError(f"could not bound the subgradient of {text} on the cell {_show(lo, hi)}: "
                              "the function may not be Lipschitz there")
        lip = max(lip, _up(_length(g.magnitude() for g in cell.g)))
        planes.append(_best_plane(root, names, box, lo, hi, h, cell))
    weights = [p.weights for p in planes]
    biases = [p.bias for p in planes]
    net = MaxoutNet(box, [MaxoutLayer([weights], [biases])], [[Fraction(1)]], [ZERO])
    below = max(p.lower for p in planes)
    bound = round_up(max(below, max(p.upper for p in planes), ZERO))
    lbound = round_up(max(below, max(p.lipschitz_upper for p in planes), ZERO))
    diameter = round_up(sqrt_upper(sum(((b - a) ** 2 for a, b in zip(box.lower, box.upper)), ZERO)))
    taylor = sum(p.taylor for p in planes)
    return ConvexApproximation(text, names, net, n, bound, lbound, round_up(lip), diameter, eps, steps,
                               {"taylor": taylor, "subgradient": len(planes) - taylor,
                                "kink_moved": sum(p.moved for p in planes)})


def _show(lo, hi) -> str:
    return " × ".join(f"[{a}, {b}]" for a, b in zip(lo, hi))


def _best_plane(root, names, box, lo, hi, h, cell) -> _Plane:
    centre = [(a + b) / 2 for a, b in zip(lo, hi)]
    candidates = [centre] + [[c + off * s * k for c, s, k in zip(centre, h, AXIS_SKEW)] for off in OFFSETS]
    best = None
    for t in candidates:
        at = evaluate(root, box_env(names, t, t), names, 1, select=True)
        if not (at.v.is_finite() and all(g.is_finite() for g in at.g)):
            continue
        plane, width = _plane(box, lo, hi, t, at, cell, t is not centre)
        if best is None or max(plane.upper, plane.lower) < max(best.upper, best.lower):
            best = plane
        if width <= KINK:
            break
    if best is None:
        raise ApproxError(f"could not enclose the function near the cell {_show(lo, hi)}")
    return best


def _plane(box, lo, hi, t, at, cell, moved) -> tuple[_Plane, Fraction]:
    """The plane at t and its bounds (see the module docstring), computed in ball arithmetic: each
    bound is the upper end of a ball that contains the exact expression."""
    value = _dyadic(_mid(at.v))
    slope = [_dyadic(_mid(g)) for g in at.g]
    v, s = ball(value), [ball(x) for x in slope]
    delta = [(g.hi - sk).max(sk - g.lo) for g, sk in zip(at.g, s)]
    reach = [ball(max(x - a, b - x)) for x, a, b in zip(t, lo, hi)]
    box_reach = [ball(max(x - a, b - x)) for x, a, b in zip(t, box.lower, box.upper)]
    t1 = _sum((g.hi - sk).max(sk - g.lo) * r for g, sk, r in zip(cell.g, s, reach))
    t2 = (_length(g.magnitude() for g in cell.g) + _length(s)) * _length(reach)
    t3 = _taylor(cell.h, delta, reach)
    above = at.v.hi - v
    best = t1.min(t2) if t3 is None else t1.min(t2).min(t3)
    lower = v - at.v.lo + _sum(dk * rk for dk, rk in zip(delta, box_reach))
    bias = value - sum((a * x for a, x in zip(slope, t)), ZERO)
    taylor = t3 is not None and bool(t3 < t1.min(t2))
    plane = _Plane(slope, bias, _up(above + best), _up(above + t2), _up(lower), taylor, moved)
    return plane, max(_up(g.hi - g.lo) for g in at.g)


def _taylor(hess, delta, reach):
    """``Σ δₖρₖ + ½·max (x − t)ᵀ∇²f(x − t)`` over |xᵢ − tᵢ| ≤ ρᵢ, bounded by
    ``½(Σᵢ max(Hᵢᵢ, 0)·ρᵢ² + Σ_{i≠j} |Hᵢⱼ|·ρᵢρⱼ)`` with H the Hessian enclosure on the cell (this is at
    most Gershgorin's ``½·M·|ρ|²``), or None without a Hessian."""
    if hess is None or not all(x.is_finite() for row in hess for x in row):
        return None
    zero = flint.arb(0)
    quadratic = _sum((row[i].hi.max(zero) if i == j else x.magnitude()) * reach[i] * reach[j]
                     for i, row in enumerate(hess) for j, x in enumerate(row))
    return _sum(dk * rk for dk, rk in zip(delta, reach)) + quadratic / 2


def _sum(xs) -> flint.arb:
    out = flint.arb(0)
    for x in xs:
        out += x
    return out


def _length(xs) -> flint.arb:
    """A ball whose upper end bounds the Euclidean length of the vector of the balls' magnitudes."""
    return _sum(x.abs_upper() ** 2 for x in xs).sqrt()


def _mid(iv) -> Fraction:
    return _up(((iv.lo + iv.hi) / 2).mid())


def _up(b: flint.arb) -> Fraction:
    """The upper end of b as a rational; refused beyond ``2^MAX_BITS`` in magnitude (bounded work)."""
    if not b.is_finite() or not bool(b.abs_upper() <= _LARGEST):
        raise ApproxError(f"a value, slope or curvature of f on the box exceeds 2^{MAX_BITS} in magnitude "
                          "(or could not be enclosed): use a smaller domain")
    return bounds(b)[1]
