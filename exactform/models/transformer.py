"""Transformers of docs/spec.md §1: ``T`` token columns of width ``w``, residual attention and
feed-forward blocks, hardmax (ties share equally) or softmax(λ) attention.

Exact evaluation keeps the whole state as integers over one common denominator and uses the
block structure: each block multiplies only the coordinates it *reads* (non-zero columns of its
input maps) and updates only the coordinates it *writes* (non-zero rows of its output maps).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache

import flint

from ..formats import Reader, check_format, encode_row, encode_rows, sha256
from ..numbers import ZERO, QMatrix, exact_point, format_rational, selection, to_sympy
from .box import Box

Matrix = list[list[Fraction]]


def _nonzero_columns(*mats: Matrix) -> list[int]:
    cols = len(mats[0][0]) if mats and mats[0] else 0
    return [j for j in range(cols) if any(row[j] for m in mats for row in m)]


def _nonzero_rows(m: Matrix, extra: list[Fraction] | None = None) -> list[int]:
    return [i for i, row in enumerate(m) if any(row) or (extra is not None and extra[i])]


def identity_partners(rows, columns) -> dict[int, int]:
    """The partner of each hidden unit that is half of an identity pair: its pre-activation row and
    output column are the exact negatives of the partner's, so ``ReLU(v) − ReLU(−v) = v`` makes the
    pair add ``column·v`` for every input, with no bound.  The k-th unit with (row, column) pairs
    with the k-th with (−row, −column); a unit is never its own partner.  The one matcher of the
    package, used by the evaluator (block weights) and the prover (per-token pre-activations)."""
    waiting: dict[tuple, list[int]] = {}
    partner: dict[int, int] = {}
    for u, (row, column) in enumerate(zip(rows, columns)):
        row, column = tuple(row), tuple(column)
        match = waiting.get((tuple(-x for x in row), tuple(-x for x in column)))
        if match:
            p = match.pop(0)
            partner[p], partner[u] = u, p
        else:
            waiting.setdefault((row, column), []).append(u)
    return partner


@dataclass(frozen=True, eq=False)
class FeedForward:
    """``X'[:,t] = X[:,t] + w2 ReLU(w1 X[:,t] + b1) + b2`` for every token t."""
    w1: Matrix
    b1: list[Fraction]
    w2: Matrix
    b2: list[Fraction]
    kind = "feedforward"

    @property
    def hidden(self) -> int:
        return len(self.w1)

    @cached_property
    def reads(self) -> list[int]:
        return _nonzero_columns(self.w1)

    @cached_property
    def writes(self) -> list[int]:
        return _nonzero_rows(self.w2, self.b2)

    @cached_property
    def compact(self) -> tuple[QMatrix, QMatrix]:
        """The block as written, on its read coordinates (plus a ones row): ``[w1 | b1]`` and
        ``[w2 | b2]`` on the written rows (what the prover resolves ReLU by ReLU)."""
        first = QMatrix.from_rows([[row[j] for j in self.reads] + [b] for row, b in zip(self.w1, self.b1)])
        second = QMatrix.from_rows([self.w2[i] + [self.b2[i]] for i in self.writes], ncols=self.hidden + 1)
        return first, second

    @cached_property
    def identity_pairs(self) -> list[tuple[int, int]]:
        """Hidden units ``(u, p)``, u < p, with ``w1[p] = −w1[u]``, ``b1[p] = −b1[u]``, ``w2[:,p] = −w2[:,u]``:
        such a pair adds the affine map ``w2[:,u]·(w1[u]·x + b1[u])`` whatever the input."""
        columns = list(zip(*self.w2)) if self.w2 else [() for _ in self.w1]
        partner = identity_partners([tuple(r) + (b,) for r, b in zip(self.w1, self.b1)], columns)
        return sorted((u, p) for u, p in partner.items() if u < p)

    @cached_property
    def decomposition(self) -> tuple[list[int], Matrix, list[Fraction]]:
        """``(relu, linear, offset)``: on the written coordinates the block adds
        ``w2[:, relu] ReLU(w1[relu] x + b1[relu]) + linear x + offset``, where ``linear`` (over all
        coordinates) and ``offset`` collect the identity pairs and ``b2``; exact for every x."""
        paired = {u for pair in self.identity_pairs for u in pair}
        linear = [[Fraction(0)] * len(self.w1[0]) for _ in self.writes]
        offset = [self.b2[r] for r in self.writes]
        for u, _ in self.identity_pairs:
            for k, r in enumerate(self.writes):
                a = self.w2[r][u]
                if a:
                    for c in self.reads:
                        if self.w1[u][c]:
                            linear[k][c] += a * self.w1[u][c]
                    offset[k] += a * self.b1[u]
        return [u for u in range(self.hidden) if u not in paired], linear, offset

    @cached_property
    def _maps(self) -> tuple[QMatrix | None, QMatrix | None, QMatrix]:
        """``decomposition`` on the read coordinates (plus a ones row) as integer matrices."""
        relu, linear, offset = self.decomposition
        first = QMatrix.from_rows([[self.w1[u][j] for j in self.reads] + [self.b1[u]] for u in relu]) if relu else None
        second = QMatrix.from_rows([[self.w2[r][u] for u in relu] + [Fraction(0)] for r in self.writes]) if relu else None
        return first, second, QMatrix.from_rows([[row[c] for c in self.reads] + [b] for row, b in zip(linear, offset)],
                                                ncols=len(self.reads) + 1)

    def update(self, state: "State") -> None:
        first, second, linear = self._maps
        x = state.gather(self.reads)
        delta = linear @ x
        if first is not None:
            pre = first @ x
            zero = flint.fmpz(0)
            act = [[v if v > zero else zero for v in row] for row in pre.num.tolist()]
            act.append([pre.den] * state.columns)
            delta = delta + second @ QMatrix(flint.fmpz_mat(act), pre.den)
        state.add_rows(self.writes, delta)

    def to_json(self) -> dict:
        return {"kind": self.kind, "w1": encode_rows(self.w1), "b1": encode_row(self.b1),
                "w2": encode_rows(self.w2), "b2": encode_row(self.b2)}


@dataclass(frozen=True, eq=False)
class Head:
    """One head: scores ``(query X_i)·(key X_j)``, output ``output · value X``."""
    query: Matrix
    key: Matrix
    value: Matrix
    output: Matrix

    def to_json(self) -> dict:
        return {"query": encode_rows(self.query), "key": encode_rows(self.key),
                "value": encode_rows(self.value), "output": encode_rows(self.output)}


@dataclass(frozen=True, eq=False)
class Attention:
    """``X'[:,i] = X[:,i] + Σ_h O_h Σ_j A^h_ij V_h X[:,j]``; every head reads the block's input."""
    heads: list[Head]
    kind = "attention"

    @cached_property
    def reads(self) -> list[int]:
        return _nonzero_columns(*(m for h in self.heads for m in (h.query, h.key, h.value)))

    @cached_property
    def output(self) -> Matrix:
        """All heads' output maps side by side: ``[O_1 | O_2 | ...]``."""
        return [[x for h in self.heads for x in h.output[r]] for r in range(len(self.heads[0].output))]

    @cached_property
    def writes(self) -> list[int]:
        return _nonzero_rows(self.output)

    @cached_property
    def _maps(self) -> tuple[QMatrix, QMatrix, list[tuple[slice, slice, slice]]]:
        """All queries, keys and values stacked into one map on the read coordinates (plus a zero
        bias column), the output on the written coordinates, and each head's (query, key, value)
        row slices of the stack."""
        rows, slices = [], []
        for h in self.heads:
            q0, k0 = len(rows), len(rows) + len(h.query)
            v0 = k0 + len(h.key)
            rows += h.query + h.key + h.value
            slices.append((slice(q0, k0), slice(k0, v0), slice(v0, v0 + len(h.value))))
        qkv = QMatrix.from_rows([[row[j] for j in self.reads] + [Fraction(0)] for row in rows])
        out = QMatrix.from_rows([self.output[r] for r in self.writes], ncols=sum(len(h.value) for h in self.heads))
        return qkv, out, slices

    def update(self, state: "State", tokens: int) -> None:
        qkv, o, slices = self._maps
        projected = qkv @ state.gather(self.reads)      # one common denominator: scores compare as integers
        rows = projected.num.tolist()
        sums, sizes = [], set()
        for q, k, v in slices:
            winners = hardmax_winners(rows[q], rows[k], tokens)
            sizes.update(len(win) for win in winners)
            for row in rows[v]:
                sums.append([(sum(row[j] for j in win), len(win)) for win in winners])
        common = math.lcm(*sizes)
        mixed = flint.fmpz_mat([[s * (common // n) for s, n in row] for row in sums])
        state.add_rows(self.writes, o @ QMatrix(mixed, projected.den * common))

    def to_json(self) -> dict:
        return {"kind": self.kind, "heads": [h.to_json() for h in self.heads]}


def hardmax_winners(qx: list[list], kx: list[list], tokens: int) -> list[list[int]]:
    """For each column i (a (point, token) pair), the argmax set ``M_i`` of the scores
    ``s_ij = Σ_r qx[r][i]·kx[r][j]`` over the tokens j of the same point (hardmax: ties
    share equally).  ``qx``, ``kx`` are integers over common denominators, so scores compare
    exactly as integers.
    """
    winners = []
    for base in range(0, len(qx[0]), tokens):
        keys = range(base, base + tokens)
        for i in keys:
            scores = [sum(a[i] * b[j] for a, b in zip(qx, kx)) for j in keys]
            top = max(scores)
            winners.append([j for j, s in zip(keys, scores) if s == top])
    return winners


class State:
    """The residual stream of a batch as one homogeneous ``QMatrix``: rows are the coordinates
    plus a final row of ones, columns are (point, token) pairs, ordered point-major."""

    REDUCE_BITS = 256
    """Cancel common factors once the denominator grows past this many bits (amortised gcds)."""

    def __init__(self, x: QMatrix):
        self.x = x
        self.columns = x.shape[1]

    def gather(self, indices: list[int]) -> QMatrix:
        """Rows ``indices`` plus the row of ones."""
        return QMatrix(_selection(tuple(indices) + (self.x.shape[0] - 1,), self.x.shape[0]) * self.x.num, self.x.den)

    def add_rows(self, indices: list[int], delta: QMatrix) -> None:
        """``x[indices] += delta`` (a scatter product; the ones row is never written)."""
        x = self.x
        den = math.lcm(x.den, delta.den)
        scaled = delta.num if den == delta.den else delta.num * (den // delta.den)
        num = (x.num if den == x.den else x.num * (den // x.den)) + _scatter(tuple(indices), x.shape[0]) * scaled
        self.x = QMatrix(num, den)
        if den.bit_length() > self.REDUCE_BITS:
            self.x = self.x.reduced()


@lru_cache(maxsize=4096)
def _scatter(indices: tuple[int, ...], size: int) -> flint.fmpz_mat:
    """The 0/1 matrix putting ``len(indices)`` rows at rows ``indices`` of ``size``."""
    return selection(size, len(indices), ((r, k) for k, r in enumerate(indices)))


@lru_cache(maxsize=4096)
def _selection(indices: tuple[int, ...], size: int) -> flint.fmpz_mat:
    """The 0/1 matrix picking rows ``indices`` out of ``size``."""
    return selection(len(indices), size, enumerate(indices))


@dataclass(frozen=True, eq=False)
class Transformer:
    """An exact Transformer on the box ``domain`` (outside it, no claim is made)."""
    domain: Box
    tokens: int
    width: int
    attention: str | Fraction          # "hardmax" or the softmax scale λ
    embed_weight: Matrix                # [w][d]
    embed_bias: Matrix                  # [T][w]: the token-wise shift / position
    blocks: list[FeedForward | Attention]
    readout_token: int
    readout_weight: Matrix
    readout_bias: list[Fraction]
    layout: dict

    FORMAT = "exactform/transformer@1"

    @property
    def input_dim(self) -> int:
        return self.domain.dim

    @property
    def output_dim(self) -> int:
        return len(self.readout_weight)

    @property
    def is_hardmax(self) -> bool:
        return self.attention == "hardmax"

    def parameter_count(self) -> int:
        return sum(len(m) * len(m[0]) if m else 0 for m in self.matrices()) + \
            sum(len(v) for v in self.vectors())

    def nonzero_count(self) -> int:
        return sum(len(row) - row.count(ZERO) for m in self.matrices() for row in m) + \
            sum(len(v) - v.count(ZERO) for v in self.vectors())

    def matrices(self) -> list[Matrix]:
        out = [self.embed_weight, self.embed_bias, self.readout_weight]
        for b in self.blocks:
            if isinstance(b, FeedForward):
                out += [b.w1, b.w2]
            else:
                out += [m for h in b.heads for m in (h.query, h.key, h.value, h.output)]
        return out

    def vectors(self) -> list[list[Fraction]]:
        return [self.readout_bias] + [v for b in self.blocks if isinstance(b, FeedForward) for v in (b.b1, b.b2)]

    def sympy_embedding(self):
        """(E, P) as SymPy Rationals: token t starts as ``E x + P[t]``."""
        return to_sympy(self.embed_weight), to_sympy(self.embed_bias)

    # --- exact evaluation ------------------------------------------------------------------------
    def residual_batch(self, points: list[list[Fraction]]) -> State:
        """The residual stream after the last block, columns ordered (point, token)."""
        if not self.is_hardmax:
            raise ValueError("a softmax Transformer has no exact rational value; "
                             "use exactform.prove.softmax for a rigorous enclosure")
        embed, _ = self._io_maps
        T = self.tokens
        cols = [list(point) + [Fraction(t == s) for s in range(T)] for point in points for t in range(T)]
        state = State(embed @ QMatrix.from_rows([list(r) for r in zip(*cols)]))
        for block in self.blocks:
            if isinstance(block, FeedForward):
                block.update(state)
            else:
                block.update(state, self.tokens)
        return state

    def evaluate_batch(self, points: list[list[Fraction]]) -> list[list[Fraction]]:
        if not points:
            return []
        state = self.residual_batch(points)
        cols = [p * self.tokens + self.readout_token for p in range(len(points))]
        picked = QMatrix(state.x.num * _scatter(tuple(cols), state.columns), state.x.den)
        return (self._io_maps[1] @ picked).reduced().columns()

    @cached_property
    def _io_maps(self) -> tuple[QMatrix, QMatrix]:
        """Homogeneous embedding ``[x; e_t] ↦ [E x + P[t]; 1]`` and read-out ``[R | c]``."""
        T, d = self.tokens, self.input_dim
        embed = QMatrix.from_rows([self.embed_weight[r] + [self.embed_bias[t][r] for t in range(T)]
                                   for r in range(self.width)] + [[Fraction(0)] * d + [Fraction(1)] * T])
        readout = QMatrix.from_rows([w + [b] for w, b in zip(self.readout_weight, self.readout_bias)])
        return embed, readout

    def __call__(self, point) -> list[Fraction]:
        """Exact outputs at one point of ints, Fractions or exact decimal strings (``numbers.exact_point``;
        floats are refused).  No domain check: ``exactform.evaluate`` makes one."""
        return self.evaluate_batch([exact_point(point, self.input_dim)])[0]

    # --- JSON ----------------------------------------------------------------------------------
    def to_json(self) -> dict:
        att = "hardmax" if self.is_hardmax else {"softmax": format_rational(self.attention)}
        return {
            "format": self.FORMAT, "input_dim": self.input_dim, "tokens": self.tokens,
            "width": self.width, "attention": att, "domain": self.domain.to_json(),
            "embed": {"weight": encode_rows(self.embed_weight), "bias": encode_rows(self.embed_bias)},
            "blocks": [b.to_json() for b in self.blocks],
            "readout": {"token": self.readout_token, "weight": encode_rows(self.readout_weight),
                        "bias": encode_row(self.readout_bias)},
            "layout": self.layout,
        }

    def digest(self) -> str:
        return sha256(self.to_json())

    def with_attention(self, attention: str | Fraction) -> "Transformer":
        from dataclasses import replace
        return replace(self, attention=attention)

    @classmethod
    def from_json(cls, doc: Reader) -> "Transformer":
        doc.dict({"format", "input_dim", "tokens", "width", "attention", "domain", "embed", "blocks",
                  "readout"}, optional={"layout"})
        check_format(doc, cls.FORMAT)
        d = doc.field("input_dim").int(minimum=1)
        T = doc.field("tokens").int(minimum=1)
        w = doc.field("width").int(minimum=1)
        att = doc.field("attention")
        if isinstance(att.value, dict):
            att.dict({"softmax"})
            attention = att.field("softmax").rational()
            if attention <= 0:
                raise att.field("softmax").error("the softmax scale λ must be positive")
        else:
            attention = att.str(("hardmax",))
        domain = Box.from_json(doc.field("domain"), d)
        emb = doc.field("embed")
        emb.dict({"weight", "bias"})
        ew, eb = emb.field("weight").matrix(w, d, sparse=True), emb.field("bias").matrix(T, w, sparse=True)
        blocks = [_block_from_json(b, w) for b in doc.field("blocks").list()]
        ro = doc.field("readout")
        ro.dict({"token", "weight", "bias"})
        token = ro.field("token").int(minimum=0)
        if token >= T:
            raise ro.field("token").error(f"token {token} out of range (tokens = {T})")
        rw = ro.field("weight").matrix(cols=w, sparse=True)
        if not rw:
            raise ro.field("weight").error("a Transformer needs at least one output")
        rb = ro.field("bias").vector(len(rw), sparse=True)
        layout = _layout_from_json(doc.field("layout")) if "layout" in doc.value else {}
        return cls(domain, T, w, attention, ew, eb, blocks, token, rw, rb, layout)


def _layout_from_json(r: Reader) -> dict:
    """The informative layout: names mapped to a string or a ``[start, stop)`` pair of integers."""
    out = {}
    for key in r.dict():
        v = r.field(key)
        if isinstance(v.value, list):
            out[key] = [x.int(minimum=0) for x in v.list(2)]
        else:
            out[key] = v.str()
    return out


def _block_from_json(r: Reader, w: int) -> FeedForward | Attention:
    kind = r.field("kind").str(("feedforward", "attention"))
    if kind == "feedforward":
        r.dict({"kind", "w1", "b1", "w2", "b2"})
        w1 = r.field("w1").matrix(cols=w, sparse=True)
        if not w1:
            raise r.field("w1").error("a feed-forward block needs at least one hidden unit")
        h = len(w1)
        return FeedForward(w1, r.field("b1").vector(h, sparse=True), r.field("w2").matrix(w, h, sparse=True),
                           r.field("b2").vector(w, sparse=True))
    r.dict({"kind", "heads"})
    heads = []
    for hr in r.field("heads").list(nonempty=True):
        hr.dict({"query", "key", "value", "output"})
        q = hr.field("query").matrix(cols=w, sparse=True)
        k = hr.field("key").matrix(len(q), w, sparse=True)
        v = hr.field("value").matrix(cols=w, sparse=True)
        if not q or not v:
            raise hr.error("query and value need at least one row")
        heads.append(Head(q, k, v, hr.field("output").matrix(w, len(v), sparse=True)))
    return Attention(heads)
