"""``exactform verify`` (claim V1): the VNN-LIB grammar (accepted and refused forms), unsat and sat end
to end with the certificate checked and the counterexample re-evaluated, forged certificates refused,
and the verdicts against an exact enumeration of the linear regions of small random 2-D nets."""
from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from support import cli

from exactform.checker.verify_cert import check
from exactform.checker.reader import Refuted, load
from exactform.formats import InputError, Reader
from exactform.geometry.regions import cells_in_box
from exactform.importers.vnnlib import read_property
from exactform.models import MaxoutNet
from exactform.search.verify import verify

HEAD = "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n"
BOX = "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"


def random_net(seed: int, hidden: int = 6) -> dict:
    """A 2-D ReLU net (two hidden layers) with small dyadic weights, as exactform/maxout@1 JSON."""
    rng = random.Random(seed)

    def q():
        return str(Fraction(rng.randint(-20, 20), 8))

    def layer(n_in, n_out):
        return {"weight": [[[q() for _ in range(n_in)], ["0"] * n_in] for _ in range(n_out)],
                "bias": [[q(), "0"] for _ in range(n_out)]}
    return {"format": "exactform/maxout@1", "input_dim": 2, "domain": {"lower": ["-1", "-1"], "upper": ["1", "1"]},
            "layers": [layer(2, hidden), layer(hidden, hidden)],
            "readout": {"weight": [[q() for _ in range(hidden)] for _ in range(2)], "bias": [q(), q()]}}


def write(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return tmp_path / name


# --- the grammar -------------------------------------------------------------------------------------

def test_grammar_disjunctions_linear_terms_exact_decimals(tmp_path):
    text = HEAD + ("(assert (or (and (>= X_0 0.6) (<= X_0 0.679857769)) (and (>= X_0 -1e-1) (<= X_0 (- 0.01)))))\n"
                   "(assert (<= X_1 (- 0.5)))\n(assert (>= X_1 -0.75))\n"
                   "(assert (or (and (>= Y_0 Y_1) (>= Y_0 (+ Y_1 (* 2 X_0) 0.5))) (<= (- Y_1 Y_0) (* X_1 3))))\n")
    prop = read_property(str(write(tmp_path, "p.vnnlib", text)))
    assert (prop.inputs, prop.outputs, len(prop.disjuncts)) == (2, 2, 4)
    first, _, third, fourth = prop.disjuncts
    assert first.box == [(Fraction(3, 5), Fraction(679857769, 10 ** 9)), (Fraction(-3, 4), Fraction(-1, 2))]
    assert third.box[0] == (Fraction(-1, 10), Fraction(-1, 100))
    assert first.atoms[0] == ({}, {0: 1, 1: -1}, 0)                            # Y_0 − Y_1 ≥ 0
    assert first.atoms[1] == ({0: -2}, {0: 1, 1: -1}, Fraction(-1, 2))         # Y_0 − Y_1 − 2 X_0 − 1/2 ≥ 0
    assert fourth.atoms == [({1: 3}, {0: 1, 1: -1}, 0)]                         # 3 X_1 − (Y_1 − Y_0) ≥ 0


@pytest.mark.parametrize("assertion, message", [
    ("(assert (< Y_0 Y_1))", "line 9: expected (and ...), (or ...), (<= s t) or (>= s t)"),
    ("(assert (>= (* Y_0 Y_1) 0))", "line 9: not linear"),
    ("(assert (>= (/ Y_0 0) 0))", "line 9: not linear"),
    ("(assert (>= Y_2 0))", "line 9: Y_2 is not declared"),
    ("(assert (>= Y_0 0.1.2))", "line 9: '0.1.2' is not a decimal number"),
    ("(check-sat)", "line 9: only (declare-const X_i Real) and (assert ...)"),
    ("(assert (>= Y_0 0)", "line 9: unbalanced '('"),
    ("(assert (or (>= X_0 2) (>= Y_0 0)))", "X_0: empty: lower bound 2 exceeds upper bound 1"),
    ("(assert (>= X_1 2))", "X_1: empty: lower bound 2 exceeds upper bound 1"),
])
def test_grammar_refusals_name_the_line(tmp_path, assertion, message):
    path = write(tmp_path, "p.vnnlib", HEAD + BOX + assertion + "\n")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        read_property(str(path))


def test_grammar_every_disjunct_bounds_every_input(tmp_path):
    text = HEAD + "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (or (<= X_1 1) (>= Y_0 0)))\n"
    with pytest.raises(InputError, match="disjunct 1: X_1: needs both a lower and an upper bound"):
        read_property(str(write(tmp_path, "p.vnnlib", text)))


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    net = write(tmp_path, "n.json", json.dumps(random_net(0)))
    prop = write(tmp_path, "p.vnnlib", HEAD + BOX + "(assert (> Y_0 0))\n")
    r = cli("verify", net, prop)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "p.vnnlib: line 9" in r.stderr
    good = write(tmp_path, "q.vnnlib", HEAD + BOX + "(assert (>= Y_0 1000))\n")
    r = cli("verify", net, good, "--cert", good)
    assert r.returncode == 2 and "is also an input" in r.stderr
    three = write(tmp_path, "r.vnnlib", HEAD.replace("(declare-const Y_1 Real)\n", "") + BOX + "(assert (>= Y_0 0))\n")
    r = cli("verify", net, three)
    assert r.returncode == 2 and "1 outputs, the network has 2" in r.stderr


# --- end to end ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def proved(tmp_path_factory):
    """An unsat instance: the certificate written by the CLI, with its net and property files."""
    tmp = tmp_path_factory.mktemp("v1")
    net = write(tmp, "n.json", json.dumps(random_net(1)))
    prop = write(tmp, "p.vnnlib", HEAD + BOX + "(assert (>= Y_0 (+ Y_1 8)))\n")
    r = cli("verify", net, prop, "--cert", tmp / "c.json", "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["verdict"] == "unsat" and out["certificate"] == str(tmp / "c.json")
    from exactform.search.verify import check_work
    assert out["check_work"] == check_work(load(tmp / "c.json")) > 0         # the bound that checks it (below)
    return net, prop, tmp / "c.json"


def test_unsat_end_to_end_certificate_checked(proved):
    net, prop, cert = proved
    doc = load(cert)
    assert "the property holds (unsat)" in check(doc, "c", net, prop)
    assert len(json.dumps(doc["claims"][0]["evidence"]["trees"])) > 20           # a real tree with witnesses


def test_check_command_binds_net_and_property(proved, tmp_path):
    net, prop, cert = proved
    r = cli("check", cert, "--net", net, "--property", prop)
    assert r.returncode == 0 and "V1 holds" in r.stdout, r.stderr
    other = write(tmp_path, "other.vnnlib", prop.read_text().replace("8)", "9)"))
    r = cli("check", cert, "--net", net, "--property", other)
    assert r.returncode == 1 and "another property file" in r.stdout


def test_sat_end_to_end_counterexample_exact(tmp_path):
    net = write(tmp_path, "n.json", json.dumps(random_net(1)))
    prop = write(tmp_path, "p.vnnlib", HEAD + BOX + "(assert (>= Y_0 (+ Y_1 5)))\n")
    r = cli("verify", net, prop, "--counterexample", tmp_path / "ce.txt", "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["verdict"] == "sat" and out["certificate"] is None
    x = [Fraction(v) for v in out["counterexample"]["X"]]
    y = MaxoutNet.from_json(Reader(random_net(1)))(x)
    assert [Fraction(v) for v in out["counterexample"]["Y"]] == list(y)
    assert all(-1 <= v <= 1 for v in x) and y[0] >= y[1] + 5
    text = (tmp_path / "ce.txt").read_text()
    assert text.startswith("((X_0 ") and "(Y_1 " in text and text.rstrip().endswith("))")
    r = cli("verify", net, prop)
    assert r.returncode == 1 and r.stdout.splitlines()[0] == "sat"


def test_hardmax_transformer_verified_like_its_net(tmp_path):
    """The compiled Transformer of a net gets the net's verdicts: its exact maximum of Y_0 − Y_1 is the
    net's, so thresholds just below and above it are sat and unsat (certificate checked)."""
    from exactform.construct.maxout_to_transformer import compile_maxout
    from exactform.search.verify import certificate
    net = random_net(7, hidden=3)
    tf = compile_maxout(MaxoutNet.from_json(Reader(net))).to_json()
    top = _maximum(net, [(-1, 1), (-1, 1)], (Fraction(-1), Fraction(-1), Fraction(1, 2)))
    for delta, truth in ((Fraction(-1, 100), "sat"), (Fraction(1, 100), "unsat")):
        t = top + delta
        text = HEAD + BOX + f"(assert (>= (- Y_0 Y_1) (/ {t.numerator} {t.denominator})))\n(assert (<= (+ X_0 X_1) 0.5))\n"
        out = verify(tf, read_property(str(write(tmp_path, "p.vnnlib", text))), 60)
        assert out.verdict == truth
        if truth == "unsat":
            sources = {k: {"file": k, "sha256": "0" * 64} for k in ("net", "property")}
            cert = json.loads(json.dumps(certificate(tf, read_property(str(tmp_path / "p.vnnlib")), out.trees, sources)))
            assert cert["models"]["net"]["format"] == "exactform/transformer@1"
            check(cert, "c")


def test_softmax_transformer_by_its_c5_margin(tmp_path):
    """A softmax Transformer within ε = 1/100 of its net (C5): Y_0 − Y_1 moves by at most 2ε, so a
    threshold 3ε above the net's exact maximum is proved (certificate with the C5 certificate inside,
    checked and bound), one ε above is not decided (unknown, exit 3: the net violates the tightened
    property), and a certificate claiming a smaller ε is refused."""
    net = write(tmp_path, "n.json", json.dumps(random_net(7, hidden=3)))
    r = cli("softmax", net, "--eps", "1/100", "-o", tmp_path / "s.json", "--cert", tmp_path / "c5.json")
    assert r.returncode == 0, r.stderr
    top = _maximum(json.loads(net.read_text()), [(-1, 1), (-1, 1)], (Fraction(-1), Fraction(-1), Fraction(1, 2)))
    for delta, code in ((Fraction(3, 100), 0), (Fraction(1, 100), 3)):
        t = top + delta
        prop = write(tmp_path, "p.vnnlib", HEAD + BOX + f"(assert (>= (- Y_0 Y_1) (/ {t.numerator} {t.denominator})))\n"
                     "(assert (<= (+ X_0 X_1) 0.5))\n")
        r = cli("verify", tmp_path / "s.json", prop, "--c5", tmp_path / "c5.json", "--cert", tmp_path / "v.json", "--json")
        assert r.returncode == code, r.stdout + r.stderr
        assert json.loads(r.stdout)["verdict"] == ("unsat" if code == 0 else "unknown")
        if code == 0:
            assert "softmax Transformer" in check(load(tmp_path / "v.json"), "v", tmp_path / "s.json", prop)
            doc = load(tmp_path / "v.json")
            doc["claims"][0]["evidence"]["margin"]["eps"] = "1/1000"
            with pytest.raises((Refuted, ValueError)):
                check(doc, "v")
    r = cli("verify", net, prop, "--c5", tmp_path / "c5.json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_workers_give_the_serial_tree(tmp_path):
    """Cells handed to 2 worker processes are proved into the same tree as the serial search's."""
    from exactform.executor import make_executor
    net = random_net(109, hidden=8)
    top = _maximum(net, [(-1, 1), (-1, 1)], (Fraction(-1), Fraction(-1), Fraction(1, 2)))
    t = top + Fraction(1, 1000)
    prop = read_property(str(write(tmp_path, "p.vnnlib", HEAD + BOX + f"(assert (>= (- Y_0 Y_1) (/ {t.numerator} "
                                   f"{t.denominator})))\n(assert (<= (+ X_0 X_1) 0.5))\n")))
    serial = verify(net, prop, 60)
    with make_executor(2) as executor:
        parallel = verify(net, prop, 60, executor)
    assert serial.verdict == parallel.verdict == "unsat" and serial.leaves > 8          # more cells than wait: tasks ran
    assert parallel.trees == serial.trees


def test_timeout_is_exit_3_never_a_guess(tmp_path):
    net = write(tmp_path, "n.json", json.dumps(random_net(2, hidden=12)))
    prop = write(tmp_path, "p.vnnlib", HEAD + BOX + "(assert (>= Y_0 (+ Y_1 1000)))\n")
    r = cli("verify", net, prop, "--timeout", "0.001", "--json")
    assert r.returncode == 3 and json.loads(r.stdout)["verdict"] == "timeout"


# --- forged certificates --------------------------------------------------------------------------------

def _leaves(tree):
    return [tree] if "witness" in tree else [leaf for c in tree["children"] for leaf in _leaves(c)]


def _forged(cert, change):
    doc = copy.deepcopy(load(cert))
    change(doc)
    return doc


def _first_split(tree):
    return tree if "split" in tree else None


@pytest.mark.parametrize("name, change", [
    ("witness", lambda d: _leaves(d["claims"][0]["evidence"]["trees"][0])[-1]["witness"]["value"].__setitem__(
        -1, str(Fraction(_leaves(d["claims"][0]["evidence"]["trees"][0])[-1]["witness"]["value"][-1]) * 2))),
    ("weight", lambda d: d["models"]["net"]["readout"]["bias"].__setitem__(0, "3")),
    ("dropped leaf", lambda d: d["claims"][0]["evidence"]["trees"].__setitem__(
        0, d["claims"][0]["evidence"]["trees"][0]["children"][0])),
    ("property", lambda d: d["claims"][0]["evidence"]["property"]["disjuncts"][0]["atoms"][0]["value"].__setitem__(
        -1, "100")),
])
def test_forged_certificates_rejected(proved, name, change):
    net, prop, cert = proved
    doc = _forged(cert, change)
    with pytest.raises((Refuted, ValueError)):
        check(doc, name)


def test_certificate_bound_to_its_files(proved, tmp_path):
    net, prop, cert = proved
    other = write(tmp_path, "other.vnnlib", prop.read_text() + "; another file\n")
    with pytest.raises(Refuted, match="another property file"):
        check(load(cert), "c", net, other)
    with pytest.raises(Refuted, match="another net file"):
        check(load(cert), "c", prop, prop)


def test_work_bounded_before_arithmetic(proved, monkeypatch):
    """The work is compared with the run's limit (a parameter) before the arithmetic it bounds: the node
    table's first layer is charged before it is built; a malformed node is named."""
    from exactform.checker import forms
    net, prop, cert = proved
    monkeypatch.setattr(forms, "linear", None)                   # reaching arithmetic would fail differently
    with pytest.raises(ValueError, match="beyond the checker's limit"):
        check(load(cert), "c", limit=10)
    monkeypatch.undo()
    doc = load(cert)
    doc["claims"][0]["evidence"]["trees"][0] = {"split": 0, "at": "0", "children": [{"witness": []}]}
    with pytest.raises(ValueError, match=r"trees\[0\]\.children: expected a list of 2 entries"):
        check(doc, "c")


def test_split_outside_the_cell_rejected(proved):
    net, prop, cert = proved
    doc = load(cert)
    tree = doc["claims"][0]["evidence"]["trees"][0]
    assert "split" in tree
    tree["at"] = "5"
    with pytest.raises(Refuted, match="outside the cell"):
        check(doc, "c")


# --- against exact enumeration --------------------------------------------------------------------------

def _maximum(net_json: dict, box: list, extra: tuple) -> Fraction:
    """The exact max of Y_0 − Y_1 over the box cut by ``extra`` (a half-plane a x + b y + c ≥ 0): on
    every linear region (exact polygons, ``cells_in_box``) the map is affine, so its max over the
    clipped polygon is at a vertex."""
    import flint
    from exactform.models import Box
    model = MaxoutNet.from_json(Reader(net_json))
    best = None
    for piece in cells_in_box(model, Box([lo for lo, _ in box], [hi for _, hi in box]), "polygon"):
        poly = piece.cell.clip(tuple(flint.fmpq(v.numerator, v.denominator) for v in extra))
        (a0, b0, c0), (a1, b1, c1) = piece.output
        for x, y in poly.vertices:
            v = (a0 - a1) * x + (b0 - b1) * y + c0 - c1
            best = v if best is None or v > best else best
    return Fraction(int(best.p), int(best.q))


@pytest.mark.parametrize("seed", range(6))
def test_verdicts_agree_with_exact_region_enumeration(tmp_path, seed):
    """Thresholds just below and just above the exact maximum: sat, then unsat (certificate checked)."""
    from exactform.search.verify import certificate
    net = random_net(100 + seed, hidden=5)
    top = _maximum(net, [(-1, 1), (-1, 1)], (Fraction(-1), Fraction(-1), Fraction(1, 2)))
    for delta, truth in ((Fraction(-1, 16), "sat"), (Fraction(-1, 1000), "sat"), (Fraction(1, 1000), "unsat"),
                         (Fraction(1, 16), "unsat")):
        t = top + delta
        text = HEAD + BOX + f"(assert (>= (- Y_0 Y_1) (/ {t.numerator} {t.denominator})))\n(assert (<= (+ X_0 X_1) 0.5))\n"
        prop = read_property(str(write(tmp_path, "p.vnnlib", text)))
        out = verify(net, prop, 60)
        assert out.verdict == truth, (seed, delta)
        if truth == "sat":
            y = MaxoutNet.from_json(Reader(net))(out.x)
            assert y[0] - y[1] >= t and out.x[0] + out.x[1] <= Fraction(1, 2)
        else:
            sources = {k: {"file": k, "sha256": "0" * 64} for k in ("net", "property")}
            check(json.loads(json.dumps(certificate(net, prop, out.trees, sources))), "c")


def test_a_cut_moved_toward_the_open_half_is_written_and_checked(tmp_path):
    """1/50 above the exact maximum of Y_0 − Y_1 on [−1, 1]² for two 2-D nets, the root's midpoint cut closes one half only: the cut is
    moved toward the open half (``bab.bisect``: to 3/4 on seed 100, three times to −7/8 on seed 108), and the
    checker accepts the certificate with it."""
    from exactform.search.verify import certificate
    for seed, cut in ((100, "3/4"), (108, "-7/8")):
        net = random_net(seed)
        t = _maximum(net, [(-1, 1), (-1, 1)], (Fraction(0), Fraction(0), Fraction(1))) + Fraction(1, 50)
        prop = read_property(str(write(tmp_path, "p.vnnlib", HEAD + BOX + f"(assert (>= (- Y_0 Y_1) (/ {t.numerator} {t.denominator})))\n")))
        out = verify(net, prop, 60)
        assert out.verdict == "unsat" and out.trees[0]["at"] == cut
        sources = {k: {"file": k, "sha256": "0" * 64} for k in ("net", "property")}
        check(json.loads(json.dumps(certificate(net, prop, out.trees, sources))), "c")


# --- binding to the user's files: the embedded property and network are compared, not only hashed ---------

def _rebound(tmp, net, prop, forged_net, forged_prop):
    """A certificate proved for ``forged_net`` and ``forged_prop`` (files), its sources and statement then
    rewritten to name ``net`` and ``prop`` (their names and SHA-256): what an attacker can write."""
    from exactform.checker.verify_cert import sha256_file, statement
    r = cli("verify", forged_net, forged_prop, "--cert", tmp / "forged.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(tmp / "forged.json")
    claim = doc["claims"][0]
    sources = {"net": {"file": net.name, "sha256": sha256_file(net)},
               "property": {"file": prop.name, "sha256": sha256_file(prop)}}
    claim["evidence"]["sources"] = sources
    claim["statement"] = statement(sources, len(claim["evidence"]["property"]["disjuncts"]))
    (tmp / "forged.json").write_text(json.dumps(doc))
    assert check(load(tmp / "forged.json"), "forged")                 # a valid proof about what it embeds
    return tmp / "forged.json"


@pytest.mark.parametrize("name, text, what", [
    ("infeasible atom", HEAD + BOX + "(assert (>= 0 1))\n", "property"),
    ("changed box", HEAD + BOX.replace("(>= X_0 -1)", "(>= X_0 0.5)") + "(assert (>= Y_0 (+ Y_1 8)))\n", "property"),
    ("dropped disjunct", HEAD + BOX + "(assert (>= Y_0 (+ Y_1 8)))\n", "property"),
])
def test_embedded_property_must_be_the_files(tmp_path, name, text, what):
    """The forged certificate carries the SHA-256 of the user's PROP but proves another property:
    ``check --net --property`` reads PROP and refuses it (exit 1)."""
    net = write(tmp_path, "n.json", json.dumps(random_net(1)))
    prop = write(tmp_path, "p.vnnlib", HEAD + BOX + "(assert (or (>= Y_0 (+ Y_1 8)) (>= Y_0 (+ Y_1 9))))\n")
    forged = _rebound(tmp_path, net, prop, net, write(tmp_path, "forged.vnnlib", text))
    r = cli("check", forged, "--net", net, "--property", prop)
    assert r.returncode == 1 and f"the embedded {what} is not the one in {prop}" in r.stdout, r.stdout + r.stderr
    with pytest.raises(Refuted, match="embedded property is not the one"):
        check(load(forged), "forged", net, prop)


def test_embedded_network_must_be_the_json_files(tmp_path):
    net = write(tmp_path, "n.json", json.dumps(random_net(1)))
    lowered = random_net(1)
    lowered["readout"]["bias"][0] = str(Fraction(lowered["readout"]["bias"][0]) - 1)       # Y_0 lower: still unsat
    prop = write(tmp_path, "p.vnnlib", HEAD + BOX + "(assert (>= Y_0 (+ Y_1 8)))\n")
    forged = _rebound(tmp_path, net, prop, write(tmp_path, "other.json", json.dumps(lowered)), prop)
    r = cli("check", forged, "--net", net, "--property", prop)
    assert r.returncode == 1 and f"the embedded network is not the one in {net}" in r.stdout, r.stdout + r.stderr


def test_honest_certificate_bound_says_what_was_compared(proved):
    net, prop, cert = proved
    said = check(load(cert), "c")
    assert said.startswith("no input x satisfies the VNN-LIB property embedded in the certificate")
    assert said.endswith("the property holds (unsat)") and "n.json" not in said and "p.vnnlib" not in said
    r = cli("check", cert, "--net", net, "--property", prop)
    assert r.returncode == 0 and "V1 holds" in r.stdout, r.stdout + r.stderr
    assert (f"the embedded property is the one read from {json.dumps(str(prop))}; the embedded network is the one "
            f"read from {json.dumps(str(net))}") in r.stdout
    r = cli("check", cert)
    verdict = r.stdout.splitlines()
    assert r.returncode == 0 and verdict[1].startswith(f"{cert}: not bound to any file: no input x satisfies"), r.stdout
    assert "n.json" not in verdict[1] and verdict[2].startswith(f"{cert}: recorded sources (data from the certificate")


def test_imported_network_other_than_onnx_or_nnet_is_refused(proved, tmp_path):
    """A .pt network cannot be read by the standard-library checker: binding it is refused (exit 2), the
    line naming the imported JSON as the file to bind."""
    from exactform.checker.verify_cert import IMPORTED, sha256_file, statement
    from exactform.importers import SUFFIXES
    assert set(IMPORTED) == set(SUFFIXES)
    net, prop, cert = proved
    pt = tmp_path / "n.pt"
    pt.write_bytes(b"not read by the checker")
    doc = load(cert)
    claim = doc["claims"][0]
    claim["evidence"]["sources"]["net"] = {"file": "n.pt", "sha256": sha256_file(pt)}
    claim["statement"] = statement(claim["evidence"]["sources"], 1)
    (tmp_path / "c.json").write_text(json.dumps(doc))
    r = cli("check", tmp_path / "c.json", "--net", pt, "--property", prop)
    assert r.returncode == 2 and "exactform import NET -o net.json" in r.stderr, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not r.stdout, r.stdout + r.stderr


def test_checker_reader_bounds_numbers_and_names_the_line(tmp_path):
    from exactform.checker.reader import Malformed
    from exactform.checker.vnnlib import read_property as checker_read
    for bad in ("1e99999", "1" * 5000):
        path = write(tmp_path, "p.vnnlib", HEAD + BOX + f"(assert (>= Y_0 {bad}))\n")
        with pytest.raises(Malformed, match=r"p\.vnnlib: line 9: more than 4000 digits or an exponent"):
            checker_read(path)
    assert checker_read(write(tmp_path, "q.vnnlib", HEAD + BOX + "(assert (>= Y_0 1e-3))\n")).disjuncts[0].atoms[0].c \
        == Fraction(-1, 1000)


def test_checker_reader_bounds_the_expansion_before_building_it(tmp_path):
    from exactform.checker.reader import Malformed
    from exactform.checker.vnnlib import read_property as checker_read
    many = HEAD + BOX + "(assert (or (>= Y_0 0) (>= Y_1 0)))\n" * 14                    # 2^14 disjuncts
    with pytest.raises(Malformed, match=r"line 22: more than 10000 disjuncts once expanded"):
        checker_read(write(tmp_path, "p.vnnlib", many))
    deep = HEAD + BOX + "(assert " + "(and " * 5000 + "(>= Y_0 0)" + ")" * 5001 + "\n"
    with pytest.raises(Malformed, match=r"line 9: nested too deeply"):
        checker_read(write(tmp_path, "q.vnnlib", deep))


@pytest.mark.slow
def test_timeout_holds_with_workers():
    """``verify --timeout S --workers 2`` answers timeout within S plus start-up, however many cells
    wait for the workers: each task gets what is left of S, not S afresh when it starts (ACAS Xu 1_3,
    property 3, is not decided in 40 CPU s here; before, 30 s ran 117 s)."""
    import time
    root = Path(__file__).resolve().parents[1]
    start = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-m", "exactform", "verify", root / "data/acasxu/ACASXU_run2a_1_3_batch_2000.onnx",
                            root / "exactform/benchmarks/data/acasxu_vnnlib/prop_3.vnnlib", "--timeout", "4",
                            "--workers", "2", "--json"], capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        pytest.fail("verify --timeout 4 --workers 2 still ran after 150 s")
    assert r.returncode == 3 and json.loads(r.stdout)["verdict"] == "timeout", r.stderr[-300:]
    assert time.monotonic() - start < 4 + 30


@pytest.mark.slow
def test_acas_leaves_state_back_substitutions(tmp_path):
    """ACAS Xu 4_1 property 4: the leaf states back-substitutions (spec §8, ``tighten``) and checks;
    refused: a node that is not a max of two pieces, a pair's side where a V1 net has no pairs,
    five million entries (the work bound, before any sum), the entries dropped (the witness then fails)."""
    root = Path(__file__).resolve().parents[1]
    net, prop = root / "data/acasxu/ACASXU_run2a_4_1_batch_2000.onnx", root / "exactform/benchmarks/data/acasxu_vnnlib/prop_4.vnnlib"
    r = cli("verify", net, prop, "--cert", tmp_path / "c.json", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["verdict"] == "unsat", r.stderr[-300:]
    doc = load(tmp_path / "c.json")
    assert "the property holds (unsat)" in check(doc, "c", net, prop)
    leaf = next(n for n in _leaves(doc["claims"][0]["evidence"]["trees"][0]) if n.get("tighten"))
    for change, error in ((lambda e: e.__setitem__(0, 0), ValueError), (lambda e: e.__setitem__(1, 2), ValueError)):
        bad = copy.deepcopy(doc)
        change(next(n for n in _leaves(bad["claims"][0]["evidence"]["trees"][0]) if n.get("tighten"))["tighten"][0])
        with pytest.raises(error, match="expected an integer|not the second node of a pair"):
            check(bad, "c")
    many = copy.deepcopy(doc)
    next(n for n in _leaves(many["claims"][0]["evidence"]["trees"][0]) if n.get("tighten"))["tighten"] = [leaf["tighten"][0]] * (5 * 10 ** 6)
    with pytest.raises(ValueError, match="beyond the checker's limit"):
        check(many, "c")
    for n in _leaves(doc["claims"][0]["evidence"]["trees"][0]):
        n.pop("tighten", None)
    with pytest.raises(Refuted):
        check(doc, "c")


def test_a_certificate_beyond_the_default_work_bound_is_announced(proved, monkeypatch, capsys):
    """``verify --cert`` says when ``check`` needs more than its default work bound, with the option that
    checks it: the figure is the checker's own (the bound lowered to 10 here; with the figure, check passes)."""
    from exactform.checker import cost
    from exactform.cli import main
    from exactform.commands import note_work
    from exactform.search.verify import check_work
    net, prop, cert = proved
    monkeypatch.setattr(cost, "MAX_WORK", 10)        # the default bound note_work compares with
    note_work(cert, check_work(load(cert)))
    note = capsys.readouterr().err
    assert "beyond the checker's default work bound" in note and "--max-work" in note
    needed = note.rsplit("--max-work ", 1)[1].split("`")[0]
    assert main(["check", str(cert), "--max-work", needed]) == 0
    assert main(["check", str(cert), "--max-work", str(int(needed) - 1)]) == 2


def test_an_acas_xu_onnx_file_is_the_network_the_binding_reads_without_the_onnx_package(tmp_path):
    """``verify NET.onnx`` reads a ReLU graph with the checker's own ONNX reader (the network a V1 certificate
    binds to): the same Maxout net as the ``onnx`` importer, and the whole command runs where ``onnx`` cannot be
    imported (a property every input violates: sat, the counterexample evaluated exactly)."""
    from exactform.commands.verify import bound_network
    from exactform.importers import import_network
    root = Path(__file__).resolve().parents[1]
    hull = list(read_property(root / "exactform/benchmarks/data/acasxu_vnnlib/prop_1.vnnlib").disjuncts[0].box)
    for name in ("1_1", "5_9"):
        path = str(root / f"data/acasxu/ACASXU_run2a_{name}_batch_2000.onnx")
        assert bound_network(path, hull).to_json() == import_network(path, hull, domain_source=path,
                                                                      broadcast=False).to_json()
    box = "".join(f"(declare-const X_{i} Real)\n(assert (>= X_{i} -0.5))\n(assert (<= X_{i} 0.5))\n" for i in range(5))
    outputs = "".join(f"(declare-const Y_{j} Real)\n" for j in range(5))
    prop = write(tmp_path, "any.vnnlib", box + outputs + "(assert (>= Y_0 -1000000))\n")
    script = ("import sys; sys.modules['onnx'] = None; from exactform.cli import main; "
              f"sys.exit(main(['verify', {path!r}, {str(prop)!r}, '--json', '--workers', '1']))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 1 and json.loads(done.stdout)["verdict"] == "sat", done.stdout + done.stderr
    assert "onnx" not in done.stderr


def test_an_onnx_graph_beyond_the_binding_reader_is_imported_by_the_onnx_importer(tmp_path):
    """A LeakyRelu (which the checker's reader refuses) goes to the ``onnx`` importer: decided exactly."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    from exactform.commands.verify import bound_network
    nodes = [helper.make_node("MatMul", ["x", "Wt"], ["h"]), helper.make_node("LeakyRelu", ["h"], ["y"], alpha=0.5)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])],
                              [numpy_helper.from_array(np.array([[1.0], [-1.0]], dtype=np.float32), "Wt")])
    path = tmp_path / "leaky.onnx"
    onnx.save(helper.make_model(graph), str(path))
    prop = write(tmp_path, "p.vnnlib", "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
                 + BOX + "(assert (<= Y_0 -0.75))\n")
    assert bound_network(str(path), [(Fraction(-1), Fraction(1))] * 2) is None
    done = cli("verify", path, prop, "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["verdict"] == "sat", done.stdout + done.stderr
    x0, x1 = (Fraction(v) for v in doc["counterexample"]["X"])
    assert Fraction(doc["counterexample"]["Y"][0]) == (x0 - x1 if x0 >= x1 else (x0 - x1) / 2) <= Fraction(-3, 4)


def test_a_run_of_two_piece_nodes_is_bounded_at_once_as_node_by_node():
    """``Relaxation.bounds`` bounds a run of ReLU-like nodes in one vector step (``_two_piece``): on ACAS Xu
    1_2 and random sub-boxes of property 1's, with the back-substitutions and with gap signs, it gives the
    node-by-node step's bounds, gaps, stated sides and atom bound."""
    import numpy as np

    from exactform.commands.verify import network
    from exactform.search.relaxation import Relaxation
    from exactform.search.verify import Search, exact_disjuncts
    root = Path(__file__).resolve().parents[1]
    prop = read_property(root / "exactform/benchmarks/data/acasxu_vnnlib/prop_1.vnnlib")
    search = Search(network(root / "data/acasxu/ACASXU_run2a_1_2_batch_2000.onnx", prop).to_json(), exact_disjuncts(prop))
    vector, single = (Relaxation.of(search.model, *search.disjuncts[0]) for _ in range(2))
    single.two_piece_runs = [None] * len(single._depths()[0])
    assert any(run is not None for run in vector._two_piece_runs())
    rng = np.random.default_rng(3)
    lo, hi = (np.array([float(v) for v in ends]) for ends in zip(*vector.cube))
    for trial in range(40):
        a = lo + (hi - lo) * rng.random(5) * 0.9
        b = np.minimum(a + (hi - lo) * rng.random(5) * 0.3, hi)
        signs = {int(k): [trial % 2]} if (k := rng.integers(50, 300)) in vector.gaps and trial % 3 == 0 else None
        one, other = vector.bounds(a, b, tighten=True, signs=signs), single.bounds(a, b, tighten=True, signs=signs)
        assert np.allclose(one[0], other[0], rtol=1e-12, atol=1e-12) and np.allclose(one[1], other[1], rtol=1e-12, atol=1e-12)
        assert one[2].keys() == other[2].keys() and np.allclose(list(one[2].values()), list(other[2].values()), atol=1e-12)
        assert one[4] == other[4] and any(one[4].values())
        assert abs(vector.least_plan(one)[0] - single.least_plan(other)[0]) <= 1e-9


def test_a_node_every_atom_reads_from_below_states_no_tightening():
    """A last-layer ReLU that no node reads and every atom reads with a coefficient ≤ 0 enters an atom's
    bound by z − p or z − q, rows that hold whatever its gap (``Relaxation.loose``): on ACAS Xu 1_2 prop_1
    (one atom, Y_0 large) they are the last layer's nodes of read-out weight ≤ 0, no sub-box states their
    gaps, and a cell whose atom bound is negative closes exactly without them."""
    import numpy as np

    from exactform.checker.relax import LeafRows
    from exactform.commands.verify import network
    from exactform.search.bab import MARGIN
    from exactform.search.relaxation import Relaxation
    from exactform.search.verify import Search, exact_disjuncts
    root = Path(__file__).resolve().parents[1]
    prop = read_property(root / "exactform/benchmarks/data/acasxu_vnnlib/prop_1.vnnlib")
    search = Search(network(root / "data/acasxu/ACASXU_run2a_1_2_batch_2000.onnx", prop).to_json(), exact_disjuncts(prop))
    p = Relaxation.of(search.model, *search.disjuncts[0])
    read = {v for kind, data in p.F.nodes for piece in (data if kind == "max" else [f for pair in data for f in pair])
            for v, _ in piece}
    loose = p.loose()
    assert loose and all(p.d + k not in read and p.forms[0].get(p.d + k, 0) <= 0 for k in loose)
    assert {k for k in p.gaps if p.d + k not in read and p.forms[0].get(p.d + k, 0) < 0} <= loose
    rng, closed = np.random.default_rng(7), 0
    lo, hi = (np.array([float(v) for v in ends]) for ends in zip(*p.cube))
    for _ in range(12):
        a = lo + (hi - lo) * rng.random(5) * 15 / 16
        cube = [(Fraction(u), Fraction(u) + (h - l) / 16) for u, (l, h) in zip(a.tolist(), p.cube)]
        bounds = p.bounds(*(np.array([float(v) for v in ends]) for ends in zip(*cube)), tighten=True)
        assert bounds[4] and not loose & set(bounds[4])
        top, w, _ = p.least_plan(bounds)
        if top < -MARGIN:
            closed += p.witness(cube, w, LeafRows(p.F, cube, p.forms, p.pairs, bounds[4])) is not None
    assert closed


def test_a_rare_violation_is_found_by_the_attack(tmp_path):
    """ACAS Xu 1_2 prop_2 is violated on a small part of its box: none of 512 random points comes within
    0.001 of it.  The attack (4,096 points, then an ascent whose step each point halves on its own) finds a
    counterexample before any search, and it violates the property exactly."""
    root = Path(__file__).resolve().parents[1]
    net, prop = root / "data/acasxu/ACASXU_run2a_1_2_batch_2000.onnx", root / "exactform/benchmarks/data/acasxu_vnnlib/prop_2.vnnlib"
    r = cli("verify", net, prop, "--json", "--counterexample", tmp_path / "ce.txt")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["verdict"] == "sat" and out["leaves"] == 0, r.stderr[-300:]
    x = [Fraction(v) for v in out["counterexample"]["X"]]
    from exactform.commands.verify import network
    y = network(net, read_property(prop))(x)
    assert all(y[0] >= y[j] for j in range(1, 5)) and [Fraction(v) for v in out["counterexample"]["Y"]] == list(y)


def test_runs_beyond_the_dense_limit_are_bounded_and_evaluated_alike(monkeypatch):
    """A run whose dense rows would exceed ``DENSE`` entries is bounded and evaluated with sparse rows: on a ReLU net alone (runs of two-piece nodes) and beside another (paired nodes), on random
    sub-boxes, the same bounds, gaps, stated sides, pairs' h and values as with dense rows."""
    import numpy as np

    import exactform.search.relaxation as search
    from exactform.checker.forms import Forms, outputs, read_model
    from exactform.checker.relax import pairs
    nets = [MaxoutNet.from_json(Reader(random_net(seed, hidden=5))) for seed in (4, 5)]
    box = [(Fraction(-1), Fraction(1))] * 2
    rng, default = np.random.default_rng(5), search.DENSE
    for count in (1, 2):
        F = Forms(box)
        for net in nets[:count]:
            outputs(F, read_model(net.to_json(), "net"))
        tables = []
        for limit in (default, 0):
            monkeypatch.setattr(search, "DENSE", limit)
            tables.append(search.Relaxation(F, box, [], pairs(F, len(F.calls) // 2) if count == 2 else []))
            tables[-1]._run_forms()                                     # built under this limit
        dense, sparse = tables
        assert bool(dense.pairs) == (count == 2) and any(dense._two_piece_runs())
        assert all(not isinstance(r[0], slice) for r in dense._run_forms())
        assert all(isinstance(r[0], slice) for r in sparse._run_forms())
        X = rng.uniform(-1, 1, (64, 2))
        assert np.allclose(dense.values(X), sparse.values(X), atol=1e-12)
        for _ in range(20):
            a = rng.uniform(-1, 0.8, 2)
            b = np.minimum(a + rng.uniform(0.05, 1, 2), 1)
            one, other = dense.bounds(a, b, tighten=True), sparse.bounds(a, b, tighten=True)
            assert np.allclose(one[0], other[0], atol=1e-12) and np.allclose(one[1], other[1], atol=1e-12)
            assert one[2].keys() == other[2].keys() and one[4] == other[4] and one[5].keys() == other[5].keys()
            assert np.allclose(list(one[2].values()), list(other[2].values()), atol=1e-12)
