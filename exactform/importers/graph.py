"""Lowering a tensor graph to exact affine maps and Maxout layers.

A ``Tensor`` is a shaped value whose entries, in row-major order (the order of
``tensor.flatten()``), are affine maps of the current frame. Every supported operator is either
affine in its tensor operands — it becomes ``Terms`` per output entry, composed exactly — or a
maximum of affine maps, one Maxout unit per output entry. ``Lowering.maxout`` closes the frame and
carries every value still needed later (a residual branch, a Concat operand) through pass-through
units, so every live value is always a map of the current frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import prod

import numpy as np

from .affine import Affine, Piece, Terms, Tracer, constant


class NodeError(Exception):
    """An operator instance that cannot be lowered exactly; the message says why."""


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
        """The tensor ``self.flat[indices]`` of the shape of ``indices``."""
        return Tensor(tuple(indices.shape), self.affine.gather(indices.ravel().tolist()))

    def reshaped(self, shape) -> "Tensor":
        return Tensor(tuple(int(d) for d in shape), self.affine)

    def linear(self, shape, terms: list[Terms], bias: list[Fraction] | None = None) -> "Tensor":
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

    def as_tensor(self, value, shape=None) -> Tensor:
        """A constant array (of ``Fraction``/int) as a tensor of constant entries."""
        if isinstance(value, Tensor):
            return value
        arr = np.asarray(value, dtype=object)
        flat = [Fraction(int(v)) if not isinstance(v, Fraction) else v for v in arr.ravel().tolist()]
        return Tensor(tuple(arr.shape), constant(flat, self.tracer.width, self.tracer.frame))

    def maxout(self, shape, units: list[list[Piece]], signs: list[Fraction] | None = None) -> Tensor:
        """``signs[i] · max`` of unit ``i``'s pieces, as a tensor of ``shape``; closes the frame."""
        live = [n for n, v in self.values.items() if isinstance(v, Tensor) and self.last_use.get(n, -1) > self.step]
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
    columns = [t.pieces(shape) for t in operands]
    return shape, [list(unit) for unit in zip(*columns)]


def elementwise_sum(a: Tensor, b: Tensor, sign: Fraction) -> Tensor:
    """``a + sign·b`` with broadcasting."""
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    ia = np.broadcast_to(a.grid(), shape).ravel().tolist()
    ib = np.broadcast_to(b.grid(), shape).ravel().tolist()
    return Tensor(shape, a.affine.gather(ia).compose_pairs(b.affine.gather(ib), sign))


def elementwise_scale(a: Tensor, factors: np.ndarray) -> Tensor:
    """``a · factors`` (constant, broadcast)."""
    shape = tuple(np.broadcast_shapes(a.shape, factors.shape))
    ia = np.broadcast_to(a.grid(), shape).ravel().tolist()
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

