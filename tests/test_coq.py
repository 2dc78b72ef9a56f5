"""The Coq theorems (proofs/coq/): every file checks, each main theorem rests only on the axioms
of Coq's classical reals, a proof resting on ``Admitted`` is refused, and the link with the tool:
for each proof net Coq proves, with the hypothesis on the shift constants decided by its own
interval arithmetic (``C3_checked``, ``vm_compute``), that its construction with the constants and
domain ``exactform compile`` wrote computes the net on that domain, and that construction, computed
over Q, is entry by entry the compiled Transformer — so the theorems are about the Transformer the
tool builds, and constants below their bounds make Coq refuse. Likewise under softmax: for the λ
``exactform softmax`` picks, Coq proves the Transformer within ε of the net on the whole domain
(``C5_checked``, margins and bound decided by ``vm_compute``), and refuses at half that λ.

Without ``coqc`` these tests fail under CI (CI=true: CI installs Coq with ``make proofs-coq``) and
are skipped, with the reason, elsewhere."""
import math
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactform.api import load, save
from exactform.cli import main
from exactform.construct.maxout_to_transformer import shift_constants
from exactform.models import Attention, MaxoutLayer, MaxoutNet
from exactform.proofs import coq_theorems

# proofs/_common.py imports its neighbour as ``from nets import ...`` (it runs as a script too), so it is
# not importable as exactform.proofs._common: proofs/ goes on the path for this one import.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "exactform" / "proofs"))
from _common import nets  # noqa: E402

pytestmark = pytest.mark.slow            # every test here runs coqc


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
    names = coq_theorems.theorem_names()
    assert sorted(axioms) == sorted(names) and len(names) == 25
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


def compiled_shifts(net, tf) -> list[list[list[Fraction]]]:
    """The shift constants written in ``tf``: ``R_lij`` is minus the weight of shift coordinate
    ``c_j`` (1 + j) in hidden unit ``2(iT + j)`` of the pieces block of layer l (block 3l)."""
    T = tf.tokens
    return [[[-Fraction(tf.blocks[3 * l].w1[2 * (i * T + j)].get(1 + j, 0)) for j in range(T)]
             for i in range(layer.units)] for l, layer in enumerate(net.layers)]


def coq_definitions(k: int, net, shifts, box) -> str:
    """``net{k}``, ``shifts{k}`` and ``box{k}`` as Coq definitions over Q."""
    m, r = coq_net(net, shifts)
    lower, upper = (coq_list(map(coq_q, side)) for side in (box.lower, box.upper))
    return f"Definition net{k} := {m}.\nDefinition shifts{k} := {r}.\nDefinition box{k} := mk_box {lower} {upper}.\n"


def link_script(cases) -> str:
    """For each (net, shifts, box): the theorem that ``construct net shifts`` computes the net on the
    box, proved by ``C3_checked`` with its hypotheses decided by ``vm_compute`` (so coqc refuses
    the file when a constant is below its piece's bound), then the flattened construction."""
    script = "From Coq Require Import Reals QArith ZArith List.\nFrom Exactform Require Import Defs C3 Bounds Link.\n" \
             "Import ListNotations.\nOpen Scope Q_scope.\n"
    for k, (net, shifts, box) in enumerate(cases):
        script += (coq_definitions(k, net, shifts, box) +
                   f"Theorem net{k}_exact : forall x, in_box (input_dim net{k}) box{k} x ->\n"
                   f"  forall o, tf_eval hardmax (construct net{k} shifts{k}) x o = maxout_eval net{k} x o.\n"
                   f"Proof. apply C3_checked; vm_compute; reflexivity. Qed.\n"
                   f"Eval vm_compute in as_pairs (flat_tf (construct net{k} shifts{k})).\n")
    return script


def run_link(build: Path, cases, name: str = "Compare") -> subprocess.CompletedProcess:
    (build / f"{name}.v").write_text(link_script(cases))
    return subprocess.run(["coqc", "-Q", ".", "Exactform", f"{name}.v"], cwd=build, capture_output=True,
                          text=True, timeout=300)


def coq_transformers(build: Path, cases) -> list[list[Fraction]]:
    """``flat_tf (construct net shifts)`` computed by Coq (vm_compute over Q) for each case, after
    Coq has proved that the construction computes the net on the case's box."""
    done = run_link(build, cases)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = re.findall(r"=\s*\[(.*?)\]\s*:\s*list", done.stdout, re.S)
    assert len(results) == len(cases), done.stdout[-2000:]
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


def link_cases(tmp_path: Path):
    """Per proof net: the net, the shift constants and the domain of the Transformer that
    ``exactform compile`` writes, and that Transformer flattened."""
    names, cases, expected = [], [], []
    for k, (name, net) in enumerate(nets().items()):
        names.append(name)
        tf = compiled(net, tmp_path, f"net{k}")
        assert tf.attention == "hardmax" and tf.domain == net.domain and tf.readout_token == 0, name
        cases.append((net, compiled_shifts(net, tf), tf.domain))
        expected.append(flat(tf))
    return names, cases, expected


def test_the_coq_construction_is_the_transformer_exactform_compiles(library, tmp_path):
    build, _ = library
    names, cases, expected = link_cases(tmp_path)
    assert len(cases) >= 6
    # a false input: one piece's bias changed in what Coq builds must show as a difference
    net = cases[0][0]
    bias = [list(b) for b in net.layers[0].bias]
    bias[0][0] += 1
    wrong = MaxoutNet(net.domain, [MaxoutLayer(net.layers[0].weight, bias)] + list(net.layers[1:]),
                      net.readout_weight, net.readout_bias)
    got = coq_transformers(build, cases + [(wrong, cases[0][1], cases[0][2])])
    for name, mine, theirs in zip(names, got, expected):
        assert len(mine) == len(theirs), name
        diff = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), None)
        assert diff is None, f"{name}: entry {diff}: Coq {mine[diff]}, exactform compile {theirs[diff]}"
    assert got[-1] != expected[0]


REFUSED = "Unable to unify \"true\" with \"false\""


def test_shift_constants_below_the_bound_fail_in_coq(library, tmp_path, monkeypatch):
    """The hypothesis is decided in Coq: compiled with margin 1/8 instead of 2, every net's
    constants fall below their pieces' bounds and Coq refuses the theorem."""
    build, _ = library
    import exactform.commands.compile as compile_command
    monkeypatch.setattr(compile_command, "shift_constants", lambda net: shift_constants(net, Fraction(1, 8)))
    _, cases, _ = link_cases(tmp_path)
    for k in (0, len(cases) - 1):
        done = run_link(build, [cases[k]], f"Margin{k}")
        assert done.returncode != 0 and REFUSED in done.stderr, done.stdout[-1000:] + done.stderr[-1000:]


def test_one_constant_below_its_bound_fails_in_coq(library, tmp_path):
    """A quarter of the largest R of the last layer (R is the least power of two ≥ 2·max|a|, so
    R/4 < max|a|)."""
    build, _ = library
    _, cases, _ = link_cases(tmp_path)
    net, shifts, box = cases[-1]
    low = [[list(r) for r in layer] for layer in shifts]
    i, j = max(((i, j) for i, r in enumerate(low[-1]) for j in range(len(r))), key=lambda ij: low[-1][ij[0]][ij[1]])
    low[-1][i][j] /= 4
    assert run_link(build, [(net, shifts, box)], "Fine").returncode == 0
    done = run_link(build, [(net, low, box)], "Quarter")
    assert done.returncode != 0 and REFUSED in done.stderr, done.stdout[-1000:] + done.stderr[-1000:]


EXP_LOWER = (70, 150)
"""(m, b) of SoftBounds.v's ``exp_lower``: 70 squarings, each rounded down to a multiple of 2^-150."""


def exp_lower(U: Fraction, m: int, b: int) -> Fraction:
    """SoftBounds.v's ``exp_lower``: (1 + U/2^m)^(2^m) by m squarings rounded down, ≤ e^U."""
    k, q = 2 ** b, 1 + U / 2 ** m
    for _ in range(m):
        q = q * q
        q = Fraction(q.numerator * k // q.denominator, k)
    return q


def short_log_upper(T: int) -> Fraction:
    """A U ≥ ln T on the grid 2^-64 whose ``exp_lower`` reaches T: the tool's U rounded up, plus 2^-64."""
    from exactform.provers.softmax import log_upper
    U = Fraction(math.ceil(log_upper(T) * 2 ** 64) + 1, 2 ** 64)
    assert exp_lower(U, *EXP_LOWER) >= T
    return U


def softmax_script(cases) -> str:
    """For each (net, shifts, box, U, λ, ε): the theorem that ``construct net shifts`` under
    softmax(λ) is within ε of the net on the box, proved by ``C5_checked`` with its hypotheses
    (U ≥ ln T through ``exp_lower``, every margin, the bound) decided by ``vm_compute``."""
    m, b = EXP_LOWER
    script = "From Coq Require Import Reals QArith ZArith List.\n" \
             "From Exactform Require Import Defs C3 Bounds C5Net SoftBounds Link.\n" \
             "Import ListNotations.\nOpen Scope Q_scope.\n"
    for k, (net, shifts, box, U, lam, eps) in enumerate(cases):
        script += (coq_definitions(k, net, shifts, box) +
                   f"Theorem soft{k} : forall x, in_box (input_dim net{k}) box{k} x ->\n"
                   f"  forall o, (o < outputs net{k})%nat ->\n"
                   f"  (Rabs (tf_eval (softmax_l (Q2R {coq_q(lam)})) (construct net{k} shifts{k}) x o\n"
                   f"         - maxout_eval net{k} x o) <= Q2R {coq_q(eps)})%R.\n"
                   f"Proof. apply (C5_checked _ _ _ {coq_q(U)} _ _ {m} {b}); vm_compute; reflexivity. Qed.\n")
    return script


def softmax_cases(tmp_path: Path, eps: Fraction):
    """Per proof net: the net, the shift constants and domain of the Transformer ``exactform softmax
    --eps`` writes, a U ≥ ln T (the tool's, rounded up), its λ and ε. That Transformer is, but for its
    attention, entry by entry the one ``exactform compile`` writes (which the link test compares
    with Coq's construction)."""
    cases = []
    for k, (name, net) in enumerate(nets().items()):
        source, target = tmp_path / f"soft{k}.json", tmp_path / f"soft{k}.tf.json"
        save(net, source)
        assert main(["softmax", str(source), "--eps", str(eps), "-o", str(target)]) == 0, name
        tf = load(target)
        assert flat(tf) == flat(compiled(net, tmp_path, f"hard{k}")) and tf.domain == net.domain, name
        U, lam = short_log_upper(net.max_rank), Fraction(tf.attention)
        cases.append((net, compiled_shifts(net, tf), tf.domain, U, lam, eps))
    return cases


def test_coq_proves_the_softmax_transformer_within_eps_on_the_box(library, tmp_path):
    """``C5_checked`` on every proof net at the λ ``exactform softmax`` picks for ε = 1/100; at half
    that λ the bound exceeds ε on the deep ReLU net and Coq refuses."""
    build, _ = library
    cases = softmax_cases(tmp_path, Fraction(1, 100))
    (build / "Soft.v").write_text(softmax_script(cases))
    done = subprocess.run(["coqc", "-Q", ".", "Exactform", "Soft.v"], cwd=build, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    net, shifts, box, U, lam, eps = cases[-1]
    (build / "SoftHalf.v").write_text(softmax_script([(net, shifts, box, U, lam / 2, eps)]))
    done = subprocess.run(["coqc", "-Q", ".", "Exactform", "SoftHalf.v"], cwd=build, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode != 0 and REFUSED in done.stderr, done.stdout[-1000:] + done.stderr[-1000:]
