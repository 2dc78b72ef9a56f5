"""Float modules (float32/float64, batched, CPU or CUDA) of the exact models, and, for hardmax
Transformers, a rigorous bound on how far the float computation can be from the exact one.

Invariant: a module computes its model's function in floating point from the exact weights
rounded to nearest; nothing flows back into exact paths. The Transformer module runs the
Transformer itself (its own weights, every token) on a state (batch, token, coordinate) with the
coordinates last, so every GEMM takes all tokens of the batch at once.  Coordinates that no
block writes and the embedding does not touch are per-token constants (the shift coordinates)
and are folded, exactly, into per-token biases; each block reads and adds into its coordinate
ranges as views (no whole-state gather or scatter); every linear map runs by its sparsity (a
gather, a scatter, or one GEMM, over its distinct rows up to sign when that halves it).
"""
from __future__ import annotations

from fractions import Fraction

import torch
from torch import nn

from ..models import Attention, FeedForward, MaxoutNet, Transformer
from .rounding import INFLATE, gamma, representation_error, round_up, unit_roundoff

Matrix = list[list[Fraction]]
ZERO, ONE = Fraction(0), Fraction(1)


def to_module(model: MaxoutNet | Transformer, dtype=torch.float32, device="cpu") -> nn.Module:
    """The float module of an exact model, in inference mode on ``device``."""
    module = TorchMaxout(model, dtype) if isinstance(model, MaxoutNet) else TorchTransformer(model, dtype)
    return module.to(device).eval()


def evaluate(module: nn.Module, points, chunk: int = 4096) -> torch.Tensor:
    """Outputs for a (B, d) tensor, in chunks (small chunks stay in cache: faster on CPU)."""
    with torch.inference_mode():
        return torch.cat([module(points[i:i + chunk]) for i in range(0, len(points), chunk)])


def exact_points_tensor(points: list[list[Fraction]], dtype, device="cpu") -> torch.Tensor:
    """Exact points rounded to nearest float (via float64)."""
    return torch.tensor([[float(v) for v in p] for p in points], dtype=torch.float64).to(device, dtype)


def _floats(values, dtype) -> torch.Tensor:
    return torch.tensor([float(v) for v in values], dtype=torch.float64).to(dtype)


def _table(rows: Matrix, cols: int, dtype) -> torch.Tensor:
    return torch.tensor([[float(v) for v in r] for r in rows], dtype=torch.float64).reshape(len(rows), cols).to(dtype)


def _errors(exact: Matrix | list[Fraction], rounded: torch.Tensor) -> torch.Tensor:
    """``|rounded − exact|`` entrywise, rounded up, as float64."""
    flat = [v for r in exact for v in r] if exact and isinstance(exact[0], list) else list(exact)
    return torch.tensor([representation_error(v, f) for v, f in zip(flat, rounded.double().flatten().tolist())],
                        dtype=torch.float64).reshape(rounded.shape)


class LinearMap(nn.Module):
    """``y = x Mᵀ`` for an exact ``M`` (rows × cols) on ``x`` of shape (..., cols): one GEMM
    (none when M is zero).  Features are the last, contiguous axis; on CPU one GEMM over the
    zeros is faster than gathers and scatters along it.  ``terms``: the non-zeros of each row
    (products with a zero weight are exact zeros and add no rounding)."""

    def __init__(self, matrix: Matrix, cols: int, dtype):
        super().__init__()
        self.rows, self.cols = len(matrix), cols
        self.terms = [sum(1 for v in r if v) for r in matrix]
        rounded = _table(matrix, cols, dtype)
        self.register_buffer("weight", rounded)
        self.zero = not any(self.terms)
        self.register_buffer("magnitude", rounded.double().abs())   # |M̂|, for the bound
        self.register_buffer("omega", _errors(matrix, rounded) if self.rows and cols else rounded.double())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.zero:
            return x.new_zeros(*x.shape[:-1], self.rows)
        return nn.functional.linear(x, self.weight)

    def bound(self, x: torch.Tensor, error: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(propagated error ``|M̂|e + Ω(|x̂| + e)``, magnitude ``|M̂||x̂|``), float64."""
        ax = x.double().abs()
        return error @ self.magnitude.T + (ax + error) @ self.omega.T, ax @ self.magnitude.T


def _rounding(terms: list[int], magnitude: torch.Tensor, dtype) -> torch.Tensor:
    """``γ_m · magnitude + 2mη`` per output coordinate (last axis), ``m`` its summed terms."""
    _, eta = unit_roundoff(dtype)
    g = torch.tensor([gamma(m, dtype) for m in terms], dtype=torch.float64)
    return magnitude * g + torch.tensor([m * eta for m in terms], dtype=torch.float64)


class _Affine(nn.Module):
    """``y = x Mᵀ + b`` on (N, cols), one GEMM with the bias added in it; ``accumulate`` adds it
    into a slice of the state in place.  ``bound`` covers either: a sum of the row's non-zero
    products, the bias and, when accumulating, the value accumulated into."""

    def __init__(self, matrix: Matrix, cols: int, bias: list[Fraction], dtype, one: int | None = None):
        """``one``: a column whose input is the constant 1 (in every token): the bias is added
        there, inside the GEMM (the same sum, the bias one product ``b·1 = b`` of it)."""
        super().__init__()
        if one is not None and any(bias):
            matrix = [row[:one] + [row[one] + b] + row[one + 1:] for row, b in zip(matrix, bias)]
            bias = [ZERO] * len(bias)
        self.map = LinearMap(matrix, cols, dtype)
        rounded = _floats(bias, dtype)
        self.register_buffer("bias", rounded)
        self.register_buffer("bias_error", _errors(list(bias), rounded))
        self.has_bias = any(bias)
        self.dtype = dtype

    def forward(self, x):
        if self.map.zero:
            return self.bias.expand(len(x), -1).clone()
        if self.has_bias:
            return torch.addmm(self.bias, x, self.map.weight.T)
        return x @ self.map.weight.T

    def accumulate(self, y, x):
        """``y += x Mᵀ + b`` in place (``y`` and ``x`` must not overlap): one sum of the row's
        non-zero products and ``y``, then the bias."""
        if not self.map.zero:
            y.addmm_(x, self.map.weight.T)
        if self.has_bias:
            y += self.bias
        return y

    def bound(self, x, error, residual=None, propagated: bool = True):
        """Rigorous bound on the error of ``x̂ Mᵀ + b`` (+ ``residual``, an accumulated value: one
        more term of the sum) for ``x̂`` within ``error`` of the exact input; ``propagated=False``:
        the rounding of this sum alone (the caller propagates the input errors)."""
        prop, mag = self.map.bound(x, error)
        if not propagated:
            prop = torch.zeros_like(mag)
        mag = mag + self.bias.double().abs()
        extra = 1
        if residual is not None:
            mag, extra = mag + residual.double().abs(), 2
        rounding = _rounding([t + extra for t in self.map.terms], mag, self.dtype)
        return (prop + self.bias_error + rounding) * INFLATE


def _slot(coords: list[int]):
    """Coordinates as a slice when consecutive (a view of the state, no copy), else an index."""
    start = coords[0] if coords else 0
    if coords == list(range(start, start + len(coords))):
        return slice(start, start + len(coords))
    return torch.tensor(coords, dtype=torch.long)


def _read(X, at):
    return X[:, at] if isinstance(at, slice) else X.index_select(1, at)


def _scatter(E, at, values):
    """``E[:, at] = values`` in place."""
    if isinstance(at, slice):
        E[:, at] = values
        return E
    return E.index_copy_(1, at, values)


class _Block(nn.Module):
    """A block on the state (N = batch × tokens, width): reads ``reads``, adds into ``writes``."""

    def __init__(self, reads: list[int], writes: list[int], ones: set[int]):
        super().__init__()
        self.reads, self.writes = _slot(reads), _slot(writes)
        self.aliased = bool(set(reads) & set(writes))
        self.one = next((k for k, c in enumerate(reads) if c in ones), None)     # a constant-1 input

    def _input(self, X):
        x = _read(X, self.reads)
        return x.clone() if self.aliased and isinstance(self.reads, slice) else x

    def _add(self, X, terms, E=None, errors=()):
        """``X[:, writes] += affine(input)`` in place, term by term, for ``terms = [(affine,
        input), ...]`` (non-consecutive writes: on a copy, stored back).  With ``E``, also
        ``E[:, writes] += `` the bound of each step, ``errors = [input error, ...]``, the value
        accumulated into counted as one more term of its sum."""
        Xw = _read(X, self.writes)
        Ew = _read(E, self.writes).clone() if E is not None else None
        for n, (affine, x) in enumerate(terms):
            if E is not None:
                Ew += affine.bound(x, errors[n], residual=Xw)
            affine.accumulate(Xw, x)
        if not isinstance(self.writes, slice):
            X.index_copy_(1, self.writes, Xw)
        if E is not None:
            _scatter(E, self.writes, Ew)
        return X


class FeedForwardModule(_Block):
    """``X[writes] += W2 ReLU(W1 X[reads] + b1) + (L X[reads] + c)``: the block's
    ``decomposition``, identity pairs ``ReLU(v) − ReLU(−v) = v`` run as the affine map ``L``.
    Three GEMMs (the last two accumulate into the state) and one ReLU pass."""

    def __init__(self, block: FeedForward, ones: set[int], dtype):
        super().__init__(block.reads, block.writes, ones)
        relu, linear, offset = block.decomposition
        self.first = self.second = None
        if relu:
            self.first = _Affine([[block.w1[u][c] for c in block.reads] for u in relu], len(block.reads),
                                 [block.b1[u] for u in relu], dtype, self.one)
            self.second = _Affine([[block.w2[r][u] for u in relu] for r in block.writes], len(relu),
                                  [ZERO] * len(block.writes), dtype)
        self.linear = _Affine([[row[c] for c in block.reads] for row in linear], len(block.reads), offset, dtype,
                              self.one)
        # the whole update of the written coordinates, X[writes] + L X[reads]: the exact map
        # I + L through which the input errors reach the result (identity pairs that cancel a
        # coordinate, ``z ← z − z``, carry none of its error), and the written rows it reads
        carried = [[row[k] + (ONE if c == r else ZERO) for k, c in enumerate(block.reads)]
                   for r, row in zip(block.writes, [[row[c] for c in block.reads] for row in linear])]
        self.register_buffer("carried", torch.tensor([[round_up(abs(v)) for v in row] for row in carried],
                                                     dtype=torch.float64).reshape(len(carried), len(block.reads)))
        self.register_buffer("kept", torch.tensor([0.0 if r in block.reads else 1.0 for r in block.writes],
                                                  dtype=torch.float64))

    def _terms(self, x):
        relu = [(self.second, torch.relu_(self.first(x)))] if self.first is not None else []
        return relu + [(self.linear, x)]

    def forward(self, X):
        return self._add(X, self._terms(self._input(X)))

    def bound(self, X, E):
        """The steps of ``forward``: ``S = X[writes] + W2 ReLU(pre)`` then ``S + L x + c``, each a
        sum with its own rounding (``γ_m`` times the magnitudes of its actual terms); ReLU is exact
        and 1-Lipschitz, and where ``pre + error < 0`` both the float and the exact unit are off.
        Input errors propagate through the whole update ``I + L`` (``carried``)."""
        x, e = self._input(X), _read(E, self.reads)
        Xw = _read(X, self.writes)
        error = _read(E, self.writes) * self.kept + e @ self.carried.T + x.double().abs() @ self.linear.map.omega.T
        if self.first is not None:
            pre = self.first(x)
            pre_error = self.first.bound(x, e)
            act, act_error = torch.relu(pre), torch.where(pre.double() + pre_error < 0, 0.0, pre_error)
            error = error + self.second.bound(act, act_error, residual=Xw)
            self.second.accumulate(Xw, act)
        error = error + self.linear.bound(x, torch.zeros_like(e), residual=Xw, propagated=False)
        self.linear.accumulate(Xw, x)
        if not isinstance(self.writes, slice):
            X.index_copy_(1, self.writes, Xw)
        return X, _scatter(E, self.writes, error * INFLATE), None


class AttentionModule(_Block):
    """All heads at once: one GEMM for the queries, keys and values of every token, scores
    ``S[s, b, t, h] = q_{t,h}·k_{s,h}``, hardmax (ties share) or softmax(λ) over s, and one GEMM
    ``X[writes] += O (A V)`` accumulating into the state; heads padded with zero rows."""

    def __init__(self, block: Attention, tokens: int, attention, ones: set[int], dtype):
        super().__init__(block.reads, block.writes, ones)
        H = len(block.heads)
        self.dk = max(len(h.query) for h in block.heads)
        self.dv = max(len(h.value) for h in block.heads)
        zero = [ZERO] * len(block.reads)
        rows = []
        for name, k in (("query", self.dk), ("key", self.dk), ("value", self.dv)):
            # head-minor: row h + H·j, so that (..., k·H) unflattens to (..., k, H)
            rows += [[getattr(h, name)[j][c] for c in block.reads] if j < len(getattr(h, name)) else zero
                     for j in range(k) for h in block.heads]
        self.qkv = _Affine(rows, len(block.reads), [ZERO] * len(rows), dtype)
        out = [[h.output[r][j] if j < len(h.value) else ZERO for j in range(self.dv) for h in block.heads]
               for r in block.writes]
        self.output = _Affine(out, H * self.dv, [ZERO] * len(out), dtype)
        self.heads, self.tokens = H, tokens
        self.scale = None if attention == "hardmax" else float(attention)

    def _split(self, y):
        """(N, (2dk + dv)·H) → q, k (B, T, dk, H) and v (B, T, dv, H)."""
        y = y.unflatten(0, (-1, self.tokens)).unflatten(-1, (-1, self.heads))
        return y[:, :, :self.dk], y[:, :, self.dk:2 * self.dk], y[:, :, 2 * self.dk:]

    @staticmethod
    def _pairs(a, b):
        """``P[s, b, t, h] = Σ_k a[b, t, k, h] · b[b, s, k, h]`` for every key token s."""
        return torch.stack([(a * b[:, s:s + 1]).sum(dim=2) for s in range(b.shape[1])])

    def _weights(self, scores):
        if self.scale is not None:
            return torch.softmax(self.scale * scores, dim=0)
        mask = (scores == scores.amax(dim=0)).to(scores.dtype)
        return mask / mask.sum(dim=0)

    @staticmethod
    def _mix(weights, v):
        """``Σ_s weights[s, b, t, h] · v[b, s, :, h]`` → (N, dv·H)."""
        mixed = sum(weights[s].unsqueeze(2) * v[:, s:s + 1] for s in range(v.shape[1]))
        return mixed.flatten(-2).flatten(0, 1)

    trace: list | None = None
    """When a list, each run appends its scores (forward) or (scores, candidates) (bound)."""

    def forward(self, X):
        q, k, v = self._split(self.qkv(_read(X, self.reads)))
        scores = self._pairs(q, k)
        if self.trace is not None:
            self.trace.append(scores)
        return self._add(X, [(self.output, self._mix(self._weights(scores), v))])

    def bound(self, X, E):
        """Hardmax only. A query row is *undecided* when some other key's score interval reaches
        the top one's: rounding could have changed the argmax. The exact mixed value then lies in
        the hull of the candidates' value intervals, which bounds the error either way."""
        if self.scale is not None:
            raise ValueError("the margin check is for hardmax attention")
        x, e = _read(X, self.reads), _read(E, self.reads)
        q, k, v = self._split(self.qkv(x))
        eq, ek, ev = self._split(self.qkv.bound(x, e))
        scores = self._pairs(q, k)
        aq, ak = q.double().abs(), k.double().abs()
        _, eta = unit_roundoff(q.dtype)
        score_error = (gamma(self.dk, q.dtype) * self._pairs(aq, ak) + self._pairs(aq, ek) + self._pairs(eq, ak)
                       + self._pairs(eq, ek) + 2 * self.dk * eta) * INFLATE
        s = scores.double()
        candidates = (s + score_error) >= (s - score_error).amax(dim=0)     # (S, B, T, H)
        undecided = candidates.sum(dim=0) > 1                                # (B, T, H)
        if self.trace is not None:
            self.trace.append((scores, candidates))
        mixed = self._mix(self._weights(scores), v)                          # (N, dv·H)
        inf = torch.tensor(float("inf"), dtype=torch.float64)
        vd = v.double()
        lo = torch.stack([torch.where(candidates[s].unsqueeze(2), vd[:, s:s + 1] - ev[:, s:s + 1], inf)
                          for s in range(v.shape[1])]).amin(dim=0)
        hi = torch.stack([torch.where(candidates[s].unsqueeze(2), vd[:, s:s + 1] + ev[:, s:s + 1], -inf)
                          for s in range(v.shape[1])]).amax(dim=0)
        lo, hi = lo.flatten(-2).flatten(0, 1), hi.flatten(-2).flatten(0, 1)
        m = mixed.double()
        mixed_error = torch.maximum(m - lo, hi - m) * INFLATE
        return self._add(X, [(self.output, mixed)], E, [mixed_error]), E, undecided


class TorchTransformer(nn.Module):
    """The float Transformer itself (its weights, every token and coordinate): the state is
    (batch × tokens, width), so every block's GEMMs take all tokens of the batch at once."""

    def __init__(self, tf: Transformer, dtype=torch.float32):
        super().__init__()
        self.tokens, self.width, self.dtype = tf.tokens, tf.width, dtype
        self.embed = _Affine(tf.embed_weight, tf.input_dim, [ZERO] * tf.width, dtype)
        positions = _table(tf.embed_bias, tf.width, dtype)                              # (T, V)
        self.register_buffer("positions", positions)
        self.register_buffer("positions_error", _errors(tf.embed_bias, positions))
        # coordinates equal to 1 in every token, never written: biases ride on them inside GEMMs
        written = {c for b in tf.blocks for c in b.writes}
        ones = {c for c in range(tf.width) if c not in written and not any(tf.embed_weight[c])
                and all(P[c] == 1 for P in tf.embed_bias)}
        self.blocks = nn.ModuleList(FeedForwardModule(b, ones, dtype) if isinstance(b, FeedForward)
                                    else AttentionModule(b, tf.tokens, tf.attention, ones, dtype) for b in tf.blocks)
        self.readout = _Affine(tf.readout_weight, tf.width, tf.readout_bias, dtype)
        self.out_token = tf.readout_token

    def _embedded(self, x):
        return (self.embed(x).unsqueeze(1) + self.positions).flatten(0, 1)   # (B·T, V)

    def _token(self, X, t):
        return X.unflatten(0, (-1, self.tokens))[:, t]

    def forward(self, x):
        X = self._embedded(x)
        for block in self.blocks:
            X = block(X)
        return self.readout(self._token(X, self.out_token))

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
            # the token's position is one more term of each embedding sum (embed has no bias)
            magnitude = self.embed.map.bound(x, x_error)[1].unsqueeze(1) + self.positions.double().abs()
            E = (self.embed.bound(x, x_error).unsqueeze(1) + self.positions_error
                 + _rounding([t + 1 for t in self.embed.map.terms], magnitude, self.dtype)) * INFLATE
            E = E.flatten(0, 1)
            undecided = torch.zeros(len(x), dtype=torch.long)
            for block in self.blocks:
                X, E, flags = block.bound(X, E)
                if flags is not None:
                    undecided += flags.sum(dim=(1, 2)).cpu()
            h, eh = self._token(X, self.out_token), self._token(E, self.out_token)
            return self.readout(h), self.readout.bound(h, eh), undecided


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
    from .rounding import representation_error

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
        undecided += ((candidates.sum(dim=0) > 1) | (winners != candidates).any(dim=0)).sum(dim=(1, 2))
    return out, ((out.double() - out64).abs() * INFLATE + bound64) * INFLATE, undecided
