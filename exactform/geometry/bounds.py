"""Exact intervals of affine forms over boxes, and their propagation through a Maxout net.

Invariant: for every x in the box, every coordinate lies in its interval; all endpoints are
``Fraction``, computed by exact interval arithmetic (no rounding, so no outward widening needed).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import flint

from ..numbers import QMatrix

Interval = tuple[Fraction, Fraction]


def magnitude(interval: Interval) -> Fraction:
    """``max |v|`` over the interval."""
    return max(-interval[0], interval[1])


@dataclass(frozen=True)
class MaxoutBounds:
    """``inputs[l]`` bounds ``h^l`` (l = 0..L); ``pieces[l][i][j]`` bounds ``a_ij`` of layer l+1."""
    inputs: list[list[Interval]]
    pieces: list[list[list[Interval]]]


def affine_intervals(rows: QMatrix, box: list[Interval]) -> list[Interval]:
    """The exact range over the box of every row ``w·x + b`` of a homogeneous matrix ``[w | b]``
    (tight: attained at a corner), as two integer matrix products: ``lo = W⁺·lower + W⁻·upper + b``, ``hi = W⁺·upper + W⁻·lower + b``."""
    ints = rows.num.tolist()
    zero = flint.fmpz(0)
    pos = flint.fmpz_mat([[x if x > zero else zero for x in r[:-1]] + [r[-1]] for r in ints])
    neg = flint.fmpz_mat([[x if x < zero else zero for x in r[:-1]] + [zero] for r in ints])
    lower = QMatrix.from_rows([[a] for a, _ in box] + [[Fraction(1)]])
    upper = QMatrix.from_rows([[b] for _, b in box] + [[Fraction(1)]])
    lo = (QMatrix(pos, rows.den) @ lower + QMatrix(neg, rows.den) @ upper).rows()
    hi = (QMatrix(pos, rows.den) @ upper + QMatrix(neg, rows.den) @ lower).rows()
    return [(a[0], b[0]) for a, b in zip(lo, hi)]


def form_interval(form: dict, box: list[Interval], one=-1) -> Interval:
    """The exact range over the box of the sparse affine form ``{variable: a, one: constant}`` (entries
    and box of one exact type: Fraction or fmpq)."""
    lo = hi = form.get(one, 0)
    for k, a in form.items():
        if k != one:
            l, h = box[k]
            if a > 0:
                lo, hi = lo + a * l, hi + a * h
            else:
                lo, hi = lo + a * h, hi + a * l
    return lo, hi


def maxout_bounds(net) -> MaxoutBounds:
    """Interval propagation of the domain through a Maxout network, layer by layer."""
    box = list(zip(net.domain.lower, net.domain.upper))
    inputs, pieces = [box], []
    for layer in net.layers:
        flat = affine_intervals(layer.stacked, box)
        layer_pieces = [flat[layer.offsets[i]:layer.offsets[i + 1]] for i in range(layer.units)]
        box = [(max(p[0] for p in ps), max(p[1] for p in ps)) for ps in layer_pieces]
        pieces.append(layer_pieces)
        inputs.append(box)
    return MaxoutBounds(inputs, pieces)


def box_of(bounds: MaxoutBounds, layers: list[int]) -> list[Interval]:
    """The product box of ``h^l`` for each l in ``layers`` (concatenated, in that order)."""
    return [iv for l in layers for iv in bounds.inputs[l]]


@dataclass(frozen=True)
class BlockBounds:
    """Exact bounds over the domain for one Transformer block, per token.

    ``state[t][r]``: coordinate r of token t after the block; ``pre[t][u]``: pre-activation of
    hidden unit u in token t (feed-forward blocks; empty for attention).
    """
    block: int
    state: list[list[Interval]]
    pre: list[list[Interval]]

