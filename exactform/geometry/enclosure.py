"""Rigorous enclosures with ball arithmetic (python-flint ``arb``): every real computed here is
returned as rational bounds ``lo ≤ value ≤ hi`` that hold whatever the rounding, never a float.

- ``log_upper(T)``, ``exp_neg_upper(t)``: certified rational bounds on ``ln T`` and ``e^{−t}``.
- ``enclose(tf, point, digits)``: a softmax (or hardmax-free) Transformer evaluated in ball
  arithmetic; each output is an *enclosure* ``[lo, hi]`` of the true real output.
- ``softmax_error(v, λ)``: an enclosure of ``max(v) − vᵀ softmax_λ(v)`` (to test the lemmas).
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction

import flint

from ..models import Attention, FeedForward, Transformer

Bounds = tuple[Fraction, Fraction]


@contextmanager
def precision(digits: int):
    """Work at ``digits`` decimal digits (plus guard bits); restores the previous precision."""
    old = flint.ctx.prec
    flint.ctx.prec = math.ceil(digits * 3.33) + 32
    try:
        yield
    finally:
        flint.ctx.prec = old


def ball(x: Fraction) -> flint.arb:
    """The ball enclosing the rational ``x`` (exact when x is dyadic and short)."""
    return flint.arb(flint.fmpq(x.numerator, x.denominator))


def _exact(a: flint.arb) -> Fraction:
    m, e = int(a.man_exp()[0]), int(a.man_exp()[1])
    return Fraction(m << e) if e >= 0 else Fraction(m, 1 << -e)


def bounds(a: flint.arb) -> Bounds:
    """Rational ``(lo, hi)`` with ``lo ≤ a ≤ hi`` for every real in the ball ``a``."""
    if not a.is_finite():
        raise ArithmeticError("ball arithmetic lost all precision (increase digits)")
    return _exact(a.lower()), _exact(a.upper())


def log_upper(T: int, digits: int = 40) -> Fraction:
    """A rational ``U ≥ ln T`` within about ``10^{−digits}`` of it."""
    with precision(digits):
        return bounds(flint.arb(T).log())[1]


def exp_neg_upper(t: Fraction, digits: int = 40) -> Fraction:
    """A rational ``u ≥ e^{−t}``."""
    with precision(digits):
        return bounds((-ball(t)).exp())[1]


def _relu(x: flint.arb) -> flint.arb:
    return x.max(flint.arb(0))


def _matrix(rows: list[dict], cols: int) -> flint.arb_mat:
    """The sparse rows (``models.transformer.Rows``) as an exact ball matrix."""
    m = flint.arb_mat(len(rows), cols)
    for i, row in enumerate(rows):
        for j, x in row.items():
            m[i, j] = ball(x)
    return m


def _columns(m: flint.arb_mat) -> list[list[flint.arb]]:
    return [[m[r, c] for r in range(m.nrows())] for c in range(m.ncols())]


def _softmax_mix(scores: list[flint.arb], values: list[list[flint.arb]], lam: flint.arb) -> list[flint.arb]:
    top = scores[0]
    for s in scores[1:]:
        top = top.max(s)
    weights = [(lam * (s - top)).exp() for s in scores]
    total = sum(weights[1:], weights[0])
    return [sum((w * v[r] for w, v in zip(weights, values)), flint.arb(0)) / total for r in range(len(values[0]))]


def enclose(tf: Transformer, point: list[Fraction], digits: int = 40) -> list[Bounds]:
    """Enclosures ``[lo, hi]`` of the softmax Transformer's outputs at ``point`` (real arithmetic,
    rigorously bounded; widths shrink like ``10^{−digits}``)."""
    if tf.is_hardmax:
        raise ValueError("enclose() evaluates softmax attention; hardmax Transformers evaluate exactly")
    T, w = tf.tokens, tf.width
    columns = [[sum((a * point[c] for c, a in row.items()), Fraction(0)) + tf.embed_bias[t][r]
                for r, row in enumerate(tf.embed_weight)] for t in range(T)]
    with precision(digits):
        lam = ball(tf.attention)
        X = flint.arb_mat([[ball(columns[t][r]) for t in range(T)] for r in range(w)])
        for block in tf.blocks:
            if isinstance(block, FeedForward):
                pre = _matrix(block.w1, w) * X
                act = flint.arb_mat([[_relu(pre[r, t] + ball(block.b1[r])) for t in range(T)]
                                     for r in range(block.hidden)])
                out = _matrix(block.w2, block.hidden) * act
                X = X + flint.arb_mat([[out[r, t] + ball(block.b2[r]) for t in range(T)] for r in range(w)])
            else:
                X = X + _attend(block, X, T, lam)
        y = _matrix(tf.readout_weight, w) * flint.arb_mat([[X[r, tf.readout_token]] for r in range(w)])
        return [bounds(y[o, 0] + ball(b)) for o, b in enumerate(tf.readout_bias)]


def _attend(block: Attention, X: flint.arb_mat, T: int, lam: flint.arb) -> flint.arb_mat:
    w = X.nrows()
    total = flint.arb_mat(w, T)
    for head in block.heads:
        q, k = _columns(_matrix(head.query, w) * X), _columns(_matrix(head.key, w) * X)
        values = _columns(_matrix(head.value, w) * X)
        mixed = []
        for i in range(T):
            scores = [sum((a * b for a, b in zip(q[i], k[j])), flint.arb(0)) for j in range(T)]
            mixed.append(_softmax_mix(scores, values, lam))
        total = total + _matrix(head.output, len(head.value)) * flint.arb_mat([[mixed[i][r] for i in range(T)]
                                                             for r in range(len(values[0]))])
    return total


def softmax_error(v: list[Fraction], lam: Fraction, digits: int = 40) -> Bounds:
    """An enclosure of ``max(v) − vᵀ softmax(λ v)``."""
    with precision(digits):
        balls = [ball(x) for x in v]
        mixed = _softmax_mix(balls, [[b] for b in balls], ball(lam))[0]
        return bounds(ball(max(v)) - mixed)
