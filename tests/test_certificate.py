"""Certificates (C8): fresh ones pass the independent checker; broken ones fail naming the claim
(exit 1); malformed files are not certificates (exit 2)."""
import copy
import json
import random
import subprocess
import sys
from fractions import Fraction

import pytest
from nets import random_net, relu_net

from exactform.certificate.check import check_certificate
from exactform.certificate.write import certify
from exactform.cli import main
from exactform.commands import prove
from exactform.construct.maxout_to_transformer import compile_maxout, shift_constants
from exactform.formats import canonical_json, write_json

NETS = {
    "ragged": lambda: random_net(random.Random(11), [3, 4, 3], 4, outputs=2),
    "rank1": lambda: random_net(random.Random(12), [2, 3], 1),
    "relu-3-outputs": lambda: relu_net(random.Random(13), [4, 6, 5], outputs=3),
}


def run_check(tmp_path, document, smt=False):
    path = tmp_path / "cert.json"
    write_json(path, document)
    lines = []
    code = check_certificate(path, smt=smt, say=lines.append)
    return code, {line.split()[0] for line in lines if " FAILS: " in line}, lines


def good(name):
    net = NETS[name]()
    tf = compile_maxout(net)
    cert = certify(net, tf)
    assert cert.holds, cert.problems
    return net, tf, cert.document


def dense(row):
    """A model vector as a dense list (rows may be written in the sparse encoding)."""
    if isinstance(row, dict) and set(row) == {"length", "index", "value"}:
        out = ["0"] * row["length"]
        for i, q in zip(row["index"], row["value"]):
            out[i] = q
        return out
    return row


def bump(doc, *path):
    for key in path[:-1]:
        doc[key] = dense(doc[key])
        doc = doc[key]
    q = Fraction(doc[path[-1]]) + Fraction(1, 3)
    doc[path[-1]] = str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


@pytest.mark.parametrize("name", NETS)
def test_fresh_certificate_passes(tmp_path, name):
    code, failed, lines = run_check(tmp_path, good(name)[2])
    assert code == 0 and not failed, lines
    assert [line.split()[0] for line in lines[:4]] == ["C1", "C2", "C3", "C4"]


@pytest.mark.parametrize("name", ["ragged", "relu-3-outputs"])
def test_mutations_fail_naming_the_claim(tmp_path, name):
    net, tf, doc = good(name)
    h0 = tf.layout["h"][0]
    cases = {}
    m = copy.deepcopy(doc)
    bump(m, "transformer", "blocks", 0, "w1", 0, h0)
    cases["transformer weight"] = (m, "C3")
    m = copy.deepcopy(doc)
    bump(m, "transformer", "blocks", 2, "w2", h0, 0)
    cases["advance weight"] = (m, "C3")
    m = copy.deepcopy(doc)
    bump(m, "maxout", "layers", 0, "bias", 0, 0)
    cases["maxout bias"] = (m, "C3")
    m = copy.deepcopy(doc)
    fixed = m["claims"][2]["evidence"]["feedforward"][0]["bounds"][1]   # token 1: off phases have bounds
    bump(next(b for b in fixed if b), 1)
    cases["bound"] = (m, "C3")
    m = copy.deepcopy(doc)
    bump(m, "claims", 2, "evidence", "boxes", 1, 0, 1)
    cases["box"] = (m, "C3")
    m = copy.deepcopy(doc)
    phases = m["claims"][2]["evidence"]["feedforward"][0]["phases"][0]
    phases[0] = "on" if phases[0] != "on" else "off"
    cases["phase"] = (m, "C3")
    m = copy.deepcopy(doc)
    m["claims"][3]["evidence"]["formula"]["parameters"] += 1
    cases["size"] = (m, "C4")
    m = copy.deepcopy(doc)
    m["claims"][0]["statement"] = "hardmax is the min"
    cases["statement"] = (m, "C1")
    m = copy.deepcopy(doc)
    bump(m, "claims", 1, "evidence", "pairs", 0, "others", 0, 3)
    cases["C2 bound"] = (m, "C2")
    for what, (m, claim) in cases.items():
        code, failed, lines = run_check(tmp_path, m)
        assert code == 1 and claim in failed, (what, lines)


def test_too_small_shift_fails_c2_and_c3(tmp_path):
    net, tf, doc = good("relu-3-outputs")
    small = [[[r / 4 for r in row] for row in layer] for layer in shift_constants(net)]
    bad = compile_maxout(net, small)
    forged = dict(doc, transformer=bad.to_json())           # the good evidence beside the bad model
    code, failed, _ = run_check(tmp_path, forged)
    assert code == 1 and {"C2", "C3"} <= failed
    own = certify(net, bad)                                # the bad model's own (failing) evidence
    assert not own.holds and "neither fixed nor" in own.problems["C3"][0]
    code, failed, lines = run_check(tmp_path, own.document)
    assert code == 1 and {"C2", "C3"} <= failed
    assert any("neither fixed nor half of an identity pair" in line for line in lines)


def test_unknown_claim_fails_and_no_claims_is_not_a_certificate(tmp_path):
    _, _, doc = good("rank1")
    m = dict(doc, claims=doc["claims"] + [{"id": "C42", "statement": "", "evidence": {}}])
    code, failed, _ = run_check(tmp_path, m)
    assert code == 1 and failed == {"C42"}
    code, _, lines = run_check(tmp_path, dict(doc, claims=[]))
    assert code == 2 and "claims" in lines[0]


@pytest.mark.parametrize("text,where", [
    ("{", "malformed JSON"),
    ('{"format": "exactform/certificate@1", "maxout": {}, "transformer": {}, "claims": 1.5}', ""),
    ('{"format": "exactform/other", "maxout": {}, "transformer": {}, "claims": []}', "format"),
])
def test_not_a_certificate(tmp_path, text, where):
    path = tmp_path / "x.json"
    path.write_text(text)
    lines = []
    assert check_certificate(path, say=lines.append) == 2
    assert str(path) in lines[0] and where in lines[0]


def test_bad_shape_names_field_and_index(tmp_path):
    _, _, doc = good("rank1")
    m = copy.deepcopy(doc)
    m["transformer"]["blocks"][0]["w1"][1] = dense(m["transformer"]["blocks"][0]["w1"][1])[:-1]
    code, _, lines = run_check(tmp_path, m)
    assert code == 2 and "transformer.blocks[0].w1[1]" in lines[0]


def test_cli_certify_check_byte_identical_and_folder(tmp_path, capsys):
    net = NETS["ragged"]()
    write_json(tmp_path / "net.json", net.to_json())
    assert main(["compile", str(tmp_path / "net.json"), "-o", str(tmp_path / "tf.json")]) == 0
    for name in ("a", "b"):
        assert main(["certify", str(tmp_path / "net.json"), str(tmp_path / "tf.json"),
                     "-o", str(tmp_path / f"{name}.cert.json")]) == 0
    assert (tmp_path / "a.cert.json").read_bytes() == (tmp_path / "b.cert.json").read_bytes()
    capsys.readouterr()
    assert main(["check", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("all 4 claims hold") == 2


def test_cli_certify_refuses_bad_pairs_and_bad_input(tmp_path, capsys):
    net = relu_net(random.Random(3), [2, 3])
    small = [[[r / 8 for r in row] for row in layer] for layer in shift_constants(net)]
    write_json(tmp_path / "net.json", net.to_json())
    write_json(tmp_path / "tf.json", compile_maxout(net, small).to_json())
    assert main(["certify", str(tmp_path / "net.json"), str(tmp_path / "tf.json"), "-o", str(tmp_path / "c.json")]) == 1
    assert not (tmp_path / "c.json").exists()
    assert "C3 FAILS: block 0 (feed-forward) token" in capsys.readouterr().out
    (tmp_path / "tf.json").write_text('{"format": "exactform/transformer@1", "tokens": 1.5}')
    done = subprocess.run([sys.executable, "-m", "exactform.cli", "certify", str(tmp_path / "net.json"),
                           str(tmp_path / "tf.json"), "-o", str(tmp_path / "c.json")], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "tf.json" in done.stderr
    assert not (tmp_path / "c.json").exists()


def test_smt_queries_are_embedded_and_rerun(tmp_path):
    pytest.importorskip("exactform.prove.smt")
    net = random_net(random.Random(21), [2, 2], 2)
    cert = certify(net, compile_maxout(net), smt=True)
    assert cert.holds and set(cert.smt.values()) == {"unsat"}
    code, failed, lines = run_check(tmp_path, cert.document, smt=True)
    assert code == 0 and any("SMT queries unsat" in line for line in lines), lines
    assert json.loads(canonical_json(cert.document))["claims"][2]["evidence"]["smt"]


def test_prove_reports_proved_failed_and_not_available(tmp_path, monkeypatch, capsys):
    (tmp_path / "C1.py").write_text("import json; print('ok'); print(json.dumps({'claim': 'C1', 'ok': True}))")
    (tmp_path / "C2.py").write_text("import sys; print('refuted'); sys.exit(1)")
    monkeypatch.setattr(prove, "PROOFS", tmp_path)
    junit = tmp_path / "report.xml"
    assert main(["prove", "C1", "C2", "C3", "--json", "--junit", str(junit)]) == 1
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [(c["claim"], c["ok"], c["status"]) for c in result["claims"]] == \
        [("C1", True, "proved"), ("C2", False, "failed"), ("C3", False, "not available")]
    report = junit.read_text()
    assert 'failures="1"' in report and 'skipped="1"' in report
    assert main(["prove", "C1"]) == 0
    assert "C1: proved" in capsys.readouterr().out
