"""Float modules (float32/float64, batched, CPU or CUDA) of the exact models, and, for hardmax
Transformers, a rigorous bound on how far the float computation can be from the exact one.

Invariant: a module computes its model's function in floating point from the exact weights
rounded to nearest; nothing flows back into exact paths. The Transformer module exploits the
block structure: coordinates that no block writes and the embedding does not touch are per-token
constants (the shift coordinates) and are folded, exactly, into per-token biases; each block
gathers the coordinates it reads and scatters into those it writes; every linear map runs by its
sparsity (a gather, a scatter, or one GEMM over its distinct rows up to sign).
"""
from __future__ import annotations

from fractions import Fraction

import torch
from torch import nn

from ..models import Attention, FeedForward, MaxoutNet, Transformer
from .rounding import INFLATE, gamma, representation_error, unit_roundoff

Matrix = list[list[Fraction]]
ZERO = Fraction(0)


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
    """``y = M x`` for an exact ``M`` (rows × cols) on ``x`` of shape (cols, ...), run by its
    structure: ``zero``; ``select`` (≤ 1 non-zero per row: gather and scale); ``scatter`` (few
    non-zeros: one gather, scale and index_add per non-zero); ``dense`` (one GEMM over the distinct
    non-zero rows up to sign, then a signed gather). Coordinates lead, so gathers and scatters
    move whole slabs."""

    SPARSE = 8
    """Scatter when non-zeros × SPARSE < distinct rows × columns (a GEMM flop is ~8× cheaper)."""

    def __init__(self, matrix: Matrix, cols: int, dtype):
        super().__init__()
        self.rows, self.cols = len(matrix), cols
        nz = [[(c, v) for c, v in enumerate(r) if v] for r in matrix]
        per_col = [0] * cols
        for r in nz:
            for c, _ in r:
                per_col[c] += 1
        if not any(nz):
            self.mode, self.terms = "zero", [0] * self.rows
        elif all(len(r) <= 1 for r in nz):
            self.mode, self.terms = "select", [len(r) for r in nz]
            self.register_buffer("index", torch.tensor([r[0][0] if r else 0 for r in nz]))
            self.register_buffer("coef", _floats([r[0][1] if r else ZERO for r in nz], dtype))
        elif sum(map(len, nz)) * self.SPARSE < len({tuple(r) for r in matrix}) * cols:
            self.mode, self.terms = "scatter", [len(r) for r in nz]
            pairs = [(c, i, v) for i, r in enumerate(nz) for c, v in r]
            self.register_buffer("source", torch.tensor([c for c, _, _ in pairs]))
            self.register_buffer("target", torch.tensor([i for _, i, _ in pairs]))
            self.register_buffer("coef", _floats([v for _, _, v in pairs], dtype))
        else:
            self.mode, self.terms = "dense", [cols if r else 0 for r in nz]
            unique, index, sign = {}, [], []
            for r, row in zip(nz, matrix):
                s = 1 if not r or r[0][1] > 0 else -1
                index.append(unique.setdefault(tuple(s * v for v in row), len(unique)))
                sign.append(s if r else 0)
            self.register_buffer("distinct", _table([list(k) for k in unique], cols, dtype))
            self.register_buffer("index", torch.tensor(index))
            self.register_buffer("sign", torch.tensor(sign, dtype=dtype))
        rounded = _table(matrix, cols, dtype)
        self.register_buffer("magnitude", rounded.double().abs())   # |M̂|, for the bound
        self.register_buffer("omega", _errors(matrix, rounded) if self.rows and cols else rounded.double())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rest = x.shape[1:]
        if self.mode == "zero":
            return x.new_zeros(self.rows, *rest)
        x = x.reshape(self.cols, -1)
        if self.mode == "select":
            y = x.index_select(0, self.index) * self.coef[:, None]
        elif self.mode == "scatter":
            y = x.new_zeros(self.rows, x.shape[1]).index_add_(0, self.target,
                                                              x.index_select(0, self.source) * self.coef[:, None])
        else:
            y = (self.distinct @ x).index_select(0, self.index) * self.sign[:, None]
        return y.reshape(self.rows, *rest)

    def bound(self, x: torch.Tensor, error: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(propagated error ``|M̂|e + Ω(|x̂| + e)``, magnitude ``|M̂||x̂|``), float64."""
        rest = x.shape[1:]
        ax, e = x.double().abs().reshape(self.cols, -1), error.reshape(self.cols, -1)
        prop = self.magnitude @ e + self.omega @ (ax + e)
        return prop.reshape(self.rows, *rest), (self.magnitude @ ax).reshape(self.rows, *rest)


def _rounding(terms: list[int], magnitude: torch.Tensor, dtype) -> torch.Tensor:
    """``γ_m · magnitude + 2mη`` per output coordinate (leading dim), ``m`` its summed terms."""
    _, eta = unit_roundoff(dtype)
    shape = (-1,) + (1,) * (magnitude.dim() - 1)
    g = torch.tensor([gamma(m, dtype) for m in terms], dtype=torch.float64).view(shape)
    return magnitude * g + torch.tensor([m * eta for m in terms], dtype=torch.float64).view(shape)


class _Affine(nn.Module):
    """``y = M x + bias`` on (cols, B[, T]); ``bias`` is [T][rows] (per token) or [1][rows];
    ``bound`` adds the rounding of its ``m + extra`` terms (``extra`` counts bias and residual)."""

    def __init__(self, matrix: Matrix, cols: int, bias: Matrix, dtype):
        super().__init__()
        self.map = LinearMap(matrix, cols, dtype)
        rounded = _table(bias, len(matrix), dtype).T.contiguous()            # (rows, T)
        self.register_buffer("bias", rounded)
        self.register_buffer("bias_error", _errors([list(r) for r in zip(*bias)], rounded))
        self.dtype = dtype

    def _shaped(self, b, x):
        return b.view(b.shape[0], *([1] * (x.dim() - 2)), b.shape[1])

    def forward(self, x):
        return self.map(x) + self._shaped(self.bias, x)

    def bound(self, x, error, residual=None, residual_terms: int = 1):
        """``residual``: the magnitude of ``residual_terms`` further terms added to the result."""
        prop, mag = self.map.bound(x, error)
        mag = mag + self._shaped(self.bias, x).double().abs()
        extra = 1
        if residual is not None:
            mag, extra = mag + residual.double().abs(), 1 + residual_terms
        rounding = _rounding([t + extra for t in self.map.terms], mag, self.dtype)
        return (prop + self._shaped(self.bias_error, x) + rounding) * INFLATE


class _Stream:
    """Which coordinates are variables (the state tensor's rows) and the exact per-token
    values of the others (constant in every token, never written)."""

    def __init__(self, tf: Transformer):
        written = {c for b in tf.blocks for c in b.writes}
        self.var = [c for c in range(tf.width) if c in written or any(tf.embed_weight[c])]
        self.pos = {c: i for i, c in enumerate(self.var)}
        self.const = [[tf.embed_bias[t][c] if c not in self.pos else None for c in range(tf.width)]
                      for t in range(tf.tokens)]

    def split(self, rows: Matrix, reads: list[int], bias: list[Fraction] | None = None) -> tuple[Matrix, Matrix]:
        """``rows`` restricted to the variable reads, and the per-token folded bias [T][rows]."""
        var = [c for c in reads if c in self.pos]
        const = [c for c in reads if c not in self.pos]
        bias = bias or [ZERO] * len(rows)
        folded = [[b + sum((r[c] * P[c] for c in const), ZERO) for r, b in zip(rows, bias)] for P in self.const]
        return [[r[c] for c in var] for r in rows], folded

    def index(self, coords: list[int]) -> torch.Tensor:
        return torch.tensor([self.pos[c] for c in coords if c in self.pos], dtype=torch.long)


class FeedForwardModule(nn.Module):
    """``X[writes] += W2 ReLU(W1 X[reads] + b1_t) + L X[reads] + c``: the block's ``decomposition``,
    identity pairs ``ReLU(v) − ReLU(−v) = v`` run as the affine map ``L`` (b1_t, c_t: biases plus
    the folded constants)."""

    def __init__(self, block: FeedForward, stream: _Stream, dtype):
        super().__init__()
        relu, linear, offset = block.decomposition
        reads = [c for c in block.reads if c in stream.pos]
        self.first = self.second = None
        if relu:
            w1, b1 = stream.split([block.w1[u] for u in relu], block.reads, [block.b1[u] for u in relu])
            self.first = _Affine(w1, len(reads), b1, dtype)
            self.second = _Affine([[block.w2[r][u] for u in relu] for r in block.writes], len(relu),
                                  [[ZERO] * len(block.writes)], dtype)
        lin, folded = stream.split(linear, block.reads, offset)
        self.linear = _Affine(lin, len(reads), folded, dtype)
        self.register_buffer("reads", stream.index(reads))
        self.register_buffer("writes", stream.index(block.writes))

    def forward(self, X):
        x = X.index_select(0, self.reads)
        delta = self.linear(x)
        if self.first is not None:
            delta = delta + self.second(torch.relu(self.first(x)))
        return X.index_add_(0, self.writes, delta)

    def bound(self, X, E):
        """The ReLU part's own error, and the affine part's with the two further additions
        (``+ ReLU part``, ``+ X``) counted as extra terms of its sums."""
        x, e = X.index_select(0, self.reads), E.index_select(0, self.reads)
        residual = X.index_select(0, self.writes).double().abs()
        delta = self.linear(x)
        delta_error = torch.zeros_like(residual)
        if self.first is not None:
            pre = self.first(x)
            pre_error = self.first.bound(x, e)
            # ReLU is exact and 1-Lipschitz; where pre + error < 0 both the float and the exact unit are off
            act_error = torch.where(pre.double() + pre_error < 0, 0.0, pre_error)
            part = self.second(torch.relu(pre))
            delta_error = self.second.bound(torch.relu(pre), act_error)
            residual = residual + part.double().abs()
            delta = delta + part
        delta_error = delta_error + self.linear.bound(x, e, residual=residual, residual_terms=2)
        X.index_add_(0, self.writes, delta)
        E.index_add_(0, self.writes, delta_error)
        return X, E, None


class AttentionModule(nn.Module):
    """All heads at once on state (V, B, T): scores ``S[s, h, b, t] = q_t·k_s``, hardmax (ties
    share) or softmax(λ) over s, ``X[writes] += O (A V)``; heads padded with zero rows."""

    def __init__(self, block: Attention, stream: _Stream, attention, dtype):
        super().__init__()
        H = len(block.heads)
        self.dk = max(len(h.query) for h in block.heads)
        self.dv = max(len(h.value) for h in block.heads)
        pad = lambda m, k: m + [[ZERO] * len(m[0])] * (k - len(m))    # noqa: E731
        reads = [c for c in block.reads if c in stream.pos]
        maps = []
        for name, k in (("query", self.dk), ("key", self.dk), ("value", self.dv)):
            rows = [r for h in block.heads for r in pad(getattr(h, name), k)]
            w, b = stream.split(rows, block.reads)
            maps.append(_Affine(w, len(reads), b, dtype))
        self.query, self.key, self.value = maps
        out = [[x for h in block.heads for x in (h.output[r] + [ZERO] * (self.dv - len(h.value)))]
               for r in block.writes]
        self.output = _Affine(out, H * self.dv, [[ZERO] * len(out)], dtype)
        self.register_buffer("reads", stream.index(reads))
        self.register_buffer("writes", stream.index(block.writes))
        self.heads, self.scale = H, None if attention == "hardmax" else float(attention)

    def _qkv(self, x):
        return [m(x).unflatten(0, (self.heads, -1)) for m in (self.query, self.key, self.value)]

    @staticmethod
    def _pairs(a, b):
        """``P[s, h, ..., t] = Σ_k a[h, k, ..., t] · b[h, k, ..., s]`` for every key token s."""
        return torch.stack([(a * b[..., s:s + 1]).sum(dim=1) for s in range(b.shape[-1])])

    def _weights(self, scores):
        if self.scale is not None:
            return torch.softmax(self.scale * scores, dim=0)
        mask = (scores == scores.amax(dim=0)).to(scores.dtype)
        return mask / mask.sum(dim=0)

    @staticmethod
    def _mix(weights, v):
        """``Σ_s weights[s, h, b, t] · v[h, :, b, s]`` → (H, dv, B, T)."""
        return sum(weights[s].unsqueeze(1) * v[..., s:s + 1] for s in range(v.shape[-1]))

    def forward(self, X):
        q, k, v = self._qkv(X.index_select(0, self.reads))
        mixed = self._mix(self._weights(self._pairs(q, k)), v)
        return X.index_add_(0, self.writes, self.output(mixed.flatten(0, 1)))

    def bound(self, X, E):
        """Hardmax only. A query row is *undecided* when some other key's score interval reaches
        the top one's: rounding could have changed the argmax. The exact mixed value then lies in
        the hull of the candidates' value intervals, which bounds the error either way."""
        if self.scale is not None:
            raise ValueError("the margin check is for hardmax attention")
        x, e = X.index_select(0, self.reads), E.index_select(0, self.reads)
        q, k, v = self._qkv(x)
        eq, ek, ev = (m.bound(x, e).unflatten(0, (self.heads, -1)) for m in (self.query, self.key, self.value))
        scores = self._pairs(q, k)
        aq, ak = q.double().abs(), k.double().abs()
        _, eta = unit_roundoff(q.dtype)
        score_error = (gamma(self.dk, q.dtype) * self._pairs(aq, ak) + self._pairs(aq, ek) + self._pairs(eq, ak)
                       + self._pairs(eq, ek) + 2 * self.dk * eta) * INFLATE
        s = scores.double()
        candidates = (s + score_error) >= (s - score_error).amax(dim=0)     # (S, H, B, T)
        undecided = candidates.sum(dim=0) > 1                                # (H, B, T)
        mixed = self._mix(self._weights(scores), v)                          # (H, dv, B, T)
        inf = torch.tensor(float("inf"), dtype=torch.float64)
        vd = v.double()
        lo = torch.stack([torch.where(candidates[s].unsqueeze(1), vd[..., s:s + 1] - ev[..., s:s + 1], inf)
                          for s in range(v.shape[-1])]).amin(dim=0)
        hi = torch.stack([torch.where(candidates[s].unsqueeze(1), vd[..., s:s + 1] + ev[..., s:s + 1], -inf)
                          for s in range(v.shape[-1])]).amax(dim=0)
        m = mixed.double()
        mixed_error = torch.maximum(m - lo, hi - m) * INFLATE
        delta_error = self.output.bound(mixed.flatten(0, 1), mixed_error.flatten(0, 1),
                                        residual=X.index_select(0, self.writes))
        X.index_add_(0, self.writes, self.output(mixed.flatten(0, 1)))
        E.index_add_(0, self.writes, delta_error)
        return X, E, undecided


class TorchTransformer(nn.Module):
    """The float Transformer: state (V, B, T) over the variable coordinates only."""

    def __init__(self, tf: Transformer, dtype=torch.float32):
        super().__init__()
        stream = _Stream(tf)
        self.tokens, self.dtype = tf.tokens, dtype
        embed_bias = [[P[c] for c in stream.var] for P in tf.embed_bias]
        self.embed = _Affine([tf.embed_weight[c] for c in stream.var], tf.input_dim, embed_bias, dtype)
        self.blocks = nn.ModuleList(FeedForwardModule(b, stream, dtype) if isinstance(b, FeedForward)
                                    else AttentionModule(b, stream, tf.attention, dtype) for b in tf.blocks)
        w, folded = stream.split(tf.readout_weight, list(range(tf.width)), tf.readout_bias)
        self.readout = _Affine(w, len(stream.var), [folded[tf.readout_token]], dtype)
        self.out_token = tf.readout_token

    def forward(self, x):
        X = self.embed(x.T.unsqueeze(-1))                 # (d, B, 1) → (V, B, T)
        for block in self.blocks:
            X = block(X)
        return self.readout(X[:, :, self.out_token]).T

    def bound(self, x: torch.Tensor, x_error: torch.Tensor):
        """(outputs (B, o), rigorous bound on |output − exact output| (B, o), undecided hardmax
        rows per point (B,)) for float inputs ``x`` within ``x_error`` (B, d) of the exact points."""
        with torch.inference_mode():
            xt, et = x.T.unsqueeze(-1), x_error.T.unsqueeze(-1)
            X = self.embed(xt)
            E = self.embed.bound(xt, et).expand(-1, -1, self.tokens).contiguous()
            undecided = torch.zeros(len(x), dtype=torch.long)
            for block in self.blocks:
                X, E, flags = block.bound(X, E)
                if flags is not None:
                    undecided += flags.sum(dim=(0, 2)).cpu()
            h, eh = X[:, :, self.out_token], E[:, :, self.out_token]
            return self.readout(h).T, self.readout.bound(h, eh).T, undecided


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
