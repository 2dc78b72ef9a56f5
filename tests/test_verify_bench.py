"""The verify benchmark: the shipped ACAS Xu instances, counterexamples decided exactly,
disagreements decided, NeuralSAT's result files read, and the harness end to end on two tiny instances
without Marabou or NeuralSAT."""
import csv
from collections import Counter
from fractions import Fraction

import pytest

from exactform.benchmarks import verify_bench as vb
from exactform.importers.vnnlib import read_property

HALF = Fraction(1, 2)


@pytest.fixture
def tiny(tmp_path):
    return {i.prop.stem: i for i in vb.tiny(tmp_path)}


def test_the_186_instances_of_vnncomp():
    instances = vb.acasxu(None, None)
    assert len(instances) == 186 and {i.timeout for i in instances} == {116}
    per_prop = Counter(i.prop.stem for i in instances)
    assert [per_prop[f"prop_{p}"] for p in range(1, 11)] == [45] * 4 + [1] * 6
    assert {i.name for i in instances if i.prop.stem in ("prop_5", "prop_6", "prop_7", "prop_8", "prop_9", "prop_10")} \
        == {"1_1/prop_5", "1_1/prop_6", "1_9/prop_7", "2_9/prop_8", "3_3/prop_9", "4_5/prop_10"}
    assert [i.name for i in vb.acasxu({3}, 3)] == ["1_1/prop_3", "2_7/prop_3", "4_4/prop_3"]


def test_the_properties_read_exactly():
    p6 = read_property(str(vb.DATA / "prop_6.vnnlib"))
    assert (p6.inputs, p6.outputs, len(p6.disjuncts)) == (5, 5, 8)       # 2 input boxes × 4 output cases
    assert {d.box[1] for d in p6.disjuncts} == {(Fraction("0.11140846"), Fraction("0.499999896")),
                                                (Fraction("-0.499999896"), Fraction("-0.11140846"))}
    p1 = read_property(str(vb.DATA / "prop_1.vnnlib"))
    assert [a.y for d in p1.disjuncts for a in d.atoms] == [{0: 1}]
    assert [a.c for d in p1.disjuncts for a in d.atoms] == [-Fraction("3.991125645861615")]


def test_a_counterexample_is_confirmed_exactly(tiny):
    point = vb.read_assignment("((X_0 -0.5)\n (X_1 1/2)\n (Y_0 0.5)\n (Y_1 0.5))")
    assert point == {"X_0": -HALF, "X_1": HALF, "Y_0": HALF, "Y_1": HALF}
    assert vb.refuted(tiny["sat_abs"], point, exact_outputs=True) is None


@pytest.mark.parametrize("point, why", [
    ({"X_0": -HALF, "X_1": HALF, "Y_0": HALF, "Y_1": HALF + Fraction(1, 10 ** 9)}, "stated Y differs"),
    ({"X_0": Fraction(0), "X_1": Fraction(0)}, "satisfies no disjunct"),           # y = (0, -1/2)
    ({"X_0": Fraction(-2), "X_1": Fraction(0)}, "satisfies no disjunct"),          # y = (2, 3/2) but X outside
    ({"X_1": HALF}, "lacks X_0"),
])
def test_a_false_counterexample_is_refused(tiny, point, why):
    assert why in vb.refuted(tiny["sat_abs"], point, exact_outputs="Y_0" in point)


def test_nothing_violates_an_unsat_property(tiny):
    for x0 in (-1, Fraction(-1, 4), Fraction(1, 4), 1):
        assert vb.refuted(tiny["unsat_abs"], {"X_0": Fraction(x0), "X_1": Fraction(0)}, exact_outputs=False)


def test_disagreements_are_decided_exactly(tiny):
    sat, unsat = tiny["sat_abs"], tiny["unsat_abs"]
    assert vb.decide(sat, vb.Result("sat", checked="yes"), vb.Result("unsat")) is None
    assert "not confirmed" in vb.decide(sat, vb.Result("sat", checked="no"), vb.Result("unsat"))
    assert "not accepted" in vb.decide(unsat, vb.Result("unsat", checked="no"), vb.Result("sat"))
    near = {"X_0": Fraction(-1, 4), "X_1": Fraction(0)}                 # y0 = 1/4: not <= -1/8
    assert vb.decide(unsat, vb.Result("unsat", checked="yes"), vb.Result("sat", assignment=near)) is None
    real = {"X_0": -HALF, "X_1": HALF}                                  # a true violation of sat_abs
    assert "violates the property exactly" in vb.decide(
        sat, vb.Result("unsat", checked="yes"), vb.Result("sat", assignment=real))


def test_neuralsat_result_files_are_read_and_its_points_decided_exactly(tiny):
    sat, unsat = tiny["sat_abs"], tiny["unsat_abs"]
    found = vb.neuralsat_result("sat\n((X_0 -0.5)\n (X_1 0.5)\n (Y_0 0.5)\n (Y_1 0.5))\n", sat, 1.5, 2.0, "")
    assert (found.verdict, found.checked, found.assignment["X_0"], found.cpu) == ("sat", "yes", -HALF, 1.5)
    assert vb.neuralsat_result("sat\n((X_0 0.0)\n (X_1 0.0))", sat, 1, 1, "").checked == "no"    # y = (0, -1/2)
    assert vb.neuralsat_result("unsat\n", unsat, 1, 1, "").checked == "-"                # floating point, unchecked
    assert vb.neuralsat_result("timeout\n", unsat, 1, 1, "").verdict == "timeout"
    assert (vb.neuralsat_result("early_stop\n", unsat, 1, 1, "").verdict,
            vb.neuralsat_result("", unsat, 1, 1, "Traceback\nValueError: x").note) == ("unknown", "ValueError: x")


def test_two_peers_disagreeing_are_decided_by_the_sat_point(tiny):
    answers = {"exactform": vb.Result("not run"), "marabou": vb.Result("unsat"),
               "neuralsat": vb.Result("sat", checked="yes")}
    assert vb.disagreements(tiny["sat_abs"], answers) == (
        [("DISAGREEMENT tiny/sat_abs: Marabou unsat, NeuralSAT sat: decided for NeuralSAT "
          "(its point violates the property exactly)")], [])
    answers["exactform"] = vb.Result("unsat", checked="no")
    printed, misses = vb.disagreements(tiny["sat_abs"], answers)
    assert len(printed) == 2 and misses == ["tiny/sat_abs: exactform's certificate is not accepted"]


def test_a_two_tool_record_reads_without_neuralsat_columns():
    recorded = vb.recorded_results(str(vb.DATA / "marabou_results.csv"))
    assert list(recorded) == ["marabou"] and len(recorded["marabou"]) == 186


def test_the_harness_on_two_tiny_instances_without_peers(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(vb, "MARABOU_VENV", tmp_path / "no-venv")
    monkeypatch.setattr(vb, "NEURALSAT_VENV", tmp_path / "no-venv")
    record = tmp_path / "record.csv"
    assert vb.main(["--quick", "--record", str(record), "-o", str(tmp_path / "table.md")]) == 0
    printed = capsys.readouterr().out
    assert "marabou: not installed" in printed and "neuralsat: not installed" in printed
    with open(record) as f:
        rows = {r["instance"]: r for r in csv.DictReader(line for line in f if not line.startswith("#"))}
    assert {(k, r["exactform_verdict"], r["exactform_checked"], r["marabou_verdict"], r["neuralsat_verdict"])
            for k, r in rows.items()} == {("tiny/sat_abs", "sat", "yes", "", ""), ("tiny/unsat_abs", "unsat", "yes", "", "")}
    assert "| tiny/unsat_abs | 20      | unsat" in (tmp_path / "table.md").read_text()
    again = tmp_path / "again.md"
    assert vb.main(["--quick", "--recorded", str(record), "-o", str(again)]) == 0      # nothing re-run
    assert again.read_text().split("\n\n")[1] == (tmp_path / "table.md").read_text().split("\n\n")[1]
    assert vb.main(["--quick", "--timeout", "5", "--recorded", str(record)]) == 1       # recorded at 20 s
    assert "exactform was recorded with a 20 s limit, this run's is 5 s" in capsys.readouterr().out
