"""``exactform equiv --max-diff`` on discontinuous (hardmax) models: the maximum
is a supremum over cells whose closures may hold points where the model takes another value; the
printed point attains the printed value, or the output says, in both modes, that the supremum is
not attained.  The oracle is the exact evaluator ``exactform.models`` and the values by hand."""
from __future__ import annotations

import json
from fractions import Fraction as F

import pytest

from exactform.cli import main
from exactform.models import Attention, Box, FeedForward, Head, MaxoutLayer, MaxoutNet, Transformer
from exactform.prove.equiv import compare

BOX = Box((F(-1), F(-1)), (F(1), F(1)))


def step() -> Transformer:
    """The hardmax step of two inputs: 1 where x0 > x1, 1/2 on the line x0 = x1, 0 below.  Token t
    scores x_t + 2 (a ReLU that the other token's position switches off), the value is token 0's
    position coordinate."""
    width = 8                                   # x0, x1, one, first, last, y, z, out
    row = lambda entries: [F(entries.get(c, 0)) for c in range(width)]  # noqa: E731
    embed = [[F(int(r == 0)), F(int(r == 1))] for r in range(width)]
    position = [row({2: 1, 3: 1}), row({2: 1, 4: 1})]
    ff = FeedForward([row({0: 1, 2: 2, 4: -10}), row({1: 1, 2: 2, 3: -10})], [F(0), F(0)],
                     [[F(int(r == 5)), F(int(r == 6))] for r in range(width)], [F(0)] * width)
    head = Head([row({2: 1})], [row({5: 1, 6: 1})], [row({3: 1})], [[F(int(r == 7))] for r in range(width)])
    return Transformer(BOX, 2, width, "hardmax", embed, position, [ff, Attention([head])], 0, [row({7: 1})], [F(0)], {})


def affine(w0: F, w1: F, c: F) -> MaxoutNet:
    """w0·x0 + w1·x1 + c as a Maxout net (one unit of one piece)."""
    return MaxoutNet(BOX, [MaxoutLayer([[[w0, w1]]], [[F(0)]])], [[F(1)]], [c])


def test_the_step_is_what_it_says():
    a = step()
    assert [a([F(u), F(v)])[0] for u, v in ((1, 0), (0, 0), (0, 1), (-1, -1))] == [1, F(1, 2), 0, F(1, 2)]


@pytest.mark.parametrize("prune", [True, False])
def test_an_attained_maximum_is_printed_at_a_point_attaining_it(prune):
    a, b = step(), affine(F(0), F(0), F(1, 2))              # |A − B| = 1/2 off the line, 0 on it
    out = compare(a.to_json(), b.to_json(), [(F(-1), F(1))] * 2, max_diff=True, prune=prune)
    assert out.maximum == F(1, 2) and out.attained
    assert out.point[0] != out.point[1] and abs(a(out.point)[0] - b(out.point)[0]) == F(1, 2)


@pytest.mark.parametrize("prune", [True, False])
def test_a_supremum_that_is_not_attained_is_said_to_be(prune):
    a, b = step(), affine(F(1, 4), F(-1, 4), F(0))          # A − B → 1 as x0 − x1 → 0+, 1/2 on the line
    out = compare(a.to_json(), b.to_json(), [(F(-1), F(1))] * 2, max_diff=True, prune=prune)
    assert out.maximum == 1 and not out.attained
    assert abs(a(out.point)[0] - b(out.point)[0]) < 1


def test_both_output_modes_say_whether_the_maximum_is_attained(tmp_path, capsys):
    paths = {}
    for name, model in (("step", step()), ("half", affine(F(0), F(0), F(1, 2))), ("ramp", affine(F(1, 4), F(-1, 4), F(0)))):
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
