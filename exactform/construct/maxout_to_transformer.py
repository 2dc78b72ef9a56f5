"""The three-block construction of docs/spec.md §2 (named ``token-shift``): one Maxout layer becomes

1. FF pieces   reads [1, c_j, h], writes z:  token t gets ``z_i = a_it(h) = W[i][t]·h + b[i][t]`` via,
               per unit i and piece j, the pair ``ReLU(a_ij − R_ij c_j) − ReLU(−a_ij − R_ij c_j)``;
               in token j (c_j = 0) the pair is the identity ``ReLU(v) − ReLU(−v) = v``; in every other
               token (c_j = 1) ``R_ij ≥ max|a_ij|`` on the box puts both pre-activations ≤ 0.
2. attention   reads [1, z], writes out: one head per unit, query = 1, key = value = z_i; hardmax
               returns ``max_t z_{t,i}`` (ties average equal values) to every token.
3. FF advance  reads [h, z, out], writes [h, z, out]: ``h ← out``, ``z ← 0``, ``out ← 0``, each as
               identity pairs, ready for the next layer.

Token layout, block shapes, padded pieces, shifts and the C4 size formula: ``exactform.layout``.
"""
from __future__ import annotations

from fractions import Fraction

from ..geometry.bounds import maxout_bounds
from ..layout import Layout, closed_nonzeros, closed_sizes, padded_piece
from ..layout import shift_constants as layout_shift_constants
from ..models import Attention, FeedForward, Head, MaxoutNet, Transformer
from ..numbers import ZERO, ZERO_ROW, bit_size

ONE = Fraction(1)


def shift_constants(net: MaxoutNet, margin: Fraction = Fraction(2)) -> list[list[list[Fraction]]]:
    """``R[l][i][j]`` of ``layout.shift_constants`` from the exact interval bounds of the net
    (``check_size`` first)."""
    return layout_shift_constants(net, maxout_bounds, margin)


def compile_maxout(net: MaxoutNet, shifts: list[list[list[Fraction]]] | None = None) -> Transformer:
    """The hardmax Transformer of docs/spec.md §2 computing ``net`` exactly on ``net.domain``.

    ``shifts``: the constants ``R_ij`` if already computed (default ``shift_constants(net)``);
    tests pass deliberately wrong ones.
    """
    T, widths = net.max_rank, net.widths
    lay = Layout(T, max(widths))
    w = lay.width
    R = shift_constants(net) if shifts is None else shifts

    embed_weight = [{} for _ in range(w)]
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

    readout = [{lay.h(i): a for i, a in enumerate(row) if a} for row in net.readout_weight]
    return Transformer(net.domain, T, w, "hardmax", embed_weight, embed_bias, blocks, 0,
                       readout, list(net.readout_bias), lay.to_json())


def _pieces_block(net: MaxoutNet, l: int, R: list[list[Fraction]], lay: Layout) -> FeedForward:
    layer, w = net.layers[l], lay.width
    w1, b1, w2 = [], [], [{} for _ in range(w)]
    for i in range(layer.units):
        for j in range(lay.tokens):
            weights, bias = layer.piece(i, padded_piece(layer.ranks[i], j))
            for sign in (1, -1):
                row = {lay.h(c): (a if sign > 0 else -a) for c, a in enumerate(weights) if a}
                if R[i][j]:
                    row[lay.shift(j)] = -R[i][j]
                w2[lay.z(i)][len(w1)] = ONE if sign > 0 else -ONE
                w1.append(row)
                b1.append(bias if sign > 0 else -bias)
    return FeedForward(w1, b1, w2, [ZERO] * w)


def _max_block(units: int, lay: Layout) -> Attention:
    def output(i: int) -> list:
        rows = [ZERO_ROW] * lay.width
        rows[lay.out(i)] = {0: ONE}
        return rows

    return Attention([Head(query=[{lay.const: ONE}], key=[{lay.z(i): ONE}], value=[{lay.z(i): ONE}], output=output(i))
                      for i in range(units)])


def _advance_block(previous: int, units: int, lay: Layout) -> FeedForward:
    """Identity pairs: on h_i (i < previous) writing −h_i; on out_i writing +h_i, −out_i; on z_i writing −z_i."""
    w = lay.width
    pairs: list[tuple[int, dict[int, Fraction]]] = []
    pairs += [(lay.h(i), {lay.h(i): -ONE}) for i in range(previous)]
    pairs += [(lay.out(i), {lay.h(i): ONE, lay.out(i): -ONE}) for i in range(units)]
    pairs += [(lay.z(i), {lay.z(i): -ONE}) for i in range(units)]
    w1, w2 = [], [{} for _ in range(w)]
    for src, writes in pairs:
        for sign in (ONE, -ONE):
            for r, a in writes.items():
                w2[r][len(w1)] = a if sign > 0 else -a
            w1.append({src: sign})
    return FeedForward(w1, [ZERO] * len(w1), w2, [ZERO] * w)


# --- claim C4: sizes from a closed formula -------------------------------------------------------

def predicted_sizes(net: MaxoutNet, R: list[list[list[Fraction]]]) -> dict:
    """Sizes of ``compile_maxout(net)`` from the closed formulas (no Transformer is built).

    Dense sizes: ``layout.closed_sizes``; non-zeros: ``layout.closed_nonzeros``.
    """
    dense = closed_sizes(net.widths, net.max_rank, net.output_dim)
    T = dense.tokens
    numbers = [ONE] + [a for row in net.readout_weight for a in row] + list(net.readout_bias)
    for l, layer in enumerate(net.layers):
        for i in range(layer.units):
            for j in range(T):
                ws, b = layer.piece(i, padded_piece(layer.ranks[i], j))
                numbers += ws + [b, R[l][i][j]]
    nnz = closed_nonzeros(net, R)
    return {"blocks": dense.blocks, "tokens": T, "width": dense.width, "heads": dense.heads, "hidden": dense.hidden,
            "parameters": dense.parameters, "nonzero_parameters": nnz, **_bits(numbers)}


def measured_sizes(tf: Transformer) -> dict:
    """The same quantities read off a built Transformer."""
    numbers = {id(x): x for m, _ in tf.matrices() for row in m for x in row.values()}   # shared objects
    numbers = [ZERO] + list(numbers.values()) + [x for v in tf.vectors() for x in v]
    return {"blocks": len(tf.blocks), "tokens": tf.tokens, "width": tf.width,
            "heads": [len(b.heads) for b in tf.blocks if isinstance(b, Attention)],
            "hidden": [b.hidden for b in tf.blocks if isinstance(b, FeedForward)],
            "parameters": tf.parameter_count(), "nonzero_parameters": tf.nonzero_count(), **_bits(numbers)}


def source_sizes(net: MaxoutNet) -> dict:
    """The Maxout net's own counts, printed beside the Transformer's."""
    numbers = [x for layer in net.layers for ws in layer.weight for w in ws for x in w] + \
              [b for layer in net.layers for bs in layer.bias for b in bs] + \
              [a for row in net.readout_weight for a in row] + list(net.readout_bias)
    return {"layers": len(net.layers), "widths": net.widths, "max_rank": net.max_rank,
            "parameters": net.parameter_count(), "nonzero_parameters": sum(1 for x in numbers if x), **_bits(numbers)}


def _bits(numbers: list[Fraction]) -> dict:
    """The largest numerator and denominator sizes, in bits (zero has 0 and 1)."""
    sizes = [bit_size(x) for x in numbers if x] or [(0, 1)]
    return {"numerator_bits": max(n for n, _ in sizes), "denominator_bits": max(d for _, d in sizes)}
