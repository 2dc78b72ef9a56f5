"""Symbolic exactness (claims C1, C3; and the token-shift facts of C2 that the same pass yields).

The argument, layer by layer, for a hardmax Transformer of 3 blocks per Maxout layer.  Token t
enters Maxout layer l as an exact affine map ``F_t`` of ``h = h^{l-1}`` (for l = 1, of the input x
through the embedding ``E x + P[t]``).

* Feed-forward: every ReLU is half of an identity pair — pre-activations ``v`` and ``−v`` in that
  token, output columns opposite, and ``ReLU(v) − ReLU(−v) = v`` everywhere — or has, over the
  Maxout box of the layer variables, a fixed phase (on: pre-activation ≥ 0, off: ≤ 0).  Pairs are
  taken first: they are exact as maps, where a fixed phase is exact only on the box.  With these
  substituted the block is affine per token, and the composition stays an affine map.
* Attention: head i has a score ``c_t · value`` with a constant ``c_t > 0`` and key-side map equal
  to the value map, and its values over the tokens are exactly the pieces ``a_ij`` of unit i
  (each piece at some token).  Hardmax then returns ``max_j a_ij(h) = h^l_i`` to every token
  (C1: the argmax set holds equal values, their average is the max).  The state becomes affine in
  ``(h^{l-1}, h^l)``.
* After the advance block no coordinate may depend on ``h^{l-1}``: the state is ``F_t(h^l)``.

At the end the read-out of the read-out token must be the Maxout read-out, so ``Tf(x) = M(x)``
for every x in the domain.  Everything is exact: integer matrices over a common denominator
(``QMatrix``) for the compositions, exact interval bounds over the Maxout boxes for the phases.
``hardmax_max_identity`` is the SymPy proof of the attention lemma over all orderings.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction

import flint
import sympy

from ..geometry.bounds import BlockBounds, Interval, affine_intervals, box_of, maxout_bounds
from ..models import Attention, FeedForward, MaxoutNet, Transformer
from ..models.transformer import identity_partners
from ..numbers import QMatrix, selection

Phase = str | int
"""``"on"``, ``"off"``, or the index of the partner unit of an identity pair."""


@dataclass(frozen=True)
class FeedForwardFacts:
    block: int
    phases: list[list[Phase]]          # [token][unit]
    pre: list[list[Interval]]          # [token][unit]


@dataclass(frozen=True)
class HeadFacts:
    block: int
    head: int                          # = the Maxout unit it computes
    scales: list[Fraction]             # [token]: score = scale · value
    pieces: list[int]                  # [token]: the value is piece j of the unit


@dataclass(frozen=True)
class PairFacts:
    """An identity pair of a pieces block in its owner token, and, in each other token t,
    ``(t, max pre_u, max pre_v, max (pre_u + pre_v))`` over the box (C2: ≤ 0, ≤ 0, < 0)."""
    block: int
    owner: int
    units: tuple[int, int]
    others: list[tuple[int, Fraction, Fraction, Fraction]]


@dataclass
class Analysis:
    boxes: list[list[Interval]]                     # Maxout bounds of h^0 .. h^L
    feedforward: list[FeedForwardFacts] = field(default_factory=list)
    heads: list[HeadFacts] = field(default_factory=list)
    pairs: list[PairFacts] = field(default_factory=list)
    values: list[list[QMatrix]] = field(default_factory=list)   # [layer][token]: head values [W | b]
    states: list[tuple] = field(default_factory=list)            # (block, forms, box, pre bounds)
    readout_ok: bool = False
    defects: list[str] = field(default_factory=list)

    @property
    def block_bounds(self) -> list[BlockBounds]:
        """Bounds of every coordinate after each analysed block, per token (computed on demand)."""
        return [BlockBounds(b, [affine_intervals(f, box)[:-1] for f in forms], pre)
                for b, forms, box, pre in self.states]

    @property
    def holds(self) -> bool:
        return not self.defects and self.readout_ok


def _homogeneous(rows: list[list[Fraction]], bias: list[Fraction], zero_last: bool = False) -> QMatrix:
    """``[rows | bias]``, with a final zero row when ``zero_last`` (to act on homogeneous forms)."""
    out = [r + [b] for r, b in zip(rows, bias)]
    if zero_last:
        out.append([Fraction(0)] * (len(out[0]) if out else 1))
    return QMatrix.from_rows(out)


def _selection(rows: int, cols: int, pairs) -> QMatrix:
    return QMatrix(selection(rows, cols, pairs))


def analyse(net: MaxoutNet, tf: Transformer) -> Analysis:
    """Run the argument of the module docstring; ``defects`` names whatever breaks it."""
    bounds = maxout_bounds(net)
    result = Analysis(bounds.inputs)
    L, T, w = len(net.layers), tf.tokens, tf.width
    shape = ["feedforward", "attention", "feedforward"] * L
    if tf.domain != net.domain:
        result.defects.append("the Transformer's domain differs from the Maxout net's")
    if not tf.is_hardmax:
        result.defects.append("the attention is not hardmax")
    if [b.kind for b in tf.blocks] != shape:
        result.defects.append(f"blocks are {[b.kind for b in tf.blocks]}, expected {L} × "
                              "(feedforward, attention, feedforward)")
    if tf.input_dim != net.input_dim or tf.output_dim != net.output_dim:
        result.defects.append("input or output dimensions differ")
    if result.defects:
        return result
    forms = [_homogeneous(tf.embed_weight, tf.embed_bias[t]) for t in range(T)]
    forms = [QMatrix.from_rows(f.rows() + [[Fraction(0)] * net.input_dim + [Fraction(1)]]) for f in forms]
    for l, layer in enumerate(net.layers):
        n_in = net.widths[l]
        b = 3 * l
        forms = _feedforward(result, b, tf.blocks[b], forms, box_of(bounds, [l]), pieces_block=True)
        if forms is None:
            return result
        forms = _attention(result, b + 1, tf.blocks[b + 1], forms, layer, n_in, box_of(bounds, [l, l + 1]))
        if forms is None:
            return result
        forms = _feedforward(result, b + 2, tf.blocks[b + 2], forms, box_of(bounds, [l, l + 1]))
        if forms is None:
            return result
        V = n_in + layer.units
        stale = [t for t, f in enumerate(forms) if any(f.num[r, c] for r in range(w) for c in range(n_in))]
        if stale:
            result.defects.append(f"block {b + 2} token {stale[0]}: after layer {l + 1} the state still "
                                  f"depends on the layer's input h^{l}")
            return result
        drop = _selection(V + 1, layer.units + 1, [(n_in + i, i) for i in range(layer.units + 1)])
        forms = [f @ drop for f in forms]
    readout = _homogeneous(tf.readout_weight, tf.readout_bias) @ forms[tf.readout_token]
    result.readout_ok = readout == _homogeneous(net.readout_weight, net.readout_bias)
    if not result.readout_ok:
        result.defects.append(f"the read-out of token {tf.readout_token} is not the Maxout read-out")
    return result


def _feedforward(result: Analysis, block: int, ff: FeedForward, forms: list[QMatrix], box: list[Interval],
                 pieces_block: bool = False) -> list[QMatrix] | None:
    """Resolve every ReLU per token (fixed phase or identity pair) and compose the affine map.
    Uses the block's compact maps (read columns, written rows), every ReLU as written."""
    first, second = ff.compact
    size = forms[0].shape[0]
    gather = selection(len(ff.reads) + 1, size, enumerate(ff.reads + [size - 1]))
    scatter = selection(size, len(ff.writes), ((r, k) for k, r in enumerate(ff.writes)))
    columns = [tuple(c) for c in zip(*second.int_rows())]
    phases, pres, out, rows_by_token = [], [], [], []
    for t, f in enumerate(forms):
        pre = QMatrix(first.num * (gather * f.num), first.den * f.den)
        rows = pre.int_rows()
        intervals = affine_intervals(pre, box)
        partner = identity_partners(rows, columns)
        phase: list[Phase] = []
        for u, (lo, hi) in enumerate(intervals):
            if u in partner:                  # identity pairs first (exact everywhere), then the bounds
                phase.append(partner[u])
            elif lo >= 0:
                phase.append("on")
            elif hi <= 0:
                phase.append("off")
            else:
                result.defects.append(f"block {block} (feed-forward) token {t} unit {u}: pre-activation in "
                                      f"[{lo}, {hi}] is neither fixed nor half of an identity pair")
                phase.append("?")
        keep = [p == "on" or (isinstance(p, int) and u < p) for u, p in enumerate(phase)]
        kept = [r if k else [0] * len(r) for r, k in zip(rows, keep)] + [[0] * (len(rows[0]) - 1) + [pre.den]]
        delta = second @ QMatrix(flint.fmpz_mat(kept), pre.den)
        out.append(f + QMatrix(scatter * delta.num, delta.den))
        phases.append(phase)
        pres.append(intervals)
        rows_by_token.append((rows, intervals, pre.den))
    result.feedforward.append(FeedForwardFacts(block, phases, pres))
    if any(p == "?" for ph in phases for p in ph):
        return None
    if pieces_block:
        _token_shift_pairs(result, block, phases, rows_by_token, box)
    result.states.append((block, out, box, pres))
    return out


def _token_shift_pairs(result: Analysis, block: int, phases, rows_by_token, box) -> None:
    """C2: for each identity pair (u, v) of its owner token, the pair's upper bounds and the upper
    bound of ``pre_u + pre_v`` in every other token."""
    for owner, phase in enumerate(phases):
        for u, p in enumerate(phase):
            if not (isinstance(p, int) and u < p):
                continue
            others = []
            for t, (rows, intervals, den) in enumerate(rows_by_token):
                if t == owner:
                    continue
                total = QMatrix.from_ints([[a + b for a, b in zip(rows[u], rows[p])]], den)
                others.append((t, intervals[u][1], intervals[p][1], affine_intervals(total, box)[0][1]))
            result.pairs.append(PairFacts(block, owner, (u, p), others))


def _attention(result: Analysis, block: int, att: Attention, forms: list[QMatrix], layer, n_in: int,
               box: list[Interval]) -> list[QMatrix] | None:
    """Every head must be a max head for its unit (module docstring); the new variables are h^l."""
    units, w = layer.units, att.heads[0].output and len(att.heads[0].output)
    if len(att.heads) != units:
        result.defects.append(f"block {block} (attention): {len(att.heads)} heads for {units} units")
        return None
    bad = next((i for i, h in enumerate(att.heads) if len(h.value) != 1), None)
    if bad is not None:
        result.defects.append(f"block {block} (attention) head {bad}: the value map has "
                              f"{len(att.heads[bad].value)} rows, a max head has 1")
        return None
    targets = [[tuple(w_ + [b]) for w_, b in zip(ws, bs)] for ws, bs in zip(layer.weight, layer.bias)]
    offsets = list(itertools.accumulate([0] + [len(h.query) for h in att.heads]))
    queries = QMatrix.from_rows([r + [Fraction(0)] for h in att.heads for r in h.query])
    values = QMatrix.from_rows([h.value[0] + [Fraction(0)] for h in att.heads])
    per_token = [((queries @ f).rows(), (values @ f).rows()) for f in forms]
    support = [[c for c in range(w) if h.value[0][c] or any(k[c] for k in h.key)] for h in att.heads]
    chosen_values = [[] for _ in forms]
    for i, head in enumerate(att.heads):
        where = f"block {block} (attention) head {i}"
        scales, chosen = [], []
        for t, (q_all, v_all) in enumerate(per_token):
            q = q_all[offsets[i]:offsets[i + 1]]
            if any(x for row in q for x in row[:-1]):
                result.defects.append(f"{where} token {t}: the query depends on the input")
                return None
            scale = _scale([sum((row[-1] * k[c] for row, k in zip(q, head.key) if row[-1]), Fraction(0))
                            for c in support[i]], [head.value[0][c] for c in support[i]])
            if scale is None or scale <= 0:
                result.defects.append(f"{where} token {t}: the score is not a positive multiple of the value")
                return None
            v = tuple(v_all[i])
            if v not in targets[i]:
                result.defects.append(f"{where} token {t}: the value is not a piece of unit {i}")
                return None
            scales.append(scale)
            chosen.append(targets[i].index(v))
            chosen_values[t].append(list(v))
        seen = {targets[i][j] for j in chosen}             # duplicate pieces are one function
        missing = [j for j, piece in enumerate(targets[i]) if piece not in seen]
        if missing:
            result.defects.append(f"{where}: piece {missing[0]} of unit {i} is in no token")
            return None
        result.heads.append(HeadFacts(block, i, scales, chosen))
    V = n_in + units
    widen = _selection(n_in + 1, V + 1, [(k, k) for k in range(n_in)] + [(n_in, V)])
    outputs = QMatrix.from_rows([[Fraction(0)] * n_in + [h.output[r][0] for h in att.heads] + [Fraction(0)]
                                 for r in range(w)] + [[Fraction(0)] * (V + 1)])
    new = [f @ widen + outputs for f in forms]
    result.values.append([QMatrix.from_rows(rows) for rows in chosen_values])
    result.states.append((block, new, box, []))
    return new


def _scale(key: list[Fraction], value: list[Fraction]) -> Fraction | None:
    """c with ``key = c · value``, or None."""
    j = next((c for c, x in enumerate(value) if x), None)
    if j is None:
        return None
    c = key[j] / value[j]
    return c if all(k == c * x for k, x in zip(key, value)) else None


# --- C1: the attention lemma, symbolically --------------------------------------------------------

def weak_orderings(tokens: int):
    """Every weak ordering of ``tokens`` values, as levels (0 = the largest) onto 0..k−1."""
    for levels in itertools.product(range(tokens), repeat=tokens):
        if set(levels) == set(range(max(levels) + 1)):
            yield levels


def hardmax_max_identity(tokens: int) -> int:
    """SymPy proof of C1 at T = ``tokens``: for every weak ordering of the values
    ``v_j = top − (d_1 + … + d_level(j))`` (gaps ``d > 0``) and every score scale ``c > 0``, hardmax
    with scores ``c·v_j`` puts weight ``1/|M|`` on the argmax set M, and ``Σ_j A_j v_j = Max(v)``.
    Returns the number of orderings proved; raises ``AssertionError`` if one fails."""
    top, c = sympy.Symbol("top", real=True), sympy.Symbol("c", positive=True)
    gaps = sympy.symbols(f"d1:{tokens + 1}", positive=True)
    count = 0
    for levels in weak_orderings(tokens):
        v = [top - sum(gaps[:k]) for k in levels]
        scores = [c * x for x in v]
        best = max(range(tokens), key=lambda j: -levels[j])
        argmax = []
        for j, s in enumerate(scores):
            diff = sympy.expand(s - scores[best])
            assert diff == 0 or diff.is_negative, f"cannot order score {j} at levels {levels}"
            if diff == 0:
                argmax.append(j)
        output = sum(v[j] for j in argmax) / len(argmax)
        assert sympy.simplify(output - sympy.Max(*v)) == 0, f"hardmax is not the max at levels {levels}"
        count += 1
    return count


def transformer_bounds(net, tf) -> list[BlockBounds]:
    """Per block and token, bounds of every coordinate and pre-activation of ``tf`` over
    ``net.domain``.  They come from the exact per-token affine forms of ``analyse`` (each
    coordinate an affine map of the Maxout layer values, bounded over the Maxout boxes), which is
    what keeps identity pairs such as ``h − h`` exactly 0; raises ``ValueError`` naming the first
    ReLU that is neither fixed nor paired."""
    result = analyse(net, tf)
    if result.defects:
        raise ValueError(result.defects[0])
    return result.block_bounds
