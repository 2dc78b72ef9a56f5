"""``exactform equiv --max-diff`` on discontinuous (hardmax) models: the maximum
is a supremum over cells whose closures may hold points where the model takes another value; the
printed point attains the printed value, or the output says, in both modes, that the supremum is
not attained.  The oracle is the exact evaluator ``exactform.models`` and the values by hand."""
from __future__ import annotations

import json
from fractions import Fraction as F

import pytest

from exactform.cli import main
from exactform.models import Box, MaxoutLayer, MaxoutNet
from exactform.search.equiv import compare
from support import hardmax_step

BOX = Box((F(-1), F(-1)), (F(1), F(1)))


def affine(w0: F, w1: F, c: F) -> MaxoutNet:
    """w0·x0 + w1·x1 + c as a Maxout net (one unit of one piece)."""
    return MaxoutNet(BOX, [MaxoutLayer([[[w0, w1]]], [[F(0)]])], [[F(1)]], [c])


def test_the_step_is_what_it_says():
    a = hardmax_step()
    assert [a([F(u), F(v)])[0] for u, v in ((1, 0), (0, 0), (0, 1), (-1, -1))] == [1, F(1, 2), 0, F(1, 2)]


@pytest.mark.parametrize("prune", [True, False])
def test_an_attained_maximum_is_printed_at_a_point_attaining_it(prune):
    a, b = hardmax_step(), affine(F(0), F(0), F(1, 2))              # |A − B| = 1/2 off the line, 0 on it
    out = compare(a.to_json(), b.to_json(), [(F(-1), F(1))] * 2, max_diff=True, prune=prune)
    assert out.maximum == F(1, 2) and out.attained
    assert out.point[0] != out.point[1] and abs(a(out.point)[0] - b(out.point)[0]) == F(1, 2)


@pytest.mark.parametrize("prune", [True, False])
def test_a_supremum_that_is_not_attained_is_said_to_be(prune):
    a, b = hardmax_step(), affine(F(1, 4), F(-1, 4), F(0))          # A − B → 1 as x0 − x1 → 0+, 1/2 on the line
    out = compare(a.to_json(), b.to_json(), [(F(-1), F(1))] * 2, max_diff=True, prune=prune)
    assert out.maximum == 1 and not out.attained
    assert abs(a(out.point)[0] - b(out.point)[0]) < 1


def test_both_output_modes_say_whether_the_maximum_is_attained(tmp_path, capsys):
    paths = {}
    for name, model in (("step", hardmax_step()), ("half", affine(F(0), F(0), F(1, 2))), ("ramp", affine(F(1, 4), F(-1, 4), F(0)))):
        paths[name] = str(tmp_path / f"{name}.json")
        (tmp_path / f"{name}.json").write_text(json.dumps(model.to_json()))
    assert main(["equiv", paths["step"], paths["half"], "--max-diff", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["max_diff"] == "1/2" and doc["attained"] is True
    assert abs(F(doc["a"][0]) - F(doc["b"][0])) == F(1, 2)
    assert main(["equiv", paths["step"], paths["half"], "--max-diff"]) == 0
    text = capsys.readouterr().out
    assert "attained at x" in text and "not attained" not in text
    assert main(["equiv", paths["step"], paths["ramp"], "--max-diff", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["max_diff"] == "1" and doc["attained"] is False
    assert abs(F(doc["a"][0]) - F(doc["b"][0])) < 1
    assert main(["equiv", paths["step"], paths["ramp"], "--max-diff"]) == 0
    text = capsys.readouterr().out
    assert "supremum" in text and "not attained" in text and "attained at x" not in text
