"""Transformers of docs/spec.md §1: ``T`` token columns of width ``w``, residual attention and
feed-forward blocks, hardmax (ties share equally) or softmax(λ) attention.

Exact evaluation runs the residual stream of ``models.stream`` through the blocks: each block reads
only the coordinates it *reads* (non-zero columns of its input maps), updates only those it
*writes* (non-zero rows of its output maps), and computes once per distinct token input.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import flint

from ..forms import CONSTANT
from ..formats import Reader, check_format, encode_row, encode_rows, encode_sparse_rows, sha256
from ..numbers import ZERO, exact_point, format_rational, to_sympy
from .box import Box
from .stream import Affine, Value, Vector, cached, fractions, hardmax, relu, score

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


def _signed_key(row: dict, sign: int) -> tuple:
    """``sign·row`` (a sparse row or form, Fraction or fmpq entries) as a hashable tuple of
    integers (hashing an fmpq goes through a Fraction, which is slow)."""
    return tuple((k, sign * int(v.numerator), int(v.denominator)) for k, v in sorted(row.items()) if v)


def identity_partners(rows: list[dict], columns: list[dict]) -> dict[int, int]:
    """The partner of each hidden unit that is half of an identity pair: its pre-activation row and
    output column (sparse, bias included in the row) are the exact negatives of the partner's, so
    ``ReLU(v) − ReLU(−v) = v`` makes the pair add ``column·v`` for every input, with no bound.  The
    one matcher of the package (``negative_partners``), used by the evaluator (block weights at a
    token's constants) and the prover (per-token pre-activations)."""
    return negative_partners([_pair_keys(row, column) for row, column in zip(rows, columns)])


def _pair_keys(row: dict, column: dict) -> tuple[tuple, tuple]:
    """The keys of ``(row, column)`` and of ``(−row, −column)``."""
    return (_signed_key(row, 1), _signed_key(column, 1)), (_signed_key(row, -1), _signed_key(column, -1))


def negative_partners(keys: list[tuple]) -> dict[int, int]:
    """Partners by ``keys[u] = (key of u, key of −u)``: the k-th unit with a key pairs with the k-th
    whose negation has it; a unit is never its own partner."""
    waiting: dict = {}
    partner: dict[int, int] = {}
    for u, (plus, minus) in enumerate(keys):
        match = waiting.get(minus)
        if match:
            p = match.pop(0)
            partner[p], partner[u] = u, p
        else:
            waiting.setdefault(plus, []).append(u)
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
        partner = identity_partners([r | {CONSTANT: b} for r, b in zip(self.w1, self.b1)], self.columns)
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

    def update(self, stream: list[list[Value]], points: int) -> None:
        """``stream`` after this block; tokens whose read and written values are the same objects
        (``models.stream``) are computed once and share the results."""
        done: dict[tuple, list[Value]] = {}
        for values in stream:
            key = tuple(values[r] for r in self.reads) + tuple(values[r] for r in self.writes)
            if key not in done:
                done[key] = self._written(values, points)
            for r, v in zip(self.writes, done[key]):
                values[r] = v

    def _written(self, values: list[Value], points: int) -> list[Value]:
        """The written coordinates of one token.  Its ``_Plan`` folds the identity pairs at this
        token's constants into affine forms; of the other units, one whose pre-activation is ≤ 0 at
        every point (an exact bound over the range of each vector it reads) adds nothing, one ≥ 0 at
        every point adds its affine map, and the rest take ReLU point by point."""
        pattern, plan = self._plan({r: values[r] for r in self.reads if type(values[r]) is not Vector})
        kept, clamp = [], []
        if plan.undecided:
            vectors = [values[r] for r in plan.vector_reads]
            den = math.lcm(*(v.den for v in vectors))
            low = flint.fmpz_mat(len(vectors), 1, [v.range()[0] * (den // v.den) for v in vectors])
            high = flint.fmpz_mat(len(vectors), 1, [v.range()[1] * (den // v.den) for v in vectors])
            lows = (plan.positive * low + plan.negative * high).entries()
            highs = (plan.positive * high + plan.negative * low).entries()
            scale, c_scale = plan.offset_den, pattern.den * den
            for u, c, lo, hi in zip(plan.undecided, plan.integer_offsets, lows, highs):
                if hi * scale + c * c_scale > 0:
                    kept.append(u)
                    clamp.append(lo * scale + c * c_scale < 0)
        if kept:
            offsets = dict(zip(plan.undecided, plan.integer_offsets))
            pre = Affine([(pattern.rows[u], Fraction(offsets[u], plan.offset_den)) for u in kept])(values, points)
            values = values + [relu(v) if c else v for v, c in zip(pre, clamp)]
            extra = {r: {} for r in self.writes}
            for k, u in enumerate(kept):
                for r, a in self.columns[u].items():
                    extra[r][self.width + k] = a
            forms = [(terms | extra[r], offset) for r, (terms, offset) in zip(self.writes, plan.forms)]
            return Affine(forms)(values, points)
        return plan.written(values, points)

    def _plan(self, fixed: dict[int, Fraction]) -> tuple["_Pattern", "_Plan"]:
        """The (cached) ``_Pattern`` of the constant coordinates ``fixed`` and ``_Plan`` of their values."""
        pattern = cached(self._patterns, frozenset(fixed), lambda: _Pattern(self, frozenset(fixed)))
        return pattern, cached(self._plans, tuple(fixed.items()), lambda: _Plan(self, pattern, fixed))

    @cached_property
    def _patterns(self) -> dict:
        return {}

    @cached_property
    def _plans(self) -> dict:
        return {}

    def to_json(self) -> dict:
        return {"kind": self.kind, "w1": encode_sparse_rows(self.w1, self.width), "b1": encode_row(self.b1),
                "w2": encode_sparse_rows(self.w2, self.hidden), "b2": encode_row(self.b2)}


class _Pattern:
    """``FeedForward`` at tokens whose read coordinates are constant exactly at ``fixed``: each unit's
    row over the vector coordinates (``rows``; as integers over ``den`` in ``integer_rows``), its
    row over the constant ones and its bias as integers over ``fixed_den``, and its pairing key
    without its offset."""

    def __init__(self, block: FeedForward, fixed: frozenset):
        self.rows = [{r: a for r, a in row.items() if r not in fixed} for row in block.w1]
        self.keys = [_pair_keys(row, column) for row, column in zip(self.rows, block.columns)]
        self.den = math.lcm(*(a.denominator for row in self.rows for a in row.values()))
        self.integer_rows = [[(r, a.numerator * (self.den // a.denominator)) for r, a in row.items()]
                             for row in self.rows]
        fixed_rows = [{r: a for r, a in row.items() if r in fixed} for row in block.w1]
        self.fixed_den = math.lcm(*(a.denominator for row in fixed_rows for a in row.values()),
                                  *(b.denominator for b in block.b1))
        self.fixed_rows = [[(r, a.numerator * (self.fixed_den // a.denominator)) for r, a in row.items()]
                           for row in fixed_rows]
        self.biases = [b.numerator * (self.fixed_den // b.denominator) for b in block.b1]


class _Plan:
    """``FeedForward._plan``: ``forms`` gives each written coordinate as ``old + Σ pairs`` (an affine
    form over the token's coordinates), ``undecided`` the other units with their pre-activation
    offsets (bias and constants) as integers over ``offset_den`` and the positive and negative
    parts of their rows over ``vector_reads`` (integers over ``pattern.den``), for exact bounds."""

    def __init__(self, block: FeedForward, pattern: _Pattern, fixed: dict[int, Fraction]):
        den = math.lcm(*(v.denominator for v in fixed.values()))
        values = {r: v.numerator * (den // v.denominator) for r, v in fixed.items()}
        offsets = [b * den + sum(a * values[r] for r, a in row) for row, b in zip(pattern.fixed_rows, pattern.biases)]
        self.offset_den = den * pattern.fixed_den
        partner = negative_partners([((plus, c), (minus, -c)) for (plus, minus), c in zip(pattern.keys, offsets)])
        terms = {r: {r: Fraction(1)} for r in block.writes}
        shift = {r: block.b2[r] for r in block.writes}
        for u, p in partner.items():
            if u < p:
                for r, a in block.columns[u].items():
                    for c, x in pattern.rows[u].items():
                        terms[r][c] = terms[r].get(c, ZERO) + a * x
                    shift[r] += a * Fraction(offsets[u], self.offset_den)
        self.forms = [({c: x for c, x in terms[r].items() if x}, shift[r]) for r in block.writes]
        self.written = Affine(self.forms)
        self.undecided = [u for u in range(block.hidden) if u not in partner]
        self.integer_offsets = [offsets[u] for u in self.undecided]
        self.vector_reads = sorted({r for u in self.undecided for r in pattern.rows[u]})
        column = {r: j for j, r in enumerate(self.vector_reads)}
        self.positive = flint.fmpz_mat(len(self.undecided), len(self.vector_reads))
        self.negative = flint.fmpz_mat(len(self.undecided), len(self.vector_reads))
        for i, u in enumerate(self.undecided):
            for r, a in pattern.integer_rows[u]:
                (self.positive if a > 0 else self.negative)[i, column[r]] = a


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
                for j, v in row.items() if row else ():
                    out[r][offset + j] = v
            offset += len(h.value)
        return out

    @cached_property
    def writes(self) -> list[int]:
        return _nonzero_rows(self.output)

    @cached_property
    def _forms(self) -> tuple[Affine, list[tuple[slice, slice, slice]], Affine]:
        """All queries, keys and values as forms over the width, each head's (query, key, value)
        slices of them, and each written coordinate as ``old + Σ_h O_h·mixed_h`` over the width
        followed by all heads' mixed values."""
        rows, slices = [], []
        for h in self.heads:
            q0, k0 = len(rows), len(rows) + len(h.query)
            v0 = k0 + len(h.key)
            rows += h.query + h.key + h.value
            slices.append((slice(q0, k0), slice(k0, v0), slice(v0, v0 + len(h.value))))
        width = len(self.heads[0].output)
        writes = [({r: Fraction(1)} | {width + k: a for k, a in self.output[r].items()}, ZERO) for r in self.writes]
        return Affine([(row, ZERO) for row in rows]), slices, Affine(writes)

    def update(self, stream: list[list[Value]], points: int) -> None:
        """``stream`` after this block.  Per head, tokens with the same query values share their
        scores and mixed values; with a constant query every token gets the same mixed vector."""
        projections, slices, writes = self._forms
        done: dict[tuple, list[Value]] = {}
        projected = []
        for values in stream:
            key = tuple(values[r] for r in self.reads)
            if key not in done:
                done[key] = projections(values, points)
            projected.append(done[key])
        mixed: list[list[Value]] = [[] for _ in stream]
        for q, k, v in slices:
            keys, vals = [p[k] for p in projected], [p[v] for p in projected]
            groups: dict[tuple, list[int]] = {}
            for i, p in enumerate(projected):
                groups.setdefault(tuple(p[q]), []).append(i)
            for query, members in groups.items():
                out = hardmax([score(list(query), key, points) for key in keys], vals, points)
                for i in members:
                    mixed[i] += out
        done = {}
        for values, m in zip(stream, mixed):
            key = tuple(values[r] for r in self.writes) + tuple(m)
            if key not in done:
                done[key] = writes(values + m, points)
            for r, v in zip(self.writes, done[key]):
                values[r] = v

    def to_json(self) -> dict:
        return {"kind": self.kind, "heads": [h.to_json() for h in self.heads]}


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
    def streams(self, points: list[list[Fraction]]):
        """The residual stream (``models.stream``: ``stream[t][r]``) after the embedding and after
        each block, in turn (one list, updated in place)."""
        if not self.is_hardmax:
            raise ValueError("a softmax Transformer has no exact rational value; "
                             "use exactform.provers.softmax for a rigorous enclosure")
        n = len(points)
        den = math.lcm(*(x.denominator for p in points for x in p))
        inputs = [Vector([p[i].numerator * (den // p[i].denominator) for p in points], den)
                  for i in range(self.input_dim)]
        stream = [embed(inputs, n) for embed in self._embedding]
        yield stream
        for block in self.blocks:
            block.update(stream, n)
            yield stream

    def evaluate_batch(self, points: list[list[Fraction]]) -> list[list[Fraction]]:
        if not points:
            return []
        *_, stream = self.streams(points)
        outputs = self._readout(stream[self.readout_token], len(points))
        return [list(row) for row in zip(*(fractions(v, len(points)) for v in outputs))]

    @cached_property
    def _embedding(self) -> list[Affine]:
        """Token t's embedding ``E x + P[t]`` as forms over the inputs."""
        return [Affine(list(zip(self.embed_weight, bias))) for bias in self.embed_bias]

    @cached_property
    def _readout(self) -> Affine:
        return Affine(list(zip(self.readout_weight, self.readout_bias)))

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
