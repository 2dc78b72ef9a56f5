"""CPWL front-ends (claim C6): exact Maxout networks from

(a) expressions with rationals, symbols, ``+``, ``−``, rational scalar ``×``/``÷``, ``Max``, ``Min``,
    ``Abs`` (a string through the restricted grammar of ``exactform.expression``, or a SymPy
    expression object built by the caller);
(b) 1-D breakpoints and values (linear interpolation);
(c) values on a triangulation of rational 2-D points (linear finite elements);
(d) a difference of convex max-affine functions ``max_i(a_i·x + b_i) − max_j(c_j·x + d_j)``.

Every front-end returns the net with an ``EqualityProof``: on every cell of a common exact
refinement of the net's activation cells and the input's own pieces, the two affine maps are
identical (exact rational comparison); the refinement covers the domain (its measures add up
exactly), and both functions are continuous, so they are equal on the whole closed domain.
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass
from fractions import Fraction

from ..expression import ExpressionError, Parser
from ..geometry.cells import box_cell, rational
from ..geometry.regions import cells_in_box, combine, coordinate_maps, refine
from ..models import Box, MaxoutLayer, MaxoutNet

ZERO, ONE = Fraction(0), Fraction(1)
FUNCTIONS = ("Max", "Min", "Abs")


class NotEqual(AssertionError):
    """A constructed net differs from its input function on some cell: a bug, never ignored."""


# --- the CPWL expression tree ---------------------------------------------------------------------

@dataclass(frozen=True)
class MaxOf:
    """``max`` of affine combinations ``args`` (each a ``Lin``)."""
    args: tuple

    @property
    def level(self) -> int:
        return 1 + max((a.level for a in self.args), default=0)

    def __str__(self) -> str:
        return f"Max({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Lin:
    """``const + Σ coef·atom``; an atom is a variable name or a ``MaxOf``. Terms are canonical
    (sorted by their text, no zero coefficients), so equal trees compare equal."""
    const: Fraction
    terms: tuple = ()

    @classmethod
    def of(cls, const: Fraction, terms: dict) -> "Lin":
        items = sorted(((a, c) for a, c in terms.items() if c), key=lambda t: (isinstance(t[0], MaxOf), str(t[0])))
        return cls(Fraction(const), tuple(items))

    @property
    def level(self) -> int:
        return max((a.level for a, _ in self.terms if isinstance(a, MaxOf)), default=0)

    def is_constant(self) -> bool:
        return not self.terms

    def __add__(self, other: "Lin") -> "Lin":
        terms = dict(self.terms)
        for a, c in other.terms:
            terms[a] = terms.get(a, ZERO) + c
        return Lin.of(self.const + other.const, terms)

    def scale(self, k: Fraction) -> "Lin":
        return Lin.of(self.const * k, {a: c * k for a, c in self.terms})

    def variables(self) -> set[str]:
        out = set()
        for a, _ in self.terms:
            out |= {a} if isinstance(a, str) else set().union(*(x.variables() for x in a.args))
        return out

    def __str__(self) -> str:
        parts = [f"{c}*{a}" if c != 1 else str(a) for a, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


def maximum(args: list[Lin]) -> Lin:
    return Lin.of(ZERO, {MaxOf(tuple(args)): ONE})


class _CPWLBuilder:
    """Meaning of the grammar for CPWL expressions: scalar products only, Max/Min/Abs."""

    def number(self, v: Fraction) -> Lin:
        return Lin(v)

    def name(self, name: str, pos: int) -> Lin:
        if name in FUNCTIONS or keyword.iskeyword(name):
            raise ExpressionError(pos, f"{name!r} is not a variable name")
        return Lin.of(ZERO, {name: ONE})

    def add(self, a: Lin, b: Lin) -> Lin:
        return a + b

    def neg(self, a: Lin) -> Lin:
        return a.scale(-ONE)

    def mul(self, a: Lin, b: Lin, pos: int) -> Lin:
        if a.is_constant():
            return b.scale(a.const)
        if b.is_constant():
            return a.scale(b.const)
        raise ExpressionError(pos, "a product of two non-constant terms is not piecewise linear")

    def div(self, a: Lin, b: Lin, pos: int) -> Lin:
        if not b.is_constant():
            raise ExpressionError(pos, "division by a non-constant term is not piecewise linear")
        if b.const == 0:
            raise ExpressionError(pos, "division by zero")
        return a.scale(1 / b.const)

    def pow(self, a, n, pos):
        raise ExpressionError(pos, "'**' is not piecewise linear (CPWL expressions take + - * / Max Min Abs)")

    def call(self, name: str, args: list[Lin], pos: int) -> Lin:
        if name == "Max":
            return maximum(args)
        if name == "Min":
            return maximum([a.scale(-ONE) for a in args]).scale(-ONE)
        if name == "Abs":
            if len(args) != 1:
                raise ExpressionError(pos, "Abs takes one argument")
            return maximum([args[0], args[0].scale(-ONE)])
        raise ExpressionError(pos, f"unknown function {name!r} (allowed: {', '.join(FUNCTIONS)})")


def parse_cpwl(text: str) -> Lin:
    """Parse a CPWL expression string with the restricted grammar (never evaluated)."""
    return Parser(text, _CPWLBuilder()).parse()


def from_sympy(expr) -> Lin:
    """Convert a SymPy expression object (Rational, Symbol, Add, Mul by a rational, Max, Min, Abs)."""
    import sympy
    from ..numbers import to_fraction
    b = _CPWLBuilder()
    if isinstance(expr, sympy.Rational):
        return Lin(to_fraction(expr))
    if isinstance(expr, sympy.Symbol):
        return b.name(expr.name, 0)
    if isinstance(expr, sympy.Add):
        out = Lin(ZERO)
        for a in expr.args:
            out = out + from_sympy(a)
        return out
    if isinstance(expr, sympy.Mul):
        out = Lin(ONE)
        for a in expr.args:
            out = b.mul(out, from_sympy(a), 0)
        return out
    for cls, name in ((sympy.Max, "Max"), (sympy.Min, "Min"), (sympy.Abs, "Abs")):
        if isinstance(expr, cls):
            return b.call(name, [from_sympy(a) for a in expr.args], 0)
    raise ExpressionError(0, f"{type(expr).__name__} is not allowed in a CPWL expression")


# --- compilation: tree → layered Maxout net -------------------------------------------------------

def _nodes(lin: Lin, seen: dict) -> None:
    for a, _ in lin.terms:
        if isinstance(a, MaxOf) and a not in seen:
            seen[a] = a.level
            for arg in a.args:
                _nodes(arg, seen)


def compile_expression(root: Lin, variables: list[str], domain: Box) -> MaxoutNet:
    """Layer ℓ holds the Max nodes of level ℓ and rank-1 pass-through units for every atom of a
    lower level still read by a higher level (or by the read-out)."""
    levels: dict = {}
    _nodes(root, levels)
    L = max(levels.values(), default=0)
    if L == 0:
        row = [root_coef(root, v) for v in variables]
        return MaxoutNet(domain, [MaxoutLayer([[row]], [[root.const]])], [[ONE]], [ZERO])
    readers: dict = {}                      # atom -> highest level reading it (L + 1: the read-out)
    for node, lev in levels.items():
        for arg in node.args:
            for a, _ in arg.terms:
                readers[a] = max(readers.get(a, 0), lev)
    for a, _ in root.terms:
        readers[a] = L + 1
    index = {v: i for i, v in enumerate(variables)}          # atom -> position in the previous layer
    layers = []
    for lev in range(1, L + 1):
        atoms = [n for n, lv in levels.items() if lv == lev]
        atoms += [a for a, top in readers.items() if top > lev and (levels.get(a, 0) < lev)]
        weight, bias = [], []
        for a in atoms:
            if isinstance(a, MaxOf) and levels[a] == lev:
                weight.append([_row(arg, index, len(index)) for arg in a.args])
                bias.append([arg.const for arg in a.args])
            else:
                row = [ZERO] * len(index)
                row[index[a]] = ONE
                weight.append([row])
                bias.append([ZERO])
        layers.append(MaxoutLayer(weight, bias))
        index = {a: i for i, a in enumerate(atoms)}
    return MaxoutNet(domain, layers, [_row(root, index, len(index))], [root.const])


def root_coef(lin: Lin, v: str) -> Fraction:
    return dict(lin.terms).get(v, ZERO)


def _row(lin: Lin, index: dict, width: int) -> list[Fraction]:
    row = [ZERO] * width
    for a, c in lin.terms:
        row[index[a]] += c
    return row


# --- the exact equality argument ------------------------------------------------------------------

class ExpressionProgram:
    """The tree itself as stages (one per level) for exact cell refinement: state = atom → map."""

    def __init__(self, root: Lin, variables: list[str]):
        self.root, self.variables = root, variables
        levels: dict = {}
        _nodes(root, levels)
        self.by_level = [[n for n, lv in levels.items() if lv == k] for k in range(1, max(levels.values(), default=0) + 1)]
        self.d = len(variables)

    def initial(self):
        return dict(zip(self.variables, coordinate_maps(self.d)))

    def _map(self, lin: Lin, env: dict) -> tuple:
        return combine([rational(c) for _, c in lin.terms], [env[a] for a, _ in lin.terms], rational(lin.const), self.d)

    def stages(self):
        def stage_for(nodes):
            def stage(env):
                pieces = [[self._map(arg, env) for arg in n.args] for n in nodes]

                def update(choice):
                    out = dict(env)
                    out.update({n: ps[j] for n, ps, j in zip(nodes, pieces, choice)})
                    return out
                return pieces, update
            return stage
        return [stage_for(nodes) for nodes in self.by_level]

    def output(self, env) -> tuple:
        return (self._map(self.root, env),)


@dataclass(frozen=True)
class EqualityProof:
    """``cells`` cells of a common refinement checked; ``argument`` says what was compared."""
    cells: int
    argument: str

    def to_json(self) -> dict:
        return {"equal": True, "cells": self.cells, "argument": self.argument}


def prove_equal_to_program(net: MaxoutNet, program) -> EqualityProof:
    """Refine every activation cell of ``net`` by the program's own choices; compare the maps."""
    checked = 0
    for piece in cells_in_box(net, net.domain):
        parts = [(piece.cell, program.initial())]
        for stage in program.stages():
            nxt = []
            for cell, state in parts:
                decisions, update = stage(state)
                nxt += [(sub, update(ch)) for sub, ch in refine(cell, decisions)]
            parts = nxt
        for cell, state in parts:
            if program.output(state) != piece.output:
                raise NotEqual(f"the net differs from its input on the cell {cell.to_json()}")
            checked += 1
    return EqualityProof(checked, "identical affine maps on every cell of the common refinement of "
                         "the net's activation cells and the expression's Max choices")


def restrict(cell, inequalities) -> object | None:
    """``cell ∩ {g ≥ 0 for all g}`` if full-dimensional, else None."""
    for g in inequalities:
        if not any(g[:-1]):
            if g[-1] < 0:
                return None
            continue
        s = cell.side(g)
        if s < 0:
            return None
        if s == 0:
            cell = cell.clip(g)
    return cell


def prove_equal_to_pieces(net: MaxoutNet, pieces: list[tuple[list[tuple], tuple]]) -> EqualityProof:
    """``pieces``: (inequalities, affine map) of the input's closed convex pieces, with disjoint
    interiors.  Each net cell is intersected with every piece; maps must agree on each non-empty
    intersection, and the intersections' measures must add up to the cell's (full coverage)."""
    pieces = [([tuple(map(rational, h)) for h in ineqs], tuple(map(rational, g))) for ineqs, g in pieces]
    checked = 0
    for piece in cells_in_box(net, net.domain):
        covered = rational(ZERO)
        for ineqs, g in pieces:
            part = restrict(piece.cell, ineqs)
            if part is None:
                continue
            if (g,) != piece.output:
                raise NotEqual(f"the net differs from its input on the cell {part.to_json()}")
            covered += part.measure()
            checked += 1
        if covered != piece.cell.measure():
            raise NotEqual(f"the input's pieces do not cover the cell {piece.cell.to_json()}")
    return EqualityProof(checked, "identical affine maps on every intersection of a net activation "
                         "cell with an input piece; intersection measures add up to each cell's")


# --- front-ends -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Compiled:
    net: MaxoutNet
    proof: EqualityProof
    variables: tuple


def expression_net(expr, domain: Box, variables: list[str] | None = None) -> Compiled:
    """(a) An expression string (restricted grammar), SymPy object or ``Lin`` → exact Maxout net."""
    root = expr if isinstance(expr, Lin) else parse_cpwl(expr) if isinstance(expr, str) else from_sympy(expr)
    names = sorted(root.variables()) if variables is None else list(variables)
    missing = root.variables() - set(names)
    if missing:
        raise ExpressionError(0, f"variable {sorted(missing)[0]!r} is not among {names}")
    if not names:
        names = ["x"]
    if len(names) != domain.dim:
        raise ValueError(f"{len(names)} variables ({', '.join(names)}) but a {domain.dim}-D domain")
    net = compile_expression(root, names, domain)
    return Compiled(net, prove_equal_to_program(net, ExpressionProgram(root, names)), tuple(names))


def breakpoints_net(xs: list[Fraction], ys: list[Fraction]) -> Compiled:
    """(b) Linear interpolation of ``(xs[k], ys[k])`` on ``[xs[0], xs[-1]]`` (xs increasing):
    ``f = y_0 + s_0 (x − x_0) + Σ_k (s_k − s_{k−1}) max(x − x_k, 0)``."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("need at least two breakpoints and one value per breakpoint")
    if any(a >= b for a, b in zip(xs, xs[1:])):
        raise ValueError("breakpoints must be strictly increasing")
    slopes = [(ys[k + 1] - ys[k]) / (xs[k + 1] - xs[k]) for k in range(len(xs) - 1)]
    weight, bias, out = [[[ONE]]], [[ZERO]], [slopes[0]]
    for k in range(1, len(slopes)):
        if slopes[k] != slopes[k - 1]:
            weight.append([[ONE], [ZERO]])
            bias.append([-xs[k], ZERO])
            out.append(slopes[k] - slopes[k - 1])
    net = MaxoutNet(Box((xs[0],), (xs[-1],)), [MaxoutLayer(weight, bias)], [out], [ys[0] - slopes[0] * xs[0]])
    pieces = [([(ONE, -xs[k]), (-ONE, xs[k + 1])], (slopes[k], ys[k] - slopes[k] * xs[k]))
              for k in range(len(slopes))]
    return Compiled(net, prove_equal_to_pieces(net, pieces), ("x",))


def _plane(points, values) -> tuple:
    """The affine map ``(a, b, c)`` through three non-collinear points with the given values."""
    (x0, y0), (x1, y1), (x2, y2) = points
    det = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    if det == 0:
        raise ValueError("degenerate (zero-area) triangle")
    d1, d2 = values[1] - values[0], values[2] - values[0]
    a = (d1 * (y2 - y0) - d2 * (y1 - y0)) / det
    b = ((x1 - x0) * d2 - (x2 - x0) * d1) / det
    return (a, b, values[0] - a * x0 - b * y0)


def _edges(tri) -> list[tuple]:
    """Inequalities ``g ≥ 0`` of a triangle (oriented counter-clockwise)."""
    (x0, y0), (x1, y1), (x2, y2) = tri
    if (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0) < 0:
        tri = (tri[0], tri[2], tri[1])
    out = []
    for (px, py), (qx, qy) in zip(tri, tri[1:] + tri[:1]):
        out.append((py - qy, qx - px, (px - qx) * py - (py - qy) * px))
    return out


def triangulation_net(points: list[tuple], triangles: list[tuple], values: list[Fraction]) -> Compiled:
    """(c) The linear finite-element function with ``values`` at ``points`` on ``triangles``
    (index triples), whose union must be the bounding box of the points.

    Max–min form (Ovchinnikov): ``f = max_i min_{j ∈ S_i} ℓ_j`` with ``S_i = {j : ℓ_j ≥ ℓ_i on
    triangle i}``, as two layers: units ``max_{j∈S_i} (−ℓ_j)``, then ``max_i (−u_i)``.
    """
    pts = [tuple(Fraction(v) for v in p) for p in points]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    box = Box((min(xs), min(ys)), (max(xs), max(ys)))
    tris = [tuple(pts[k] for k in t) for t in triangles]
    planes = [_plane(tri, [values[k] for k in t]) for tri, t in zip(tris, triangles)]
    area = sum((_tri_area(t) for t in tris), ZERO)
    if area != (box.upper[0] - box.lower[0]) * (box.upper[1] - box.lower[1]):
        raise ValueError("the triangles' areas do not add up to the bounding box of the points")
    whole = box_cell(box, "polygon")
    for i in range(len(tris)):
        for j in range(i):
            both = restrict(whole, [tuple(map(rational, g)) for g in _edges(tris[i]) + _edges(tris[j])])
            if both is not None:
                raise ValueError(f"triangles {j} and {i} overlap")
    distinct = list(dict.fromkeys(planes))
    units = []
    for i, tri in enumerate(tris):
        S = [k for k, q in enumerate(distinct) if all(
            q[0] * x + q[1] * y + q[2] >= planes[i][0] * x + planes[i][1] * y + planes[i][2] for x, y in tri)]
        units.append(S)
    units = list(dict.fromkeys(tuple(S) for S in units))
    layer1 = MaxoutLayer([[[-distinct[k][0], -distinct[k][1]] for k in S] for S in units],
                         [[-distinct[k][2] for k in S] for S in units])
    layer2 = MaxoutLayer([[[-ONE if u == i else ZERO for u in range(len(units))] for i in range(len(units))]],
                         [[ZERO] * len(units)])
    net = MaxoutNet(box, [layer1, layer2], [[ONE]], [ZERO])
    return Compiled(net, prove_equal_to_pieces(net, [(_edges(t), p) for t, p in zip(tris, planes)]), ("x", "y"))


def _tri_area(tri) -> Fraction:
    (x0, y0), (x1, y1), (x2, y2) = tri
    return abs((x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)) / 2


def dc_net(convex: list[tuple[list[Fraction], Fraction]], concave: list[tuple[list[Fraction], Fraction]],
           domain: Box) -> Compiled:
    """(d) ``max_i(a_i·x + b_i) − max_j(c_j·x + d_j)``: one layer of two units, read-out (1, −1)."""
    d = domain.dim
    if not convex or not concave or any(len(a) != d for a, _ in convex + concave):
        raise ValueError(f"each max needs at least one plane with {d} coefficients")
    layer = MaxoutLayer([[list(a) for a, _ in convex], [list(c) for c, _ in concave]],
                        [[b for _, b in convex], [e for _, e in concave]])
    net = MaxoutNet(domain, [layer], [[ONE, -ONE]], [ZERO])
    names = [f"x{k}" for k in range(d)]

    def lin(a, b):
        return Lin.of(b, {n: v for n, v in zip(names, a)})
    root = maximum([lin(a, b) for a, b in convex]) + maximum([lin(c, e) for c, e in concave]).scale(-ONE)
    return Compiled(net, prove_equal_to_program(net, ExpressionProgram(root, names)), tuple(names))
