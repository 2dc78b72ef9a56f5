"""Independent check of claim C5 (softmax error of the token-shift Transformer), standard library
only: ``fractions`` arithmetic on the two embedded models, nothing taken from the evidence that
can be recomputed.

The check re-derives, from ``net`` and ``tf`` alone:
1. that ``tf`` is the token-shift construction of ``net`` (DESIGN §2): embedding, the three blocks
   of every layer and the read-out, entry by entry; the shifts R_ij are read off the weights;
2. interval bounds B_ij = max |a_ij| over each layer's input box, the Lipschitz constants
   Lip_l = max ‖W^l_ij‖₁ and ‖A‖∞;
3. that the evidence's ``ln_tokens_upper`` U really is ≥ ln T: a partial sum of the exponential
   series is a lower bound on e^U (U ≥ 0), so reaching T proves it;
4. the recursion e_0 = 0, e_l = Lip_l·e_{l−1} + U/λ, the margins B_ij + ‖W_ij‖₁·e_{l−1} ≤ R_ij
   (the other tokens' ReLUs stay off under the perturbation), and bound = ‖A‖∞·e_L ≤ eps.
Taken as given: lemma (a) ``0 ≤ max v − vᵀ softmax_λ(v) ≤ ln(T)/λ`` (proofs/softmax.md; its
algebraic core is Z3-checked by proofs/C5.py).
"""
from __future__ import annotations

from fractions import Fraction

ZERO, ONE = Fraction(0), Fraction(1)


def _rational(text: object, key: str) -> Fraction:
    if not isinstance(text, str):
        raise ValueError(f"{key} is not a rational string")
    value = Fraction(text)
    if str(value) != text:
        raise ValueError(f"{key} = {text!r} is not a canonical rational")
    return value


def exp_reaches(U: Fraction, T: int, terms: int = 300) -> bool:
    """True only if e^U ≥ T, shown by a partial sum Σ_{k≤n} U^k/k! ≥ T (valid for U ≥ 0)."""
    if U < 0:
        return False
    term = total = ONE
    for k in range(1, terms):
        if total >= T:
            return True
        term = term * U / k
        total += term
    return total >= T


def _norm1(row) -> Fraction:
    return sum((abs(a) for a in row), ZERO)


def _interval(weights, bias, box) -> tuple[Fraction, Fraction]:
    lo = hi = bias
    for w, (a, b) in zip(weights, box):
        lo, hi = (lo + w * a, hi + w * b) if w >= 0 else (lo + w * b, hi + w * a)
    return lo, hi


def _unit(width: int, index: int) -> list[Fraction]:
    return [ONE if c == index else ZERO for c in range(width)]


class _Layout:
    def __init__(self, T: int, N: int):
        self.T, self.N, self.width = T, N, 1 + T + 3 * N

    def shift(self, j): return 1 + j
    def h(self, i): return 1 + self.T + i
    def z(self, i): return 1 + self.T + self.N + i
    def out(self, i): return 1 + self.T + 2 * self.N + i


def _pieces_shifts(net, tf, l: int, lay: _Layout, failures: list[str]):
    """Check block 3l (FF pieces) entry by entry; return R[i][j] read off its weights."""
    block, layer, T, w = tf.blocks[3 * l], net.layers[l], lay.T, lay.width
    if block.kind != "feedforward" or block.hidden != 2 * layer.units * T:
        failures.append(f"C5: block {3 * l} is not the pieces block of layer {l}")
        return None
    R, row = [], 0
    for i in range(layer.units):
        R.append([])
        for j in range(T):
            R[i].append(-block.w1[row][lay.shift(j)])
            weights, bias = layer.piece(i, min(j, layer.ranks[i] - 1))
            for sign in (ONE, -ONE):
                expected = [ZERO] * w
                for c, a in enumerate(weights):
                    expected[lay.h(c)] = sign * a
                expected[lay.shift(j)] = -R[i][j]
                column = [block.w2[r][row] for r in range(w)]
                if block.w1[row] != expected or block.b1[row] != sign * bias or \
                        column != [sign * x for x in _unit(w, lay.z(i))]:
                    failures.append(f"C5: block {3 * l} hidden unit {row} is not the ReLU pair of unit {i} slot {j}")
                    return None
                row += 1
    if any(block.b2):
        failures.append(f"C5: block {3 * l} has a non-zero output bias")
        return None
    return R


def _check_max_block(tf, l: int, units: int, lay: _Layout, failures: list[str]) -> None:
    block, w = tf.blocks[3 * l + 1], lay.width
    ok = block.kind == "attention" and len(block.heads) == units and all(
        h.query == [_unit(w, 0)] and h.key == [_unit(w, lay.z(i))] and h.value == [_unit(w, lay.z(i))]
        and h.output == [[x] for x in _unit(w, lay.out(i))] for i, h in enumerate(block.heads))
    if not ok:
        failures.append(f"C5: block {3 * l + 1} is not the max block of layer {l} "
                        "(one head per unit, query = constant, key = value = z_i, output = out_i)")


def _check_advance_block(tf, l: int, before: int, after: int, lay: _Layout, failures: list[str]) -> None:
    """Hidden units must be identity pairs ReLU(v)·c − ReLU(−v)·c = c·v, so the block is the
    linear map I + Σ c·vᵀ; on the live coordinates it must move out → h and clear z and out."""
    block, w = tf.blocks[3 * l + 2], lay.width
    where = f"C5: block {3 * l + 2} (advance of layer {l})"
    if block.kind != "feedforward" or block.hidden % 2 or any(block.b2) or any(block.b1):
        failures.append(f"{where} is not a bias-free feed-forward block of ReLU pairs")
        return
    K = [_unit(w, r) for r in range(w)]
    for p in range(0, block.hidden, 2):
        col, neg = [block.w2[r][p] for r in range(w)], [block.w2[r][p + 1] for r in range(w)]
        if block.w1[p + 1] != [-a for a in block.w1[p]] or neg != [-a for a in col]:
            failures.append(f"{where}: hidden units {p}, {p + 1} are not an identity pair")
            return
        for r in range(w):
            if col[r]:
                K[r] = [a + col[r] * b for a, b in zip(K[r], block.w1[p])]
    live = [0] + [lay.shift(j) for j in range(lay.T)] + [lay.h(i) for i in range(before)] + \
        [c for i in range(after) for c in (lay.z(i), lay.out(i))]
    for r in range(w):
        if r == 0 or 1 <= r <= lay.T:
            target = r
        elif lay.h(0) <= r < lay.h(after):
            target = lay.out(r - lay.h(0))
        else:
            target = None
        if any(K[r][c] != (ONE if c == target else ZERO) for c in live):
            failures.append(f"{where}: coordinate {r} is not updated as h ← out, z ← 0, out ← 0")
            return


def token_shift_shifts(net, tf, failures: list[str]):
    """The shifts R[l][i][j] if ``tf`` is the token-shift construction of ``net``, else None
    (with the reason appended to ``failures``)."""
    T, widths = net.max_rank, [net.input_dim] + [layer.units for layer in net.layers]
    lay = _Layout(T, max(widths))
    w = lay.width
    if (tf.tokens, tf.width, tf.input_dim) != (T, w, net.input_dim) or tf.domain != net.domain:
        failures.append(f"C5: the transformer's tokens/width/domain are not those of the construction "
                        f"(expected T = {T}, width = {w}, the net's domain)")
        return None
    embed = [[ONE if (r, c) == (lay.h(c), c) else ZERO for c in range(net.input_dim)] for r in range(w)]
    positions = [[ONE if r == 0 or (1 <= r <= T and r - 1 != t) else ZERO for r in range(w)] for t in range(T)]
    if tf.embed_weight != embed or tf.embed_bias != positions:
        failures.append("C5: the embedding is not x → h with const = 1 and shifts c_j = [t ≠ j]")
        return None
    if len(tf.blocks) != 3 * len(net.layers):
        failures.append(f"C5: expected {3 * len(net.layers)} blocks, found {len(tf.blocks)}")
        return None
    R = []
    for l, layer in enumerate(net.layers):
        R.append(_pieces_shifts(net, tf, l, lay, failures))
        if R[-1] is None:
            return None
        _check_max_block(tf, l, layer.units, lay, failures)
        _check_advance_block(tf, l, widths[l], widths[l + 1], lay, failures)
    readout = [[ZERO] * w for _ in net.readout_weight]
    for o, row in enumerate(net.readout_weight):
        for i, a in enumerate(row):
            readout[o][lay.h(i)] = a
    if tf.readout_weight != readout or tf.readout_bias != list(net.readout_bias):
        failures.append("C5: the read-out is not y = A h + c")
    return None if failures else R


def check_c5(evidence: dict, net, tf) -> list[str]:
    """Failure messages for claim C5 (empty: the claim holds).  Claim: for every x in the domain,
    ``max_o |Tf_λ(x)_o − M(x)_o| ≤ bound ≤ eps``."""
    failures: list[str] = []
    if tf.is_hardmax:
        return ["C5: the transformer has hardmax attention, not softmax"]
    lam, T = tf.attention, tf.tokens
    try:
        claimed = {k: _rational(evidence[k], k) for k in ("lambda", "eps", "ln_tokens_upper", "bound", "readout_norm")}
        lips = [_rational(x, "lipschitz") for x in evidence["lipschitz"]]
        errors = [_rational(x, "errors") for x in evidence["errors"]]
        tokens = evidence["tokens"]
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        return [f"C5: malformed evidence ({type(e).__name__}: {e})"]
    if claimed["lambda"] != lam:
        failures.append(f"C5: evidence λ = {claimed['lambda']} but the transformer's λ = {lam}")
    if tokens != T:
        failures.append(f"C5: evidence tokens = {tokens} but the transformer has {T}")
    U = claimed["ln_tokens_upper"]
    if not exp_reaches(U, T):
        failures.append(f"C5: ln_tokens_upper = {U} is not shown to be ≥ ln {T}")
    R = token_shift_shifts(net, tf, failures)
    if R is None:
        return failures
    box = list(zip(net.domain.lower, net.domain.upper))
    e, my_errors, my_lips = ZERO, [ZERO], []
    for l, layer in enumerate(net.layers):
        for i in range(layer.units):
            for j in range(T):
                weights, bias = layer.piece(i, min(j, layer.ranks[i] - 1))
                lo, hi = _interval(weights, bias, box)
                if max(-lo, hi) + _norm1(weights) * e > R[l][i][j]:
                    failures.append(f"C5: layer {l} unit {i} slot {j}: margin R = {R[l][i][j]} does not absorb "
                                    f"max|a| = {max(-lo, hi)} plus the perturbation {_norm1(weights) * e}")
        my_lips.append(max(_norm1(w) for ws in layer.weight for w in ws))
        e = my_lips[-1] * e + U / lam
        my_errors.append(e)
        ranges = [[_interval(w, b, box) for w, b in zip(ws, bs)] for ws, bs in zip(layer.weight, layer.bias)]
        box = [(max(lo for lo, _ in r), max(hi for _, hi in r)) for r in ranges]
    norm = max(_norm1(row) for row in net.readout_weight)
    bound = norm * e
    for name, mine, theirs in (("lipschitz", my_lips, lips), ("errors", my_errors, errors),
                               ("readout_norm", norm, claimed["readout_norm"]), ("bound", bound, claimed["bound"])):
        if mine != theirs:
            failures.append(f"C5: evidence {name} differs from the recomputed value")
    if bound > claimed["eps"]:
        failures.append(f"C5: the proven bound {bound} exceeds eps = {claimed['eps']} at λ = {lam}")
    return failures
