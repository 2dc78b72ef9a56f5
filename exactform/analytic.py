"""Analytic expressions for C6: a tree built by the restricted grammar (``expression.Parser``, never
``sympify``/``eval``) and its *jets* — certified interval enclosures of the value, of the Clarke
generalized gradient and, where the function is C², of the Hessian over a box.

Grammar meaning: rational numbers, variables, ``+ −``, ``×``/``÷`` (of any two terms; the DCP rules
cover only constant factors and divisors, the Hessian route the rest), ``**`` with a rational constant exponent,
``sqrt``, ``exp``, ``log``, ``Abs``, ``Max``, ``Min``.  At most ``MAX_NODES`` nodes and exponents with
numerator and denominator at most ``MAX_EXPONENT``.

Jet invariant: ``evaluate(f, env, order)`` on the box ``env`` returns ``v ⊇ f(box)``; ``g`` (order ≥ 1)
with ``∂f(x) ⊆ g`` for every x in the box (Clarke calculus: sum rule, chain rule for C¹ atoms,
``∂max ⊆ conv ∂(possibly active arguments)``, ``Abs = Max(u, −u)``, the dual ball for norms); ``h``
(order 2) with ``∇²f(x) ∈ h`` for every x in the box, or ``None`` where some Max/Min/Abs may switch
branch or an atom's second derivative is unbounded.  With ``generic=True`` the gradient claim is
weaker — ``∇f(x) ∈ g`` at the *generic* points x, where every sub-expression is differentiable —
and tighter near kinks (``sqrt(x² + y²)`` on [0, 1]²: g = [0, 1]² instead of [−1, 1]²).  For an
expression proved convex (every sub-expression convex, concave or affine on the box) the generic
points are dense, which is all ``construct.convex_approx`` needs of a cell.  With ``select=True``
(for a point) the claim is that g contains *some* element of ∂f(x), where exact ties pick one:
``Abs(u)`` with u affine and exactly 0 → 0, a norm at exactly 0 → 0, a Max/Min of exactly equal arguments → the
average of their gradients (valid by the DCP rules: sums, monotone compositions and Max preserve a
chosen subgradient).  A non-finite ``g`` means
no Lipschitz bound could be certified.  Fractional powers and ``sqrt`` clamp their argument to
[0, ∞): callers evaluate only expressions whose domain ``geometry.convexity`` certified on the box.
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass
from fractions import Fraction

import flint

from .expression import ExpressionError, Parser
from .geometry.intervals import Iv

MAX_NODES = 200
MAX_EXPONENT = 64
FUNCTIONS = {"exp": 1, "log": 1, "sqrt": 1, "Abs": 1, "Max": None, "Min": None}
ZERO, ONE = Fraction(0), Fraction(1)
WHOLE = Iv(-flint.arb("inf"), flint.arb("inf"))


@dataclass(frozen=True)
class Node:
    """``op`` in const, var, add, neg, mul, div, pow, exp, log, abs, max, min."""
    op: str
    args: tuple = ()
    p: Fraction | None = None      # the constant (const) or the exponent (pow)
    name: str = ""                 # the variable (var); "sqrt" for a pow written sqrt(...)

    def variables(self) -> set[str]:
        if self.op == "var":
            return {self.name}
        return set().union(*(a.variables() for a in self.args)) if self.args else set()

    def is_constant(self) -> bool:
        return not self.variables()

    def __str__(self) -> str:
        if self.op == "const":
            return str(self.p)
        if self.op == "var":
            return self.name
        if self.op == "add":
            out = str(self.args[0])
            for a in self.args[1:]:
                out += f" - {_wrap(a.args[0])}" if a.op == "neg" else f" + {a}"
            return out
        if self.op == "neg":
            return f"-{_wrap(self.args[0])}"
        if self.op in ("mul", "div"):
            return f"{_wrap(self.args[0])}{'*' if self.op == 'mul' else '/'}{_wrap(self.args[1])}"
        if self.op == "pow":
            if self.name == "sqrt":
                return f"sqrt({self.args[0]})"
            e = str(self.p) if self.p.denominator == 1 and self.p >= 0 else f"({self.p})"
            base = self.args[0]
            return f"{_wrap(base) if base.op != 'pow' or base.name else f'({base})'}**{e}"
        fn = {"exp": "exp", "log": "log", "abs": "Abs", "max": "Max", "min": "Min"}[self.op]
        return f"{fn}({', '.join(map(str, self.args))})"


def _wrap(n: Node) -> str:
    return str(n) if _simple(n) else f"({n})"


def _simple(n: Node) -> bool:
    """Printed without parentheses as a factor or a base (``**`` binds tightest)."""
    return n.op in ("var", "exp", "log", "abs", "max", "min") or (n.op == "const" and n.p >= 0 and n.p.denominator == 1) \
        or (n.op == "pow" and (n.name == "sqrt" or _simple(n.args[0])))


def const(v: Fraction) -> Node:
    return Node("const", p=Fraction(v))


class _Builder:
    """Meaning of the grammar for C6 (see the module docstring); counts nodes against MAX_NODES."""

    def __init__(self):
        self.nodes = 0

    def _new(self, node: Node, pos: int = 0) -> Node:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExpressionError(pos, f"more than {MAX_NODES} operations")
        return node

    def number(self, v):
        return self._new(const(v))

    def name(self, name, pos):
        if name in FUNCTIONS or keyword.iskeyword(name):
            raise ExpressionError(pos, f"{name!r} is not a variable name")
        return self._new(Node("var", name=name), pos)

    def add(self, a, b):
        terms = (a.args if a.op == "add" else (a,)) + (b.args if b.op == "add" else (b,))
        return self._new(Node("add", terms))

    def neg(self, a):
        return self._new(Node("neg", (a,)))

    def mul(self, a, b, pos):
        return self._new(Node("mul", (a, b)), pos)

    def div(self, a, b, pos):
        if b.op == "const" and b.p == 0:
            raise ExpressionError(pos, "division by zero")
        return self._new(Node("div", (a, b)), pos)

    def pow(self, a, p, pos):
        if abs(p.numerator) > MAX_EXPONENT or p.denominator > MAX_EXPONENT:
            raise ExpressionError(pos, f"exponent {p}: numerator and denominator are limited to {MAX_EXPONENT}")
        return self._new(Node("pow", (a,), p=p), pos)

    def call(self, name, args, pos):
        if name not in FUNCTIONS:
            raise ExpressionError(pos, f"unknown function {name!r} (allowed: {', '.join(FUNCTIONS)})")
        arity = FUNCTIONS[name]
        if arity is not None and len(args) != arity:
            raise ExpressionError(pos, f"{name} takes {arity} argument")
        if name == "sqrt":
            return self._new(Node("pow", tuple(args), p=Fraction(1, 2), name="sqrt"), pos)
        return self._new(Node(name.lower(), tuple(args)), pos)


def parse_analytic(text: str) -> Node:
    return Parser(text, _Builder()).parse()


def weighted(t: Node) -> tuple[Node | None, Node]:
    """``t = w·u`` with a constant factor w: ``(w, u)``; ``(None, t)`` when t is not such a product."""
    if t.op == "mul" and t.args[0].is_constant():
        return t.args[0], t.args[1]
    if t.op == "mul" and t.args[1].is_constant():
        return t.args[1], t.args[0]
    return None, t


def is_affine(n: Node) -> bool:
    """Structurally affine: sums, negations and constant multiples of variables and constants."""
    if n.is_constant() or n.op == "var":
        return True
    if n.op in ("add", "neg"):
        return all(is_affine(a) for a in n.args)
    if n.op == "mul":
        a, b = n.args
        return (a.is_constant() and is_affine(b)) or (b.is_constant() and is_affine(a))
    if n.op == "div":
        return n.args[1].is_constant() and is_affine(n.args[0])
    return n.op == "pow" and n.p == 1 and is_affine(n.args[0])


def norm_terms(n: Node) -> tuple[list[tuple[Node | None, Node]], list[Node]] | None:
    """``n = c₀ + Σ wᵢ·uᵢ²`` with affine uᵢ and constant wᵢ, c₀: the pairs (wᵢ or None for 1, uᵢ) and
    the constant terms; ``None`` when n has another shape.  ``sqrt(n)`` is then the Euclidean norm
    of ``(√wᵢ uᵢ, √c₀)`` when the wᵢ are positive and c₀ ≥ 0 (the caller checks signs)."""
    squares, consts = [], []
    for t in (n.args if n.op == "add" else (n,)):
        w, t = weighted(t)
        if t.is_constant() and w is None:
            consts.append(t)
        elif t.op == "pow" and t.p == 2 and is_affine(t.args[0]):
            squares.append((w, t.args[0]))
        else:
            return None
    return (squares, consts) if squares else None


@dataclass(frozen=True)
class Jet:
    v: Iv
    g: list[Iv] | None = None
    h: list[list[Iv]] | None = None


def box_env(names: list[str], lower, upper) -> dict[str, Iv]:
    return {v: Iv.of(lo, hi) for v, lo, hi in zip(names, lower, upper)}


def evaluate(n: Node, env: dict[str, Iv], names: list[str], order: int, generic: bool = False,
             select: bool = False) -> Jet:
    """The jet of ``n`` over the box ``env`` (see the module invariant), to the given order (0, 1, 2)."""
    kids = [evaluate(a, env, names, order, generic, select) for a in n.args]
    return combine(n, kids, env, names, order, generic, select)


def _zero() -> Iv:
    return Iv.point(ZERO)


def _zeros(d: int, order: int) -> tuple:
    g = [_zero() for _ in range(d)] if order >= 1 else None
    h = [[_zero() for _ in range(d)] for _ in range(d)] if order >= 2 else None
    return g, h


def combine(n: Node, kids: list[Jet], env: dict[str, Iv], names: list[str], order: int,
            generic: bool = False, select: bool = False) -> Jet:
    """The jet of ``n`` from the jets of its arguments."""
    d = len(names)
    op = n.op
    if op == "const":
        return Jet(Iv.point(n.p), *_zeros(d, order))
    if op == "var":
        g, h = _zeros(d, order)
        if g is not None:
            g[names.index(n.name)] = Iv.point(ONE)
        return Jet(env[n.name], g, h)
    if op == "add":
        out = kids[0]
        for k in kids[1:]:
            out = _add(out, k)
        return out
    if op == "neg":
        u = kids[0]
        return Jet(-u.v, _map(u.g, lambda x: -x), _map2(u.h, lambda x: -x))
    if op == "mul":
        return _mul(*kids)
    if op == "div":
        return _mul(kids[0], _unary(kids[1], *_power_derivatives(kids[1].v, Fraction(-1)), order, generic))
    if op == "pow":
        u = kids[0]
        if n.p.denominator != 1:
            u = Jet(u.v.nonnegative_part(), u.g, u.h)
        out = _unary(u, *_power_derivatives(u.v, n.p), order, generic)
        terms = norm_terms(n.args[0]) if n.p == Fraction(1, 2) and order >= 1 else None
        if terms is None:
            return out
        return _norm(out, u.v.positive() or generic, select and _exact_zero(u.v), *terms, env, names)
    if op == "exp":
        e = kids[0].v.exp()
        return _unary(kids[0], e, e, e, order, generic)
    if op == "log":
        x = kids[0].v
        return _unary(kids[0], x.log(), x.power(Fraction(-1)), -x.power(Fraction(-2)), order, generic)
    if op == "abs":
        u = kids[0]
        if select and _exact_zero(u.v) and is_affine(n.args[0]):     # 0 ∈ [−1, 1]·∇u
            return Jet(u.v, _map(u.g, lambda x: _zero()), None)
        if u.v.nonnegative():
            return u
        if u.v.nonpositive():
            return Jet(-u.v, _map(u.g, lambda x: -x), _map2(u.h, lambda x: -x))
        m = u.v.magnitude()
        return Jet(Iv(flint.arb(0), m), _map(u.g, Iv.symmetric), None)
    if op in ("max", "min"):
        return _extremum(kids, op == "max", select)
    raise ValueError(f"unknown operation {op!r}")


def _map(g, f):
    return None if g is None else [f(x) for x in g]


def _map2(h, f):
    return None if h is None else [[f(x) for x in row] for row in h]


def _add(a: Jet, b: Jet) -> Jet:
    g = None if a.g is None else [x + y for x, y in zip(a.g, b.g)]
    h = None if a.h is None or b.h is None else [[x + y for x, y in zip(r, s)] for r, s in zip(a.h, b.h)]
    return Jet(a.v + b.v, g, h)


def _mul(a: Jet, b: Jet) -> Jet:
    g = None if a.g is None else [a.v * y + b.v * x for x, y in zip(a.g, b.g)]
    h = None
    if a.h is not None and b.h is not None:
        d = len(a.g)
        h = [[a.v * b.h[i][j] + b.v * a.h[i][j] + a.g[i] * b.g[j] + b.g[i] * a.g[j] for j in range(d)]
             for i in range(d)]
    return Jet(a.v * b.v, g, h)


def _power_derivatives(x: Iv, p: Fraction) -> tuple[Iv, Iv, Iv]:
    """Enclosures of ``x^p``, ``p·x^{p−1}``, ``p(p−1)·x^{p−2}`` over x (zero coefficients exactly 0)."""
    def term(c: Fraction, e: Fraction) -> Iv:
        return _zero() if c == 0 else x.power(e).scale(flint.arb(flint.fmpq(c.numerator, c.denominator)))
    return x.power(p), term(p, p - 1), term(p * (p - 1), p - 2)


def _unary(u: Jet, d0: Iv, d1: Iv, d2: Iv, order: int, generic: bool) -> Jet:
    """Chain rule for an atom φ with φ, φ', φ'' enclosed by d0, d1, d2 over u's range (where they
    exist); an unbounded φ' leaves the gradient unbounded unless ``generic``, an unbounded φ' or φ''
    leaves no Hessian."""
    g = None
    if order >= 1:
        g = [d1 * x for x in u.g] if generic or d1.is_finite() else [WHOLE] * len(u.g)
    h = None
    if order >= 2 and u.h is not None and d1.is_finite() and d2.is_finite():
        d = len(u.g)
        h = [[d2 * u.g[i] * u.g[j] + d1 * u.h[i][j] for j in range(d)] for i in range(d)]
    return Jet(d0, g, h)


def _norm(out: Jet, formula: bool, at_zero: bool, squares, consts, env, names) -> Jet:
    """``sqrt(Σ wᵢ uᵢ² + c₀)`` with wᵢ > 0 and c₀ ≥ 0 (else ``out`` as it is): its (sub)gradients are
    ``Σ cᵢ ∇uᵢ`` with ``cᵢ ∈ [−√wᵢ, √wᵢ]`` (the norm's dual ball), finite even where the sum
    vanishes; intersected with the chain-rule jet ``out`` when that formula holds (``formula``: the
    sum is positive, or generic points only); ``at_zero`` (a point where the sum is exactly 0): the
    subgradient 0 is selected."""
    if not all(evaluate(c, env, names, 0).v.nonnegative() for c in consts):
        return out
    g = [_zero() for _ in names]
    for w, u in squares:
        wv = Iv.point(ONE) if w is None else evaluate(w, env, names, 0).v
        if not wv.positive():
            return out
        root = wv.hi.sqrt()
        g = [x + Iv(-root, root) * y for x, y in zip(g, evaluate(u, env, names, 1).g)]
    if at_zero:
        return Jet(out.v, [_zero() for _ in names], None)
    if formula:
        g = [a.intersect(b) for a, b in zip(out.g, g)]
    return Jet(out.v, g, out.h if formula and all(x.is_finite() for x in out.g) else None)


def _exact_zero(x: Iv) -> bool:
    return x.lo.is_zero() and x.hi.is_zero()


def _extremum(kids: list[Jet], is_max: bool, select: bool) -> Jet:
    sign = 1 if is_max else -1
    vs = [k.v if is_max else -k.v for k in kids]
    top_lo = vs[0].lo
    for v in vs[1:]:
        top_lo = top_lo.max(v.lo)
    value = Iv(top_lo, vs[0].hi)
    for v in vs[1:]:
        value = Iv(top_lo, value.hi.max(v.hi))
    active = [k for k, v in zip(kids, vs) if not bool(v.hi < top_lo)]
    value = value if sign > 0 else -value
    if len(active) == 1:
        return Jet(value, active[0].g, active[0].h)
    g = None
    tied = select and all(k.v.lo.is_exact() and k.v.hi.is_exact() and k.v.lo == active[0].v.lo
                          and k.v.hi == k.v.lo for k in active)
    if tied and active[0].g is not None:       # an exact tie: the average is a subgradient
        share = Iv.point(Fraction(1, len(active)))
        g = [share * sum((k.g[i] for k in active[1:]), active[0].g[i]) for i in range(len(active[0].g))]
    elif active[0].g is not None:
        g = list(active[0].g)
        for k in active[1:]:
            g = [x.hull(y) for x, y in zip(g, k.g)]
    return Jet(value, g, None)
