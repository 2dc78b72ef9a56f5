"""The ε-equivalence benchmark on ACAS Xu regions: the float16 copy is exact,
the regions are VNN-COMP's, a counterexample counts only when exact evaluation confirms it, NeuroDiff's
figures are the artifact's, and the harness runs end to end on one tiny instance (no timing asserted)."""
import csv
import json
import random
import struct
import subprocess
import sys
from fractions import Fraction

import pytest

from exactform.benchmarks import equiv_regions as er
from exactform.benchmarks.equiv_bench import ACAS, float16
from exactform.importers import import_network
from exactform.proofs.nets import relu_net


def is_half(q: Fraction) -> bool:
    """q is an IEEE half value, exactly (it survives the round trip through binary16 unchanged)."""
    return Fraction(struct.unpack("e", struct.pack("e", float(q)))[0]) == q


def weights(net) -> list[Fraction]:
    return [x for l in net.layers for ws in l.weight for w in ws for x in w] + \
           [x for l in net.layers for bs in l.bias for x in bs] + \
           [x for r in net.readout_weight for x in r] + list(net.readout_bias)


def test_is_half_tells_halves_apart():
    assert is_half(Fraction(3, 8)) and is_half(Fraction(-65504)) and is_half(Fraction(1, 2 ** 24))
    assert not is_half(Fraction(1, 3)) and not is_half(Fraction(2049)) and not is_half(Fraction(1, 2 ** 26))


def test_the_float16_copy_is_exact_and_changes_exactly_the_weights_that_are_not_halves():
    net = relu_net(random.Random(0), [3, 6, 6], outputs=2)       # entries k/d, d in 1, 2, 3, 4, 5, 8
    before, after = weights(net), weights(float16(net))
    assert all(is_half(w) for w in after)
    assert [a != b for a, b in zip(before, after)] == [not is_half(w) for w in before]
    assert any(not is_half(w) for w in before) and any(is_half(w) for w in before)
    assert all(abs(a - b) <= abs(b) / 2 ** 11 for a, b in zip(after, before))      # nearest: half an ulp


def test_the_acas_float16_copy_differs_from_the_float32_network():
    acas = import_network(str(ACAS), [(Fraction(-1), Fraction(1))])
    before, after = weights(acas), weights(float16(acas))
    assert all(is_half(w) for w in after)
    assert sum(a != b for a, b in zip(before, after)) > len(before) // 2      # float32 weights: most move


def test_the_regions_are_the_vnncomp_input_boxes():
    phi1, phi3 = er.region(1), er.region(3)
    assert phi1[0] == (Fraction("0.6"), Fraction("0.679857769")) and phi1[4] == (Fraction(-1, 2), Fraction("-0.45"))
    assert phi3[2] == (Fraction("0.493380324"), Fraction(1, 2))
    small = er.region(1, Fraction(1, 10))
    assert all(lo + hi == a + b and 10 * (hi - lo) == b - a for (lo, hi), (a, b) in zip(small, phi1))


def test_a_counterexample_counts_only_when_exact_evaluation_confirms_it():
    a, b = er.pair(ACAS, er.region(3, Fraction(1, 100)), None)
    point = [lo for lo in a.domain.lower]
    gap = max(abs(p - q) for p, q in zip(a(point), b(point)))
    assert gap > 0
    assert er.exceeds(a, b, point, gap / 2) is None
    assert "≤ ε" in er.exceeds(a, b, point, gap)                       # not more than ε: refused
    assert "outside" in er.exceeds(a, b, [point[0] - 1] + point[1:], gap / 2)


def test_restricting_to_output_0_keeps_its_values():
    a, _ = er.pair(ACAS, er.region(1, Fraction(1, 100)), None)
    a0 = er.restricted(a, [0])
    x = list(a.domain.upper)
    assert a0(x) == a(x)[:1]


def test_neurodiff_figures_are_the_artifacts_totals():
    figures = er.published()
    # the artifact README's Table 1 / Table 2 rows for φ1 and φ3 (sums of the per-network logs)
    for tool, prop, eps, proved, total, seconds in [("NeuroDiff", "1", "0.05", 45, 45, 343.332),
                                                     ("NeuroDiff", "3", "0.05", 42, 42, 1.68917),
                                                     ("NeuroDiff", "1", "0.01", 41, 45, 11400.1),
                                                     ("ReluDiff+", "1", "0.01", 15, 45, 55778.6)]:
        rows = [v for k, v in figures.items() if k[0] == tool and k[1] == prop and k[3] == eps]
        assert (sum(v == "proved" for v, _ in rows), len(rows)) == (proved, total)
        assert float(f"{sum(s if s is not None else 1800 for _, s in rows):.6g}") == seconds    # as printed there
    assert figures[("NeuroDiff", "1", "1_1", "0.01")] == ("proved", 0.220983)


def test_the_harness_on_one_tiny_instance(tmp_path, capsys):
    results = tmp_path / "results"
    assert er.main(["--networks", "1_1", "--properties", "1", "--epsilons", "1/20", "--scale", "1/1000",
                    "--timeout", "60", "--results", str(results), "--no-pairs"]) == 0
    with open(results / "equiv_regions.csv") as f:
        (row,) = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert (row["network"], row["property"], row["verdict"], row["checked"]) == ("1_1", "φ1", "proved", "yes")
    assert int(row["leaves"]) >= 1 and int(row["cert_bytes"]) > 0
    report = (results / "equiv_regions.md").read_text()
    assert "scaled by 1/1000 (not the benchmark)" in report and "| φ1 | 1/20 | 1/1" in report
    assert "1/1, median 0.106 s" in report                       # NeuroDiff's 1_1 φ1 ε = 0.05, beside ours
    assert json.loads((results / "equiv_regions.json").read_text())["misses"] == []


def test_a_counterexample_instance_is_confirmed(tmp_path):
    assert er.main(["--networks", "1_1", "--properties", "3", "--epsilons", "1/1000000000", "--outputs", "all",
                    "--scale", "1/100", "--timeout", "60", "--results", str(tmp_path), "--no-pairs"]) == 0
    (row,) = json.loads((tmp_path / "equiv_regions.json").read_text())["rows"]
    assert (row["verdict"], row["checked"]) == ("counterexample", "yes")


def test_the_milp_pairs_are_skipped_without_their_venv(tmp_path, capsys):
    assert er.main(["--pairs-only", "--milp-venv", str(tmp_path / "absent"), "--results", str(tmp_path)]) == 0
    assert f"milp peer: skipped, no virtual environment at {tmp_path / 'absent'}" in capsys.readouterr().out


def test_the_milp_peer_reads_and_evaluates_exactly(tmp_path):
    from exactform.benchmarks.peers import milp_equiv
    from exactform.formats import write_json
    a, b = er.small_pairs()[0][1:]
    write_json(str(tmp_path / "a.json"), a.to_json())
    write_json(str(tmp_path / "b.json"), b.to_json())
    pa, pb = milp_equiv.read_net(str(tmp_path / "a.json")), milp_equiv.read_net(str(tmp_path / "b.json"))
    x = [Fraction(1, 3), Fraction(-2, 7)]
    assert milp_equiv.evaluate(pa, x) == a(x) and milp_equiv.evaluate(pb, x) == b(x)
    assert milp_equiv.difference(pa, pb, x) == abs(a(x)[0] - b(x)[0]) > 0


def test_equiv_names_this_benchmark(tmp_path):
    done = subprocess.run([sys.executable, "-m", "exactform.benchmarks", "equiv", "--pairs-only", "--milp-venv",
                           str(tmp_path / "absent"), "--results", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0 and "milp peer: skipped" in done.stdout
    assert (tmp_path / "equiv_regions.md").is_file()


def test_bad_options_are_usage_errors(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    for bad in (["--results", str(tmp_path / "file")], ["--properties", "2"], ["--networks", "6_1"],
                ["--scale", "2"], ["--epsilons", "0"], ["--epsilons", "x"]):
        with pytest.raises(SystemExit) as stop:
            er.main(bad)
        assert stop.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


LIAR = """\
import json, sys
from exactform.cli import main
args = sys.argv[1:]
if args[0] == "check" and "{mode}" == "reject":
    sys.exit(1)                                         # the checker refuses the certificate
if args[0] == "equiv" and "{mode}" == "false-point":    # a point where A and B agree within ε
    lower = [part.split(":")[0] for part in args[args.index("--domain") + 1].split(",")]
    print(json.dumps({{"equal": False, "within_tolerance": False, "point": lower, "leaves": 0, "splits": 0}}))
    sys.exit(1)
sys.exit(main(args))
"""


def test_a_rejected_certificate_or_a_false_counterexample_is_a_miss(tmp_path, capsys):
    for mode, verdict in (("reject", "proved"), ("false-point", "counterexample")):
        liar = tmp_path / f"{mode}.py"
        liar.write_text(LIAR.format(mode=mode))
        assert er.main(["--networks", "1_1", "--properties", "1", "--epsilons", "1/20", "--scale", "1/1000",
                        "--results", str(tmp_path / mode), "--no-pairs",
                        "--exactform", f"{sys.executable} {liar}"]) == 1
        (row,) = json.loads((tmp_path / mode / "equiv_regions.json").read_text())["rows"]
        assert (row["verdict"], row["checked"]) == (verdict, "no")
        assert f"miss: 1_1 φ1 ε=1/20: {verdict}" in capsys.readouterr().out


def test_the_check_uses_the_work_bound_equiv_reports(tmp_path, monkeypatch):
    """A certificate beyond the harness's own ``--max-work`` (lowered to 10 here) is checked with the bound
    ``equiv --json`` reports for it (``check_work``, the checker's figure), not refused."""
    from exactform.benchmarks import verify_bench
    monkeypatch.setattr(verify_bench, "CHECK_WORK", "10")
    assert er.main(["--networks", "1_1", "--properties", "1", "--epsilons", "1/20", "--scale", "1/1000",
                    "--timeout", "60", "--results", str(tmp_path), "--no-pairs"]) == 0
    (row,) = json.loads((tmp_path / "equiv_regions.json").read_text())["rows"]
    assert (row["verdict"], row["checked"]) == ("proved", "yes")


@pytest.mark.slow
def test_a_timeout_row_says_how_far_the_search_got(tmp_path):
    """At the CPU limit (SIGXCPU) equiv stops itself and says how far it got; the row's note carries it."""
    assert er.main(["--networks", "1_1", "--properties", "1", "--epsilons", "1/20", "--timeout", "6",
                    "--results", str(tmp_path), "--no-pairs"]) == 0
    (row,) = json.loads((tmp_path / "equiv_regions.json").read_text())["rows"]
    assert row["verdict"] == "timeout" and row["checked"] == "-"
    assert row["note"].startswith("stopped at the limit (") and "cells searched" in row["note"], row["note"]
