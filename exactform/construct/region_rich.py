"""The region-rich Maxout family of docs/spec.md §3 C7 for parameters (m, T, q, D), on ``[0, 1]^q``.

With L = ⌊D/3⌋ Maxout layers (a Transformer of depth D emulates L of them), mT units of rank T
per layer and r = ⌊mT/q⌋:

- layers 1..L−1 *fold*: per input coordinate, r rank-T units whose K = (T−1)r kinks sit at
  k/(K+1), k = 1..K, combined (by the next layer) with signs into the zig-zag g of K+1 pieces,
  each mapping [0, 1] onto [0, 1].  Kink k of g is concave for odd k and convex for even k; a
  rank-T unit is convex with T−1 kinks, so units with output sign −1 take the odd kinks and units
  with sign +1 the even ones, T−1 consecutive kinks each.  This needs ⌈K/2⌉ and ⌊K/2⌋ to be
  multiples of T−1: always for T = 2, and for T ≥ 3 exactly when r is even (``folds_fully``);
- layer L: mT units, unit i convex in ``z_i = n_i·y`` (n_i = (1, i, i², ...)), with T−1 parallel
  kink hyperplanes near the centre of the folded cube, in general position; read-out Σ_i u_i.

Unused units (mT − q·r in folding layers) are rank-T constants, so every layer has exactly mT
units of rank T.  Counts are obtained by exact counting (``prove.regions``), never from a formula.
"""
from __future__ import annotations

from fractions import Fraction
from math import comb

from ..models import Box, MaxoutLayer, MaxoutNet

ZERO, ONE = Fraction(0), Fraction(1)


def seed_bound(m: int, T: int, q: int, D: int) -> int:
    """``[(T−1)·⌊mT/q⌋ + 1]^{q(⌊D/3⌋−1)} · Σ_{j=0}^{q} C(mT, j)(T−1)^j`` (docs/spec.md §3 C7)."""
    units = m * T
    return ((T - 1) * (units // q) + 1) ** (q * (D // 3 - 1)) * sum(comb(units, j) * (T - 1) ** j
                                                                      for j in range(q + 1))


def folds_fully(m: int, T: int, q: int) -> bool:
    """Whether a folding layer of this family reaches (T−1)r + 1 pieces per coordinate (parity)."""
    r = (m * T) // q
    return r >= 1 and (T == 2 or r % 2 == 0)


def _fold_units(T: int, r: int) -> list[tuple[int, list[list[Fraction]], list[Fraction]]]:
    """Per unit: (sign, pieces as [slope, intercept] in y, ...) with Σ sign·unit = zig-zag g(y)."""
    K = (T - 1) * r
    jump = 2 * (K + 1)
    odd = [Fraction(k, K + 1) for k in range(1, K + 1, 2)]
    even = [Fraction(k, K + 1) for k in range(2, K + 1, 2)]
    groups = [(-1, odd[s:s + T - 1]) for s in range(0, len(odd), T - 1)] + \
             [(1, even[s:s + T - 1]) for s in range(0, len(even), T - 1)]
    units = []
    for n, (sign, kinks) in enumerate(groups):
        slopes, intercepts, acc = [], [], ZERO
        for t in range(T):
            if 0 < t <= len(kinks):
                acc += jump * kinks[t - 1]
            slopes.append(Fraction(jump * min(t, len(kinks))))
            intercepts.append(-acc)
        if n == 0:       # the initial slope K+1 of g, added to every piece of the first unit
            slopes = [s + sign * (K + 1) for s in slopes]
        units.append((sign, [[s, c] for s, c in zip(slopes, intercepts)]))
    return units


def region_rich_net(m: int, T: int, q: int, D: int) -> MaxoutNet:
    """The family's Maxout net (raises ValueError where it cannot fold fully, see ``folds_fully``)."""
    if T < 2 or m < 1 or q < 1 or D < 3:
        raise ValueError("need T ≥ 2, m ≥ 1, q ≥ 1 and D ≥ 3")
    if not folds_fully(m, T, q):
        raise ValueError(f"(m, T, q) = ({m}, {T}, {q}): r = ⌊mT/q⌋ = {(m * T) // q} is odd and T ≥ 3, "
                         "so this family cannot fold fully (parity of kink signs)")
    units, L, r = m * T, D // 3, (m * T) // q
    fold = _fold_units(T, r)
    layers = []
    # y_k as an affine function of the previous layer: (weights over previous units, constant)
    width = q
    coords = [([ONE if i == k else ZERO for i in range(q)], ZERO) for k in range(q)]
    for _ in range(L - 1):
        weight, bias, new_coords = [], [], []
        for k in range(q):
            wk, ck = coords[k]
            members = []
            for sign, pieces in fold:
                weight.append([[s * w for w in wk] for s, _ in pieces])
                bias.append([s * ck + c for s, c in pieces])
                members.append((len(weight) - 1, sign))
            new_coords.append(members)
        while len(weight) < units:
            weight.append([[ZERO] * width for _ in range(T)])
            bias.append([ZERO] * T)
        coords = []
        for members in new_coords:
            w = [ZERO] * units
            for idx, sign in members:
                w[idx] = Fraction(sign)
            coords.append((w, ZERO))
        layers.append(MaxoutLayer(weight, bias))
        width = units
    weight, bias = [], []
    for i in range(units):
        normal = [Fraction(i) ** k for k in range(q)]
        centre = sum(normal, ZERO) / 2
        spread = Fraction(1, 4 * T * (1 + i) ** (q - 1) * units) if q > 1 else Fraction(1, 2 * units * T)
        offsets = [centre + spread * (t - Fraction(T, 2) + Fraction(1, i + 2)) for t in range(1, T)] \
            if q > 1 else [Fraction(i * (T - 1) + t, units * (T - 1) + 1) for t in range(1, T)]
        lin = [sum((normal[k] * coords[k][0][j] for k in range(q)), ZERO) for j in range(width)]
        const = sum((normal[k] * coords[k][1] for k in range(q)), ZERO)
        pieces_w, pieces_b, acc = [], [], ZERO
        for t in range(T):
            if t > 0:
                acc += offsets[t - 1]
            pieces_w.append([(t + 1) * a for a in lin])
            pieces_b.append((t + 1) * const - acc)
        weight.append(pieces_w)
        bias.append(pieces_b)
    layers.append(MaxoutLayer(weight, bias))
    return MaxoutNet(Box((ZERO,) * q, (ONE,) * q), layers, [[ONE] * units], [ZERO])
