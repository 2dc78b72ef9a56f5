"""Exact tracing of a feed-forward network into a ``MaxoutNet``.

Invariant: every traced value is an affine map ``A·v + b`` (``Fraction`` entries, ``A`` kept as
sparse rows) of the current *frame* ``v`` — the network input, or the output of the last Maxout
layer. A nonlinearity closes the frame into a Maxout layer and opens a new one; values still
needed later are carried into the new frame by pass-through units (a rank-1 Maxout unit is an
affine map). The final value is the read-out. Nothing is rounded.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..formats import InputError
from ..forms import combine
from ..models import Box, MaxoutLayer, MaxoutNet
from ..numbers import MAX_DIGITS, ZERO

Matrix = list[list[Fraction]]
Row = dict[int, Fraction]
"""A sparse row ``{column: non-zero coefficient}``; rows are shared between values, never mutated."""
Terms = list[tuple[int, Fraction]]
"""A linear combination ``Σ c·value[k]`` of the entries of a traced value, as ``(k, c)`` pairs."""
ONE = Fraction(1)


@dataclass(frozen=True)
class Affine:
    """``rows·v + bias`` over frame number ``frame`` of ``width`` entries; one row per output."""
    rows: list[Row]
    bias: list[Fraction]
    width: int
    frame: int
    is_identity: bool = False

    @property
    def size(self) -> int:
        return len(self.bias)

    @property
    def weight(self) -> Matrix:
        """The dense linear part ``[output][frame entry]``."""
        out = []
        for row in self.rows:
            dense = [ZERO] * self.width
            for j, w in row.items():
                dense[j] = w
            out.append(dense)
        return out

    def compose(self, terms: list[Terms], bias: list[Fraction] | None = None) -> "Affine":
        """Output ``i`` is ``Σ_{(k, c) ∈ terms[i]} c·self[k] + bias[i]``."""
        if self.is_identity:
            rows = [{k: c for k, c in t if c} for t in terms]
            out = [ZERO] * len(terms)
        else:
            rows = [combine((c, self.rows[k]) for k, c in t) for t in terms]
            out = [sum((c * self.bias[k] for k, c in t if self.bias[k]), ZERO) for t in terms]
        if bias is not None:
            out = [o + b for o, b in zip(out, bias, strict=True)]
        return Affine(rows, out, self.width, self.frame)

    def then(self, matrix: Matrix, bias: list[Fraction] | None = None) -> "Affine":
        """``matrix·(self) + bias`` (matrix is dense, [out][self.size])."""
        return self.compose([[(k, m) for k, m in enumerate(row) if m] for row in matrix], bias)

    def gather(self, indices) -> "Affine":
        """Entries ``self[k]`` for ``k`` in ``indices`` (rows are shared, not copied)."""
        return Affine([self.rows[k] for k in indices], [self.bias[k] for k in indices], self.width, self.frame)

    def compose_pairs(self, other: "Affine", sign: Fraction) -> "Affine":
        """Entrywise ``self + sign·other`` (same sizes, same frame)."""
        rows = [combine([(ONE, a), (sign, b)]) for a, b in zip(self.rows, other.rows, strict=True)]
        return Affine(rows, [a + sign * b for a, b in zip(self.bias, other.bias)], self.width, self.frame)

    def shifted(self, bias: list[Fraction]) -> "Affine":
        return Affine(self.rows, [a + b for a, b in zip(self.bias, bias, strict=True)], self.width, self.frame)

    def scaled(self, factors: list[Fraction]) -> "Affine":
        return Affine([{j: f * w for j, w in row.items()} if f else {} for f, row in zip(factors, self.rows)],
                      [f * b for f, b in zip(factors, self.bias, strict=True)], self.width, self.frame)


def identity(n: int, frame: int) -> Affine:
    return Affine([{i: ONE} for i in range(n)], [ZERO] * n, n, frame, True)


def constant(values: list[Fraction], width: int, frame: int) -> Affine:
    """Constant entries as an affine map of the frame (empty rows)."""
    return Affine([{} for _ in values], list(values), width, frame)


Piece = tuple[Row, Fraction]
"""One affine piece ``row·v + bias`` of a Maxout unit."""


class Tracer:
    """Collects Maxout layers while a graph is walked; ``frame`` counts closed layers."""

    def __init__(self, input_dim: int):
        self.layers: list[MaxoutLayer] = []
        self.input = identity(input_dim, 0)
        self.width = input_dim

    @property
    def frame(self) -> int:
        return len(self.layers)

    def close(self, units: list[list[Piece]], carry: list[Affine] = ()) -> tuple[Affine, list[Affine]]:
        """Close the frame with one Maxout layer: unit ``i`` is ``max`` of its pieces, followed by
        rank-1 pass-through units for the distinct non-constant entries of ``carry``. Returns the
        units and the carried values, as affine maps of the new frame."""
        layer_units = [list(u) for u in units]
        slot: dict[tuple, int] = {}
        carried = []
        for value in carry:
            rows, bias = [], []
            for row, b in zip(value.rows, value.bias):
                if not row:                     # a constant entry stays a constant
                    rows.append({})
                    bias.append(b)
                    continue
                key = tuple(sorted(row.items()))
                if key not in slot:
                    slot[key] = len(layer_units)
                    layer_units.append([(row, ZERO)])
                rows.append({slot[key]: ONE})
                bias.append(b)
            carried.append(Affine(rows, bias, 0, 0))
        width = len(layer_units)
        self.layers.append(MaxoutLayer([[_dense(r, self.width) for r, _ in u] for u in layer_units],
                                       [[b for _, b in u] for u in layer_units]))
        self.width = width
        frame = self.frame
        return (Affine([{i: ONE} for i in range(len(units))], [ZERO] * len(units), width, frame,
                       len(units) == width),
                [Affine(c.rows, c.bias, width, frame) for c in carried])

    def relu(self, value: Affine) -> Affine:
        return self.close([[(row, b), ({}, ZERO)] for row, b in zip(value.rows, value.bias)])[0]

    def network(self, output: Affine, domain: Box, source: str = "<network>") -> MaxoutNet:
        """The traced ``MaxoutNet``; refuses entries beyond the documented size limit."""
        if not self.layers:
            # a purely affine network: one ReLU layer that is the identity on the domain, v − lower ≥ 0
            shift = [-lo for lo in domain.lower]
            self.relu(self.input.shifted(shift))
            output = Affine(output.rows, [b + sum((w * domain.lower[j] for j, w in row.items()), ZERO)
                                          for row, b in zip(output.rows, output.bias)], self.width, self.frame)
        if output.frame != self.frame:
            raise ValueError("the read-out is not a map of the last layer")
        net = MaxoutNet(domain, self.layers, output.weight, output.bias)
        _check_size(net, source)
        return net


def _dense(row: Row, width: int) -> list[Fraction]:
    out = [ZERO] * width
    for j, w in row.items():
        out[j] = w
    return out


_MAX_BITS = int(MAX_DIGITS * 3.3219280948873626) + 1


def _check_size(net: MaxoutNet, source: str) -> None:
    """Entries must stay within ``numbers.MAX_DIGITS`` digits, or no later reader accepts the file
    (long chains of tiny floats, e.g. denormals, multiply denominators)."""
    def check(values, where):
        for v in values:
            if v and (v.denominator.bit_length() > _MAX_BITS or abs(v.numerator).bit_length() > _MAX_BITS):
                raise InputError(source, where, f"an exact weight needs more than {MAX_DIGITS} digits "
                                 "(products of tiny or denormal floats); the documented size limit")
    for l, layer in enumerate(net.layers):
        for i, (ws, bs) in enumerate(zip(layer.weight, layer.bias)):
            check(bs, f"layer {l} unit {i}")
            for w in ws:
                check(w, f"layer {l} unit {i}")
    for i, w in enumerate(net.readout_weight):
        check(w, f"readout row {i}")
    check(net.readout_bias, "readout bias")
