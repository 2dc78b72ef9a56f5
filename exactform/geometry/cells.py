"""Exact convex cells of a box domain and their splitting by affine functions.

An affine function of ``x ∈ Q^d`` is a tuple ``(a_1, ..., a_d, c)`` of exact rationals (flint
``fmpq``, the fast exact type; ``rational`` converts ``Fraction``/int and refuses floats) meaning
``a·x + c``.  A cell is a full-dimensional convex polytope with rational data:

- ``Interval`` (d = 1): its two endpoints;
- ``Polygon`` (d = 2): its vertices, counter-clockwise;
- ``Polytope`` (any d): its inequalities ``g(x) ≥ 0``, decided by exact LP (``geometry.lp``);
- ``Vertices`` (any d): its inequalities and its vertices with their incidences (the double
  description), so that deciding and splitting need no LP, only exact evaluations.

Invariant: every cell is full-dimensional and ``side``/``clip`` are exact, so splitting never
loses or invents a piece of the domain.  Cells are plain data (``to_json``) so that enumeration
of a sub-box is a pure function of serialisable inputs.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

import flint
import numpy as np

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

    def cut(self, g: Affine) -> tuple:
        """``(cell ∩ {g ≥ 0}, cell ∩ {g ≤ 0})``, each None when it is not full-dimensional
        (g not constant): one evaluation per endpoint, one root."""
        u, v = g[0] * self.lo + g[1], g[0] * self.hi + g[1]
        if u >= 0 and v >= 0:
            return self, None
        if u <= 0 and v <= 0:
            return None, self
        root = -g[1] / g[0]
        lower, upper = Interval(self.lo, root), Interval(root, self.hi)
        return (upper, lower) if g[0] > 0 else (lower, upper)

    def measure(self) -> flint.fmpq:
        return self.hi - self.lo

    def sample(self) -> tuple:
        return ((self.lo + self.hi) / 2,)

    def to_json(self) -> dict:
        return {"interval": [format_rational(self.lo), format_rational(self.hi)]}

    def halfspaces(self) -> list[Affine]:
        return [(ONE, -self.lo), (-ONE, self.hi)]


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

    def halfspaces(self) -> list[Affine]:
        """One per edge: the interior is on its left (counter-clockwise order)."""
        out = []
        vs = self.vertices
        for (x1, y1), (x2, y2) in zip(vs, vs[1:] + vs[:1]):
            if (x1, y1) != (x2, y2):
                g = normalized((y1 - y2, x2 - x1, (y2 - y1) * x1 - (x2 - x1) * y1))
                if g not in out:
                    out.append(g)
        return out


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

    def halfspaces(self) -> list[Affine]:
        return list(self.constraints)


def integer_form(g: Affine) -> tuple:
    """The integer positive multiple of ``g`` (same sign at every point)."""
    den = math.lcm(*(int(v.q) for v in g))
    return tuple(int(v.p) * (den // int(v.q)) for v in g)


def homogeneous(point) -> tuple:
    """``point`` (``fmpq``) as coprime integers ``(X_1..X_d, w)``, ``w > 0``, ``point = X / w``."""
    w = math.lcm(*(int(v.q) for v in point))
    return tuple(int(v.p) * (w // int(v.q)) for v in point) + (w,)


def to_point(X: tuple) -> tuple:
    """The ``fmpq`` point of homogeneous integers ``X``."""
    return tuple(Q(x, X[-1]) for x in X[:-1])


def dot(g: tuple, X: tuple) -> int:
    """``w · g(X / w)`` for an integer form ``g`` and a homogeneous point ``X``: g's sign there."""
    return sum(map(operator.mul, g, X))


@dataclass(frozen=True)
class Vertices:
    """A polytope ``{x : g(x) ≥ 0 for g in constraints}`` with all its vertices, as homogeneous
    integer points (``homogeneous``): bit i of ``tight[k]`` is set exactly when
    ``constraints[i]`` vanishes at ``points[k]``.

    Invariant: ``points`` are exactly the polytope's vertices, without repeats.  A cut by a
    hyperplane keeps the vertices on each side and adds one new vertex on every edge it crosses;
    ``u, w`` span an edge exactly when no third vertex is tight on every constraint tight at both
    (the combinatorial adjacency test of the double description method, valid under degeneracy:
    the smallest face holding u and w is cut out by those constraints and is an edge exactly when
    it has no third vertex), and at least d − 1 constraints are tight at both."""
    constraints: tuple  # (g, ...) meaning g(x) ≥ 0 for each g
    points: tuple       # (X_1..X_d, w) integers, one vertex each
    tight: tuple        # incidence bit masks, one per vertex

    @property
    def vertices(self) -> tuple:
        return tuple(map(to_point, self.points))

    def values(self, g: Affine) -> list[int]:
        """Integers with the signs of ``g`` at the vertices (positive multiples of its values)."""
        gi = integer_form(g)
        return [dot(gi, p) for p in self.points]

    def _extremes(self, g: Affine) -> tuple:
        gi = integer_form(g)
        scale = Q(gi[-1]) / g[-1] if g[-1] else next(Q(a) / b for a, b in zip(gi, g) if b)
        values = [Q(dot(gi, p), p[-1]) for p in self.points]
        return min(values) / scale, max(values) / scale

    def side(self, g: Affine) -> int:
        values = self.values(g)
        return 1 if min(values) >= 0 else (-1 if max(values) <= 0 else 0)

    def clip(self, g: Affine) -> "Vertices":
        return self.cut(g)[0]

    def cut(self, g: Affine) -> tuple:
        """``(cell ∩ {g ≥ 0}, cell ∩ {g ≤ 0})``, each None when it is not full-dimensional."""
        points, tight = self.points, self.tight
        values = self.values(g)
        pos = [k for k, v in enumerate(values) if v > 0]
        neg = [k for k, v in enumerate(values) if v < 0]
        if not neg:
            return self, None
        if not pos:
            return None, self
        d, bit = len(g) - 1, 1 << len(self.constraints)
        zero = [(points[k], tight[k] | bit) for k, v in enumerate(values) if v == 0]
        on = _incidence(tight)
        crossing = []
        for i, j in _candidate_edges(tight, pos, neg, d - 1, len(self.constraints)):
            common = tight[i] & tight[j]
            if _no_third(on, common, (1 << i) | (1 << j)):
                p, q, a, b = points[i], points[j], values[i], values[j]
                X = [a * y - b * x for x, y in zip(p, q)]     # on the edge, where g vanishes
                c = math.gcd(*X)
                crossing.append((tuple(x // c for x in X), common | bit))
        h = normalized(g)

        def part(keep, constraint):
            new = [(points[k], tight[k]) for k in keep] + zero + crossing
            return Vertices(self.constraints + (constraint,), tuple(p for p, _ in new), tuple(t for _, t in new))
        return part(pos, h), part(neg, tuple(-v for v in h))

    def facets(self) -> list[int]:
        """Indices of the constraints whose zero set meets the cell in a (d − 1)-face."""
        d = len(self.points[0]) - 1
        out = []
        for i in range(len(self.constraints)):
            on = [p for p, t in zip(self.points, self.tight) if t >> i & 1]
            if len(on) >= d and flint.fmpz_mat([list(p) for p in on]).rank() == d:
                out.append(i)
        return out

    def sample(self) -> tuple:
        return centroid(self.vertices)

    def to_json(self) -> dict:
        return {"polytope": [[format_rational(v) for v in g] for g in self.halfspaces()],
                "vertices": [[format_rational(x) for x in v] for v in self.vertices]}

    def halfspaces(self) -> list[Affine]:
        """The facet-defining constraints (no redundant one)."""
        return [self.constraints[i] for i in self.facets()]


def _incidence(tight) -> dict[int, int]:
    """Constraint bit -> bit mask of the vertices tight on it."""
    on: dict[int, int] = {}
    for k, t in enumerate(tight):
        while t:
            low = t & -t
            on[low] = on.get(low, 0) | 1 << k
            t ^= low
    return on


def _candidate_edges(tight, pos, neg, at_least: int, bits: int):
    """Pairs (i in pos, j in neg) whose vertices are tight together on ``at_least`` constraints."""
    if bits <= 64:                                   # one vectorised popcount over all pairs
        masks = np.array(tight, dtype=np.uint64)
        count = np.bitwise_count(masks[pos][:, None] & masks[neg][None, :])
        return [(pos[a], neg[b]) for a, b in zip(*np.nonzero(count >= at_least))]
    return [(i, j) for i in pos for j in neg if (tight[i] & tight[j]).bit_count() >= at_least]


def _no_third(on: dict, common: int, pair: int) -> bool:
    """No vertex but the two of ``pair`` is tight on every constraint of ``common`` (both are)."""
    shared = -1
    while common:
        low = common & -common
        shared &= on[low]
        if shared == pair:
            return True
        common ^= low
    return shared == pair


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
    return Vertices(tuple(cons), tuple(homogeneous([(lo, hi)[s][k] for k, s in enumerate(c)]) for c in corners),
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
        if isinstance(cell, (Vertices, Interval)):
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
