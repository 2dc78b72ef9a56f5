"""Maxout networks (docs/spec.md §1): ``h^l_i = max_j (W^l[i][j]·h^{l-1} + b^l[i][j])``, ``y = A h^L + c``.

Weights are stored as ``Fraction`` (user-facing, JSON) and, for evaluation, as one stacked
``QMatrix`` per layer whose rows are all pieces of all units with the bias as the last column:
one integer matrix product per layer, then integer maxima (all pieces share the denominator).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import flint

from ..formats import Reader, check_format, encode_row, encode_rows, sha256
from ..numbers import QMatrix, exact_point, to_fraction, to_sympy
from .box import Box

Matrix = list[list[Fraction]]


@dataclass(frozen=True, eq=False)
class MaxoutLayer:
    """``weight[unit][piece][input]`` and ``bias[unit][piece]``; units may have different ranks."""
    weight: list[Matrix]
    bias: list[list[Fraction]]

    @property
    def units(self) -> int:
        return len(self.weight)

    @property
    def ranks(self) -> list[int]:
        return [len(p) for p in self.weight]

    @property
    def input_dim(self) -> int:
        return len(self.weight[0][0])

    def piece(self, unit: int, j: int) -> tuple[list[Fraction], Fraction]:
        return self.weight[unit][j], self.bias[unit][j]

    @cached_property
    def stacked(self) -> QMatrix:
        """All pieces as rows ``[W | b]`` (unit-major), for one product per layer."""
        return QMatrix.from_rows([w + [b] for ws, bs in zip(self.weight, self.bias) for w, b in zip(ws, bs)])

    @cached_property
    def offsets(self) -> list[int]:
        out = [0]
        for k in self.ranks:
            out.append(out[-1] + k)
        return out


@dataclass(frozen=True, eq=False)
class MaxoutNet:
    """An exact Maxout network on the box ``domain``; ReLU units are rank-2 with a zero piece."""
    domain: Box
    layers: list[MaxoutLayer]
    readout_weight: Matrix
    readout_bias: list[Fraction]
    provenance: tuple[str, ...] = ()
    """What an importer changed on the way (``import --strip-softmax``), one sentence each."""

    FORMAT = "exactform/maxout@1"

    def __post_init__(self):
        width = self.domain.dim
        for l, layer in enumerate(self.layers):
            if not layer.weight:
                raise ValueError(f"layer {l} has no units")
            for i, (ws, bs) in enumerate(zip(layer.weight, layer.bias, strict=True)):
                if not ws or len(ws) != len(bs) or any(len(w) != width for w in ws):
                    raise ValueError(f"layer {l} unit {i}: shape mismatch")
                for v in [*bs, *(x for w in ws for x in w)]:
                    to_fraction(v)
            width = layer.units
        if not self.layers:
            raise ValueError("a Maxout network needs at least one layer")
        if not self.readout_weight or any(len(r) != width for r in self.readout_weight) \
                or len(self.readout_bias) != len(self.readout_weight):
            raise ValueError("readout shape mismatch")

    # --- sizes -------------------------------------------------------------------------------
    @property
    def input_dim(self) -> int:
        return self.domain.dim

    @property
    def output_dim(self) -> int:
        return len(self.readout_weight)

    @property
    def widths(self) -> list[int]:
        """``[n_0, n_1, ..., n_L]``."""
        return [self.input_dim] + [layer.units for layer in self.layers]

    @property
    def max_rank(self) -> int:
        return max(max(layer.ranks) for layer in self.layers)

    def parameter_count(self) -> int:
        n = sum(sum(k * (layer.input_dim + 1) for k in layer.ranks) for layer in self.layers)
        return n + self.output_dim * (self.widths[-1] + 1)

    # --- user-facing symbolic form -------------------------------------------------------------
    def sympy_layer(self, l: int) -> list:
        """Per unit: (pieces × inputs weight matrix, pieces bias column) as SymPy Rationals."""
        layer = self.layers[l]
        return [(to_sympy(ws), to_sympy([[b] for b in bs])) for ws, bs in zip(layer.weight, layer.bias)]

    def sympy_readout(self):
        return to_sympy(self.readout_weight), to_sympy([[b] for b in self.readout_bias])

    # --- exact evaluation ------------------------------------------------------------------------
    @cached_property
    def _readout(self) -> QMatrix:
        return QMatrix.from_rows([w + [b] for w, b in zip(self.readout_weight, self.readout_bias)])

    def hidden_batch(self, points: QMatrix) -> list[QMatrix]:
        """Homogeneous activations ``[h^l; 1]`` for l = 0..L of a batch given as columns."""
        acts = [points]
        for layer in self.layers:
            z = layer.stacked @ acts[-1]
            flat, B, off = z.num.entries(), z.shape[1], layer.offsets     # entry (r, c) at r·B + c
            h = [max(flat[off[i] * B + c:off[i + 1] * B:B]) for i in range(layer.units) for c in range(B)]
            acts.append(QMatrix(flint.fmpz_mat(layer.units + 1, B, h + [z.den] * B), z.den).reduced())
        return acts

    def evaluate_batch(self, points: list[list[Fraction]]) -> list[list[Fraction]]:
        """Exact outputs for a batch of points (no domain check; see ``exactform.evaluate``)."""
        if not points:
            return []
        h = self.hidden_batch(homogeneous(points))[-1]
        return (self._readout @ h).reduced().columns()

    def __call__(self, point) -> list[Fraction]:
        """Exact outputs at one point of ints, Fractions or exact decimal strings (``numbers.exact_point``;
        floats are refused).  No domain check: ``exactform.evaluate`` makes one."""
        return self.evaluate_batch([exact_point(point, self.input_dim)])[0]

    # --- JSON ----------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "format": self.FORMAT,
            "input_dim": self.input_dim,
            "domain": self.domain.to_json(),
            "layers": [{"weight": [encode_rows(ws) for ws in layer.weight],
                        "bias": [encode_row(bs) for bs in layer.bias]} for layer in self.layers],
            "readout": {"weight": encode_rows(self.readout_weight), "bias": encode_row(self.readout_bias)},
        } | ({"provenance": list(self.provenance)} if self.provenance else {})

    def digest(self) -> str:
        return sha256(self.to_json())

    @classmethod
    def from_json(cls, doc: Reader) -> "MaxoutNet":
        doc.dict({"format", "input_dim", "domain", "layers", "readout"}, optional={"provenance"})
        check_format(doc, cls.FORMAT)
        dim = doc.field("input_dim").int(minimum=1)
        domain = Box.from_json(doc.field("domain"), dim)
        layers, width = [], dim
        for lr in doc.field("layers").list(nonempty=True):
            lr.dict({"weight", "bias"})
            units = lr.field("weight").list(nonempty=True)
            weight = [u.matrix(cols=width, sparse=True) for u in units]
            for u, ws in zip(units, weight):
                if not ws:
                    raise u.error("a unit needs at least one piece")
            bias = [b.vector(len(ws), sparse=True) for b, ws in zip(lr.field("bias").list(len(weight)), weight)]
            layers.append(MaxoutLayer(weight, bias))
            width = len(weight)
        ro = doc.field("readout")
        ro.dict({"weight", "bias"})
        weight = ro.field("weight").matrix(cols=width, sparse=True)
        if not weight:
            raise ro.field("weight").error("a network needs at least one output")
        bias = ro.field("bias").vector(len(weight), sparse=True)
        provenance = ()
        if "provenance" in doc.value:
            provenance = tuple(p.str() for p in doc.field("provenance").list())
        return cls(domain, layers, weight, bias, provenance)


def homogeneous(points: list[list[Fraction]]) -> QMatrix:
    """Points as the columns of ``[x; 1]``."""
    return QMatrix.from_rows([list(col) for col in zip(*points)] + [[Fraction(1)] * len(points)])
