"""Float modules (float32/float64, batched, CPU or CUDA) of the exact models, and, for hardmax
Transformers, a rigorous bound on how far the float computation can be from the exact one.

Invariant: a module computes its model's function in floating point from the exact weights
rounded to nearest; nothing flows back into exact paths.  The Transformer module runs the
Transformer itself (its own weights, every token) on a state (coordinate, token, batch): the
coordinates first, so a block's coordinate range is one contiguous slab and every element-wise
pass runs along tokens × batch.  Coordinates that no block writes and the embedding weight does
not touch are per-token constants (the construction's constant and shift coordinates): they are
not stored; their products are folded, exactly, into per-token biases rounded once.  Each
linear map runs by its structure: one GEMM, or, when its non-zeros lie on a few diagonal runs
(selections and ±1 identity pairs), as many in-place slab additions (``_runs``).
"""
from __future__ import annotations

from fractions import Fraction
from functools import cached_property

import torch
from torch import nn

from ..models import Attention, FeedForward, MaxoutNet, Transformer
from .rounding import INFLATE, gamma, representation_error, round_up, unit_roundoff

Matrix = list[list[Fraction]]
Row = dict[int, Fraction]
ZERO = Fraction(0)


def to_module(model: MaxoutNet | Transformer, dtype=torch.float32, device="cpu") -> nn.Module:
    """The float module of an exact model, in inference mode on ``device``."""
    module = TorchMaxout(model, dtype) if isinstance(model, MaxoutNet) else TorchTransformer(model, dtype)
    return module.to(device).eval()


def evaluate(module: nn.Module, points, chunk: int = 512) -> torch.Tensor:
    """Outputs for a (B, d) tensor, in chunks (a Transformer's state for 512 points stays in a
    core's L2 cache: fastest on CPU, ``benchmarks/torch_bench.py``)."""
    with torch.inference_mode():
        return torch.cat([module(points[i:i + chunk]) for i in range(0, len(points), chunk)])


def exact_points_tensor(points: list[list[Fraction]], dtype, device="cpu") -> torch.Tensor:
    """Exact points rounded to nearest float (via float64)."""
    return torch.tensor([[float(v) for v in p] for p in points], dtype=torch.float64).to(device, dtype)


def _floats(values, dtype) -> torch.Tensor:
    return torch.tensor([float(v) for v in values], dtype=torch.float64).to(dtype)


def _table(rows: Matrix, cols: int, dtype) -> torch.Tensor:
    return torch.tensor([[float(v) for v in r] for r in rows], dtype=torch.float64).reshape(len(rows), cols).to(dtype)


def _entries(row) -> Row:
    """The non-zeros ``{column: value}`` of a weight row given dense (a list) or sparse (a dict):
    every Transformer weight and bias is read through here."""
    return {c: v for c, v in (row.items() if isinstance(row, dict) else enumerate(row)) if v}


def _dense(rows: list[Row], cols: int, dtype) -> torch.Tensor:
    """The (rows × cols) matrix of sparse rows, rounded to nearest ``dtype`` (via float64)."""
    m = torch.zeros(len(rows), cols, dtype=torch.float64)
    at = [(i, c) for i, r in enumerate(rows) for c in r]
    if at:
        m[tuple(zip(*at))] = torch.tensor([float(rows[i][c]) for i, c in at], dtype=torch.float64)
    return m.to(dtype)


def _run(segment: list[tuple[int, int, Fraction]]) -> tuple[slice, slice, Fraction]:
    (r0, c0, a), (r1, c1, _) = segment[0], segment[-1]
    dr, dc = (segment[1][0] - r0, segment[1][1] - c0) if len(segment) > 1 else (1, 1)
    return slice(r0, r1 + 1, dr), slice(c0, c1 + 1, dc), a


def _runs(rows: list[Row], limit: int = 8) -> list[list[tuple[slice, slice, Fraction]]] | None:
    """``M`` as runs ``(rows, columns, a)``, both arithmetic progressions, with ``M x = Σ a·x[columns]``
    added at ``rows``, grouped by k: the k-th non-zeros of the rows (by column), cut where the row
    or column step or the coefficient changes; None beyond ``limit`` runs (one GEMM is then faster)."""
    ordered = [sorted(r.items()) for r in rows]
    groups, count = [], 0
    for k in range(max(map(len, ordered), default=0)):
        runs, segment = [], []
        for i, r in enumerate(ordered):
            if len(r) <= k:
                continue
            c, a = r[k]
            if segment and a == segment[0][2] and c > segment[-1][1] and (
                    len(segment) == 1 or (i - segment[-1][0], c - segment[-1][1]) == (
                    segment[1][0] - segment[0][0], segment[1][1] - segment[0][1])):
                segment.append((i, c, a))
                continue
            if segment:
                runs.append(_run(segment))
            segment = [(i, c, a)]
        groups.append(runs + [_run(segment)])
        count += len(groups[-1])
        if count > limit:
            return None
    return groups


def _apply(matrix: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``matrix`` (r, c) on the first axis of ``x`` (c, ...)."""
    return torch.tensordot(matrix, x, dims=1)


def _rounding(magnitude: torch.Tensor, terms: list[int], dtype) -> torch.Tensor:
    """``γ_m · magnitude + 2mη`` per row of ``magnitude`` (r, T, B), ``m`` the terms of its sum."""
    _, eta = unit_roundoff(dtype)
    g = torch.tensor([gamma(m, dtype) for m in terms], dtype=torch.float64).view(-1, 1, 1)
    return magnitude * g + torch.tensor([m * eta for m in terms], dtype=torch.float64).view(-1, 1, 1)


class _Map(nn.Module):
    """``y = M x + b`` for an exact ``M`` (sparse rows over ``cols``) and an exact bias ``b`` per
    token (rows × T, or rows × 1 for all tokens), on ``x`` (cols, T or 1, B), ``y`` (rows, T, B).
    By ``_runs`` (in-place slab additions) when M has few, else one GEMM."""

    def __init__(self, rows: list[Row], cols: int, dtype, bias: Matrix | None = None):
        super().__init__()
        self.exact, self.cols, self.dtype = rows, cols, dtype
        if bias is not None and all(len(set(b)) == 1 for b in bias):
            bias = [b[:1] for b in bias]                                   # the same in every token
        self.exact_bias = bias if bias is not None and any(v for b in bias for v in b) else None
        if self.exact_bias is not None:
            self.register_buffer("bias", _dense([_entries(b) for b in bias], len(bias[0]), dtype).unsqueeze(-1))
        groups = _runs(rows)
        self.runs = None if groups is None else [
            (r, c, float(torch.tensor(float(a), dtype=torch.float64).to(dtype))) for g in groups for r, c, a in g]
        if groups is None:
            self.register_buffer("weight", _dense(rows, cols, dtype))
        self.added = self.runs                       # the order ``accumulate`` adds them in
        self.assigning = bool(rows) and all(rows)    # the runs of the first non-zeros write every row
        self.leading = len(groups[0]) if groups else 0     # runs of the rows' first non-zeros
        self.view = (self.exact_bias is None and self.runs is not None and len(self.runs) == 1
                     and self.runs[0][0] == slice(0, len(rows), 1) and self.runs[0][2] == 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``M x + b``: a new tensor, or a view of ``x`` when M picks rows of it (``view``)."""
        if self.view:
            return x[self.runs[0][1]]
        if self.runs is None:
            y = (self.weight @ x.reshape(self.cols, -1)).view(-1, *x.shape[1:])
            return y if self.exact_bias is None else y + self.bias
        tokens = max(x.shape[1], self.bias.shape[1] if self.exact_bias is not None else 1)
        shape = (len(self.exact), tokens, x.shape[2])
        if self.assigning:
            y = x.new_empty(shape)
            for rs, cs, a in self.runs[:self.leading]:
                if self.exact_bias is None:
                    torch.mul(x[cs], a, out=y[rs])
                else:
                    torch.add(self.bias[rs], x[cs], alpha=a, out=y[rs])
            rest = self.runs[self.leading:]
        else:
            y = self.bias.expand(shape).clone() if self.exact_bias is not None else x.new_zeros(shape)
            rest = self.runs
        for rs, cs, a in rest:
            y[rs].add_(x[cs], alpha=a)
        return y

    def accumulate(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``y += M x + b`` in place (``y`` must not overlap ``x``)."""
        if self.runs is None:
            if y.shape[1] == x.shape[1] and y.is_contiguous():
                y.view(len(self.exact), -1).addmm_(self.weight, x.reshape(self.cols, -1))
            else:
                y += (self.weight @ x.reshape(self.cols, -1)).view(-1, *x.shape[1:])
        else:
            for rs, cs, a in self.added:
                y[rs].add_(x[cs], alpha=a)
        if self.exact_bias is not None:
            y += self.bias
        return y

    @cached_property
    def _exactness(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
        """(|M̂|, Ω = |M̂ − M|, |b̂|, |b̂ − b|, terms m per row) in float64, the errors rounded up."""
        rounded = _dense(self.exact, self.cols, self.dtype).double()
        omega = torch.zeros_like(rounded)
        for i, r in enumerate(self.exact):
            for c, v in r.items():
                omega[i, c] = representation_error(v, rounded[i, c].item())
        if self.exact_bias is None:
            zero = torch.zeros(len(self.exact), 1, 1, dtype=torch.float64)
            return rounded.abs(), omega, zero, zero, [len(r) for r in self.exact]
        b = self.bias.double()
        error = torch.tensor([[representation_error(v, f) for v, f in zip(row, fs)]
                              for row, fs in zip(self.exact_bias, b.squeeze(-1).tolist())], dtype=torch.float64)
        return rounded.abs(), omega, b.abs(), error.unsqueeze(-1), [len(r) + any(b) for r, b in
                                                                      zip(self.exact, self.exact_bias)]

    def bound(self, x: torch.Tensor, error: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        """(error propagated from the input and the rounded weights and bias, ``|M̂|e + Ω(|x̂| + e) +
        |b̂ − b|``; magnitude of the sum's terms ``|M̂||x̂| + |b̂|``; terms per row), float64.  The
        rounding of the sum is ``_rounding(magnitude, terms)``, whatever the evaluation order."""
        magnitude, omega, bias, bias_error, terms = self._exactness
        ax = x.double().abs()
        return _apply(magnitude, error) + _apply(omega, ax + error) + bias_error, _apply(magnitude, ax) + bias, terms


def _slot(positions: list[int]):
    """Positions of the state as a slice when an arithmetic progression (a view, no copy), else an index."""
    if len(positions) > 1:
        step = positions[1] - positions[0]
        if step > 0 and positions == list(range(positions[0], positions[-1] + 1, step)):
            return slice(positions[0], positions[-1] + 1, step)
    elif positions:
        return slice(positions[0], positions[0] + 1)
    return torch.tensor(positions, dtype=torch.long)


def _place(module: nn.Module, **slots) -> None:
    """Set a block's coordinate slots; an index is a buffer, so it moves with the module's device."""
    for name, at in slots.items():
        if isinstance(at, slice):
            setattr(module, name, at)
        else:
            module.register_buffer(name, at, persistent=False)


def _read(X: torch.Tensor, at) -> torch.Tensor:
    return X[at] if isinstance(at, slice) else X.index_select(0, at)


def _store(X: torch.Tensor, at, values: torch.Tensor) -> torch.Tensor:
    """``X[at] = values`` unless ``values`` is already that view."""
    if not isinstance(at, slice):
        X.index_copy_(0, at, values)
    return X


def _in_place(runs: list, reads: list[int], writes: list[int]) -> list | None:
    """The runs in an order that adds them into the state in place: every run reads its
    coordinates before any other run writes them (a run may read what it writes, element by
    element: a diagonal run, cut where the other runs touching its coordinates change); None when
    there is no such order."""
    rows = [writes[rs] for rs, _, _ in runs]
    cols = [reads[cs] for _, cs, _ in runs]
    if any(r != c and set(r) & set(c) for r, c in zip(rows, cols)):
        return None
    pieces = []
    for n, (rs, cs, a) in enumerate(runs):
        if rows[n] != cols[n]:
            pieces.append((rs, cs, a, rows[n], cols[n]))
            continue
        touch = [tuple(p in rows[j] or p in cols[j] for j in range(len(runs)) if j != n) for p in rows[n]]
        start = 0
        for i in range(1, len(touch) + 1):
            if i == len(touch) or touch[i] != touch[start]:
                part = slice(start, i)
                pieces.append((_part(rs, part), _part(cs, part), a, rows[n][part], cols[n][part]))
                start = i
    after = {i: {j for j in range(len(pieces)) if j != i and set(pieces[i][3]) & set(pieces[j][4])}
             for i in range(len(pieces))}
    order = []
    while after:
        ready = [i for i, need in after.items() if not need - set(order)]
        if not ready:
            return None
        order.append(ready[0])
        del after[ready[0]]
    return [pieces[i][:3] for i in order]


def _part(progression: slice, part: slice) -> slice:
    """Elements ``part`` (a step-1 slice) of the arithmetic progression ``progression``."""
    first = progression.start + part.start * progression.step
    return slice(first, first + (part.stop - part.start - 1) * progression.step + 1, progression.step)


class _State:
    """Which coordinates the float state stores — those some block writes or the embedding weight
    touches, in order — and, per token, the exact constant value of every other one."""

    def __init__(self, tf: Transformer):
        embed = [_entries(r) for r in tf.embed_weight]
        written = {c for b in tf.blocks for c in b.writes}
        self.coords = [c for c in range(tf.width) if c in written or embed[c]]
        self.position = {c: k for k, c in enumerate(self.coords)}
        self.constants = [{c: v for c, v in _entries(p).items() if c not in self.position} for p in tf.embed_bias]

    def read(self, coords: list[int]) -> list[int]:
        """The stored coordinates a block takes as its input for reading ``coords``: all stored
        ones from the first to the last (one slab, a view) when that at most doubles them (the
        others get zero weights), else just those."""
        at = [self.position[c] for c in coords if c in self.position]
        cover = self.coords[at[0]:at[-1] + 1] if at else []
        return cover if len(cover) <= 2 * len(at) else [self.coords[k] for k in at]

    def slot(self, coords: list[int]):
        return _slot([self.position[c] for c in coords])

    def restrict(self, rows: list[Row], reads: list[int], bias: list[Fraction] | None = None):
        """Rows over the stored coordinates ``reads`` (renumbered in order) and, per row and token t,
        the exact bias ``b + Σ_c row[c]·constant_t[c]`` of the other coordinates."""
        index = {c: k for k, c in enumerate(reads)}
        kept = [{index[c]: v for c, v in r.items() if c in index} for r in rows]
        biases = [[(bias[i] if bias else ZERO) + sum((v * k.get(c, ZERO) for c, v in r.items() if c not in index),
                                                     ZERO) for k in self.constants] for i, r in enumerate(rows)]
        return kept, biases


class FeedForwardModule(nn.Module):
    """``X[writes] += W2 ReLU(W1 x + b1) + L x + c`` on the stored read coordinates ``x``: the
    block's ``decomposition``, identity pairs ``ReLU(v) − ReLU(−v) = v`` run as the affine map
    ``L``.  A hidden unit whose input row is zero on the stored coordinates has a per-token
    constant activation, folded exactly into ``c``; the others share one GEMM over their distinct
    rows up to sign (``first``), then signs and per-token biases (``signs``), ReLU, and ``second``
    and ``linear`` add into the written slab in place."""

    def __init__(self, block: FeedForward, state: _State, dtype):
        super().__init__()
        relu, linear, offset = block.decomposition
        reads = state.read(block.reads)
        _place(self, reads=state.slot(reads), writes=state.slot(block.writes))
        b1 = _entries(block.b1)
        rows, pre = state.restrict([_entries(block.w1[u]) for u in relu], reads, [b1.get(u, ZERO) for u in relu])
        distinct, unit = {}, {}        # rows up to sign, each as its first unit's; unit k: (its row, sign)
        for k, r in enumerate(rows):
            if r:
                sign = 1 if r[min(r)] > 0 else -1
                n, first = distinct.setdefault(tuple(sorted((c, sign * v) for c, v in r.items())), (len(distinct), sign))
                unit[k] = (n, sign * first)
        order = sorted(unit, key=lambda k: (unit[k][1] < 0, unit[k][0]))          # + copies first, in row order
        column = {relu[k]: n for n, k in enumerate(order)}
        outputs = [_entries(block.w2[r]) for r in block.writes]
        self.second = None
        if order:
            self.first = _Map([{c: sign * v for c, v in r} for r, (_, sign) in distinct.items()], len(reads), dtype)
            self.signs = _Map([{unit[k][0]: unit[k][1]} for k in order], len(distinct), dtype, [pre[k] for k in order])
            self.second = _Map([{column[u]: a for u, a in w.items() if u in column} for w in outputs], len(order), dtype)
        kept, c = state.restrict([_entries(row) for row in linear], reads, [_entries(offset).get(k, ZERO)
                                                                           for k in range(len(block.writes))])
        constant = [k for k in range(len(rows)) if k not in unit]
        for w, out in zip(c, outputs):                # constant units: ReLU of their exact per-token bias
            for k in constant:
                if out.get(relu[k]):
                    w[:] = [v + out[relu[k]] * max(p, ZERO) for v, p in zip(w, pre[k])]
        self.linear = _Map(kept, len(reads), dtype, c)
        # ``linear`` adds into the slab it reads when both are slices that overlap: in place by
        # ``_in_place`` order, else from a copy of its input (``snapshot``)
        self.snapshot = False
        if isinstance(self.reads, slice) and isinstance(self.writes, slice) and set(block.reads) & set(block.writes):
            schedule = self.linear.runs and _in_place(self.linear.runs, [state.position[c] for c in reads],
                                                      [state.position[c] for c in block.writes])
            self.snapshot = any(kept) and schedule is None
            if schedule:
                self.linear.added = schedule
        # for the bound: the exact map I + L through which input errors reach the written coordinates
        index = {c: k for k, c in enumerate(reads)}
        carried = [dict(row) for row in kept]
        for row, r in zip(carried, block.writes):
            if r in index:
                row[index[r]] = row.get(index[r], ZERO) + 1
        self.register_buffer("carried", _dense([{c: round_up(abs(v)) for c, v in row.items()} for row in carried],
                                               len(reads), torch.float64))
        self.register_buffer("kept", torch.tensor([0.0 if r in index else 1.0 for r in block.writes],
                                                  dtype=torch.float64).view(-1, 1, 1))

    def _activations(self, x):
        pre = self.signs(self.first(x))
        return torch.relu(pre) if self.first.view and self.signs.view else pre.relu_()

    def forward(self, X):
        x = _read(X, self.reads)
        act = self._activations(x) if self.second is not None else None
        y = _read(X, self.writes)
        self.linear.accumulate(y, x.clone() if self.snapshot else x)
        return _store(X, self.writes, y if act is None else self.second.accumulate(y, act))

    def bound(self, X, E):
        """The steps of ``forward`` in float64: the shared products ``G``, then ``±G + b`` per unit,
        each a sum with its own rounding (``γ_m`` times the magnitudes of its actual terms); ReLU is
        exact and 1-Lipschitz, and where ``pre + error < 0`` both the float and the exact unit are
        off; the written coordinates are one sum ``X[w] + W2 act + L x + c``.  Input errors reach
        them through the exact update ``I + L`` (``carried``), so an identity pair that cancels a
        coordinate (``z ← z − z``) carries none of its error."""
        x, e = _read(X, self.reads).clone(), _read(E, self.reads)
        y = _read(X, self.writes)
        _, omega, _, bias_error, terms = self.linear._exactness
        _, magnitude, _ = self.linear.bound(x, e)
        error = _read(E, self.writes) * self.kept + _apply(self.carried, e) + _apply(omega, x.abs()) + bias_error
        magnitude = magnitude + y.abs()
        terms = [m + 1 for m in terms]
        if self.second is not None:
            g = self.first(x)
            prop, mag, m = self.first.bound(x, e)
            g_error = (prop + _rounding(mag, m, self.first.dtype)) * INFLATE
            pre = self.signs(g).clone()
            prop, mag, m = self.signs.bound(g, g_error)
            pre_error = (prop + _rounding(mag, m, self.signs.dtype)) * INFLATE
            act = torch.relu(pre)
            prop, mag, m = self.second.bound(act, torch.where(pre + pre_error < 0, 0.0, pre_error))
            error, magnitude, terms = error + prop, magnitude + mag, [a + b for a, b in zip(terms, m)]
        error = (error + _rounding(magnitude, terms, self.linear.dtype)) * INFLATE
        self.linear.accumulate(y, x)
        _store(X, self.writes, y if self.second is None else self.second.accumulate(y, act))
        if isinstance(self.writes, slice):
            E[self.writes] = error
        else:
            E.index_copy_(0, self.writes, error)
        return X, E, None


class AttentionModule(nn.Module):
    """``X[writes] += O (A V x)`` for all heads at once on the stored read coordinates ``x``:
    queries, keys and values (row ``j·H + h``: row j of head h, per-token biases from the constant
    coordinates), scores over the key tokens, hardmax (ties share) or softmax(λ), one output map.
    When every head is a max head — hardmax, one query row on the constant coordinates, positive in
    every token, and the value row equal to the key row — the block is one max over the tokens
    of the keys: the exact hardmax (the argmax of ``q·k_s`` with ``q > 0`` is the argmax of
    ``k_s``, and the mean of equal values is that value)."""

    def __init__(self, block: Attention, state: _State, attention, dtype):
        super().__init__()
        reads = state.read(block.reads)
        _place(self, reads=state.slot(reads), writes=state.slot(block.writes))
        heads = block.heads
        self.heads, self.tokens = len(heads), len(state.constants)
        self.dk = max(len(h.query) for h in heads)
        self.dv = max(len(h.value) for h in heads)

        def stacked(name, k):
            rows = [_entries(getattr(h, name)[j]) if j < len(getattr(h, name)) else {} for j in range(k) for h in heads]
            return state.restrict(rows, reads)
        (q, qb), (k, kb), (v, vb) = stacked("query", self.dk), stacked("key", self.dk), stacked("value", self.dv)
        self.query, self.key, self.value = _Map(q, len(reads), dtype, qb), _Map(k, len(reads), dtype, kb), \
            _Map(v, len(reads), dtype, vb)
        out = [{j * self.heads + n: a for n, h in enumerate(heads) for j, a in _entries(h.output[r]).items()}
               for r in block.writes]
        self.output = _Map(out, self.heads * self.dv, dtype)
        self.scale = None if attention == "hardmax" else float(attention)
        self.maximum = self.scale is None and self.dk == self.dv == 1 and all(
            len(h.query) == len(h.key) == len(h.value) == 1 and _entries(h.key[0]) == _entries(h.value[0])
            for h in heads) and not any(q) and all(b > 0 for row in qb for b in row)

    trace: list | None = None
    """When a list, each run appends its scores (forward) or (scores, candidates) (bound), each
    (key token, head, query token, batch)."""

    def _split(self, y, d):
        return y.view(d, self.heads, *y.shape[1:])

    @staticmethod
    def _pairs(a, b):
        """``P[s, h, t, b] = Σ_j a[j, h, t, b] · b[j, h, s, b]`` for every key token s."""
        return torch.stack([(a * b[:, :, s:s + 1]).sum(dim=0) for s in range(b.shape[2])])

    def _weights(self, scores):
        if self.scale is not None:
            return torch.softmax(self.scale * scores, dim=0)
        mask = (scores == scores.amax(dim=0)).to(scores.dtype)
        return mask / mask.sum(dim=0)

    def _mixed(self, x):
        """The heads' mixed values, (dv·H, T, B), and the scores."""
        q, k, v = self._split(self.query(x), self.dk), self._split(self.key(x), self.dk), self._split(self.value(x), self.dv)
        scores = self._pairs(q, k)
        weights = self._weights(scores)
        mixed = sum(weights[s] * v[:, :, s:s + 1] for s in range(v.shape[2]))
        return mixed.flatten(0, 1), scores

    def forward(self, X):
        x = _read(X, self.reads)
        if self.maximum:
            keys = self.key(x)                                        # (H, T, B)
            mixed = keys[:, :1].clone() if self.tokens == 1 else torch.maximum(keys[:, :1], keys[:, 1:2])
            for s in range(2, self.tokens):
                torch.maximum(mixed, keys[:, s:s + 1], out=mixed)
            if self.trace is not None:
                self.trace.append(keys.transpose(0, 1).unsqueeze(2).expand(-1, -1, keys.shape[1], -1).clone())
        else:
            mixed, scores = self._mixed(x)
            if self.trace is not None:
                self.trace.append(scores)
        y = _read(X, self.writes)
        return _store(X, self.writes, self.output.accumulate(y, mixed))

    def bound(self, X, E):
        """Hardmax only, all heads through the general scores.  A query row is *undecided* when
        some other key's score interval reaches the top one's: rounding could have changed the
        argmax.  The exact mixed value is a mean of the exact values of the exact argmax, whose
        keys are all candidates, so it is within ``max_s |m̂ − v̂_s| + e_s`` over the candidates."""
        if self.scale is not None:
            raise ValueError("the margin check is for hardmax attention")
        x, e = _read(X, self.reads), _read(E, self.reads)
        errors = []
        for projection in (self.query, self.key, self.value):
            prop, mag, m = projection.bound(x, e)
            errors.append((prop + _rounding(mag, m, projection.dtype)) * INFLATE)
        eq, ek, ev = self._split(errors[0], self.dk), self._split(errors[1], self.dk), self._split(errors[2], self.dv)
        q, k, v = self._split(self.query(x), self.dk), self._split(self.key(x), self.dk), self._split(self.value(x), self.dv)
        mixed, scores = self._mixed(x)
        aq, ak = q.abs(), k.abs()
        _, eta = unit_roundoff(self.query.dtype)
        score_error = (gamma(self.dk, self.query.dtype) * self._pairs(aq, ak) + self._pairs(aq, ek)
                       + self._pairs(eq, ak) + self._pairs(eq, ek) + 2 * self.dk * eta) * INFLATE
        candidates = (scores + score_error) >= (scores - score_error).amax(dim=0)     # (S, H, T, B)
        undecided = candidates.sum(dim=0) > 1                                          # (H, T, B)
        if self.trace is not None:
            self.trace.append((scores, candidates))
        m = self._split(mixed, self.dv)
        mixed_error = torch.stack([torch.where(candidates[s], (m - v[:, :, s:s + 1]).abs() + ev[:, :, s:s + 1], 0.0)
                                   for s in range(v.shape[2])]).amax(dim=0).flatten(0, 1) * INFLATE
        y = _read(X, self.writes)
        prop, mag, terms = self.output.bound(mixed, mixed_error)
        error = (_read(E, self.writes) + prop + _rounding(mag + y.abs(), [t + 1 for t in terms], self.output.dtype)) * INFLATE
        _store(X, self.writes, self.output.accumulate(y, mixed))
        if isinstance(self.writes, slice):
            E[self.writes] = error
        else:
            E.index_copy_(0, self.writes, error)
        return X, E, undecided


class TorchTransformer(nn.Module):
    """The float Transformer itself (its weights, every token): the state (stored coordinate,
    token, batch), each block a few GEMMs or slab additions over all tokens of the batch."""

    def __init__(self, tf: Transformer, dtype=torch.float32):
        super().__init__()
        self.tokens, self.dtype = tf.tokens, dtype
        state = _State(tf)
        positions = [_entries(p) for p in tf.embed_bias]
        self.embed = _Map([_entries(tf.embed_weight[c]) for c in state.coords], tf.input_dim, dtype,
                          [[p.get(c, ZERO) for p in positions] for c in state.coords])
        self.blocks = nn.ModuleList(FeedForwardModule(b, state, dtype) if isinstance(b, FeedForward)
                                    else AttentionModule(b, state, tf.attention, dtype) for b in tf.blocks)
        t = self.out_token = tf.readout_token
        rows, bias = state.restrict([_entries(r) for r in tf.readout_weight], state.coords,
                                    [_entries(tf.readout_bias).get(o, ZERO) for o in range(len(tf.readout_weight))])
        self.readout = _Map(rows, len(state.coords), dtype, [[b[t]] for b in bias])

    def _embedded(self, x):
        X = x.new_zeros(len(self.embed.exact), self.tokens, len(x))                 # (V, T, B)
        return self.embed.accumulate(X, x.T.unsqueeze(1))

    def forward(self, x):
        X = self._embedded(x)
        for block in self.blocks:
            X = block(X)
        return self.readout(X[:, self.out_token:self.out_token + 1])[:, 0].T

    def traced(self, on: bool) -> list:
        """Make every attention block append its scores to one list (returned), or stop."""
        trace = [] if on else None
        for block in self.blocks:
            if isinstance(block, AttentionModule):
                block.trace = trace
        return trace

    def bound(self, x: torch.Tensor, x_error: torch.Tensor):
        """(outputs (B, o), rigorous bound on |output − exact output| (B, o), undecided hardmax
        rows per point (B,)) for float inputs ``x`` within ``x_error`` (B, d) of the exact points:
        running error analysis of this module's own operations (``backends.rounding``)."""
        with torch.inference_mode():
            X = self._embedded(x)
            prop, mag, m = self.embed.bound(x.T.unsqueeze(1), x_error.T.unsqueeze(1))
            E = ((prop + _rounding(mag, m, self.dtype)) * INFLATE).expand(X.shape).contiguous()
            undecided = torch.zeros(len(x), dtype=torch.long)
            for block in self.blocks:
                X, E, flags = block.bound(X, E)
                if flags is not None:
                    undecided += flags.sum(dim=(0, 1)).cpu()
            t = slice(self.out_token, self.out_token + 1)
            prop, mag, m = self.readout.bound(X[:, t], E[:, t])
            return self.readout(X[:, t])[:, 0].T, ((prop + _rounding(mag, m, self.dtype)) * INFLATE)[:, 0].T, undecided


class TorchMaxout(nn.Module):
    """The source network: per layer one GEMM over all pieces and a max over each unit's pieces
    (ranks padded by repeating the last piece); a layer of ReLU units is a GEMM and a ReLU."""

    def __init__(self, net: MaxoutNet, dtype=torch.float32):
        super().__init__()
        self.weights, self.biases, self.ranks = nn.ParameterList(), nn.ParameterList(), []
        for layer in net.layers:
            relu = all(len(ws) == 2 and not any(ws[1]) and bs[1] == 0 for ws, bs in zip(layer.weight, layer.bias))
            K = 1 if relu else max(layer.ranks)
            pick = [min(j, len(ws) - 1) for ws in layer.weight for j in range(K)]   # unit-major
            rows = [layer.weight[i][pick[i * K + j]] for i in range(layer.units) for j in range(K)]
            bias = [layer.bias[i][pick[i * K + j]] for i in range(layer.units) for j in range(K)]
            self.weights.append(nn.Parameter(_table(rows, layer.input_dim, dtype), requires_grad=False))
            self.biases.append(nn.Parameter(_floats(bias, dtype), requires_grad=False))
            self.ranks.append(0 if relu else K)
        self.readout_weight = nn.Parameter(_table(net.readout_weight, net.widths[-1], dtype), requires_grad=False)
        self.readout_bias = nn.Parameter(_floats(net.readout_bias, dtype), requires_grad=False)

    def forward(self, x):
        for w, b, K in zip(self.weights, self.biases, self.ranks):
            z = nn.functional.linear(x, w, b)
            x = torch.relu(z) if K == 0 else z.unflatten(-1, (-1, K)).amax(dim=-1)
        return nn.functional.linear(x, self.readout_weight, self.readout_bias)


def rigorous_error(tf: Transformer, points: list[list[Fraction]], dtype=torch.float32, outputs=None):
    """(outputs (B, o) in ``dtype``, rigorous bound on |output − exact output| (B, o), undecided
    hardmax rows per point (B,)) for a hardmax Transformer at exact points; ``outputs``: float
    outputs computed elsewhere (any chunking) to bound instead of this run's.

    For float32: ``|f̂32 − f| ≤ |f̂32 − f̂64| + B64``, with ``f̂64`` the float64 run and ``B64`` its
    running error bound (``bound``, ~2^29 times smaller than float32's own); the difference is
    measured, so the bound follows the actual error (the same holds for any ``outputs``).  A row
    is undecided when the float32 winners are not provably the exact ones: the float64 score
    intervals leave several candidates, or float32 picked another key.  For float64 without
    ``outputs``, ``bound`` of its own run."""
    def inputs(dt):
        x = exact_points_tensor(points, dt)
        error = torch.tensor([[representation_error(v, f) for v, f in zip(p, row)]
                              for p, row in zip(points, x.double().tolist())], dtype=torch.float64)
        return x, error.reshape(x.shape)
    wide, narrow = to_module(tf, torch.float64), to_module(tf, dtype)
    if dtype == torch.float64 and outputs is None:
        return wide.bound(*inputs(torch.float64))
    reference, narrow_trace = wide.traced(True), narrow.traced(True)
    out64, bound64, _ = wide.bound(*inputs(torch.float64))
    with torch.inference_mode():
        run = narrow(inputs(dtype)[0])
    out = run if outputs is None else outputs
    undecided = torch.zeros(len(points), dtype=torch.long)
    for scores, (_, candidates) in zip(narrow_trace, reference):
        winners = scores == scores.amax(dim=0)
        undecided += ((candidates.sum(dim=0) > 1) | (winners != candidates).any(dim=0)).sum(dim=(0, 1))
    return out, ((out.double() - out64).abs() * INFLATE + bound64) * INFLATE, undecided
