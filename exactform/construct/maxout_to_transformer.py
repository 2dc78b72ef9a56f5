"""The three-block construction of docs/spec.md §2 (named ``token-shift``): one Maxout layer becomes

1. FF pieces   reads [1, c_j, h], writes z:  token t gets ``z_i = a_it(h) = W[i][t]·h + b[i][t]`` via,
               per unit i and piece j, the pair ``ReLU(a_ij − R_ij c_j) − ReLU(−a_ij − R_ij c_j)``;
               in token j (c_j = 0) the pair is the identity ``ReLU(v) − ReLU(−v) = v``; in every other
               token (c_j = 1) ``R_ij ≥ max|a_ij|`` on the box puts both pre-activations ≤ 0.
2. attention   reads [1, z], writes out: one head per unit, query = 1, key = value = z_i; hardmax
               returns ``max_t z_{t,i}`` (ties average equal values) to every token.
3. FF advance  reads [h, z, out], writes [h, z, out]: ``h ← out``, ``z ← 0``, ``out ← 0``, each as
               identity pairs, ready for the next layer.

Token layout: ``[1, c_0..c_{T−1}, h (N), z (N), out (N)]``, ``N = max_l n_l`` (l = 0..L); the shift
coordinates ``c_j = [t ≠ j]`` come from the embedding and are never written.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..models import Attention, FeedForward, Head, MaxoutNet, Transformer
from ..numbers import ZERO, bit_size
from ..prove.bounds import magnitude, maxout_bounds

CONSTRUCTION = "token-shift"
ONE = Fraction(1)


def power_of_two_at_least(x: Fraction) -> Fraction:
    """The smallest ``2^k`` (k ∈ Z) with ``2^k ≥ x``; 1 when x ≤ 0."""
    if x <= 0:
        return ONE
    k = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** k < x:
        k += 1
    while Fraction(2) ** (k - 1) >= x:
        k -= 1
    return Fraction(2) ** k


@dataclass(frozen=True)
class Layout:
    """Named coordinate ranges of a token column (half-open ``[start, stop)``)."""
    tokens: int
    n: int

    @property
    def const(self) -> int:
        return 0

    def shift(self, j: int) -> int:
        return 1 + j

    def h(self, i: int) -> int:
        return 1 + self.tokens + i

    def z(self, i: int) -> int:
        return 1 + self.tokens + self.n + i

    def out(self, i: int) -> int:
        return 1 + self.tokens + 2 * self.n + i

    @property
    def width(self) -> int:
        return 1 + self.tokens + 3 * self.n

    def to_json(self) -> dict:
        T, n = self.tokens, self.n
        return {"construction": CONSTRUCTION, "const": [0, 1], "shift": [1, 1 + T],
                "h": [1 + T, 1 + T + n], "z": [1 + T + n, 1 + T + 2 * n], "out": [1 + T + 2 * n, 1 + T + 3 * n]}


def padded_piece(net: MaxoutNet, l: int, i: int, j: int) -> int:
    """Piece index used for slot j of unit i: ranks are padded to T by repeating the last piece."""
    return min(j, net.layers[l].ranks[i] - 1)


MAX_PARAMETERS = 10**7
"""Largest Transformer built (dense parameters of the closed formula; ACAS Xu's has 1.1 million)."""
MAX_DENOMINATOR_BITS = 2**17
"""Largest sum over layers of the bits of the common denominator of the layer's weights.  Interval
bounds multiply these denominators layer after layer, so this, not the file size, sets the cost.
Measured (compile, shared 2-core machine): ACAS Xu, 41 bits a layer, 0.1 s; 2 layers of random
400-digit fractions, 95,000 bits, 0.2 s; 4 layers of 1000-digit ones, 518,000 bits, 13 s."""


def check_size(net: MaxoutNet) -> None:
    """Refuse, before any work, a net whose Transformer or bound computation would be too large
    (``ValueError`` with the measured size and the documented limit)."""
    params = dense_sizes(net)[3]
    if params > MAX_PARAMETERS:
        raise ValueError(f"its Transformer would have {params:,} parameters (widths {net.widths}); "
                         f"the documented limit is {MAX_PARAMETERS:,}")
    bits = sum(math.lcm(*{x.denominator for ws in layer.weight for w in ws for x in w}
                        | {b.denominator for bs in layer.bias for b in bs}).bit_length() for layer in net.layers)
    if bits > MAX_DENOMINATOR_BITS:
        raise ValueError(f"the common denominators of its layers have {bits:,} bits in all; the documented "
                         f"limit is {MAX_DENOMINATOR_BITS:,}")


def shift_constants(net: MaxoutNet, margin: Fraction = Fraction(2)) -> list[list[list[Fraction]]]:
    """``R[l][i][j]``: the least power of two ≥ margin·max|a_ij| over layer l's input box
    (``check_size`` first)."""
    check_size(net)
    bounds = maxout_bounds(net)
    T = net.max_rank
    return [[[power_of_two_at_least(margin * magnitude(bounds.pieces[l][i][padded_piece(net, l, i, j)]))
              for j in range(T)] for i in range(layer.units)] for l, layer in enumerate(net.layers)]


def compile_maxout(net: MaxoutNet, shifts: list[list[list[Fraction]]] | None = None) -> Transformer:
    """The hardmax Transformer of docs/spec.md §2 computing ``net`` exactly on ``net.domain``.

    ``shifts``: the constants ``R_ij`` if already computed (default ``shift_constants(net)``);
    tests pass deliberately wrong ones.
    """
    T, widths = net.max_rank, net.widths
    lay = Layout(T, max(widths))
    w = lay.width
    R = shift_constants(net) if shifts is None else shifts

    embed_weight = [[ZERO] * net.input_dim for _ in range(w)]
    for i in range(net.input_dim):
        embed_weight[lay.h(i)][i] = ONE
    embed_bias = []
    for t in range(T):
        col = [ZERO] * w
        col[lay.const] = ONE
        for j in range(T):
            col[lay.shift(j)] = ONE if t != j else ZERO
        embed_bias.append(col)

    blocks = []
    for l, layer in enumerate(net.layers):
        blocks += [_pieces_block(net, l, R[l], lay), _max_block(layer.units, lay),
                   _advance_block(widths[l], layer.units, lay)]

    readout = [[ZERO] * w for _ in net.readout_weight]
    for o, row in enumerate(net.readout_weight):
        for i, a in enumerate(row):
            readout[o][lay.h(i)] = a
    return Transformer(net.domain, T, w, "hardmax", embed_weight, embed_bias, blocks, 0,
                       readout, list(net.readout_bias), lay.to_json())


def _pieces_block(net: MaxoutNet, l: int, R: list[list[Fraction]], lay: Layout) -> FeedForward:
    layer, w = net.layers[l], lay.width
    hidden = 2 * layer.units * lay.tokens
    w1, b1, w2 = [], [], [[ZERO] * hidden for _ in range(w)]
    for i in range(layer.units):
        for j in range(lay.tokens):
            weights, bias = layer.piece(i, padded_piece(net, l, i, j))
            for sign in (1, -1):
                row = [ZERO] * w
                row[lay.h(0):lay.h(len(weights))] = weights if sign > 0 else [-a for a in weights]
                row[lay.shift(j)] = -R[i][j]
                w2[lay.z(i)][len(w1)] = ONE if sign > 0 else -ONE
                w1.append(row)
                b1.append(bias if sign > 0 else -bias)
    return FeedForward(w1, b1, w2, [ZERO] * w)


def _max_block(units: int, lay: Layout) -> Attention:
    def unit_row(col: int) -> list[list[Fraction]]:
        return [[ONE if c == col else ZERO for c in range(lay.width)]]

    return Attention([Head(query=unit_row(lay.const), key=unit_row(lay.z(i)), value=unit_row(lay.z(i)),
                           output=[[ONE if r == lay.out(i) else ZERO] for r in range(lay.width)])
                      for i in range(units)])


def _advance_block(previous: int, units: int, lay: Layout) -> FeedForward:
    """Identity pairs: on h_i (i < previous) writing −h_i; on out_i writing +h_i, −out_i; on z_i writing −z_i."""
    w = lay.width
    pairs: list[tuple[int, dict[int, Fraction]]] = []
    pairs += [(lay.h(i), {lay.h(i): -ONE}) for i in range(previous)]
    pairs += [(lay.out(i), {lay.h(i): ONE, lay.out(i): -ONE}) for i in range(units)]
    pairs += [(lay.z(i), {lay.z(i): -ONE}) for i in range(units)]
    w1, w2 = [], [[ZERO] * (2 * len(pairs)) for _ in range(w)]
    for src, writes in pairs:
        for sign in (ONE, -ONE):
            row = [ZERO] * w
            row[src] = sign
            for r, a in writes.items():
                w2[r][len(w1)] = a if sign > 0 else -a
            w1.append(row)
    return FeedForward(w1, [ZERO] * len(w1), w2, [ZERO] * w)


# --- claim C4: sizes from a closed formula -------------------------------------------------------

def predicted_sizes(net: MaxoutNet, R: list[list[list[Fraction]]]) -> dict:
    """Sizes of ``compile_maxout(net)`` from the closed formulas (no Transformer is built).

    With n_l units per layer, N = max_l n_l (l = 0..L), T = max rank, w = 1 + T + 3N:
    blocks 3L; hidden 2 n_l T (pieces) and 2(n_{l−1} + 2 n_l) (advance); heads n_l;
    parameters w·d + T·w + Σ_FF (2hw + h + w) + Σ_heads 4w + o(w + 1);
    non-zeros d + T² + Σ_l [2 Σ_{i,j} (nnz W[i][j'] + 1 + [b_ij' ≠ 0]) + 2 n_l T + 4 n_l
    + 2(n_{l−1} + 2n_l) + 2 n_{l−1} + 6 n_l] + nnz(A) + nnz(c), j' the padded piece index.
    """
    T, w, hidden, params = dense_sizes(net)
    n, d = net.widths, net.input_dim
    nnz = d + T * T + sum(1 for row in net.readout_weight for a in row if a) + sum(1 for c in net.readout_bias if c)
    numbers = [ONE] + [a for row in net.readout_weight for a in row] + list(net.readout_bias)
    for l, layer in enumerate(net.layers, start=1):
        for i in range(layer.units):
            for j in range(T):
                ws, b = layer.piece(i, padded_piece(net, l - 1, i, j))
                nnz += 2 * (sum(1 for a in ws if a) + (1 if R[l - 1][i][j] else 0) + (1 if b else 0))
                numbers += ws + [b, R[l - 1][i][j]]
        nnz += 2 * n[l] * T + 4 * n[l] + 2 * (n[l - 1] + 2 * n[l]) + 2 * n[l - 1] + 6 * n[l]
    return {"blocks": 3 * len(net.layers), "tokens": T, "width": w, "heads": n[1:], "hidden": hidden,
            "parameters": params, "nonzero_parameters": nnz,
            "numerator_bits": max(bit_size(x)[0] for x in numbers),
            "denominator_bits": max(bit_size(x)[1] for x in numbers)}


def dense_sizes(net: MaxoutNet) -> tuple[int, int, list[int], int]:
    """Tokens, width, hidden widths and parameter count of the closed formulas (``predicted_sizes``)."""
    T, n = net.max_rank, net.widths
    d, o = net.input_dim, net.output_dim
    w = 1 + T + 3 * max(n)
    hidden = []
    for l in range(1, len(net.layers) + 1):
        hidden += [2 * n[l] * T, 2 * (n[l - 1] + 2 * n[l])]
    params = w * d + T * w + sum(2 * h * w + h + w for h in hidden) + 4 * w * sum(n[1:]) + o * (w + 1)
    return T, w, hidden, params


def measured_sizes(tf: Transformer) -> dict:
    """The same quantities read off a built Transformer."""
    numbers = {id(x): x for m in tf.matrices() for row in m for x in row if x is not ZERO}   # shared objects
    numbers = [ZERO] + list(numbers.values()) + [x for v in tf.vectors() for x in v]
    return {"blocks": len(tf.blocks), "tokens": tf.tokens, "width": tf.width,
            "heads": [len(b.heads) for b in tf.blocks if isinstance(b, Attention)],
            "hidden": [b.hidden for b in tf.blocks if isinstance(b, FeedForward)],
            "parameters": tf.parameter_count(), "nonzero_parameters": tf.nonzero_count(),
            "numerator_bits": max(bit_size(x)[0] for x in numbers),
            "denominator_bits": max(bit_size(x)[1] for x in numbers)}


def source_sizes(net: MaxoutNet) -> dict:
    """The Maxout net's own counts, printed beside the Transformer's."""
    numbers = [x for layer in net.layers for ws in layer.weight for w in ws for x in w] + \
              [b for layer in net.layers for bs in layer.bias for b in bs] + \
              [a for row in net.readout_weight for a in row] + list(net.readout_bias)
    return {"layers": len(net.layers), "widths": net.widths, "max_rank": net.max_rank,
            "parameters": net.parameter_count(), "nonzero_parameters": sum(1 for x in numbers if x),
            "numerator_bits": max(bit_size(x)[0] for x in numbers),
            "denominator_bits": max(bit_size(x)[1] for x in numbers)}
