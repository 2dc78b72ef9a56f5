"""Which cells share a facet (a (d − 1)-dimensional face), decided exactly.

A facet of a cell lies on a hyperplane ``g = 0`` with ``g ≥ 0`` on the cell; ``plane`` keys the
hyperplane exactly, whatever the scaling of g, and says on which side the cell is.  Two cells with
disjoint interiors share a facet exactly when they have faces on one hyperplane, on opposite sides,
whose intersection is (d − 1)-dimensional (``facet_pairs``); cells are first grouped by hyperplane,
so only faces on one hyperplane are ever compared.
"""
from __future__ import annotations

from .cells import (ONE, ZERO, Interval, Polygon, Vertices, dot, exact_key,
                    integer_form, normalized, to_point)
from .lp import maximize


def plane(g) -> tuple[tuple, bool]:
    """``(key, positive)``: the hyperplane ``g = 0`` as an exact key, equal for ``g`` and every
    non-zero multiple of it, and whether ``g`` is the positive orientation of that key."""
    h = normalized(g)
    positive = next(a for a in h[:-1] if a) > 0
    return exact_key(h if positive else tuple(-v for v in h)), positive


def cell_facets(cell, every: bool = False, keys: dict | None = None) -> tuple[list, list]:
    """The cell's halfspaces ``g ≥ 0`` and, per halfspace, ``(plane key, positive, facet)`` as
    ``facet_pairs`` reads it.  ``Interval``, ``Polygon`` and ``Vertices`` cells give their facets
    only, unless ``every`` (then a ``Vertices`` cell gives all its constraints: no rank test);
    ``Polytope`` cells give all their constraints.  ``keys`` remembers ``plane`` by the identity of
    a constraint (shared by a cell's descendants)."""
    if isinstance(cell, Interval):
        halfspaces = cell.halfspaces()
        return halfspaces, [(*plane(g), None) for g in halfspaces]
    if isinstance(cell, Polygon):
        halfspaces, facets = [], []
        vs = cell.vertices
        for (x1, y1), (x2, y2) in zip(vs, vs[1:] + vs[:1]):
            if (x1, y1) == (x2, y2):
                continue
            g = normalized((y1 - y2, x2 - x1, (y2 - y1) * x1 - (x2 - x1) * y1))
            if g not in halfspaces:
                halfspaces.append(g)
            t1, t2 = (x1, x2) if x1 != x2 else (y1, y2)
            facets.append((*plane(g), (min(t1, t2), max(t1, t2))))
        return halfspaces, facets
    indices = cell.facets() if isinstance(cell, Vertices) and not every else range(len(cell.constraints))
    out = []
    for i in indices:
        g = cell.constraints[i]
        if keys is None:
            out.append((*plane(g), i))
        else:
            if id(g) not in keys:
                keys[id(g)] = g, plane(g)          # g kept alive: its id stays its own
            out.append((*keys[id(g)][1], i))
    return [cell.constraints[i] for i in indices], out


def facet_pairs(plus: list, minus: list, wanted=None, forms: dict | None = None) -> set[tuple[int, int]]:
    """Pairs ``(n, m)``, n < m, of a cell n of ``plus`` and a cell m of ``minus`` whose faces
    share a (d − 1)-dimensional set and for which ``wanted(n, m)`` holds (default: all).  Entries
    are ``(cell number, cell, facet)`` from ``cell_facets``, all on one hyperplane H: ``plus`` on
    its positive side, ``minus`` on its negative side."""
    if not plus or not minus:
        return set()
    wanted = wanted or (lambda n, m: True)
    cell = plus[0][1]
    if isinstance(cell, Vertices):
        return _vertices_pairs(plus, minus, wanted, forms)
    if isinstance(cell, Polygon):
        return _segment_pairs(plus, minus, wanted)
    if isinstance(cell, Interval):         # one point: every cell reaching it from either side
        found = [(n, m) for n, _, _ in plus for m, _, _ in minus]
    else:
        found = [(n, m) for n, P, i in plus for m, Q, j in minus
                 if _meet_on(P.constraints[i], [g for k, g in enumerate(P.constraints) if k != i]
                             + [g for k, g in enumerate(Q.constraints) if k != j])]
    return {(min(n, m), max(n, m)) for n, m in found if n != m and wanted(n, m)}


def adjacent_pairs(pieces: list, wanted, groups=None) -> set[tuple[int, int]]:
    """Pairs of pieces (``.cell``) sharing a facet, restricted to pairs for which ``wanted(i, j)``
    holds; ``groups(n)``, when given, lists keys of piece n such that i and j are wanted only
    when they share a key (it narrows the candidates)."""
    if not pieces:
        return set()
    if isinstance(pieces[0].cell, Interval):
        order = sorted(range(len(pieces)), key=lambda i: pieces[i].cell.lo)
        return {tuple(sorted((i, j))) for i, j in zip(order, order[1:])
                if pieces[i].cell.hi == pieces[j].cell.lo and wanted(i, j)}
    sides: dict[tuple, tuple[list, list]] = {}
    keys: dict = {}
    for n, piece in enumerate(pieces):
        _, facets = cell_facets(piece.cell, every=True, keys=keys)
        own = groups(n) if groups else (None,)
        for key, positive, facet in facets:
            for group in own:
                sides.setdefault((key, group), ([], []))[0 if positive else 1].append((n, piece.cell, facet))
    forms: dict = {}
    return {pair for plus, minus in sides.values() for pair in facet_pairs(plus, minus, wanted, forms)}


def _segment_pairs(plus, minus, wanted) -> set[tuple[int, int]]:
    """Edges on one line (parameter intervals ``(lo, hi)``) overlapping with positive length."""
    events = sorted((lo, hi, s, n) for s, side in enumerate((plus, minus)) for n, _, (lo, hi) in side)
    active: list[list] = [[], []]
    pairs = set()
    for lo, hi, s, n in events:
        other = active[1 - s] = [(h, m) for h, m in active[1 - s] if h > lo]
        pairs.update((min(n, m), max(n, m)) for _, m in other if m != n and wanted(n, m))
        active[s].append((hi, n))
    return pairs


def _vertices_pairs(plus, minus, wanted, forms) -> set[tuple[int, int]]:
    """Faces swept along one coordinate that varies on H; overlapping bounding boxes are decided
    by ``_faces_meet``."""
    events = sorted(_face_extent(P, i, s, n) for s, side in enumerate((plus, minus)) for n, P, i in side)
    active: list[list] = [[], []]
    pairs = set()
    for lo, hi, s, n, i, box, P in events:
        if lo == hi:
            continue                                 # lower-dimensional: not a facet
        other = active[1 - s] = [a for a in active[1 - s] if a[0] > lo]
        for _, m, j, box2, Q in other:
            if n != m and wanted(n, m) and _boxes_meet(box, box2) and (
                    _faces_meet(P, i, Q, j, forms) if s == 0 else _faces_meet(Q, j, P, i, forms)):
                pairs.add((min(n, m), max(n, m)))
        active[s].append((hi, n, i, box, P))
    return pairs


def _form(g, forms: dict | None) -> tuple:
    """``integer_form(g)``, remembered by the identity of ``g`` (shared by a cell's descendants)."""
    if forms is None:
        return integer_form(g)
    if id(g) not in forms:
        forms[id(g)] = g, integer_form(g)       # g kept alive: its id stays its own
    return forms[id(g)][1]


def _boxes_meet(a, b) -> bool:
    """The bounding boxes of two faces on one hyperplane overlap openly along every coordinate
    that varies on them (necessary for the faces to share a (d − 1)-dimensional set)."""
    return all(lo < hi2 and lo2 < hi for (lo, hi), (lo2, hi2) in zip(a, b) if lo < hi or lo2 < hi2)


def _face_extent(cell: Vertices, i: int, s: int, n: int) -> tuple:
    """``(lo, hi, s, n, i, box, cell)``: the extent of the cell's face on its constraint i along
    a coordinate that varies on that hyperplane (``lo == hi`` when the face is not a facet), and
    the face's bounding box."""
    g = cell.constraints[i]
    on = [to_point(p) for p, t in zip(cell.points, cell.tight) if t >> i & 1]
    if len(on) < len(g) - 1:
        return ZERO, ZERO, s, n, i, (), cell
    box = [(min(c), max(c)) for c in zip(*on)]
    return (*box[1 if not any(g[1:-1]) else 0], s, n, i, box, cell)


def _faces_meet(P: Vertices, i: int, Q: Vertices, j: int, forms: dict | None = None) -> bool:
    """The faces of P on its constraint i and of Q on its constraint j (the same hyperplane H,
    opposite sides) share a (d − 1)-dimensional set.  Disjoint when a constraint of one cell is
    ≤ 0 on the other's face (it is > 0 on the relative interior of its own face, as it is not
    H); a constraint of both (the same object, from a common ancestor) is not tried: it is ≥ 0 on
    both faces.  Shared when a point of H satisfies every other constraint of both strictly: the
    sum of a face's homogeneous vertices (a positive combination of them, inside the face), or of
    both faces'; else the exact LP decides."""
    F = [v for v, t in zip(P.points, P.tight) if t >> i & 1]
    G = [v for v, t in zip(Q.points, Q.tight) if t >> j & 1]
    if min(len(F), len(G)) < len(P.points[0]) - 1:
        return False                                     # a face with fewer than d vertices
    others = [g for k, g in enumerate(P.constraints) if k != i], [g for k, g in enumerate(Q.constraints) if k != j]
    common = {id(g) for g in others[0]} & {id(g) for g in others[1]}
    for cons, face in ((others[0], G), (others[1], F)):
        if any(max(dot(_form(g, forms), p) for p in face) <= 0 for g in cons if id(g) not in common):
            return False
    sf, sg = [sum(c) for c in zip(*F)], [sum(c) for c in zip(*G)]     # homogeneous: inside each face
    for x in (sf, sg, [a + b for a, b in zip(sf, sg)]):
        if all(dot(_form(g, forms), x) > 0 for g in others[0] + others[1]):
            return True
    return _meet_on(P.constraints[i], others[0] + others[1])


def _meet_on(h, constraints) -> bool:
    """Some point of the hyperplane ``h = 0`` satisfies every one of ``constraints`` with a
    positive margin (exact LP)."""
    d = len(h) - 1
    A = [[-a for a in g[:-1]] + [ONE] for g in constraints]
    b = [g[-1] for g in constraints]
    A += [list(h[:-1]) + [ZERO], [-a for a in h[:-1]] + [ZERO], [ZERO] * d + [ONE]]
    b += [-h[-1], h[-1], ONE]
    best = maximize([ZERO] * d + [ONE], A, b)
    return best is not None and best > 0
