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

from ..formats import Reader, check_format, encode_row, encode_rows, encode_sparse_rows, sha256
from ..numbers import ZERO, QMatrix, exact_point, format_rational, selection, to_sympy
from .box import Box

Rows = list[dict[int, Fraction]]
"""A matrix by its rows, each the dict ``{column: value}`` of its non-zero entries (all-zero rows
are often the shared read-only ``numbers.ZERO_ROW``); the column count is the block's (the width,
the hidden size or a head's value size), so memory and every pass follow the non-zeros.  ``dense``
gives the list-of-lists form for small consumers."""


def sparse(rows) -> Rows:
    """Rows given as mappings or as dense lists (as a caller may write them), as ``Rows``."""
    return [{j: v for j, v in enumerate(row) if v} if isinstance(row, list) else row for row in rows]


def _sparse_fields(obj, *names: str) -> None:
    for name in names:
        object.__setattr__(obj, name, sparse(getattr(obj, name)))


def dense(rows: Rows, ncols: int) -> list[list[Fraction]]:
    """The rows as dense lists of ``ncols`` entries (zeros are ``numbers.ZERO``)."""
    out = []
    for row in rows:
        d = [ZERO] * ncols
        for j, v in row.items():
            d[j] = v
        out.append(d)
    return out


def transpose(rows: Rows, ncols: int) -> Rows:
    """The columns of the matrix as sparse rows."""
    out: Rows = [{} for _ in range(ncols)]
    for i, row in enumerate(rows):
        for j, v in row.items():
            out[j][i] = v
    return out


def _nonzero_columns(*mats: Rows) -> list[int]:
    return sorted({j for m in mats for row in m for j, v in row.items() if v})


def _nonzero_rows(m: Rows, extra: list[Fraction] | None = None) -> list[int]:
    return [i for i, row in enumerate(m) if any(row.values()) or (extra is not None and extra[i])]


def _restricted(rows: Rows, columns: list[int], bias: list[Fraction] | None = None) -> QMatrix:
    """``[rows restricted to columns | bias]`` (a zero bias column without ``bias``) as a QMatrix."""
    pos = {c: k for k, c in enumerate(columns)}
    return QMatrix.from_sparse([{pos[c]: v for c, v in row.items() if c in pos} |
                                ({len(columns): bias[i]} if bias is not None and bias[i] else {})
                                for i, row in enumerate(rows)], len(columns) + 1)


def _signed_key(row: dict, sign: int) -> tuple:
    """``sign·row`` (a sparse row or form, Fraction or fmpq entries) as a hashable tuple of
    integers (hashing an fmpq goes through a Fraction, which is slow)."""
    return tuple((k, sign * int(v.numerator), int(v.denominator)) for k, v in sorted(row.items()) if v)


def identity_partners(rows: list[dict], columns: list[dict]) -> dict[int, int]:
    """The partner of each hidden unit that is half of an identity pair: its pre-activation row and
    output column (sparse, bias included in the row) are the exact negatives of the partner's, so
    ``ReLU(v) − ReLU(−v) = v`` makes the pair add ``column·v`` for every input, with no bound.  The
    k-th unit with (row, column) pairs with the k-th with (−row, −column); a unit is never its own
    partner.  The one matcher of the package, used by the evaluator (block weights) and the prover
    (per-token pre-activations)."""
    waiting: dict = {}
    partner: dict[int, int] = {}
    for u, (row, column) in enumerate(zip(rows, columns)):
        match = waiting.get((_signed_key(row, -1), _signed_key(column, -1)))
        if match:
            p = match.pop(0)
            partner[p], partner[u] = u, p
        else:
            waiting.setdefault((_signed_key(row, 1), _signed_key(column, 1)), []).append(u)
    return partner


@dataclass(frozen=True, eq=False)
class FeedForward:
    """``X'[:,t] = X[:,t] + w2 ReLU(w1 X[:,t] + b1) + b2`` for every token t (``w1``: hidden × width,
    ``w2``: width × hidden, sparse rows; ``b1``, ``b2`` dense)."""
    w1: Rows
    b1: list[Fraction]
    w2: Rows
    b2: list[Fraction]
    kind = "feedforward"

    def __post_init__(self):
        _sparse_fields(self, "w1", "w2")

    @property
    def hidden(self) -> int:
        return len(self.w1)

    @property
    def width(self) -> int:
        return len(self.b2)

    @cached_property
    def reads(self) -> list[int]:
        return _nonzero_columns(self.w1)

    @cached_property
    def writes(self) -> list[int]:
        return _nonzero_rows(self.w2, self.b2)

    @cached_property
    def columns(self) -> Rows:
        """The output column of each hidden unit, ``{row: value}``."""
        return transpose(self.w2, self.hidden)

    @cached_property
    def identity_pairs(self) -> list[tuple[int, int]]:
        """Hidden units ``(u, p)``, u < p, with ``w1[p] = −w1[u]``, ``b1[p] = −b1[u]``, ``w2[:,p] = −w2[:,u]``:
        such a pair adds the affine map ``w2[:,u]·(w1[u]·x + b1[u])`` whatever the input."""
        partner = identity_partners([r | {-1: b} for r, b in zip(self.w1, self.b1)], self.columns)
        return sorted((u, p) for u, p in partner.items() if u < p)

    @cached_property
    def decomposition(self) -> tuple[list[int], Rows, list[Fraction]]:
        """``(relu, linear, offset)``: on the written coordinates the block adds
        ``w2[:, relu] ReLU(w1[relu] x + b1[relu]) + linear x + offset``, where ``linear`` (sparse rows
        over all coordinates) and ``offset`` collect the identity pairs and ``b2``; exact for every x."""
        paired = {u for pair in self.identity_pairs for u in pair}
        index = {r: k for k, r in enumerate(self.writes)}
        linear: Rows = [{} for _ in self.writes]
        offset = [self.b2[r] for r in self.writes]
        for u, _ in self.identity_pairs:
            for r, a in self.columns[u].items():
                k = index[r]
                for c, x in self.w1[u].items():
                    linear[k][c] = linear[k].get(c, 0) + a * x
                offset[k] += a * self.b1[u]
        return [u for u in range(self.hidden) if u not in paired], \
            [{c: x for c, x in row.items() if x} for row in linear], offset

    @cached_property
    def _maps(self) -> tuple[QMatrix | None, QMatrix | None, QMatrix]:
        """``decomposition`` on the read coordinates (plus a ones row) as integer matrices."""
        relu, linear, offset = self.decomposition
        first = _restricted([self.w1[u] for u in relu], self.reads, [self.b1[u] for u in relu]) if relu else None
        position = {u: k for k, u in enumerate(relu)}
        second = QMatrix.from_sparse([{position[u]: v for u, v in self.w2[r].items() if u in position}
                                      for r in self.writes], len(relu) + 1) if relu else None
        return first, second, _restricted(linear, self.reads, offset)

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
        return {"kind": self.kind, "w1": encode_sparse_rows(self.w1, self.width), "b1": encode_row(self.b1),
                "w2": encode_sparse_rows(self.w2, self.hidden), "b2": encode_row(self.b2)}


@dataclass(frozen=True, eq=False)
class Head:
    """One head: scores ``(query X_i)·(key X_j)``, output ``output · value X`` (sparse rows:
    query, key, value over the width; output: width rows over the value's rows)."""
    query: Rows
    key: Rows
    value: Rows
    output: Rows

    def __post_init__(self):
        _sparse_fields(self, "query", "key", "value", "output")

    def to_json(self) -> dict:
        w = len(self.output)
        return {"query": encode_sparse_rows(self.query, w), "key": encode_sparse_rows(self.key, w),
                "value": encode_sparse_rows(self.value, w), "output": encode_sparse_rows(self.output, len(self.value))}


@dataclass(frozen=True, eq=False)
class Attention:
    """``X'[:,i] = X[:,i] + Σ_h O_h Σ_j A^h_ij V_h X[:,j]``; every head reads the block's input."""
    heads: list[Head]
    kind = "attention"

    @cached_property
    def reads(self) -> list[int]:
        return _nonzero_columns(*(m for h in self.heads for m in (h.query, h.key, h.value)))

    @cached_property
    def output(self) -> Rows:
        """All heads' output maps side by side: ``[O_1 | O_2 | ...]``."""
        out: Rows = [{} for _ in self.heads[0].output]
        offset = 0
        for h in self.heads:
            for r, row in enumerate(h.output):
                for j, v in row.items():
                    out[r][offset + j] = v
            offset += len(h.value)
        return out

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
        out = QMatrix.from_sparse([self.output[r] for r in self.writes], sum(len(h.value) for h in self.heads))
        return _restricted(rows, self.reads), out, slices

    def update(self, state: "State", tokens: int) -> None:
        qkv, o, slices = self._maps
        projected = qkv @ state.gather(self.reads)      # one common denominator: scores compare as integers
        rows = projected.num.tolist()
        sums, sizes = [], set()
        for q, k, v in slices:
            winners = hardmax_winners(rows[q], rows[k], tokens)
            sizes.update(len(win) for win in winners)
            for row in rows[v]:
                total = {}                                  # by argmax set: tokens sharing one share its sum
                sums.append([total.get(id(win)) or total.setdefault(id(win), (sum(row[j] for j in win), len(win)))
                             for win in winners])
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
        keys, last = range(base, base + tokens), None
        for i in keys:
            if (q := [a[i] for a in qx]) != last:      # tokens with the same query (the usual case) share their scores
                scores = [sum(c * b[j] for c, b in zip(q, kx)) for j in keys]
                top, last = max(scores), q
                win = [j for j, s in zip(keys, scores) if s == top]
            winners.append(win)
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
    embed_weight: Rows                  # [w] sparse rows over the d inputs
    embed_bias: list[list[Fraction]]    # [T][w] dense: the token-wise shift / position
    blocks: list[FeedForward | Attention]
    readout_token: int
    readout_weight: Rows                # [o] sparse rows over the width
    readout_bias: list[Fraction]
    layout: dict

    FORMAT = "exactform/transformer@1"

    def __post_init__(self):
        _sparse_fields(self, "embed_weight", "readout_weight")

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
        """The dense count: every entry of every matrix and vector, zeros included."""
        return sum(len(m) * cols for m, cols in self.matrices()) + sum(len(v) for v in self.vectors())

    def nonzero_count(self) -> int:
        return sum(1 for m, _ in self.matrices() for row in m for v in row.values() if v) + \
            sum(len(v) - v.count(ZERO) for v in self.vectors())

    def matrices(self) -> list[tuple[Rows, int]]:
        """Every weight matrix as ``(sparse rows, column count)``."""
        w = self.width
        out = [(self.embed_weight, self.input_dim), (self.readout_weight, w)]
        for b in self.blocks:
            if isinstance(b, FeedForward):
                out += [(b.w1, w), (b.w2, b.hidden)]
            else:
                out += [(m, w) for h in b.heads for m in (h.query, h.key, h.value)] + \
                       [(h.output, len(h.value)) for h in b.heads]
        return out

    def vectors(self) -> list[list[Fraction]]:
        return [self.readout_bias, *self.embed_bias] + \
            [v for b in self.blocks if isinstance(b, FeedForward) for v in (b.b1, b.b2)]

    def sympy_embedding(self):
        """(E, P) as SymPy Rationals: token t starts as ``E x + P[t]``."""
        return to_sympy(dense(self.embed_weight, self.input_dim)), to_sympy(self.embed_bias)

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
        embed = QMatrix.from_sparse([self.embed_weight[r] | {d + t: self.embed_bias[t][r] for t in range(T)}
                                     for r in range(self.width)] + [{d + t: Fraction(1) for t in range(T)}], d + T)
        readout = QMatrix.from_sparse([w | {self.width: b} for w, b in zip(self.readout_weight, self.readout_bias)],
                                      self.width + 1)
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
            "embed": {"weight": encode_sparse_rows(self.embed_weight, self.input_dim),
                      "bias": encode_rows(self.embed_bias)},
            "blocks": [b.to_json() for b in self.blocks],
            "readout": {"token": self.readout_token, "weight": encode_sparse_rows(self.readout_weight, self.width),
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
        ew, eb = emb.field("weight").sparse_rows(w, d), emb.field("bias").matrix(T, w, sparse=True)
        blocks = [_block_from_json(b, w) for b in doc.field("blocks").list()]
        ro = doc.field("readout")
        ro.dict({"token", "weight", "bias"})
        token = ro.field("token").int(minimum=0)
        if token >= T:
            raise ro.field("token").error(f"token {token} out of range (tokens = {T})")
        rw = ro.field("weight").sparse_rows(None, w)
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
        w1 = r.field("w1").sparse_rows(None, w)
        if not w1:
            raise r.field("w1").error("a feed-forward block needs at least one hidden unit")
        h = len(w1)
        return FeedForward(w1, r.field("b1").vector(h, sparse=True), r.field("w2").sparse_rows(w, h),
                           r.field("b2").vector(w, sparse=True))
    r.dict({"kind", "heads"})
    heads = []
    for hr in r.field("heads").list(nonempty=True):
        hr.dict({"query", "key", "value", "output"})
        q = hr.field("query").sparse_rows(None, w)
        k = hr.field("key").sparse_rows(len(q), w)
        v = hr.field("value").sparse_rows(None, w)
        if not q or not v:
            raise hr.error("query and value need at least one row")
        heads.append(Head(q, k, v, hr.field("output").sparse_rows(w, len(v))))
    return Attention(heads)
