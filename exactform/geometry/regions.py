"""Exact linear-region and activation-region counts (claim C7) for Maxout nets and hardmax
Transformers on their box domains.

Method.  A model is a sequence of *stages*; on a cell where the stage's input is affine in x, the
stage is decided by argmax choices among affine functions (a Maxout unit's pieces, a ReLU's
``[v, 0]``, a hardmax head's scores).  ``cells_in_box`` splits the box exactly by those choices,
stage by stage (``geometry.cells``), so every final cell carries the exact affine map of the output.

- An *activation region* is a set of points with the same choices at every unit (ties between
  pieces that are identical on the cell are one choice); each is convex, so it is one cell.
- A *linear region* is a connected component of the interior of ``{x : f = A on a neighbourhood}``
  for one affine map A: cells with equal output maps are merged when they share a facet.

Both counts are counted from the cells, never computed from a formula.  Enumeration of a sub-box,
and the merge of its cells within it, is a pure, deterministic function of (model, box, method)
(``merged_cells_in_box``); ``count_regions`` then joins the sub-boxes' local regions across their
shared facets (``merge_boxes``, on boundary cells only), so any split of the domain gives the same
counts.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from itertools import product

from ..models import Box, MaxoutNet, Transformer
from ..models.transformer import Attention, FeedForward, dense
from .cells import ONE, ZERO, Interval, Polygon, Vertices, argmax_split, box_cell, exact_key, rational
from .facets import adjacent_pairs

METHODS = {"interval": "exact-1d-breakpoints", "polygon": "exact-2d-polygons", "polytope": "exact-lp",
           "vertices": "exact-double-description"}


class RegionLimit(RuntimeError):
    """More cells than ``max_regions`` would be enumerated."""


class NotPiecewiseLinear(ValueError):
    """An attention score is not affine in x on a cell (query and key both vary)."""


# --- affine maps of x: tuples (a_1..a_d, c) ------------------------------------------------------

def combine(coefs, maps, const, d: int) -> tuple:
    """``Σ coefs[k]·maps[k] + const`` as an affine map (coefficients and maps are ``fmpq``)."""
    terms = [(a, m) for a, m in zip(coefs, maps) if a]
    if not terms:
        return (ZERO,) * d + (const,)
    a, m = terms[0]
    out = [a * v for v in m]
    for a, m in terms[1:]:
        out = [u + a * v for u, v in zip(out, m)]
    out[-1] += const
    return tuple(out)


def coordinate_maps(d: int) -> list[tuple]:
    return [tuple(ONE if k == i else ZERO for k in range(d)) + (ZERO,) for i in range(d)]


def bilinear(qs: list[tuple], ks: list[tuple], d: int) -> tuple:
    """``Σ_r q_r(x)·k_r(x)`` as an affine map; raises ``NotPiecewiseLinear`` if it is quadratic."""
    quad = [[ZERO] * d for _ in range(d)]
    lin = [ZERO] * d
    const = ZERO
    for q, k in zip(qs, ks):
        cq, ck = q[-1], k[-1]
        const += cq * ck
        for a in range(d):
            lin[a] += cq * k[a] + ck * q[a]
            if q[a]:
                for b in range(d):
                    quad[a][b] += q[a] * k[b]
    if any(quad[a][b] + quad[b][a] for a in range(d) for b in range(d)):
        raise NotPiecewiseLinear("an attention score is quadratic in the input on a cell "
                                 "(query and key both depend on x); its regions are not polyhedral")
    return tuple(lin) + (const,)


# --- stage programs --------------------------------------------------------------------------------

class MaxoutProgram:
    """State: the affine maps of the current layer's activations."""

    def __init__(self, net: MaxoutNet):
        self.net, self.d = net, net.input_dim
        self.layers = [([[[rational(v) for v in w] for w in ws] for ws in layer.weight],
                        [[rational(b) for b in bs] for bs in layer.bias]) for layer in net.layers]
        self.readout = [([rational(v) for v in w], rational(b)) for w, b in zip(net.readout_weight, net.readout_bias)]

    def initial(self):
        return coordinate_maps(self.d)

    def stages(self):
        return [self._layer(weight, bias) for weight, bias in self.layers]

    def _layer(self, weight, bias):
        d = self.d

        def stage(h):
            pieces = [[combine(w, h, b, d) for w, b in zip(ws, bs)] for ws, bs in zip(weight, bias)]
            return pieces, lambda choice: [ps[j] for ps, j in zip(pieces, choice)]
        return stage

    def output(self, h) -> tuple:
        return tuple(combine(w, h, b, self.d) for w, b in self.readout)


class TransformerProgram:
    """State: ``X[t][r]``, the affine map of coordinate r of token t (hardmax only)."""

    def __init__(self, tf: Transformer):
        if not tf.is_hardmax:
            raise ValueError("softmax attention is not piecewise linear; count regions of hardmax models")
        self.tf, self.d = tf, tf.input_dim

    def initial(self):
        tf = self.tf
        embed = dense(tf.embed_weight, self.d)
        return [[tuple(map(rational, embed[r])) + (rational(tf.embed_bias[t][r]),)
                 for r in range(tf.width)] for t in range(tf.tokens)]

    def stages(self):
        return [self._feedforward(b) if isinstance(b, FeedForward) else self._attention(b)
                for b in self.tf.blocks]

    def _feedforward(self, block: FeedForward):
        d, zero = self.d, (ZERO,) * (self.d + 1)
        reads, writes = block.reads, block.writes
        w1 = [([rational(row.get(r, ZERO)) for r in reads], rational(b)) for row, b in zip(block.w1, block.b1)]
        w2 = {r: ([ONE] + [rational(v) for v in dense([block.w2[r]], block.hidden)[0]], rational(block.b2[r]))
              for r in writes}

        def stage(X):
            pre = [[combine(row, [x[r] for r in reads], b, d) for row, b in w1] for x in X]
            decisions = [[p, zero] for ps in pre for p in ps]

            def update(choice):
                out, k = [], 0
                for x, ps in zip(X, pre):
                    act = [p if choice[k + h] == 0 else zero for h, p in enumerate(ps)]
                    k += len(ps)
                    y = list(x)
                    for r, (row, b) in w2.items():
                        y[r] = combine(row, [x[r]] + act, b, d)
                    out.append(y)
                return out
            return decisions, update
        return stage

    def _attention(self, block: Attention):
        d, T = self.d, self.tf.tokens

        def exact(m, cols):
            return [[rational(v) for v in row] for row in dense(m, cols)]
        w = self.tf.width
        mats = [(exact(h.query, w), exact(h.key, w), exact(h.value, w), exact(h.output, len(h.value)))
                for h in block.heads]

        def stage(X):
            def apply(m, x):
                return [combine(row, x, ZERO, d) for row in m]
            heads = []
            for Qm, Km, Vm, Om in mats:
                q = [apply(Qm, x) for x in X]
                k = [apply(Km, x) for x in X]
                v = [apply(Vm, x) for x in X]
                heads.append((Om, [[bilinear(q[i], k[j], d) for j in range(T)] for i in range(T)], v))
            decisions = [scores[i] for _, scores, _ in heads for i in range(T)]

            def update(choice):
                Y = [list(x) for x in X]
                for n, (Om, scores, v) in enumerate(heads):
                    for i in range(T):
                        win = scores[i][choice[n * T + i]]
                        tie = [j for j in range(T) if scores[i][j] == win]
                        share = [rational(Fraction(1, len(tie)))] * len(tie)
                        mean = [combine(share, [v[j][c] for j in tie], ZERO, d) for c in range(len(v[0]))]
                        for r, row in enumerate(Om):
                            if any(row):
                                Y[i][r] = combine([ONE] + row, [Y[i][r]] + mean, ZERO, d)
                return Y
            return decisions, update
        return stage

    def output(self, X) -> tuple:
        x = X[self.tf.readout_token]
        return tuple(combine([rational(v) for v in w], x, rational(b), self.d)
                     for w, b in zip(dense(self.tf.readout_weight, self.tf.width), self.tf.readout_bias))


def program_of(model):
    return MaxoutProgram(model) if isinstance(model, MaxoutNet) else TransformerProgram(model)


# --- enumeration ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Piece:
    """A final cell: its activation choices and the exact affine maps of the outputs on it."""
    cell: object
    pattern: tuple
    output: tuple

    def to_json(self) -> dict:
        from ..numbers import format_rational
        return {**self.cell.to_json(), "pattern": list(self.pattern),
                "output": [[format_rational(v) for v in m] for m in self.output]}


def default_method(dim: int) -> str:
    return {1: "interval", 2: "polygon"}.get(dim, "vertices")


def checked_method(method: str | None, dim: int) -> str:
    """``method``, or the default one for ``dim``; ``ValueError`` if it does not apply."""
    method = method or default_method(dim)
    if method not in METHODS or (method == "interval" and dim != 1) or (method == "polygon" and dim != 2):
        raise ValueError(f"method {method!r} does not apply to input dimension {dim}")
    return method


def refine(cell, decisions, room: int | None = None) -> list[tuple[object, tuple]]:
    """Split a cell by a sequence of argmax decisions; returns (part, choices).  Every cut leaves
    at least as many parts as before, so more than ``room`` parts at any cut is ``RegionLimit``
    then, not after the last decision."""
    parts = [(cell, ())]
    for pieces in decisions:
        parts = [(s, ch + (j,)) for p, ch in parts for s, j in argmax_split(p, pieces)]
        if room is not None and len(parts) > room:
            raise RegionLimit("")
    return parts


def cells_in_box(model, box: Box, method: str | None = None, max_cells: int | None = None,
                 progress=None, executor=None) -> list[Piece]:
    """All activation cells of ``model`` inside ``box`` (a pure, deterministic function).

    With an ``executor`` of several workers, once a stage has left ``DISTRIBUTE_AT`` cells per
    worker, the cells are refined through the remaining stages in contiguous chunks, one task
    each: every cell's refinement is independent of the others, and the chunks' cells, joined in
    order, are the serial list itself."""
    method = method or default_method(box.dim)
    program = program_of(model)
    items = [(box_cell(box, method), (), program.initial())]
    stages = program.stages()
    for k in range(len(stages)):
        workers = executor.workers if executor is not None else 1
        if workers > 1 and len(items) >= DISTRIBUTE_AT * workers:
            size = -(-len(items) // (4 * workers))
            chunks = [items[a:a + size] for a in range(0, len(items), size)]
            found = executor.map(partial(refine_items, model, k, max_cells), chunks)
            items = [item for f in found for item in f]
            if progress:
                progress(len(stages), len(stages), len(items))
            break
        items = refine_items(model, k, max_cells, items, stages[k:k + 1], program)
        if progress:
            progress(k + 1, len(stages), len(items))
    if max_cells is not None and len(items) > max_cells:
        raise RegionLimit(f"more than {max_cells} activation cells; raise --max-regions to count them all")
    return [Piece(c, p, program.output(s)) for c, p, s in items]


DISTRIBUTE_AT = 256         # cells per worker before distributing (on 2 cores, fewer ran slower)


def refine_items(model, first: int, max_cells: int | None, items: list, stages=None, program=None) -> list:
    """``items`` (cell, pattern, state) refined through ``stages`` (default: all from ``first`` on)."""
    program = program or program_of(model)
    stages = stages if stages is not None else program.stages()[first:]
    for k, stage in enumerate(stages, first):
        new = []
        for n, (cell, pattern, state) in enumerate(items):
            decisions, update = stage(state)
            room = None if max_cells is None else max_cells - len(new) - (len(items) - n - 1)
            try:                # each cell still to refine leaves at least one part
                parts = refine(cell, decisions, room)
            except RegionLimit:
                raise RegionLimit(f"more than {max_cells} activation cells in stage {k + 1}; "
                                  f"raise --max-regions to count them all") from None
            new.extend((part, pattern + choice, update(choice)) for part, choice in parts)
        items = new
    return items


# --- merging ---------------------------------------------------------------------------------------

def component_labels(n: int, pairs) -> list[int]:
    """Labels ``0..k-1`` of the ``n`` nodes, equal exactly for nodes connected by ``pairs``."""
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i, j in pairs:
        parent[find(i)] = find(j)
    dense: dict[int, int] = {}
    return [dense.setdefault(find(i), len(dense)) for i in range(n)]


def components(n: int, pairs) -> int:
    """The number of connected components of ``n`` nodes joined by ``pairs``."""
    return len(set(component_labels(n, pairs)))


def related(p: Piece, q: Piece) -> bool:
    """Only pieces with equal output maps or equal patterns are ever merged."""
    return p.output == q.output or p.pattern == q.pattern


def relation_keys(p: Piece) -> tuple:
    """Keys shared by two pieces exactly when they are ``related``."""
    return ("map", exact_key(p.output)), ("pattern", p.pattern)


def by_relation(pieces, pairs) -> tuple[list, list]:
    """``pairs`` split into those with equal output maps and those with equal activation patterns."""
    return ([(i, j) for i, j in pairs if pieces[i].output == pieces[j].output],
            [(i, j) for i, j in pairs if pieces[i].pattern == pieces[j].pattern])


def boundary_cells(pieces: list, box: Box) -> list[int]:
    """The pieces whose cell (inside ``box``) may share a facet with a cell outside ``box``
    (necessary): it reaches a face of ``box`` along an edge (2-D) or at all (1-D; d-D by its
    vertices or exact LP)."""
    lo, hi = [rational(v) for v in box.lower], [rational(v) for v in box.upper]
    faces = (1 << 2 * box.dim) - 1      # Vertices cells: the first 2d constraints are the box's (box_cell)

    def reaches(cell) -> bool:
        if isinstance(cell, Interval):
            return cell.lo == lo[0] or cell.hi == hi[0]
        if isinstance(cell, Polygon):
            vs = cell.vertices
            return any(u[k] == v[k] and v[k] in (lo[k], hi[k])
                       for u, v in zip(vs, vs[1:] + vs[:1]) for k in (0, 1))
        if isinstance(cell, Vertices):
            return any(t & faces for t in cell.tight)
        extremes = [cell._extremes(g) for g in coordinate_maps(box.dim)]
        return any(a == lo[k] or b == hi[k] for k, (a, b) in enumerate(extremes))
    return [n for n, p in enumerate(pieces) if reaches(p.cell)]


@dataclass(frozen=True)
class BoxCells:
    """The cells of one sub-box, merged within it: cell n lies in local linear region
    ``maps[n]`` (of ``0..regions-1``) and local activation region ``patterns[n]`` (of
    ``0..activation_regions-1``); ``boundary`` lists every cell that may share a facet with a
    cell of another sub-box (``boundary_cells``)."""
    pieces: list
    maps: list
    patterns: list
    regions: int
    activation_regions: int
    boundary: list


def merged_cells_in_box(model, box: Box, method: str | None = None, max_cells: int | None = None,
                        progress=None, executor=None) -> BoxCells:
    """``cells_in_box`` with the merge inside ``box`` done too (a pure, deterministic function)."""
    pieces = cells_in_box(model, box, method, max_cells, progress, executor)
    pairs = adjacent_pairs(pieces, lambda i, j: related(pieces[i], pieces[j]), lambda n: relation_keys(pieces[n]))
    same_map, same_pattern = by_relation(pieces, pairs)
    maps, patterns = component_labels(len(pieces), same_map), component_labels(len(pieces), same_pattern)
    boundary = boundary_cells(pieces, box)
    return BoxCells(pieces, maps, patterns, max(maps, default=-1) + 1, max(patterns, default=-1) + 1, boundary)


def merge_boxes(found: list[BoxCells]) -> tuple[int, int]:
    """(regions, activation regions) of the whole box: the sub-boxes' local regions, joined
    across pairs of boundary cells of different sub-boxes that share a facet."""
    cells, box_of, map_node, pattern_node = [], [], [], []
    map_base = pattern_base = 0
    for b, f in enumerate(found):
        for n in f.boundary:
            cells.append(f.pieces[n])
            box_of.append(b)
            map_node.append(map_base + f.maps[n])
            pattern_node.append(pattern_base + f.patterns[n])
        map_base, pattern_base = map_base + f.regions, pattern_base + f.activation_regions
    pairs = adjacent_pairs(cells, lambda i, j: box_of[i] != box_of[j] and related(cells[i], cells[j]),
                           lambda n: relation_keys(cells[n]))
    same_map, same_pattern = by_relation(cells, pairs)
    return (components(map_base, [(map_node[i], map_node[j]) for i, j in same_map]),
            components(pattern_base, [(pattern_node[i], pattern_node[j]) for i, j in same_pattern]))


# --- the count -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RegionCount:
    regions: int
    activation_regions: int
    method: str
    pieces: list

    def to_json(self) -> dict:
        return {"regions": self.regions, "activation_regions": self.activation_regions, "method": self.method}


def split_box(box: Box, parts: int) -> list[Box]:
    """``parts`` equal slices along every coordinate (parts^d sub-boxes, in a fixed order)."""
    cuts = [[lo + (hi - lo) * Fraction(k, parts) for k in range(parts + 1)] for lo, hi in zip(box.lower, box.upper)]
    return [Box(tuple(c[i] for c, i in zip(cuts, idx)), tuple(c[i + 1] for c, i in zip(cuts, idx)))
            for idx in product(range(parts), repeat=box.dim)]


def parts_for(workers: int, dim: int) -> int:
    """Slices per coordinate giving at least 4 sub-boxes per worker in 1-D and 2-D (1 when
    serial); in more dimensions the cells themselves are distributed (``cells_in_box``)."""
    parts = 1
    while workers > 1 and dim <= 2 and parts ** dim < 4 * workers:
        parts += 1
    return parts


def count_regions(model, method: str | None = None, max_regions: int | None = None, parts: int = 1,
                  progress=None, executor=None) -> RegionCount:
    """Exact counts on ``model.domain``; ``parts > 1`` enumerates parts^d sub-boxes independently,
    one task each on ``executor`` (``exactform.executor``) when given, and ``parts == 1`` hands
    the executor the cells (``cells_in_box``); ``max_regions`` bounds the cells of each sub-box
    and, after merging, the regions."""
    method = checked_method(method, model.input_dim)
    subs = split_box(model.domain, parts)
    if executor is None or parts == 1:
        found = [merged_cells_in_box(model, sub, method, max_regions, progress, executor) for sub in subs]
    else:
        found = [None] * len(subs)
        task = partial(merged_cells_in_box, model, method=method, max_cells=max_regions)
        for k, (i, box_cells) in enumerate(executor.as_completed(task, subs)):
            found[i] = box_cells
            if progress:
                progress(k + 1, len(subs), sum(len(f.pieces) for f in found if f is not None))
    regions, activation = merge_boxes(found)
    pieces = [p for f in found for p in f.pieces]
    if max_regions is not None and activation > max_regions:
        raise RegionLimit(f"{activation} activation regions exceed {max_regions}; raise --max-regions to count them all")
    return RegionCount(regions, activation, METHODS[method], pieces)
