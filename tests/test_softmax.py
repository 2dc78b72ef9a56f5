"""Claim C5: softmax lemmas, λ selection, enclosures and the C5 certificate check."""
import copy
import json
import math
import random
from fractions import Fraction
from pathlib import Path

import pytest
from exactform.proofs.nets import random_net

from exactform.checker import construction as checker
from exactform.provers.write import certify, certify_softmax
from exactform.cli import main
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.formats import load_json
from exactform.geometry.bounds import magnitude, maxout_bounds
from exactform.geometry.enclosure import enclose, log_upper, softmax_error
from exactform.models import MaxoutNet, Transformer
from exactform.numbers import format_rational
from exactform.provers.softmax import (choose_scale, counterexample, depth_bound, gap_lemma, log_bound, log_lemma,
                                     scale_threshold)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EPS = Fraction(1, 1000)


@pytest.fixture(scope="module")
def relu_net():
    return MaxoutNet.from_json(load_json(EXAMPLES / "relu_net.json"))


@pytest.mark.parametrize("T", [2, 3, 5, 8])
def test_lemmas_proved(T):
    assert log_lemma(T).ok
    assert gap_lemma(T).ok


def test_wrong_lemma_not_proved_and_refuted():
    assert not log_lemma(4, Fraction(1, 2)).ok
    lam = Fraction(3)
    claimed = log_bound(32, lam) / 2                   # ≥ ln(32)/(2λ)
    v, lower = counterexample(32, claimed, lam)
    assert lower > claimed
    assert softmax_error(v, lam, digits=60)[0] > claimed
    assert counterexample(8, log_bound(8, lam), lam) is None       # the true lemma survives the search


def test_certified_log_bound():
    """The prover's U ≥ ln T passes the checker's series test; 10^-30 less (rounded down to 40
    decimals, within the checker's 60 digits) does not."""
    for T in (2, 3, 8, 1000):
        U = log_upper(T)
        assert checker.ln_bound(format_rational(U), T, "U") == U
        below = Fraction(math.floor((U - Fraction(1, 10 ** 30)) * 10 ** 40), 10 ** 40)
        with pytest.raises(checker.Refuted, match="not shown to be at least ln"):
            checker.ln_bound(format_rational(below), T, "U")


def test_lambda_threshold(relu_net, tmp_path, capsys):
    lam, result = choose_scale(relu_net, EPS)
    assert result.holds and result.bound <= EPS
    assert depth_bound(relu_net, lam - 1).bound > EPS
    assert lam - 1 < scale_threshold(relu_net, EPS) <= lam
    out = tmp_path / "tf.json"
    assert main(["softmax", str(EXAMPLES / "relu_net.json"), "--eps", "1/1000", "--lambda", str(lam - 1),
                 "-o", str(out)]) == 1
    assert "NOT proved" in capsys.readouterr().out and not out.exists()
    assert main(["softmax", str(EXAMPLES / "relu_net.json"), "--eps", "1/1000", "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["proved"] and Fraction(report["lambda"]) == lam
    assert Transformer.from_json(load_json(out)).attention == lam


def test_bad_eps_is_input_error(tmp_path):
    for eps in ("0.001x", "1/0", "-1/1000", "0"):        # 0.001 and 1e-3 are read exactly (tests/test_cli.py)
        assert main(["softmax", str(EXAMPLES / "relu_net.json"), "--eps", eps, "-o", str(tmp_path / "t.json")]) == 2


def test_enclosure_within_bound(relu_net):
    lam = Fraction(50)
    tf = compile_maxout(relu_net).with_attention(lam)
    bound = depth_bound(relu_net, lam).bound
    rng = random.Random(1)
    for _ in range(8):
        x = [Fraction(rng.randint(-64, 64), 64) for _ in range(2)]
        (lo, hi), = enclose(tf, x, digits=30)
        y = relu_net(x)[0]
        assert hi - lo < Fraction(1, 10 ** 25)
        assert max(hi - y, y - lo) <= bound
    with pytest.raises(ValueError):
        enclose(compile_maxout(relu_net), [Fraction(0)] * 2)


@pytest.fixture(scope="module")
def certificate(relu_net, tmp_path_factory):
    path = tmp_path_factory.mktemp("cert") / "cert.json"
    assert main(["softmax", str(EXAMPLES / "relu_net.json"), "--eps", "1/1000", "-o",
                 str(path.with_name("tf.json")), "--cert", str(path)]) == 0
    return path


def c5(result) -> tuple:
    return next((holds, words) for claim, holds, words in result.claims if claim == "C5")


def test_certificate_holds(certificate):
    doc = json.loads(certificate.read_text())
    r = checker.verify(doc)
    assert r.code == 0 and [c for c, _, _ in r.claims] == ["C5"], r
    lam = doc["transformer"]["attention"]["softmax"]
    assert doc["claims"][0]["statement"] == c5(r)[1] and f"lambda = {lam}:" in c5(r)[1]
    assert main(["check", str(certificate)]) == 0


def test_edited_lambda_fails(certificate, tmp_path):
    """λ − 1 in the Transformer, in the statement, or both: the certificate of λ is no certificate
    of λ − 1.  λ/100 with the checker's own statement: the recomputed bound exceeds eps."""
    doc = json.loads(certificate.read_text())
    lam = Fraction(doc["transformer"]["attention"]["softmax"])
    for edit in ("transformer", "statement", "both"):
        bad = copy.deepcopy(doc)
        if edit in ("transformer", "both"):
            bad["transformer"]["attention"]["softmax"] = str(lam - 1)
        if edit in ("statement", "both"):
            stated = bad["claims"][0]["statement"]
            assert f"lambda = {lam}:" in stated
            bad["claims"][0]["statement"] = stated.replace(f"lambda = {lam}:", f"lambda = {lam - 1}:")
        r = checker.verify(bad)
        assert r.code == 1 and not c5(r)[0], edit
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(bad))
    assert main(["check", str(path)]) == 1
    bad = copy.deepcopy(doc)
    bad["transformer"]["attention"]["softmax"] = format_rational(lam / 100)
    words = c5(checker.verify(bad))[1]
    assert "exceeds eps" in words
    bad["claims"][0]["statement"] = words
    assert checker.verify(bad).code == 1


def test_small_margin_fails(relu_net):
    """Shifts equal to the bare bounds B_ij leave no margin for the perturbation of layer 2: the
    checker finds a phase that the perturbation breaks."""
    bounds = maxout_bounds(relu_net)
    tight = [[[max(magnitude(bounds.pieces[l][i][min(j, len(ps) - 1)]), Fraction(1, 2 ** 20)) for j in range(2)]
              for i, ps in enumerate(layer)] for l, layer in enumerate(bounds.pieces)]
    assert not depth_bound(relu_net, Fraction(10 ** 6), shifts=tight).holds
    tf = compile_maxout(relu_net, tight).with_attention(Fraction(10 ** 6))
    cert = certify_softmax(relu_net, tf, EPS, log_upper(2))
    assert not cert.holds and "does not hold" in cert.problems["C5"][0]
    assert checker.verify(cert.document).code == 1
    assert certify(relu_net, tf.with_attention("hardmax")).holds   # only the perturbation breaks it


def test_not_the_construction_fails():
    net = random_net(random.Random(7), [2, 3], 2)
    lam, result = choose_scale(net, EPS)
    tf = compile_maxout(net).with_attention(lam)
    doc = certify_softmax(net, tf, EPS, result.log_tokens).document
    assert checker.verify(doc).code == 0
    def ranks(n):
        return [[len(unit) for unit in layer.weight] for layer in n.layers]
    others = (random_net(random.Random(seed), [2, 3], 2) for seed in range(8, 1000))
    other = next(o for o in others if ranks(o) == ranks(net))
    bad = copy.deepcopy(doc)
    bad["maxout"] = other.to_json()                    # Tf is not the construction of this net (same shape)
    r = checker.verify(bad)
    assert r.code == 1 and not c5(r)[0]
