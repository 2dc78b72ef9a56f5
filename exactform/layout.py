"""The token-shift construction's layout (docs/spec.md §2), stated once; standard library only.

A token column of width ``w = 1 + T + 3N`` (T tokens = max rank, ``N = max_l n_l``) is tiled by
five named coordinate blocks, in this order: ``const`` (the constant 1), ``shift`` (``c_0..c_{T−1}``,
``c_j = [t ≠ j]``, set by the embedding and never written), ``h`` (the layer input), ``z`` (the
pieces of the token's slot) and ``out`` (the max over tokens).  Each Maxout layer becomes three
blocks whose reads and writes are ``SHAPES``; unit i's slot j uses piece ``padded_piece(rank_i, j)``
with the shift ``R_ij`` of ``shift_constants``; the sizes follow the closed formula ``closed_sizes`` (C4).

``construct/`` builds from this module and ``provers/`` queries it; the checker keeps its own reading
of the format and imports nothing of it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

CONSTRUCTION = "token-shift"
NAMES = ("const", "shift", "h", "z", "out")
"""The coordinate blocks of a token column, in order."""


@dataclass(frozen=True)
class Block:
    """A named half-open range ``[start, stop)`` of coordinates; ``block[i]`` is its i-th coordinate."""
    name: str
    start: int
    stop: int

    def __post_init__(self):
        if not 0 <= self.start <= self.stop:
            raise ValueError(f"block {self.name}: [{self.start}, {self.stop}) is not a range")

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < len(self):
            raise IndexError(f"block {self.name} has {len(self)} coordinates, not {i + 1}")
        return self.start + i

    def __contains__(self, coordinate: int) -> bool:
        return self.start <= coordinate < self.stop

    def first(self, k: int) -> slice:
        """The slice of the block's first k coordinates."""
        if not 0 <= k <= len(self):
            raise IndexError(f"block {self.name} has {len(self)} coordinates, not {k}")
        return slice(self.start, self.start + k)


@dataclass(frozen=True)
class BlockShape:
    """One of the three Transformer blocks a Maxout layer becomes: which coordinate blocks it
    reads (besides its biases) and which it writes."""
    name: str
    kind: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]


SHAPES = (BlockShape("pieces", "feedforward", ("shift", "h"), ("z",)),
          BlockShape("max", "attention", ("const", "z"), ("out",)),
          BlockShape("advance", "feedforward", ("h", "z", "out"), ("h", "z", "out")))
"""Per Maxout layer, in order: the pieces block (``z_i = a_{i,t}(h)`` via shifted ReLU pairs), the
max block (one head per unit: query 1, key = value = ``z_i``, output ``out_i``) and the advance
block (``h ← out``, ``z ← 0``, ``out ← 0``, as identity pairs)."""


@dataclass(frozen=True)
class Layout:
    """The token-shift layout for T tokens and N units: the blocks of ``NAMES`` tile ``[0, width)``
    contiguously, in order (so they are disjoint and within the width); checked on construction."""
    tokens: int
    n: int
    blocks: dict[str, Block] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if type(self.tokens) is not int or type(self.n) is not int or self.tokens < 1 or self.n < 1:
            raise ValueError(f"a token-shift layout needs T ≥ 1 tokens and N ≥ 1 units, not {self.tokens}, {self.n}")
        sizes = dict(zip(NAMES, (1, self.tokens, self.n, self.n, self.n)))
        blocks, start = {}, 0
        for name in NAMES:
            blocks[name] = Block(name, start, start + sizes[name])
            start = blocks[name].stop
        if start != self.width:
            raise ValueError(f"the blocks cover [0, {start}), not the width {self.width}")
        object.__setattr__(self, "blocks", blocks)

    @property
    def width(self) -> int:
        return 1 + self.tokens + 3 * self.n

    @property
    def const(self) -> int:
        return self.blocks["const"][0]

    def shift(self, j: int) -> int:
        return self.blocks["shift"][j]

    def h(self, i: int) -> int:
        return self.blocks["h"][i]

    def z(self, i: int) -> int:
        return self.blocks["z"][i]

    def out(self, i: int) -> int:
        return self.blocks["out"][i]

    def coordinates(self, names: tuple[str, ...]) -> set[int]:
        """Every coordinate of the named blocks."""
        return {r for name in names for r in range(self.blocks[name].start, self.blocks[name].stop)}

    def to_json(self) -> dict:
        """The ``layout`` field of a compiled Transformer."""
        return {"construction": CONSTRUCTION} | {name: [b.start, b.stop] for name, b in self.blocks.items()}

    @classmethod
    def from_json(cls, doc: dict) -> Layout:
        """The layout a Transformer declares; ``ValueError`` unless it is exactly a token-shift layout."""
        ranges = [doc.get(name) for name in NAMES] if isinstance(doc, dict) else []
        lay = None
        if ranges and all(isinstance(r, list) and len(r) == 2 and all(type(x) is int for x in r) for r in ranges):
            try:
                lay = cls(ranges[1][1] - ranges[1][0], ranges[2][1] - ranges[2][0])
            except ValueError:
                pass
        if lay is None or lay.to_json() != doc:
            raise ValueError(f"the Transformer does not declare the {CONSTRUCTION} layout")
        return lay


def padded_piece(rank: int, slot: int) -> int:
    """Piece index used for slot j of a unit of this rank: ranks are padded to T by repeating the last piece."""
    return min(slot, rank - 1)


def power_of_two_at_least(x: Fraction) -> Fraction:
    """The smallest ``2^k`` (k ∈ Z) with ``2^k ≥ x``; 1 when x ≤ 0."""
    if x <= 0:
        return Fraction(1)
    k = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** k < x:
        k += 1
    while Fraction(2) ** (k - 1) >= x:
        k -= 1
    return Fraction(2) ** k


def shift_constants(net, maxout_bounds, margin: Fraction = Fraction(2)) -> list[list[list[Fraction]]]:
    """``R[l][i][j]``: the least power of two ≥ margin·max|a_ij| over layer l's input box, a_ij the
    padded piece of slot j.  ``maxout_bounds(net).pieces`` gives the exact piece intervals
    (``geometry.bounds.maxout_bounds``); it is called after ``check_size`` (bounded work)."""
    check_size(net)
    pieces = maxout_bounds(net).pieces
    return [[[power_of_two_at_least(margin * max(-lo, hi))
              for lo, hi in (pieces[l][i][padded_piece(rank, j)] for j in range(net.max_rank))]
             for i, rank in enumerate(layer.ranks)] for l, layer in enumerate(net.layers)]


# --- claim C4: sizes from a closed formula -------------------------------------------------------

@dataclass(frozen=True)
class Sizes:
    """The dense sizes of the construction: ``hidden`` per feed-forward block, ``heads`` per attention block."""
    blocks: int
    tokens: int
    width: int
    heads: list[int]
    hidden: list[int]
    parameters: int


def closed_sizes(widths: list[int], max_rank: int, output_dim: int) -> Sizes:
    """With n_l units per layer, N = max_l n_l (l = 0..L), T = max rank, d = n_0, o outputs:
    width w = 1 + T + 3N; 3L blocks; hidden 2 n_l T (pieces) and 2(n_{l−1} + 2 n_l) (advance);
    heads n_l; parameters w·d + T·w + Σ_FF (2hw + h + w) + Σ_heads 4w + o(w + 1)."""
    T, n = max_rank, widths
    w = 1 + T + 3 * max(n)
    hidden = []
    for l in range(1, len(n)):
        hidden += [2 * n[l] * T, 2 * (n[l - 1] + 2 * n[l])]
    params = w * n[0] + T * w + sum(2 * h * w + h + w for h in hidden) + 4 * w * sum(n[1:]) + output_dim * (w + 1)
    return Sizes(3 * (len(n) - 1), T, w, list(n[1:]), hidden, params)


def closed_nonzeros(net, R=None) -> int:
    """The non-zero parameters of the construction (the pieces' non-zero weights and biases, the
    shifts, and a fixed count per unit): with n_l units per layer and T = max rank,
    d + T² + Σ_l [2 Σ_{i,j} (nnz W[i][j'] + [R_ij ≠ 0] + [b_ij' ≠ 0]) + 2 n_l T + 4 n_l
    + 2(n_{l−1} + 2n_l) + 2 n_{l−1} + 6 n_l] + nnz(A) + nnz(c), j' the padded piece index;
    ``R=None`` counts every shift as non-zero (as ``shift_constants`` makes them)."""
    T, n = net.max_rank, net.widths
    nnz = net.input_dim + T * T + sum(1 for row in net.readout_weight for a in row if a) + \
        sum(1 for c in net.readout_bias if c)
    for l, layer in enumerate(net.layers, start=1):
        for i in range(layer.units):
            for j in range(T):
                ws, b = layer.piece(i, padded_piece(layer.ranks[i], j))
                shift = 1 if R is None or R[l - 1][i][j] else 0
                nnz += 2 * (sum(1 for a in ws if a) + shift + (1 if b else 0))
        nnz += 2 * n[l] * T + 4 * n[l] + 2 * (n[l - 1] + 2 * n[l]) + 2 * n[l - 1] + 6 * n[l]
    return nnz


MAX_NONZEROS = 10**7
"""Largest Transformer built, in non-zero parameters (every pass follows the non-zeros; ACAS Xu's
has 34 thousand of its 1.1 million dense parameters, an MNIST-size CNN about 0.3 million)."""
MAX_WIDTH = 10**5
"""Largest token width ``1 + T + 3N`` (the exact state holds ``width`` numbers per token)."""
MAX_DENOMINATOR_BITS = 2**17
"""Largest sum over layers of the bits of the common denominator of the layer's weights.  Interval
bounds multiply these denominators layer after layer, so this, not the file size, sets the cost.
Measured (compile, shared 2-core machine): ACAS Xu, 41 bits a layer, 0.1 s; 2 layers of random
400-digit fractions, 95,000 bits, 0.2 s; 4 layers of 1000-digit ones, 518,000 bits, 13 s."""


def check_size(net) -> None:
    """Refuse, before any work, a net whose Transformer or bound computation would be too large
    (``ValueError`` with the measured size and the documented limit)."""
    width = closed_sizes(net.widths, net.max_rank, net.output_dim).width
    if width > MAX_WIDTH:
        raise ValueError(f"its Transformer would have width {width:,} (widths {net.widths}); "
                         f"the documented limit is {MAX_WIDTH:,}")
    nonzeros = closed_nonzeros(net)
    if nonzeros > MAX_NONZEROS:
        raise ValueError(f"its Transformer would have {nonzeros:,} non-zero parameters (widths {net.widths}); "
                         f"the documented limit is {MAX_NONZEROS:,}")
    bits = sum(math.lcm(*{x.denominator for ws in layer.weight for w in ws for x in w}
                        | {b.denominator for bs in layer.bias for b in bs}).bit_length() for layer in net.layers)
    if bits > MAX_DENOMINATOR_BITS:
        raise ValueError(f"the common denominators of its layers have {bits:,} bits in all; the documented "
                         f"limit is {MAX_DENOMINATOR_BITS:,}")
