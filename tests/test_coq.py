"""The Coq theorems (proofs/coq/, issue 25): every file checks, each main theorem rests only on the
axioms of Coq's classical reals, a proof resting on ``Admitted`` is refused, and the Coq
construction, computed over Q, is entry by entry the Transformer ``exactform compile`` writes for
the proof nets — so the theorems are about the Transformer the tool builds.

Without ``coqc`` these tests fail under CI (CI=true: CI installs Coq with ``make proofs-coq``) and
are skipped, with the reason, elsewhere."""
import os
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from _common import nets
from exactform.api import load, save
from exactform.cli import main
from exactform.construct.maxout_to_transformer import shift_constants
from exactform.models import Attention, MaxoutLayer, MaxoutNet

import coq_theorems  # proofs/coq_theorems.py (tests/conftest.py puts proofs/ on the path)


@pytest.fixture(scope="module", autouse=True)
def coqc():
    """Every test here needs coqc: under CI its absence fails the test, elsewhere it skips it (with the reason)."""
    if coq_theorems.coqc() is None:
        reason = "coqc is absent: `make proofs-coq` installs Coq (apt-get install coq)"
        if os.environ.get("CI"):
            pytest.fail(f"CI: {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """proofs/coq/ checked by coqc in a fresh folder, with every main theorem's axioms."""
    build = tmp_path_factory.mktemp("coq")
    coq_theorems.build(coq_theorems.SOURCE, build)
    return build, coq_theorems.assumptions(build)


def test_every_main_theorem_rests_only_on_the_axioms_of_the_classical_reals(library):
    _, axioms = library
    names = [n for _, ns in coq_theorems.THEOREMS.values() for n in ns]
    assert sorted(axioms) == sorted(names) and len(names) == 11
    for name, used in axioms.items():
        assert set(used) <= coq_theorems.ALLOWED_AXIOMS, (name, used)
    assert set(axioms["C5_lemma_a"]) == coq_theorems.ALLOWED_AXIOMS      # the parser reads real names


def test_a_proof_resting_on_admitted_is_refused(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("Defs.v", "Sums.v"):
        shutil.copy(coq_theorems.SOURCE / name, source / name)
    text = (coq_theorems.SOURCE / "C1.v").read_text()
    (source / "C1.v").write_text(text.replace("Lemma hardmax_average", "Lemma hardmax_average_cheat : False.\n"
                                              "Proof. Admitted.\nLemma hardmax_average"))
    (source / "_CoqProject").write_text("-Q . Exactform\nDefs.v\nSums.v\nC1.v\n")
    with pytest.raises(coq_theorems.CoqError, match="Admitted"):
        coq_theorems.check(source, {"C1": coq_theorems.THEOREMS["C1"]})
    # the text scan aside, Print Assumptions itself names the admitted lemma the theorem uses
    build = tmp_path / "build"
    build.mkdir()
    for name in ("Defs.v", "Sums.v"):
        shutil.copy(coq_theorems.SOURCE / name, build / name)
    cheat = text.replace("intros. apply hardmax_average; auto. intros. apply argmax_affine; auto.",
                         "intros. exfalso. apply hardmax_average_cheat.")
    (build / "C1.v").write_text(cheat.replace("Lemma hardmax_average", "Lemma hardmax_average_cheat : False.\n"
                                              "Proof. Admitted.\nLemma hardmax_average", 1))
    for name in ("Defs.v", "Sums.v", "C1.v"):
        subprocess.run(["coqc", "-Q", ".", "Exactform", name], cwd=build, check=True, capture_output=True)
    used = coq_theorems.assumptions(build, {"C1": coq_theorems.THEOREMS["C1"]})["C1_hardmax_returns_max"]
    assert any(a.endswith("hardmax_average_cheat") for a in used), used
    assert not set(used) <= coq_theorems.ALLOWED_AXIOMS


# --- the construction computed by Coq against `exactform compile` ---------------------------------

def coq_q(x: Fraction) -> str:
    return f"(Qmake ({x.numerator})%Z {x.denominator}%positive)"


def coq_list(items) -> str:
    return "[" + "; ".join(items) + "]"


def coq_net(net, shifts) -> tuple[str, str]:
    """The net as ``mk_maxout`` and its shift constants as ``mk_shifts`` (Link.v)."""
    layers = [f"mk_layer {coq_list(coq_list(coq_list(map(coq_q, w)) for w in ws) for ws in layer.weight)} "
              f"{coq_list(coq_list(map(coq_q, bs)) for bs in layer.bias)}" for layer in net.layers]
    readout = coq_list(coq_list(map(coq_q, row)) for row in net.readout_weight)
    maxout = f"mk_maxout {net.input_dim} {coq_list(layers)} {readout} {coq_list(map(coq_q, net.readout_bias))}"
    return maxout, f"mk_shifts {coq_list(coq_list(coq_list(map(coq_q, r)) for r in layer) for layer in shifts)}"


def rows(m, n: int, ncols: int) -> list[Fraction]:
    """A matrix of sparse rows, dense, row by row."""
    return [Fraction(m[r].get(c, 0)) for r in range(n) for c in range(ncols)]


def flat(tf) -> list[Fraction]:
    """The Transformer in Link.v's ``flat_tf`` order: sizes, then every entry of every matrix."""
    w, d, T = tf.width, tf.input_dim, tf.tokens
    out = [T, w, d, len(tf.readout_bias), tf.readout_token, len(tf.blocks)]
    out += rows(tf.embed_weight, w, d) + [x for col in tf.embed_bias for x in col]
    for b in tf.blocks:
        if isinstance(b, Attention):
            out += [1, len(b.heads)]
            for h in b.heads:
                q, v = len(h.query), len(h.value)
                out += [q, v] + rows(h.query, q, w) + rows(h.key, q, w) + rows(h.value, v, w) + rows(h.output, w, v)
        else:
            out += [0, b.hidden] + rows(b.w1, b.hidden, w) + list(b.b1) + rows(b.w2, w, b.hidden) + list(b.b2)
    out += rows(tf.readout_weight, len(tf.readout_bias), w) + list(tf.readout_bias)
    return [Fraction(x) for x in out]


def coq_transformers(build: Path, pairs: list[tuple[str, str]]) -> list[list[Fraction]]:
    """``flat_tf (construct net shifts)`` computed by Coq (vm_compute over Q) for each pair."""
    script = "From Coq Require Import QArith ZArith List.\nFrom Exactform Require Import Defs Link.\n" \
             "Import ListNotations.\nOpen Scope Q_scope.\n"
    script += "".join(f"Eval vm_compute in as_pairs (flat_tf (construct ({m}) ({s}))).\n" for m, s in pairs)
    (build / "Compare.v").write_text(script)
    done = subprocess.run(["coqc", "-Q", ".", "Exactform", "Compare.v"], cwd=build, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = re.findall(r"=\s*\[(.*?)\]\s*:\s*list", done.stdout, re.S)
    assert len(results) == len(pairs), done.stdout[-2000:]
    out = []
    for text in results:
        ints = [int(k) for k in re.findall(r"\(?(-?\d+)\)?%Z", text)]
        out.append([Fraction(n, d) for n, d in zip(ints[::2], ints[1::2])])
    return out


def compiled(net, tmp_path: Path, stem: str):
    """The Transformer written by ``exactform compile`` for ``net``."""
    source, target = tmp_path / f"{stem}.json", tmp_path / f"{stem}.tf.json"
    save(net, source)
    assert main(["compile", str(source), "-o", str(target)]) == 0
    return load(target)


def test_the_coq_construction_is_the_transformer_exactform_compiles(library, tmp_path):
    build, _ = library
    proof_nets = list(nets().items())
    assert len(proof_nets) >= 6
    pairs, expected = [], []
    for k, (name, net) in enumerate(proof_nets):
        pairs.append(coq_net(net, shift_constants(net)))
        expected.append(flat(compiled(net, tmp_path, f"net{k}")))
    # a false input: one piece's bias changed in what Coq builds must show as a difference
    net = proof_nets[0][1]
    bias = [list(b) for b in net.layers[0].bias]
    bias[0][0] += 1
    wrong = MaxoutNet(net.domain, [MaxoutLayer(net.layers[0].weight, bias)] + list(net.layers[1:]),
                      net.readout_weight, net.readout_bias)
    pairs.append((coq_net(wrong, shift_constants(net))[0], pairs[0][1]))
    got = coq_transformers(build, pairs)
    for (name, _), mine, theirs in zip(proof_nets, got, expected):
        assert len(mine) == len(theirs), name
        diff = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), None)
        assert diff is None, f"{name}: entry {diff}: Coq {mine[diff]}, exactform compile {theirs[diff]}"
    assert got[-1] != expected[0]
