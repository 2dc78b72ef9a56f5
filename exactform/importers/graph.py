"""Lowering a tensor graph to exact affine maps and Maxout layers.

A ``Tensor`` is a shaped value whose entries, in row-major order (the order of
``tensor.flatten()``), are affine maps of the current frame. Every supported operator is either
affine in its tensor operands — it becomes ``Terms`` per output entry, composed exactly — or a
maximum of affine maps, one Maxout unit per output entry. ``Lowering.maxout`` closes the frame and
carries every value still needed later (a residual branch, a Concat operand) through pass-through
units, so every live value is always a map of the current frame.

Work is bounded before it is done: every tensor's size is checked from its shape before its entries
exist (``MAX_ENTRIES``), the terms an operator will write are counted and charged against
``MAX_TERMS`` before they are written, and a Maxout layer whose Transformer ``compile`` would refuse
(``layout.MAX_WIDTH``) is refused before it is built.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import prod

import numpy as np

from .affine import Affine, Piece, Terms, Tracer, constant


class NodeError(Exception):
    """An operator instance that cannot be lowered exactly; the message says why."""


MAX_ENTRIES = 10**6
"""Largest input-dependent tensor built (entries): ``compile`` refuses a Maxout layer of more than
about 33,000 units (``layout.MAX_WIDTH``), so a much larger value is never needed."""
MAX_CONSTANT = 5 * 10**6
"""Largest constant built (entries): ``compile`` refuses a Transformer of more than
``layout.MAX_NONZEROS`` (10⁷) non-zero parameters, two per non-zero weight of the net."""
MAX_TERMS = 3 * 10**7
"""Largest number of exact terms (one weight times one entry) written over one import, counted
before each operator writes them; about a minute of work, and an order of magnitude above the
largest net ``compile`` accepts (``layout.MAX_NONZEROS`` non-zero Transformer parameters)."""


def check_entries(shape, what: str, limit: int = MAX_ENTRIES) -> None:
    """Refuse a tensor of more than ``limit`` entries, from its shape alone."""
    size = prod(int(d) for d in shape)
    if size > limit:
        raise NodeError(f"{what} would have {size:,} entries (shape {[int(d) for d in shape][:8]}); the "
                        f"documented limit is {limit:,}")


@dataclass(frozen=True)
class Tensor:
    """A tensor of ``shape`` whose row-major entries are the outputs of ``affine``."""
    shape: tuple[int, ...]
    affine: Affine

    def __post_init__(self):
        assert prod(self.shape) == self.affine.size, (self.shape, self.affine.size)

    @property
    def size(self) -> int:
        return self.affine.size

    def grid(self) -> np.ndarray:
        """Entry numbers laid out in the tensor's shape."""
        return np.arange(self.size).reshape(self.shape)

    def gather(self, indices: np.ndarray) -> "Tensor":
        """The tensor ``self.flat[indices]`` of the shape of ``indices`` (a view until checked)."""
        check_entries(indices.shape, "the rearranged tensor")
        return Tensor(tuple(indices.shape), self.affine.gather(indices.ravel().tolist()))

    def reshaped(self, shape) -> "Tensor":
        return Tensor(tuple(int(d) for d in shape), self.affine)

    def linear(self, shape, terms: list[Terms], bias: list[Fraction] | None = None) -> "Tensor":
        """Entry ``i`` is ``Σ c·self[k]`` over ``terms[i]`` (plus ``bias[i]``)."""
        return Tensor(tuple(shape), self.affine.compose(terms, bias))

    def pieces(self, shape) -> list[Piece]:
        """The entries broadcast to ``shape``, as ``(row, bias)`` pieces."""
        idx = np.broadcast_to(self.grid(), shape).ravel().tolist()
        return [(self.affine.rows[k], self.affine.bias[k]) for k in idx]


class Lowering:
    """Named values of a graph walk; ``last_use[name]`` is the last step that reads ``name``."""

    def __init__(self, input_shape: tuple[int, ...], last_use: dict[str, int]):
        self.tracer = Tracer(prod(input_shape))
        self.input = Tensor(tuple(input_shape), self.tracer.input)
        self.values: dict[str, object] = {}
        self.last_use = last_use
        self.step = 0
        self.notes: list[str] = []
        self.types: dict[str, int] = {}
        """Element types (ONNX codes) of named values where the source states or infers them."""
        self.input_type = 1
        """Element type of the network input (float32 unless the source says otherwise)."""
        self.terms = 0
        """Terms written so far (``charge``)."""
        check_entries(input_shape, "the input")
        self.check_width(prod(input_shape), 1)

    def charge(self, terms: int, what: str) -> None:
        """Count ``terms`` about to be written; refuse once the import would exceed ``MAX_TERMS``."""
        self.terms += terms
        if self.terms > MAX_TERMS:
            raise NodeError(f"{what} would bring the import to {self.terms:,} exact terms; the documented "
                            f"work limit is {MAX_TERMS:,}")

    @staticmethod
    def check_width(units: int, rank: int) -> None:
        """Refuse a layer (or input) of ``units`` whose Transformer ``compile`` refuses: its width
        ``1 + T + 3·max n_l`` is at least ``1 + rank + 3·units``."""
        from ..layout import MAX_WIDTH
        width = 1 + rank + 3 * units
        if width > MAX_WIDTH:
            raise NodeError(f"a Maxout layer of {units:,} units and rank {rank} gives a Transformer of "
                            f"width {width:,}, which compile refuses (documented limit {MAX_WIDTH:,})")

    def as_tensor(self, value, shape=None) -> Tensor:
        """A constant array (of ``Fraction``/int) as a tensor of constant entries."""
        if isinstance(value, Tensor):
            return value
        arr = np.asarray(value, dtype=object)
        flat = [Fraction(int(v)) if not isinstance(v, Fraction) else v for v in arr.ravel().tolist()]
        return Tensor(tuple(arr.shape), constant(flat, self.tracer.width, self.tracer.frame))

    def linear(self, x: Tensor, shape, terms: list[Terms], bias: list[Fraction] | None = None) -> Tensor:
        """``x.linear(shape, terms, bias)``, its composition charged first."""
        check_entries(shape, "the result")
        rows = x.affine.rows
        self.charge(sum(len(rows[k]) for t in terms for k, _ in t), "an affine map")
        return x.linear(shape, terms, bias)

    def maxout(self, shape, units: list[list[Piece]], signs: list[Fraction] | None = None) -> Tensor:
        """``signs[i] · max`` of unit ``i``'s pieces, as a tensor of ``shape``; closes the frame."""
        live = [n for n, v in self.values.items() if isinstance(v, Tensor) and self.last_use.get(n, -1) > self.step]
        rank = max((len(u) for u in units), default=1)
        self.check_width(len(units) + sum(self.values[n].size for n in live), rank)
        pieces = sum(len(u) for u in units) + sum(self.values[n].size for n in live)
        self.charge(pieces * self.tracer.width, "a Maxout layer (dense rows)")
        units_affine, carried = self.tracer.close(units, [self.values[n].affine for n in live])
        for n, a in zip(live, carried):
            self.values[n] = Tensor(self.values[n].shape, a)
        if signs is not None:
            units_affine = units_affine.scaled(signs)
        return Tensor(tuple(shape), units_affine)


def negate(pieces: list[Piece]) -> list[Piece]:
    return [({j: -w for j, w in row.items()}, -b) for row, b in pieces]


def broadcast_pieces(operands: list[Tensor]) -> tuple[tuple[int, ...], list[list[Piece]]]:
    """Multidirectional (NumPy) broadcasting: the output shape and, per output entry, one piece
    from every operand."""
    shape = tuple(np.broadcast_shapes(*(t.shape for t in operands)))
    check_entries(shape, "the broadcast result")
    columns = [t.pieces(shape) for t in operands]
    return shape, [list(unit) for unit in zip(*columns)]


def elementwise_sum(low: Lowering, a: Tensor, b: Tensor, sign: Fraction) -> Tensor:
    """``a + sign·b`` with broadcasting."""
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    check_entries(shape, "the sum")
    ia = np.broadcast_to(a.grid(), shape).ravel().tolist()
    ib = np.broadcast_to(b.grid(), shape).ravel().tolist()
    low.charge(sum(len(a.affine.rows[i]) + len(b.affine.rows[j]) for i, j in zip(ia, ib)), "a sum")
    return Tensor(shape, a.affine.gather(ia).compose_pairs(b.affine.gather(ib), sign))


def elementwise_scale(low: Lowering, a: Tensor, factors: np.ndarray) -> Tensor:
    """``a · factors`` (constant, broadcast)."""
    shape = tuple(np.broadcast_shapes(a.shape, factors.shape))
    check_entries(shape, "the product")
    ia = np.broadcast_to(a.grid(), shape).ravel().tolist()
    low.charge(sum(len(a.affine.rows[i]) for i in ia), "a product")
    f = [v if isinstance(v, Fraction) else Fraction(int(v)) for v in np.broadcast_to(factors, shape).ravel().tolist()]
    return Tensor(shape, a.affine.gather(ia).scaled(f))


def windows(spatial, kernel, strides, pads, dilations, ceil_mode: bool):
    """Sliding windows of a convolution or pooling over ``spatial`` sizes: yields, per output
    position (row-major), the output position and the list of ``(input position, kernel position)``
    pairs inside the input, plus the number of window positions inside the padded input."""
    from itertools import product
    out = output_spatial(spatial, kernel, strides, pads, dilations, ceil_mode)
    if min(out) < 1:
        raise NodeError(f"the window {list(kernel)} does not fit the input {list(spatial)} with padding {list(pads)}")
    begin, end = pads[:len(spatial)], pads[len(spatial):]
    for pos in product(*(range(o) for o in out)):
        starts = [p * s - b for p, s, b in zip(pos, strides, begin)]
        inside, padded = [], 1
        for kpos in product(*(range(k) for k in kernel)):
            ipos = tuple(st + kk * dil for st, kk, dil in zip(starts, kpos, dilations))
            if all(0 <= i < n for i, n in zip(ipos, spatial)):
                inside.append((ipos, kpos))
        for st, k, dil, n, e in zip(starts, kernel, dilations, spatial, end):
            padded *= sum(1 for kk in range(k) if st + kk * dil < n + e)
        yield pos, inside, padded


def output_spatial(spatial, kernel, strides, pads, dilations, ceil_mode: bool) -> list[int]:
    """Output sizes of ``windows`` for the same arguments."""
    d = len(spatial)
    out = []
    for n, k, s, b, e, dil in zip(spatial, kernel, strides, pads[:d], pads[d:], dilations):
        span = n + b + e - dil * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= n + b:
            o -= 1
        out.append(o)
    return out

