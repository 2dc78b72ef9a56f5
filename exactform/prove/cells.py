"""Exact convex cells of a box domain and their splitting by affine functions.

An affine function of ``x ∈ Q^d`` is a tuple ``(a_1, ..., a_d, c)`` of exact rationals (flint
``fmpq``, the fast exact type; ``rational`` converts ``Fraction``/int and refuses floats) meaning
``a·x + c``.  A cell is a full-dimensional convex polytope with rational data:

- ``Interval`` (d = 1): its two endpoints;
- ``Polygon`` (d = 2): its vertices, counter-clockwise;
- ``Polytope`` (any d): its inequalities ``g(x) ≥ 0``, decided by exact LP (``prove.lp``);
- ``Vertices`` (any d): its inequalities and its vertices with their incidences (the double
  description), so that deciding and splitting need no LP, only exact evaluations.

Invariant: every cell is full-dimensional and ``side``/``clip`` are exact, so splitting never
loses or invents a piece of the domain.  Cells are plain data (``to_json``) so that enumeration
of a sub-box is a pure function of serialisable inputs.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import product

import flint

from ..models import Box
from ..numbers import format_rational
from .lp import maximize

Affine = tuple  # (a_1, ..., a_d, c) of fmpq
Q = flint.fmpq
ZERO, ONE = Q(0), Q(1)


def rational(x) -> flint.fmpq:
    """An exact ``fmpq`` from an int, ``Fraction`` or ``fmpq``; floats are refused."""
    if isinstance(x, flint.fmpq):
        return x
    if isinstance(x, Fraction):
        return Q(x.numerator, x.denominator)
    if isinstance(x, int) and not isinstance(x, bool):
        return Q(x)
    raise TypeError(f"{x!r} is not an exact rational")


def is_constant(g: Affine) -> bool:
    return not any(g[:-1])


def evaluate(g: Affine, point):
    v = g[-1]
    for a, x in zip(g, point):
        if a:
            v += a * x
    return v


def exact_key(values) -> tuple:
    """A cheaply hashed key of a sequence of ``fmpq`` (or of such sequences), equal exactly
    for equal values (reduced numerator/denominator pairs)."""
    return tuple(exact_key(v) if isinstance(v, tuple) else (int(v.p), int(v.q)) for v in values)


def centroid(points) -> tuple:
    """The mean of ``points`` (in the relative interior of their convex hull)."""
    return tuple(sum(c, ZERO) / len(points) for c in zip(*points))


def normalized(g: Affine) -> Affine:
    """The positive multiple of ``g`` whose first non-zero linear coefficient is ±1."""
    lead = next(abs(a) for a in g[:-1] if a)
    return tuple(v / lead for v in g)


@dataclass(frozen=True)
class Interval:
    lo: flint.fmpq
    hi: flint.fmpq

    def side(self, g: Affine) -> int:
        """+1 if ``g ≥ 0`` on the cell, −1 if ``g ≤ 0``, 0 if both signs occur (g not constant)."""
        u, v = g[0] * self.lo + g[1], g[0] * self.hi + g[1]
        if u >= 0 and v >= 0:
            return 1
        if u <= 0 and v <= 0:
            return -1
        return 0

    def clip(self, g: Affine) -> "Interval":
        root = -g[1] / g[0]
        return Interval(max(self.lo, root), self.hi) if g[0] > 0 else Interval(self.lo, min(self.hi, root))

    def measure(self) -> flint.fmpq:
        return self.hi - self.lo

    def sample(self) -> tuple:
        return ((self.lo + self.hi) / 2,)

    def to_json(self) -> dict:
        return {"interval": [format_rational(self.lo), format_rational(self.hi)]}


@dataclass(frozen=True)
class Polygon:
    vertices: tuple  # ((x, y), ...) counter-clockwise

    def side(self, g: Affine) -> int:
        a, b, c = g
        pos = neg = False
        for x, y in self.vertices:
            v = a * x + b * y + c
            if v > 0:
                pos = True
            elif v < 0:
                neg = True
        return 0 if pos and neg else (-1 if neg else 1)

    def clip(self, g: Affine) -> "Polygon":
        """The part where ``g ≥ 0`` (Sutherland–Hodgman on one half-plane, exact)."""
        a, b, c = g
        vs = self.vertices
        vals = [a * x + b * y + c for x, y in vs]
        out = []
        for i, (v, fv) in enumerate(zip(vs, vals)):
            w, fw = vs[(i + 1) % len(vs)], vals[(i + 1) % len(vs)]
            if fv >= 0:
                out.append(v)
            if (fv > 0 > fw) or (fv < 0 < fw):
                t = fv / (fv - fw)
                out.append((v[0] + t * (w[0] - v[0]), v[1] + t * (w[1] - v[1])))
        return Polygon(tuple(out))

    def measure(self) -> flint.fmpq:
        vs = self.vertices
        return sum((vs[i][0] * vs[i - 1][1] - vs[i - 1][0] * vs[i][1] for i in range(len(vs))), ZERO) / -2

    def sample(self) -> tuple:
        n = len(self.vertices)
        return (sum(v[0] for v in self.vertices) / n, sum(v[1] for v in self.vertices) / n)

    def to_json(self) -> dict:
        return {"polygon": [[format_rational(x), format_rational(y)] for x, y in self.vertices]}


@dataclass(frozen=True)
class Polytope:
    constraints: tuple  # (g, ...) meaning g(x) ≥ 0 for each g

    def _extremes(self, g: Affine) -> tuple:
        A = [[-a for a in h[:-1]] for h in self.constraints]
        b = [h[-1] for h in self.constraints]
        hi = maximize(list(g[:-1]), A, b)
        lo = maximize([-a for a in g[:-1]], A, b)
        if hi is None or lo is None:
            raise ArithmeticError("empty polytope: a cell must be full-dimensional")
        return g[-1] - lo, g[-1] + hi

    def side(self, g: Affine) -> int:
        lo, hi = self._extremes(g)
        return 1 if lo >= 0 else (-1 if hi <= 0 else 0)

    def clip(self, g: Affine) -> "Polytope":
        return Polytope(self.constraints + (normalized(g),))

    def to_json(self) -> dict:
        return {"polytope": [[format_rational(v) for v in g] for g in self.constraints]}


@dataclass(frozen=True)
class Vertices:
    """A polytope ``{x : g(x) ≥ 0 for g in constraints}`` with all its vertices: bit i of
    ``tight[k]`` is set exactly when ``constraints[i]`` vanishes at ``vertices[k]``.

    Invariant: ``vertices`` are exactly the polytope's vertices, without repeats.  A cut by a
    hyperplane keeps the vertices on each side and adds one new vertex on every edge it crosses;
    ``u, w`` span an edge exactly when no other vertex is tight on every constraint tight at both
    (the combinatorial adjacency test of the double description method, valid under degeneracy:
    the smallest face holding u and w is cut out by those constraints and is an edge exactly when
    it has no third vertex), and at least d − 1 constraints are tight at both."""
    constraints: tuple  # (g, ...) meaning g(x) ≥ 0 for each g
    vertices: tuple     # exact points
    tight: tuple        # incidence bit masks, one per vertex

    def _extremes(self, g: Affine) -> tuple:
        values = [evaluate(g, v) for v in self.vertices]
        return min(values), max(values)

    def side(self, g: Affine) -> int:
        lo, hi = self._extremes(g)
        return 1 if lo >= 0 else (-1 if hi <= 0 else 0)

    def clip(self, g: Affine) -> "Vertices":
        return self.cut(g)[0]

    def cut(self, g: Affine) -> tuple:
        """``(cell ∩ {g ≥ 0}, cell ∩ {g ≤ 0})``, each None when it is not full-dimensional."""
        vs, tight = self.vertices, self.tight
        values = [evaluate(g, v) for v in vs]
        pos = [k for k, v in enumerate(values) if v > 0]
        neg = [k for k, v in enumerate(values) if v < 0]
        if not neg:
            return self, None
        if not pos:
            return None, self
        d, bit = len(g) - 1, 1 << len(self.constraints)
        zero = [(vs[k], tight[k] | bit) for k, v in enumerate(values) if v == 0]
        crossing = []
        for i in pos:
            for j in neg:
                common = tight[i] & tight[j]
                if common.bit_count() < d - 1 or any(
                        t & common == common for k, t in enumerate(tight) if k != i and k != j):
                    continue
                s = values[i] / (values[i] - values[j])
                crossing.append((tuple(a + s * (b - a) for a, b in zip(vs[i], vs[j])), common | bit))
        h = normalized(g)

        def part(keep, constraint):
            new = [(vs[k], tight[k]) for k in keep] + zero + crossing
            return Vertices(self.constraints + (constraint,), tuple(v for v, _ in new), tuple(t for _, t in new))
        return part(pos, h), part(neg, tuple(-v for v in h))

    def facets(self) -> list[int]:
        """Indices of the constraints whose zero set meets the cell in a (d − 1)-face."""
        d = len(self.vertices[0])
        out = []
        for i in range(len(self.constraints)):
            on = [v for v, t in zip(self.vertices, self.tight) if t >> i & 1]
            if len(on) >= d and flint.fmpq_mat([[a - b for a, b in zip(v, on[0])] for v in on[1:]]).rank() == d - 1:
                out.append(i)
        return out

    def sample(self) -> tuple:
        return centroid(self.vertices)

    def to_json(self) -> dict:
        return {"polytope": [[format_rational(v) for v in self.constraints[i]] for i in self.facets()],
                "vertices": [[format_rational(x) for x in v] for v in self.vertices]}


def box_cell(box: Box, method: str):
    """The whole box as a cell of the given kind (``interval``, ``polygon`` or ``polytope``)."""
    lo, hi = [rational(v) for v in box.lower], [rational(v) for v in box.upper]
    if any(a >= b for a, b in zip(lo, hi)):
        raise ValueError("the domain box must have positive width in every coordinate")
    if method == "interval":
        return Interval(lo[0], hi[0])
    if method == "polygon":
        return Polygon(((lo[0], lo[1]), (hi[0], lo[1]), (hi[0], hi[1]), (lo[0], hi[1])))
    d = len(lo)
    cons = []
    for k in range(d):
        e = [ZERO] * d
        e[k] = ONE
        cons.append(tuple(e) + (-lo[k],))
        cons.append(tuple(-v for v in e) + (hi[k],))
    if method == "polytope":
        return Polytope(tuple(cons))
    corners = list(product(*[(0, 1)] * d))          # 0: the lower face (constraint 2k) is tight
    return Vertices(tuple(cons), tuple(tuple((lo, hi)[s][k] for k, s in enumerate(c)) for c in corners),
                    tuple(sum(1 << (2 * k + s) for k, s in enumerate(c)) for c in corners))


def difference(p: Affine, q: Affine) -> Affine:
    return tuple(a - b for a, b in zip(p, q))


def argmax_split(cell, pieces: list[Affine]) -> list[tuple[object, int]]:
    """Split ``cell`` into the full-dimensional parts where piece j is a maximum.

    Returns ``(part, j)`` with j the smallest index among pieces identical to the winner on the
    cell (identical pieces tie everywhere and never split a cell).  The parts cover the cell and
    have disjoint interiors.
    """
    if len(pieces) == 1:
        return [(cell, 0)]
    if len(pieces) == 2:                 # the common ReLU case: one comparison
        g = difference(pieces[0], pieces[1])
        if is_constant(g):
            return [(cell, 0 if g[-1] >= 0 else 1)]
        if isinstance(cell, Vertices):
            return [(part, j) for j, part in enumerate(cell.cut(g)) if part is not None]
        s = cell.side(g)
        if s != 0:
            return [(cell, 0 if s > 0 else 1)]
        return [(cell.clip(g), 0), (cell.clip(tuple(-v for v in g)), 1)]
    out = []
    for j, p in enumerate(pieces):
        part = cell
        for i, q in enumerate(pieces):
            if i == j:
                continue
            g = difference(p, q)
            if is_constant(g):
                if g[-1] > 0 or (g[-1] == 0 and i > j):
                    continue
                part = None
                break
            s = part.side(g)
            if s > 0:
                continue
            if s < 0:
                part = None
                break
            part = part.clip(g)
        if part is not None:
            out.append((part, j))
    return out
