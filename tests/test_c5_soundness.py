"""C5 is sound for any softmax Transformer the format admits, not only for
exactform's construction.  Hand-built Transformers (no feed-forward blocks, heads whose query reads the
shift so α varies by token, keys that add a multiple of an earlier head's perturbed output, values that
read earlier heads) are checked, and every bound the checker accepts is compared with the truth from an
independent evaluation of the softmax Transformer in mpmath (50 digits), written here from docs/spec.md §1."""
import copy
import random
from fractions import Fraction

import mpmath
import pytest

from exactform.checker import construction

mpmath.mp.dps = 50
HALF = Fraction(1, 2)


def q(x) -> str:
    x = Fraction(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def identity_net(offset=HALF) -> dict:
    """M(x) = x on [0, 1]: max(x, x − offset), then max(y₁, y₁ − offset)."""
    return {"format": "exactform/maxout@1", "input_dim": 1, "domain": {"lower": ["0"], "upper": ["1"]},
            "layers": [{"weight": [[["1"], ["1"]]], "bias": [["0", q(-offset)]]}] * 2,
            "readout": {"weight": [["1"]], "bias": ["0"]}}


def transformer(lam, gamma, alpha1=100, offset=HALF) -> dict:
    """T = 2, width 6: coordinates 1 (constant), s (0 in token 0, 1 in token 1), x, z = x − offset·s,
    y₁ (head 1's output) and w = −offset·s.  Head 1: query 1 + (alpha1 − 1)·s (so α is 1 in token 0 and
    alpha1 in token 1), key = value = z, writes y₁.  Head 2: query 1, value y₁ + w, key value + γ·y₁ (a
    score offset that reads a perturbed unit), writes into z; read-out z − x of token 0 = y₂.  Head 2's
    value reads head 1's output, which softmax perturbs differently in each token."""
    zero = ["0"] * 6
    head1 = {"query": [["1", q(alpha1 - 1), "0", "0", "0", "0"]], "key": [["0", "0", "0", "1", "0", "0"]],
             "value": [["0", "0", "0", "1", "0", "0"]], "output": [zero[:1]] * 4 + [["1"]] + [zero[:1]]}
    head2 = {"query": [["1", "0", "0", "0", "0", "0"]],
             "key": [["0", "0", "0", "0", q(1 + gamma), "1"]],
             "value": [["0", "0", "0", "0", "1", "1"]], "output": [zero[:1]] * 3 + [["1"]] + [zero[:1]] * 2}
    return {"format": "exactform/transformer@1", "input_dim": 1, "tokens": 2, "width": 6,
            "attention": {"softmax": q(lam)}, "domain": {"lower": ["0"], "upper": ["1"]},
            "embed": {"weight": [["0"], ["0"], ["1"], ["1"], ["0"], ["0"]],
                      "bias": [["1", "0", "0", "0", "0", "0"], ["1", "1", "0", q(-offset), "0", q(-offset)]]},
            "blocks": [{"kind": "attention", "heads": [head1]}, {"kind": "attention", "heads": [head2]}],
            "readout": {"token": 0, "weight": [["0", "0", "-1", "1", "0", "0"]], "bias": ["0"]}}


def certificate(tf: dict, net: dict, eps) -> dict:
    """A C5 certificate for the pair whose statement is the checker's own (what an attacker would write)."""
    doc = {"format": "exactform/certificate@2", "kind": "softmax", "maxout": net, "transformer": tf,
           "hints": {"phases": [], "pieces": [[[0, 1]], [[0, 1]]], "ln_tokens_upper": "7/10"},
           "claims": [{"id": "C5", "statement": "", "eps": q(eps)}]}
    holds, words = construction.derive(copy.deepcopy(doc))[4]["C5"]
    if holds:
        doc["claims"][0]["statement"] = words
    return doc


def softmax_output(tf: dict, x) -> mpmath.mpf:
    """Tf_λ(x) per docs/spec.md §1, every number in 50-digit mpmath."""
    num = lambda s: mpmath.mpf(Fraction(s).numerator) / Fraction(s).denominator      # noqa: E731
    lam, T, w = num(tf["attention"]["softmax"]), tf["tokens"], tf["width"]
    X = [[num(tf["embed"]["weight"][r][0]) * x + num(tf["embed"]["bias"][t][r]) for r in range(w)] for t in range(T)]
    apply = lambda m, v: [sum(num(a) * b for a, b in zip(row, v)) for row in m]       # noqa: E731
    for block in tf["blocks"]:
        new = [list(Xt) for Xt in X]
        for h in block["heads"]:
            for i in range(T):
                qi = apply(h["query"], X[i])
                scores = [lam * sum(a * b for a, b in zip(qi, apply(h["key"], X[j]))) for j in range(T)]
                top = max(scores)
                weights = [mpmath.exp(s - top) for s in scores]
                mixed = [sum(wj * apply(h["value"], X[j])[r] for j, wj in enumerate(weights)) / sum(weights)
                         for r in range(len(h["value"]))]
                for r, row in enumerate(h["output"]):
                    new[i][r] += sum(num(a) * m for a, m in zip(row, mixed))
        X = new
    R = tf["readout"]
    return sum(num(a) * b for a, b in zip(R["weight"][0], X[R["token"]])) + num(R["bias"][0])


def worst_error(tf: dict, points=9) -> mpmath.mpf:
    """max |Tf_λ(x) − M(x)| over an even grid of [0, 1] (M(x) = x): a sample, a lower bound on the sup."""
    return max(abs(softmax_output(tf, mpmath.mpf(k) / (points - 1)) - mpmath.mpf(k) / (points - 1))
               for k in range(points))


def test_the_reviewers_construction_is_refused():
    """Finding 1: λ = 100, α = 1 and 100 by token, key = value + 10²⁵·y₁.  The old rule took 10²⁵·y₁ as a
    constant and accepted |Tf − M| ≤ 7/500 ≤ 1/50; the truth is about 1/2."""
    net, tf = identity_net(), transformer(100, 10 ** 25)
    assert worst_error(tf) > mpmath.mpf(49) / 100
    doc = certificate(tf, net, Fraction(1, 50))
    result = construction.verify(doc)
    assert result.code == 1 and result.claims[0][0] == "C5" and not result.claims[0][1]
    assert "exceeds eps = 1/50" in result.claims[0][2]


def test_without_the_offset_the_bound_is_accepted_and_true():
    """The same Transformer with γ = 0 is a sound construction: accepted, and its bound holds."""
    net, tf = identity_net(), transformer(100, 0)
    doc = certificate(tf, net, Fraction(1, 10))
    result = construction.verify(doc)
    assert result.code == 0, result
    bound = construction.derive(copy.deepcopy(doc))[5].bound
    assert worst_error(tf) <= mpmath.mpf(bound.numerator) / bound.denominator


@pytest.mark.parametrize("seed", range(12))
def test_every_accepted_bound_holds_on_variants(seed):
    """A family: γ (the key's multiple of the perturbed y₁) from 0 to 10²⁵, α varying by token, λ from 10 to
    10⁴.  Whenever the checker accepts ε, the sampled error is at most its bound (and the bound ≤ ε)."""
    rng = random.Random(seed)
    lam = rng.choice([10, 100, 1000, 10 ** 4])
    gamma = rng.choice([0, Fraction(1, 1000), Fraction(1, 10), 1, 10, 10 ** 3, 10 ** 25])
    alpha1 = rng.choice([1, 2, 100, Fraction(1, 100)])
    tf = transformer(lam, gamma, alpha1)
    doc = certificate(tf, identity_net(), 10)
    derived = construction.derive(copy.deepcopy(doc))
    walked = derived[5]
    assert walked is not None, derived[4]
    truth = worst_error(tf)
    assert truth <= mpmath.mpf(walked.bound.numerator) / walked.bound.denominator, (lam, gamma, alpha1, walked.bound)
    eps = walked.bound if walked.bound < 10 else Fraction(1, 100)
    result = construction.verify(certificate(tf, identity_net(), eps))
    assert (result.code == 0) == (walked.bound <= eps)


def test_a_query_reading_the_input_is_refused_naming_the_head():
    tf = transformer(100, 0)
    tf["blocks"][1]["heads"][0]["query"] = [["1", "0", "1", "0", "0", "0"]]      # 1 + x: not a constant
    result = construction.verify(certificate(tf, identity_net(), 10))
    assert result.code == 1 and "block 1 head 0 token 0: the query depends on the input" in result.claims[0][2]


def test_a_non_positive_score_scale_is_refused():
    tf = transformer(100, 0, alpha1=-1)                                           # α = −1 in token 1
    result = construction.verify(certificate(tf, identity_net(), 10))
    assert result.code == 1 and "token 1: the score scale alpha = -1 is not positive" in result.claims[0][2]
