"""The certificate checker (C8): fresh certificates pass; every forged, dropped,
tampered or hostile one fails loudly (exit 1 naming the claim, or exit 2 with one line), and the
checker is closed (standard library only) and small."""
import copy
import json
import os
import random
import re
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

import exactform
from exactform.checker import reader
from exactform.checker import construction as checker
from exactform.cli import main
from exactform.formats import canonical_json, write_json
from exactform.models import MaxoutLayer, MaxoutNet
from exactform.proofs.nets import relu_net
from support import BLOCKER, NETS, good, maxout, q, softmax_certificate

ROOT = Path(__file__).resolve().parents[1]


def dense(v):
    """A model vector as a dense list (writers use the sparse encoding for mostly-zero rows)."""
    if isinstance(v, dict):
        out = ["0"] * v["length"]
        for i, x in zip(v["index"], v["value"]):
            out[i] = x
        return out
    return v


def densified(rows):
    rows[:] = [dense(r) for r in rows]
    return rows


def verdict(doc, **kw) -> checker.Result:
    return checker.verify(copy.deepcopy(doc), "cert.json: ", **kw)


def failed(result) -> set:
    return {c for c, holds, _ in result.claims if not holds}


def cli(tmp_path, doc, *args, name="cert.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return main(["check", str(path), *args])


@pytest.mark.parametrize("name", NETS)
def test_fresh_certificates_pass(name):
    r = verdict(good(NETS[name]())[2])
    assert r.code == 0 and [c for c, _, _ in r.claims] == ["C1", "C2", "C3", "C4"], r
    assert r.known.startswith("Tf(x) = M(x) for every x in ") and r.known.endswith("(C1-C4)")


def test_duplicate_pieces_point_domain_and_rank1_certify_and_check():
    """Finding 7 and completeness: max(x+y, x+y, 0), a rank-1 unit, a point domain."""
    dup = maxout([[[([1, 1], 0), ([1, 1], 0), ([0, 0], 0)], [([1, -1], 0)]]], [([1, 1], 0)], [-1, -1], [1, 1])
    point = maxout([[[([2], 1), ([-1], 0)]]], [([1], 0)], [Fraction(1, 3)], [Fraction(1, 3)])
    for net in (dup, point):
        assert verdict(good(net)[2]).code == 0


def test_forged_statement_fails_naming_the_claim():
    doc = good(NETS["ragged"]())[2]
    for i, claim in enumerate(("C1", "C2", "C3", "C4")):
        forged = copy.deepcopy(doc)
        forged["claims"][i]["statement"] += " and more"
        assert failed(verdict(forged)) == {claim}


def test_dropped_and_unknown_claims_fail():
    """Finding 3: a certificate keeping only C4, for a Transformer computing M(x) + 1000."""
    net, tf, doc = good(NETS["relu-3-outputs"]())
    doc["transformer"]["readout"]["bias"] = dense(doc["transformer"]["readout"]["bias"])
    doc["transformer"]["readout"]["bias"][0] = "1000"
    assert verdict(doc).code == 1 and "C3" in failed(verdict(doc))
    doc["claims"] = [c for c in doc["claims"] if c["id"] == "C4"]
    r = verdict(doc)
    assert r.code == 1 and failed(r) == {"C1", "C2", "C3"} and "missing" in r.claims[0][2]
    doc["claims"].append({"id": "C9", "statement": "anything"})
    assert "C9" in failed(verdict(doc))


def test_mutated_weights_and_hints_fail():
    net, tf, doc = good(NETS["ragged"]())
    cases = []
    d = copy.deepcopy(doc)                                  # a Maxout weight changed: Tf no longer computes M
    densified(d["maxout"]["layers"][0]["weight"][0])
    d["maxout"]["layers"][0]["weight"][0][0][0] = q(Fraction(d["maxout"]["layers"][0]["weight"][0][0][0]) + Fraction(1, 3))
    cases.append(d)
    d = copy.deepcopy(doc)                                  # a shift R made too small: phases no longer hold
    w1 = densified(d["transformer"]["blocks"][0]["w1"])
    row = next(r for r in w1 if any(Fraction(x) < 0 for x in r[1:1 + tf.tokens]))
    c = next(c for c in range(1, 1 + tf.tokens) if Fraction(row[c]) < 0)
    row[c] = "-1/1024"
    cases.append(d)
    d = copy.deepcopy(doc)                                  # an identity pair hint turned into "on"
    phases = d["hints"]["phases"][0][0]
    phases[next(u for u, p in enumerate(phases) if p >= 0)] = -2
    cases.append(d)
    d = copy.deepcopy(doc)                                  # a head told it sees another piece
    d["hints"]["pieces"][0][0][0] = (d["hints"]["pieces"][0][0][0] + 1) % len(net.layers[0].weight[0])
    cases.append(d)
    for d in cases:
        r = verdict(d)
        assert r.code == 1 and "C3" in failed(r), r


def test_c1_checks_each_head_instance():
    """Finding 4: C1 is the instance check of each head (no condition that cannot fail)."""
    net, tf, doc = good(NETS["relu-3-outputs"]())
    d = copy.deepcopy(doc)
    head = d["transformer"]["blocks"][1]["heads"][0]
    head["key"] = [[q(-Fraction(x)) for x in dense(r)] for r in head["key"]]      # score = −value: returns the min
    assert "C1" in failed(verdict(d))
    d = copy.deepcopy(doc)
    head = d["transformer"]["blocks"][1]["heads"][0]
    densified(head["key"]), densified(head["query"])
    z = next(c for c, x in enumerate(head["key"][0]) if x != "0")
    head["query"][0][z] = "1"                                  # the query reads z: not constant
    assert "C1" in failed(verdict(d))


def test_c5_statement_is_the_checkers():
    """Finding 2: λ = 1 with the statement of λ = 694 fails; the checker states λ = 1 and its bound."""
    net = maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1])          # |x|
    doc = softmax_certificate(net)
    assert verdict(doc).code == 0
    forged = copy.deepcopy(doc)
    forged["transformer"]["attention"] = {"softmax": "1"}
    forged["claims"][0]["eps"] = "1000"
    r = verdict(forged)
    assert r.code == 1 and failed(r) == {"C5"} and "lambda = 1:" in r.claims[0][2]
    forged["claims"][0]["statement"] = r.claims[0][2].split("which is: ")[1]
    r = verdict(forged)                                                    # true: the error ≤ ln 2 ≤ 1000
    assert r.code == 0 and "lambda = 1" in r.known and "1000" in r.known
    forged["claims"][0]["eps"] = "1/1000"                                  # λ = 1 cannot give 1/1000
    assert failed(verdict(forged)) == {"C5"}


def test_ln_bound_is_checked_and_bounded():
    net = maxout([[[([1], 0), ([-1], 0), ([0], 0)]]], [([1], 0)], [-1], [1])
    doc = softmax_certificate(net)
    low = copy.deepcopy(doc)
    low["hints"]["ln_tokens_upper"] = "1"                                  # 1 < ln 3
    assert failed(verdict(low)) == {"C5"}
    huge = copy.deepcopy(doc)
    huge["hints"]["ln_tokens_upper"] = "1/1" + "0" * 3999                  # finding 8: took 28 minutes
    start = time.perf_counter()
    with pytest.raises(reader.Malformed, match="ln_tokens_upper"):
        verdict(huge)
    assert time.perf_counter() - start < 60


def test_binding_to_the_users_files(tmp_path):
    net, tf, doc = good(NETS["ragged"]())
    write_json(tmp_path / "net.json", net.to_json())
    write_json(tmp_path / "tf.json", tf.to_json())
    other = NETS["rank1"]()
    write_json(tmp_path / "other.json", other.to_json())
    assert cli(tmp_path, doc, "--maxout", str(tmp_path / "net.json"), "--transformer", str(tmp_path / "tf.json")) == 0
    assert cli(tmp_path, doc, "--maxout", str(tmp_path / "other.json"), "--transformer", str(tmp_path / "tf.json")) == 1
    assert cli(tmp_path, doc, "--maxout", str(tmp_path / "net.json")) == 2          # half a binding is refused


def test_smt_text_in_a_certificate_is_never_executed(tmp_path, capsys):
    """Finding 1: the checker derives its queries; SMT text in a certificate is refused, not run."""
    target = tmp_path / "owned.pth"
    doc = good(NETS["rank1"]())[2]
    doc["smt"] = [{"name": "x", "smtlib": f'(set-option :regular-output-channel "{target}")(echo "import os")'}]
    assert cli(tmp_path, doc, "--smt") == 2 and not target.exists()
    assert "unknown field 'smt'" in capsys.readouterr().err
    doc.pop("smt")
    assert cli(tmp_path, doc, "--smt") == 0 and not target.exists()
    assert "Z3 queries derived from the models are unsat" in capsys.readouterr().out + "".join(
        w for _, _, w in verdict(doc, smt=True).claims)


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["transformer"]["embed"]["bias"].append(d["transformer"]["embed"]["bias"][0]), "embed.bias"),
    (lambda d: d["maxout"]["readout"]["bias"].__setitem__(0, "7" * 4300), "readout.bias[0]"),
    (lambda d: d["maxout"]["readout"]["bias"].__setitem__(0, 0.5), "float literal"),
    (lambda d: d["hints"]["phases"][0].pop(), "hints.phases[0]"),
    (lambda d: d["hints"]["pieces"][0][0].__setitem__(0, 99), "hints.pieces[0][0][0]"),
    (lambda d: d["transformer"].__setitem__("tokens", 10 ** 9), "tokens"),
    (lambda d: d.__setitem__("format", "exactform/certificate@1"), "format"),
])
def test_hostile_certificates_exit_2_with_one_line(tmp_path, capsys, edit, field):
    """Finding 8: an extra token, a 4300-digit number, … : one line, exit 2, no traceback."""
    doc = good(NETS["rank1"]())[2]
    edit(doc)
    assert cli(tmp_path, doc) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and field in err and "cert.json" in err, err


def test_not_a_regular_file_does_not_hang(tmp_path, capsys):
    fifo = tmp_path / "x.cert.json"
    os.mkfifo(fifo)
    assert main(["check", str(fifo)]) == 2 and "not a regular file" in capsys.readouterr().err


def test_gzip_certificates_are_written_reproducibly_and_read_within_the_limit(tmp_path, capsys, monkeypatch):
    """``*.json.gz``: written by the certifier with no time or name in the header (byte-identical
    twice), checked like the JSON; a truncated or non-gzip file is one line, exit 2; the limit is
    on the decompressed bytes (a small bomb against a lowered limit)."""
    import gzip
    doc = good(NETS["ragged"]())[2]
    for k in (1, 2):
        write_json(tmp_path / f"{k}.cert.json.gz", doc)
    data = (tmp_path / "1.cert.json.gz").read_bytes()
    assert data == (tmp_path / "2.cert.json.gz").read_bytes() and gzip.decompress(data) == canonical_json(doc).encode()
    assert main(["check", str(tmp_path / "1.cert.json.gz")]) == 0
    assert main(["check", str(tmp_path)]) == 0 and "8 of 8 claims hold in 2 of 2" in capsys.readouterr().out
    (tmp_path / "t.json.gz").write_bytes(data[: len(data) // 2])
    (tmp_path / "n.json.gz").write_bytes(b"{}")
    for bad in ("t.json.gz", "n.json.gz"):
        assert main(["check", str(tmp_path / bad)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and bad in err, err
    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(b" " * 10**6 + b"{}"))
    monkeypatch.setattr(reader, "MAX_BYTES", 10**5)
    assert main(["check", str(tmp_path / "bomb.json.gz")]) == 2 and "larger than" in capsys.readouterr().err


def test_folder_tally_and_last_line(tmp_path, capsys):
    for name in ("ragged", "rank1"):
        write_json(tmp_path / f"{name}.cert.json", good(NETS[name]())[2])
    assert main(["check", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "8 of 8 claims hold in 2 of 2 certificates"


def loaded(tmp_path, *args) -> tuple[int, list]:
    """The lines and files ``exactform check ARGS`` loads of exactform, heavy libraries unimportable."""
    done = subprocess.run([sys.executable, "-c", BLOCKER, "check", *map(str, args)], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split("LINES ")[1].split()[0]), done.stdout.split("LINES ")[1].split()[1:]


def test_check_runs_without_heavy_libraries_and_loads_the_lines_trust_md_states(tmp_path):
    """The checker is closed (standard library only) in every mode; every file it loads is named in
    TRUST.md, and the lines it loads (blank lines included) are the figure TRUST.md states for the mode:
    reported, not capped."""
    path = tmp_path / "a.cert.json"
    write_json(path, good(NETS["ragged"]())[2])
    soft = tmp_path / "b.cert.json"
    write_json(soft, softmax_certificate(maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1])))
    from exactform.search.equiv import certificate as e1, compare
    A = maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1])
    box = list(zip(A.domain.lower, A.domain.upper))
    write_json(tmp_path / "e.cert.json", e1(A.to_json(), A.to_json(), box, None, compare(A.to_json(), A.to_json(), box, None).tree))
    net = relu_net(random.Random(1), [2, 5, 5], outputs=1)            # relaxed leaves load checker/relax.py
    r = lambda v: [r(x) for x in v] if isinstance(v, list) else Fraction(round(v * 8), 8)  # noqa: E731
    copy8 = MaxoutNet(net.domain, [MaxoutLayer(r(l.weight), r(l.bias)) for l in net.layers], r(net.readout_weight),
                      r(net.readout_bias))
    box = list(zip(net.domain.lower, net.domain.upper))
    eps = 2 * compare(net.to_json(), copy8.to_json(), box, None, max_diff=True).maximum
    tree = compare(net.to_json(), copy8.to_json(), box, eps).tree
    assert "relaxed" in json.dumps(tree)
    write_json(tmp_path / "r.cert.json", e1(net.to_json(), copy8.to_json(), box, eps, tree))
    prop = tmp_path / "below.vnnlib"
    prop.write_text("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 -1))\n(assert (<= X_0 1))\n"
                    "(assert (<= Y_0 -0.1))\n")
    v1 = exactform.verify(ROOT / "examples" / "abs.json", prop)
    write_json(tmp_path / "v.cert.json", v1.certificate)
    trust = (ROOT / "TRUST.md").read_text()
    stated = {mode: int(lines) for mode, lines in re.findall(r"^\| ([^|]+?) \| (\d+) \|", trust, re.M)}
    for mode, args in (("C1–C5 (`check CERT`)", (path, soft)), ("`--junit FILE`", (path, soft, "--junit", tmp_path / "r.xml")),
                       ("E1 (`check E1CERT`)", (tmp_path / "e.cert.json",)),
                       ("E1 with relaxed leaves (`equiv --tolerance`)", (tmp_path / "r.cert.json",)),
                       ("V1 (`check V1CERT [--net NET --property PROP]`)", (tmp_path / "v.cert.json",))):
        lines, files = loaded(tmp_path, *args)
        assert stated.get(mode) == lines, (mode, stated.get(mode), lines, files)
        assert all(str(Path(f).relative_to(ROOT / "exactform")) in trust for f in files), files


def test_spec_is_in_the_repository():
    """Finding 6: the specification lives in docs/spec.md and nothing cites the old design file."""
    spec = (ROOT / "docs" / "spec.md").read_text()
    for section in ("exactform/maxout@1", "exactform/transformer@1", "exactform/certificate@2", "C1", "C5", "C8",
                    "hints", "The checker"):
        assert section in spec
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    citing = [f for f in tracked if f.endswith((".py", ".md", ".sh", ".yml")) and "DESIGN" + " §" in (ROOT / f).read_text()]
    assert not citing, citing


def test_mutation_fuzz_never_crashes_the_checker():
    """Random mutations of real certificates (values replaced by hostile ones, entries deleted or
    duplicated): every outcome is a verdict or a Malformed error, never another exception."""
    rng = random.Random(7)
    bases = [good(NETS["ragged"]())[2], softmax_certificate(maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1]))]
    hostile = [None, True, 0, -1, 10 ** 6, "x", "0", "1/0", "-0", "1/2", [], {}, [[]], ["1"], "9" * 50,
               {"length": 3, "index": [0], "value": ["1"]}]

    def paths(o, p=()):
        yield p
        for k, v in (o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()):
            yield from paths(v, p + (k,))
    for _ in range(600):
        doc = copy.deepcopy(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            *head, last = rng.choice(list(paths(doc))[1:])
            parent = doc
            for k in head:
                parent = parent[k]
            if rng.random() < 0.7:
                parent[last] = copy.deepcopy(rng.choice(hostile))
            elif isinstance(parent, dict):
                del parent[last]
            else:
                parent.append(copy.deepcopy(parent[last]))
        try:
            assert checker.verify(doc, "fuzz.json: ").code in (0, 1)
        except reader.Malformed as e:
            assert str(e).startswith("fuzz.json") or "fuzz" in str(e)


def test_hints_the_checker_cannot_read_are_a_failed_claim_not_a_traceback():
    """Certify of a net with a Transformer of another shape: every claim is NOT PROVED with the checker's
    reason, never the checker's Malformed raised out of provers.write.document."""
    from exactform.provers.write import document
    net, tf, _ = good(NETS["ragged"]())
    doc, derived = document("equality", net.to_json(), tf.to_json(), {"phases": [], "pieces": []}, {})
    assert all(not holds for holds, _ in derived.values())
    assert all(c["statement"].startswith("NOT PROVED: the checker cannot follow the Transformer") for c in doc["claims"])
