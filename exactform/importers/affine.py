"""Exact tracing of a feed-forward ReLU/maxout graph into a ``MaxoutNet``.

Invariant: every traced value is an affine map ``A·v + b`` (``Fraction`` entries) of the
current *frame* ``v`` — the network input, or the output of the last nonlinearity. A ReLU or a
Max of affine maps closes the frame into a Maxout layer and opens a new one; the final value is
the read-out. Nothing is rounded: weights enter through ``numbers.from_float``.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..models import Box, MaxoutLayer, MaxoutNet
from ..numbers import from_float

Matrix = list[list[Fraction]]
ZERO = Fraction(0)


def exact_matrix(rows) -> Matrix:
    """A nested list/array of binary floats as exact rationals (float32 widens exactly)."""
    return [[from_float(float(x)) for x in row] for row in rows]


def exact_vector(values) -> list[Fraction]:
    return [from_float(float(x)) for x in values]


@dataclass(frozen=True)
class Affine:
    """``weight·v + bias`` over frame number ``frame``; ``weight`` is [out][frame width]."""
    weight: Matrix
    bias: list[Fraction]
    frame: int
    is_identity: bool = False

    @property
    def size(self) -> int:
        return len(self.bias)

    def then(self, matrix: Matrix, bias: list[Fraction] | None = None) -> "Affine":
        """``matrix·(self) + bias`` (matrix is [out][self.size])."""
        if self.is_identity:
            return Affine([list(row) for row in matrix], list(bias) if bias is not None else [ZERO] * len(matrix),
                          self.frame)
        weight = [[sum((m * self.weight[k][c] for k, m in enumerate(row) if m), ZERO)
                   for c in range(len(self.weight[0]))] for row in matrix]
        out = [sum((m * b for m, b in zip(row, self.bias) if m), ZERO) for row in matrix]
        if bias is not None:
            out = [o + b for o, b in zip(out, bias)]
        return Affine(weight, out, self.frame)

    def plus(self, other: "Affine") -> "Affine":
        return Affine([[a + b for a, b in zip(r, s)] for r, s in zip(self.weight, other.weight)],
                      [a + b for a, b in zip(self.bias, other.bias)], self.frame)

    def shifted(self, bias: list[Fraction]) -> "Affine":
        return Affine(self.weight, [a + b for a, b in zip(self.bias, bias)], self.frame)

    def scaled(self, factors: list[Fraction]) -> "Affine":
        return Affine([[f * a for a in row] for f, row in zip(factors, self.weight)],
                      [f * b for f, b in zip(factors, self.bias)], self.frame)


def identity(n: int, frame: int) -> Affine:
    return Affine([[Fraction(int(i == j)) for j in range(n)] for i in range(n)], [ZERO] * n, frame, True)


class Tracer:
    """Collects Maxout layers while a graph is walked; ``frame`` counts closed layers."""

    def __init__(self, input_dim: int):
        self.layers: list[MaxoutLayer] = []
        self.input = identity(input_dim, 0)

    @property
    def frame(self) -> int:
        return len(self.layers)

    def maxout(self, pieces: list[Affine]) -> Affine:
        """Close the frame: unit i is ``max_j pieces[j]_i``; returns the new frame's identity."""
        units = pieces[0].size
        weight = [[p.weight[i] for p in pieces] for i in range(units)]
        bias = [[p.bias[i] for p in pieces] for i in range(units)]
        self.layers.append(MaxoutLayer(weight, bias))
        return identity(units, self.frame)

    def relu(self, value: Affine) -> Affine:
        width = len(value.weight[0])
        return self.maxout([value, Affine([[ZERO] * width for _ in range(value.size)], [ZERO] * value.size,
                                          value.frame)])

    def network(self, output: Affine, domain: Box) -> MaxoutNet:
        if not self.layers:
            # a purely affine network: one ReLU layer that is the identity on the domain, v − lower ≥ 0
            shift = [-lo for lo in domain.lower]
            self.relu(self.input.shifted(shift))
            output = output.shifted([sum((w * lo for w, lo in zip(row, domain.lower)), ZERO)
                                     for row in output.weight])
            output = Affine(output.weight, output.bias, self.frame)
        return MaxoutNet(domain, self.layers, output.weight, output.bias)
