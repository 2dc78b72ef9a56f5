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
for every x in the domain.  Everything is exact: sparse affine forms with ``Fraction`` coefficients for the compositions, exact
interval bounds over the Maxout boxes for the phases.
``hardmax_max_identity`` is the SymPy proof of the attention lemma over all orderings.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction

import flint
import sympy

from ..geometry.bounds import BlockBounds, Interval, box_of, form_interval, maxout_bounds
from ..forms import CONSTANT, combine
from ..models import Attention, FeedForward, MaxoutNet, Transformer
from ..models.transformer import identity_partners
from ..numbers import QMatrix

Phase = str | int
"""``"on"``, ``"off"``, or the index of the partner unit of an identity pair."""


@dataclass(frozen=True)
class FeedForwardFacts:
    block: int
    phases: list[list[Phase]]          # [token][unit]
    pre: list[list[Interval | None]]   # [token][unit]: None for half of an identity pair (no bound needed)


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
        return [BlockBounds(b, [[_interval(f, box) for f in X] for X in forms], pre)
                for b, forms, box, pre in self.states]

    @property
    def holds(self) -> bool:
        return not self.defects and self.readout_ok



Forms = list[list[dict]]
"""``X[t][r]``: coordinate r of token t as a sparse affine form of the current variables, with
``flint.fmpq`` coefficients (exact, and an order of magnitude faster than ``Fraction``)."""

Q = flint.fmpq
UNIT = {CONSTANT: Q(1)}


def _q(v) -> Q:
    return Q(v.numerator, v.denominator)


def _fraction(q) -> Fraction:
    return Fraction(int(q.numerator), int(q.denominator))


def _rows(rows: list[dict]) -> list[dict]:
    """Sparse rows with ``fmpq`` entries."""
    return [{c: _q(v) for c, v in row.items() if v} for row in rows]


def _interval(form: dict, box: list[tuple]) -> Interval:
    """``form_interval`` over an ``fmpq`` box, as Fractions."""
    lo, hi = form_interval(form, box, CONSTANT)
    return _fraction(lo), _fraction(hi)


def _box(box: list[Interval]) -> list[tuple]:
    return [(_q(lo), _q(hi)) for lo, hi in box]


def _affine(row: dict, bias, X: list[dict]) -> dict:
    """``Σ_c row[c]·X[c] + bias`` as one sparse form."""
    return combine([(a, X[c]) for c, a in row.items()] + [(bias, UNIT)])


def _piece_form(weights: list[Fraction], bias: Fraction) -> dict:
    return {k: _q(a) for k, a in enumerate(weights) if a} | ({CONSTANT: _q(bias)} if bias else {})


def analyse(net: MaxoutNet, tf: Transformer) -> Analysis:
    """Run the argument of the module docstring; ``defects`` names whatever breaks it.  Every form is
    sparse (``Forms``), so the work follows the non-zeros of both models."""
    bounds = maxout_bounds(net)
    result = Analysis(bounds.inputs)
    L, T = len(net.layers), tf.tokens
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
    X = [[combine([(1, row), (_q(tf.embed_bias[t][r]), UNIT)]) for r, row in enumerate(_rows(tf.embed_weight))]
         for t in range(T)]
    for l, layer in enumerate(net.layers):
        n_in = net.widths[l]
        b = 3 * l
        X = _feedforward(result, b, tf.blocks[b], X, _box(box_of(bounds, [l])), pieces_block=True)
        if X is None:
            return result
        X = _attention(result, b + 1, tf.blocks[b + 1], X, layer, n_in, _box(box_of(bounds, [l, l + 1])))
        if X is None:
            return result
        X = _feedforward(result, b + 2, tf.blocks[b + 2], X, _box(box_of(bounds, [l, l + 1])))
        if X is None:
            return result
        stale = [t for t, Xt in enumerate(X) if any(k != CONSTANT and k < n_in for f in Xt for k in f)]
        if stale:
            result.defects.append(f"block {b + 2} token {stale[0]}: after layer {l + 1} the state still "
                                  f"depends on the layer's input h^{l}")
            return result
        X = [[{(k if k == CONSTANT else k - n_in): a for k, a in f.items()} for f in Xt] for Xt in X]
    readout = [_affine(row, _q(c), X[tf.readout_token]) for row, c in zip(_rows(tf.readout_weight), tf.readout_bias)]
    result.readout_ok = readout == [_piece_form(w, c) for w, c in zip(net.readout_weight, net.readout_bias)]
    if not result.readout_ok:
        result.defects.append(f"the read-out of token {tf.readout_token} is not the Maxout read-out")
    return result


def _feedforward(result: Analysis, block: int, ff: FeedForward, X: Forms, box: list[Interval],
                 pieces_block: bool = False) -> Forms | None:
    """Resolve every ReLU per token (fixed phase or identity pair) and compose the affine map,
    every ReLU as written."""
    w1, b1, columns = _rows(ff.w1), [_q(b) for b in ff.b1], _rows(ff.columns)
    phases, pres, out, forms_by_token = [], [], [], []
    for t, Xt in enumerate(X):
        pre = [_affine(row, b, Xt) for row, b in zip(w1, b1)]
        partner = identity_partners(pre, columns)
        intervals = [None if u in partner else _interval(f, box) for u, f in enumerate(pre)]
        phase: list[Phase] = []
        for u, interval in enumerate(intervals):
            lo, hi = interval or (None, None)
            if u in partner:                  # identity pairs first (exact everywhere, no bound), then the bounds
                phase.append(partner[u])
            elif lo >= 0:
                phase.append("on")
            elif hi <= 0:
                phase.append("off")
            else:
                result.defects.append(f"block {block} (feed-forward) token {t} unit {u}: pre-activation in "
                                      f"[{lo}, {hi}] is neither fixed nor half of an identity pair")
                phase.append("?")
        terms: list[list] = [[(1, f)] for f in Xt]
        for r, c in enumerate(ff.b2):
            if c:
                terms[r].append((_q(c), UNIT))
        for u, p in enumerate(phase):
            if p == "on" or (isinstance(p, int) and u < p):
                for r, a in columns[u].items():
                    terms[r].append((a, pre[u]))
        out.append([f[0][1] if len(f) == 1 else combine(f) for f in terms])
        phases.append(phase)
        pres.append(intervals)
        forms_by_token.append((pre, intervals))
    result.feedforward.append(FeedForwardFacts(block, phases, pres))
    if any(p == "?" for ph in phases for p in ph):
        return None
    if pieces_block:
        _token_shift_pairs(result, block, phases, forms_by_token, box)
    result.states.append((block, out, box, pres))
    return out


def _token_shift_pairs(result: Analysis, block: int, phases, forms_by_token, box) -> None:
    """C2: for each identity pair (u, v) of its owner token, the pair's upper bounds and the upper
    bound of ``pre_u + pre_v`` in every other token."""
    for owner, phase in enumerate(phases):
        for u, p in enumerate(phase):
            if not (isinstance(p, int) and u < p):
                continue
            others = []
            for t, (pre, intervals) in enumerate(forms_by_token):
                if t == owner:
                    continue
                total = combine([(1, pre[u]), (1, pre[p])])
                upper = [(intervals[v] or _interval(pre[v], box))[1] for v in (u, p)]     # paired there too: C2 fails
                others.append((t, *upper, _interval(total, box)[1]))
            result.pairs.append(PairFacts(block, owner, (u, p), others))


def _attention(result: Analysis, block: int, att: Attention, X: Forms, layer, n_in: int,
               box: list[Interval]) -> Forms | None:
    """Every head must be a max head for its unit (module docstring); the new variables are h^l."""
    units = layer.units
    if len(att.heads) != units:
        result.defects.append(f"block {block} (attention): {len(att.heads)} heads for {units} units")
        return None
    bad = next((i for i, h in enumerate(att.heads) if len(h.value) != 1), None)
    if bad is not None:
        result.defects.append(f"block {block} (attention) head {bad}: the value map has "
                              f"{len(att.heads[bad].value)} rows, a max head has 1")
        return None
    targets = [[_piece_form(w_, b) for w_, b in zip(ws, bs)] for ws, bs in zip(layer.weight, layer.bias)]
    chosen_values = [[] for _ in X]
    for i, head in enumerate(att.heads):
        where = f"block {block} (attention) head {i}"
        scales, chosen = [], []
        query, key, value = _rows(head.query), _rows(head.key), _rows(head.value)[0]
        for t, Xt in enumerate(X):
            q = [_affine(row, 0, Xt) for row in query]
            if any(k != CONSTANT for f in q for k in f):
                result.defects.append(f"{where} token {t}: the query depends on the input")
                return None
            scale = _scale(combine((f.get(CONSTANT, 0), k) for f, k in zip(q, key)), value)   # score: key·X_j
            if scale is None or scale <= 0:
                result.defects.append(f"{where} token {t}: the score is not a positive multiple of the value")
                return None
            v = _affine(value, 0, Xt)
            j = next((j for j, piece in enumerate(targets[i]) if piece == v), None)
            if j is None:
                result.defects.append(f"{where} token {t}: the value is not a piece of unit {i}")
                return None
            scales.append(scale)
            chosen.append(j)
            chosen_values[t].append(v)
        seen = {tuple(sorted(targets[i][j].items())) for j in chosen}       # duplicate pieces are one function
        missing = [j for j, piece in enumerate(targets[i]) if tuple(sorted(piece.items())) not in seen]
        if missing:
            result.defects.append(f"{where}: piece {missing[0]} of unit {i} is in no token")
            return None
        result.heads.append(HeadFacts(block, i, scales, chosen))
    outputs = [combine((_q(row[0]), {n_in + i: Q(1)}) for i, row in
                       ((i, h.output[r]) for i, h in enumerate(att.heads)) if row.get(0)) for r in range(len(X[0]))]
    new = [[combine([(1, f), (1, o)]) if o else f for f, o in zip(Xt, outputs)] for Xt in X]
    result.values.append([QMatrix.from_sparse([{(n_in if k == CONSTANT else k): _fraction(a) for k, a in v.items()}
                                               for v in vs], n_in + 1) for vs in chosen_values])
    result.states.append((block, new, box, []))
    return new


def _scale(key: dict, value: dict) -> Fraction | None:
    """c with ``key = c · value`` (sparse rows over the coordinates), or None."""
    j = next((c for c, x in value.items() if x), None)
    if j is None:
        return None
    c = key.get(j, 0) / value[j]
    return _fraction(c) if key == {k: c * x for k, x in value.items() if x} else None


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
