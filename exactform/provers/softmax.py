"""Claim C5: softmax attention approximates hardmax, and the token-shift Transformer with
softmax(λ) attention approximates its Maxout net with a proven error.

Lemmas, for v ∈ R^T, m = max v, p = softmax(λv):
 (a) ``0 ≤ m − vᵀp ≤ ln(T)/λ``;
 (b) if every entry below m is at least δ below it and ``m − min v ≤ Δ``,
     ``m − vᵀp ≤ (T−1)·Δ·e^{−λδ}``.
Z3 has no exp or ln, so each lemma is split into small steps that Z3 or SymPy checks exactly,
with the values of exp/ln as constrained real symbols (``log_lemma``, ``gap_lemma``); the analytic
facts those symbols satisfy are listed in ``ANALYTIC_FACTS`` (proofs/softmax.md proves them by hand;
lemma (a) as a whole, F1–F4 included, is the Coq theorem ``C5_lemma_a``, proofs/coq/C5.v).

Theorem (``depth_bound``): with ``e_0 = 0`` and ``e_l = Lip_l·e_{l−1} + ln(T)/λ``, where
``Lip_l = max_{i,j} ‖W^l_ij‖₁``, every hidden vector of the softmax run is within ``e_l`` (∞-norm)
of the Maxout net's ``h^l`` provided ``B_ij + ‖W^l_ij‖₁·e_{l−1} ≤ R_ij`` for every piece (the shift
margin absorbs the perturbation, so the other tokens' ReLUs stay off); hence
``|Tf_λ(x) − M(x)|∞ ≤ ‖A‖∞·e_L`` on the whole domain.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

from ..geometry.bounds import magnitude, maxout_bounds
from ..geometry.enclosure import exp_neg_upper, log_upper, softmax_error
from ..layout import padded_piece, power_of_two_at_least, shift_constants
from ..models import MaxoutNet

ANALYTIC_FACTS = (
    "F1 p_i = exp(λ v_i) / Σ_j exp(λ v_j) satisfies p_i > 0 and Σ p_i = 1",
    "F2 L_i = ln p_i equals λ(v_i − m) − LS with LS = ln Σ_j exp(λ(v_j − m))",
    "F3 LS ≥ 0 (the term of an entry equal to m is exp(0) = 1, and ln is increasing)",
    "F4 ln y ≤ y − 1 for y > 0, used at y = 1/(T p_i): T·p_i·(−ln T − L_i) ≤ 1 − T·p_i",
    "F5 p_i = exp(λ(v_i − v_k))·p_k ≤ e^{−λδ}·p_k when v_i ≤ v_k − δ (exp is increasing)",
)
"""What the exp/ln symbols are assumed to satisfy, for the Z3/SymPy steps: textbook facts. F1–F4 are
machine-checked in Coq within ``C5_lemma_a`` (proofs/coq/C5.v); F5 (lemma (b)) is not."""


@dataclass
class Step:
    claim: str
    method: str
    ok: bool
    detail: str = ""


@dataclass
class LemmaCheck:
    """The machine-checked steps of one lemma at one T; ``ok`` iff every step holds."""
    lemma: str
    tokens: int
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)


def _unsat(hypotheses, negated_goal) -> tuple[bool, str]:
    import z3
    solver = z3.Solver()
    solver.add(*hypotheses, negated_goal)
    result = solver.check()
    if result == z3.unsat:
        return True, "unsat"
    return False, f"{result}: {solver.model()}" if result == z3.sat else str(result)


def _identity(expr, target, substitution) -> bool:
    import sympy
    return sympy.expand((expr - target).subs(substitution)) == 0


def log_lemma(T: int, factor: Fraction = Fraction(1)) -> LemmaCheck:
    """Lemma (a) with ``ln(T)/λ`` scaled by ``factor`` (1 is the lemma; other factors are for
    showing that a wrong bound is *not* proved).  u_i = p_i·λ(m − v_i) is term i of λ·error."""
    import sympy
    import z3
    start = time.perf_counter()
    check = LemmaCheck("log", T)
    n, lam, m, v, p, LS, LT, L = z3.Reals("n lam m v p LS LT L")
    axioms = [n >= 1, lam > 0, v <= m, p > 0, LS >= 0, L == lam * (v - m) - LS,
              n * p * (-LT - L) <= 1 - n * p]
    u = p * lam * (m - v)
    ok, detail = _unsat(axioms, u > p * LT + 1 / n - p)
    check.steps.append(Step("A1 each term: 0 ≤ u_i ≤ p_i ln T + 1/T − p_i (any T, F2–F4 as hypotheses)",
                            "z3 nonlinear", ok and _unsat(axioms, u < 0)[0], detail))
    ps, vs = sympy.symbols(f"p0:{T}"), sympy.symbols(f"v0:{T}")
    lam_s, m_s, LT_s = sympy.symbols("lam m LT")
    simplex = {ps[-1]: 1 - sum(ps[:-1])}
    ok = _identity(lam_s * (m_s - sum(a * b for a, b in zip(ps, vs))),
                   sum(a * lam_s * (m_s - b) for a, b in zip(ps, vs)), simplex) and \
        _identity(sum(a * LT_s + sympy.Rational(1, T) - a for a in ps), LT_s, simplex)
    check.steps.append(Step("A2 λ·error = Σ u_i and Σ (p_i ln T + 1/T − p_i) = ln T when Σ p_i = 1",
                            "sympy polynomial identity", ok))
    us, rs = z3.RealVector("u", T), z3.RealVector("r", T)
    LTz = z3.Real("LT")
    hyps = [z3.And(0 <= a, a <= b) for a, b in zip(us, rs)] + [z3.Sum(rs) == LTz]
    bound = z3.RealVal(f"{factor.numerator}/{factor.denominator}") * LTz
    ok, detail = _unsat(hyps, z3.Or(z3.Sum(us) < 0, z3.Sum(us) > bound))
    check.steps.append(Step(f"A3 0 ≤ Σ u_i ≤ {factor}·ln T", "z3 linear", ok, detail))
    check.seconds = time.perf_counter() - start
    return check


def gap_lemma(T: int) -> LemmaCheck:
    """Lemma (b).  t_i = w_i(m − v_i) is term i of the error; k is the index of a maximal entry."""
    import sympy
    import z3
    start = time.perf_counter()
    check = LemmaCheck("gap", T)
    m, v, w, wk, eps, delta, Delta = z3.Reals("m v w wk eps delta Delta")
    axioms = [eps >= 0, delta > 0, w >= 0, wk >= 0, m - Delta <= v, v <= m,
              z3.Or(v == m, z3.And(v <= m - delta, w <= eps * wk))]
    t = w * (m - v)
    ok, detail = _unsat(axioms, z3.Or(t < 0, t > eps * Delta * wk))
    check.steps.append(Step("B1 each term: 0 ≤ t_i ≤ ε·Δ·w_k (any T, F5 as hypothesis)", "z3 nonlinear", ok, detail))
    ok, detail = _unsat([wk >= 0, wk <= 1, eps >= 0, Delta >= 0], eps * Delta * wk > eps * Delta)
    check.steps.append(Step("B2 ε·Δ·w_k ≤ ε·Δ when 0 ≤ w_k ≤ 1", "z3 nonlinear", ok, detail))
    ws, vs = sympy.symbols(f"w0:{T}"), sympy.symbols(f"v0:{T}")
    m_s = sympy.Symbol("m")
    ok = _identity(m_s - sum(a * b for a, b in zip(ws, vs)), sum(a * (m_s - b) for a, b in zip(ws, vs)),
                   {ws[-1]: 1 - sum(ws[:-1])})
    check.steps.append(Step("B3 error = Σ t_i when Σ w_i = 1", "sympy polynomial identity", ok))
    wz, tz = z3.RealVector("w", T), z3.RealVector("t", T)
    P, Q = z3.Reals("P Q")
    for k in range(T):
        hyps = [a >= 0 for a in wz] + [z3.Sum(wz) == 1, Q >= 0, z3.Implies(wz[k] <= 1, P <= Q), tz[k] == 0]
        hyps += [tz[i] <= P for i in range(T) if i != k]
        ok, detail = _unsat(hyps, z3.Sum(tz) > (T - 1) * Q)
        if not ok:
            break
    check.steps.append(Step("B4 Σ t_i ≤ (T−1)·ε·Δ for every position k of the max (t_k = 0)",
                            "z3 linear", ok, detail))
    check.seconds = time.perf_counter() - start
    return check


# --- numeric instantiation (certified rational constants) ------------------------------------

def log_bound(T: int, lam: Fraction, digits: int = 40) -> Fraction:
    """A rational ≥ ln(T)/λ (ln T bounded by ball arithmetic)."""
    return log_upper(T, digits) / lam


def gap_bound(T: int, value_range: Fraction, gap: Fraction, lam: Fraction, digits: int = 40) -> Fraction:
    """A rational ≥ (T−1)·Δ·e^{−λδ}."""
    return (T - 1) * value_range * exp_neg_upper(lam * gap, digits)


def counterexample(T: int, claimed: Fraction, lam: Fraction = Fraction(1), digits: int = 40):
    """A vector v (one entry 0, the others −x/λ) whose error enclosure lies *above* ``claimed``,
    refuting ``max(v) − vᵀ softmax_λ(v) ≤ claimed``; None if none is found on the grid x = k/16."""
    for k in range(1, 16 * (4 + 2 * math.ceil(math.log(T)))):
        v = [Fraction(0)] + [-Fraction(k, 16) / lam] * (T - 1)
        lo, _ = softmax_error(v, lam, digits)
        if lo > claimed:
            return v, lo
    return None


# --- the error through depth ---------------------------------------------------------------------

def _norm1(row: list[Fraction]) -> Fraction:
    return sum((abs(a) for a in row), Fraction(0))


@dataclass
class DepthBound:
    """``errors[l]`` bounds ‖h̃^l − h^l‖∞ (l = 0..L); ``margin_violations`` lists the pieces
    (layer, unit, slot) whose shift R_ij does not absorb the perturbation (then nothing is proved)."""
    lam: Fraction
    log_tokens: Fraction
    lipschitz: list[Fraction]
    errors: list[Fraction]
    readout_norm: Fraction
    margin_violations: list[tuple[int, int, int]]

    @property
    def holds(self) -> bool:
        return not self.margin_violations

    @property
    def bound(self) -> Fraction:
        return self.readout_norm * self.errors[-1]


def layer_lipschitz(net: MaxoutNet) -> list[Fraction]:
    """``Lip_l = max_{i,j} ‖W^l_ij‖₁``: the ∞-norm Lipschitz constant of layer l (max is 1-Lipschitz)."""
    return [max(_norm1(w) for ws in layer.weight for w in ws) for layer in net.layers]


def readout_norm(net: MaxoutNet) -> Fraction:
    return max(_norm1(row) for row in net.readout_weight)


def _margins(net: MaxoutNet, shifts) -> list[list[tuple[Fraction, Fraction, int, int]]]:
    """Per layer: (R_ij − B_ij, ‖W_ij‖₁, i, j) for every unit i and token slot j."""
    pieces = maxout_bounds(net).pieces
    out = []
    for l, layer in enumerate(net.layers):
        rows = []
        for i in range(layer.units):
            for j in range(net.max_rank):
                p = padded_piece(layer.ranks[i], j)
                rows.append((shifts[l][i][j] - magnitude(pieces[l][i][p]), _norm1(layer.weight[i][p]), i, j))
        out.append(rows)
    return out


def depth_bound(net: MaxoutNet, lam: Fraction, shifts=None, log_tokens: Fraction | None = None) -> DepthBound:
    """The end-to-end bound for ``compile_maxout(net, shifts).with_attention(lam)`` on the domain.
    ``log_tokens`` must be a certified upper bound on ln T (default: ``log_upper(T)``)."""
    shifts = shift_constants(net, maxout_bounds) if shifts is None else shifts
    U = log_upper(net.max_rank) if log_tokens is None else log_tokens
    lips = layer_lipschitz(net)
    errors, violations = [Fraction(0)], []
    for l, rows in enumerate(_margins(net, shifts)):
        violations += [(l, i, j) for slack, norm, i, j in rows if norm * errors[-1] > slack]
        errors.append(lips[l] * errors[-1] + U / lam)
    return DepthBound(lam, U, lips, errors, readout_norm(net), violations)


def scale_threshold(net: MaxoutNet, eps: Fraction, shifts=None, log_tokens: Fraction | None = None) -> Fraction | None:
    """The least λ for which ``depth_bound`` proves error ≤ eps (every e_l is c_l·U/λ, so each
    condition is λ ≥ constant); None when some margin is zero (no λ works)."""
    shifts = shift_constants(net, maxout_bounds) if shifts is None else shifts
    U = log_upper(net.max_rank) if log_tokens is None else log_tokens
    lips, c = layer_lipschitz(net), [Fraction(0)]
    need = Fraction(0)
    for l, rows in enumerate(_margins(net, shifts)):
        for slack, norm, _, _ in rows:
            if norm * c[-1] > 0:
                if slack <= 0:
                    return None
                need = max(need, norm * c[-1] * U / slack)
        c.append(lips[l] * c[-1] + 1)
    return max(need, readout_norm(net) * c[-1] * U / eps)


def short_scale(threshold: Fraction) -> Fraction:
    """A short rational ≥ threshold: ⌈threshold⌉ from 1 up, else the least power of two above it."""
    return Fraction(math.ceil(threshold)) if threshold >= 1 else power_of_two_at_least(threshold)


def choose_scale(net: MaxoutNet, eps: Fraction) -> tuple[Fraction, DepthBound]:
    """The λ for a target ε and its (re-checked) bound; raises ValueError when none exists."""
    U = log_upper(net.max_rank)
    threshold = scale_threshold(net, eps, log_tokens=U)
    if threshold is None:
        raise ValueError("a shift margin R_ij − B_ij is zero: no λ absorbs the softmax perturbation")
    lam = short_scale(threshold)
    result = depth_bound(net, lam, log_tokens=U)
    assert result.holds and result.bound <= eps, "scale_threshold and depth_bound disagree"
    return lam, result
