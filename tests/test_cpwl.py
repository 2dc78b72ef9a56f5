"""CPWL front-ends (C6): restricted parsing, exact nets proved equal to their inputs (the convex
approximation is tested in test_approx.py)."""
from fractions import Fraction as F

import pytest
import sympy
from hypothesis import given, settings, strategies as st

from exactform.cli import main
from exactform.construct.cpwl import (ExpressionError, breakpoints_net, dc_net, expression_net, parse_cpwl,
                                      triangulation_net)
from exactform.models import Box, load_model

SQUARE = Box((F(-1), F(-1)), (F(1), F(1)))
small = st.fractions(min_value=-3, max_value=3, max_denominator=6)


@pytest.mark.parametrize("text", ["__import__('os')", "lambda x: x", "x.__class__", "().__class__",
                                  "exec('1')", "x*y", "x**2", "Max(x", "1/0", "Max(x, y) y", "x; y", "_x",
                                  "Max(x)(y)", "import", "sin(x)", "2e3"])
def test_hostile_or_non_cpwl_strings_are_refused_with_a_position(text):
    with pytest.raises(ExpressionError, match="at position [0-9]+"):
        parse_cpwl(text)


def test_expression_compiles_to_an_equal_net():
    c = expression_net("Max(x, 2*y) - Abs(x - y)/3", SQUARE)
    assert c.proof.cells >= 4
    assert c.net([F(1, 2), F(-1, 3)]) == [max(F(1, 2), F(-2, 3)) - abs(F(1, 2) + F(1, 3)) / 3]


def test_sympy_object_front_door():
    x, y = sympy.symbols("x y")
    c = expression_net(sympy.Min(sympy.Abs(x), y / 2 + sympy.Rational(1, 3)), SQUARE)
    assert c.net([F(-1, 2), F(0)]) == [F(1, 3)]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(small, small, small), min_size=1, max_size=3),
       st.lists(st.tuples(small, small, small), min_size=1, max_size=3),
       st.lists(st.tuples(small, small), min_size=3, max_size=3))
def test_random_difference_of_convex(convex, concave, points):
    c = dc_net([([a, b], e) for a, b, e in convex], [([a, b], e) for a, b, e in concave], SQUARE)
    for px, py in points:
        px, py = px / 3, py / 3
        want = max(a * px + b * py + e for a, b, e in convex) - max(a * px + b * py + e for a, b, e in concave)
        assert c.net([px, py]) == [want]


@settings(max_examples=15, deadline=None)
@given(st.lists(small, min_size=2, max_size=8))
def test_random_breakpoints(values):
    xs = [F(k, 2) for k in range(len(values))]
    c = breakpoints_net(xs, values)
    assert [c.net([x])[0] for x in xs] == values
    mid = (xs[0] + xs[1]) / 2
    assert c.net([mid]) == [(values[0] + values[1]) / 2]


@settings(max_examples=10, deadline=None)
@given(st.lists(small, min_size=9, max_size=9))
def test_random_triangulated_values(values):
    pts = [(F(i, 2), F(j, 2)) for j in range(3) for i in range(3)]
    tris = []
    for j in range(2):
        for i in range(2):
            a, b, c_, d = 3 * j + i, 3 * j + i + 1, 3 * j + i + 3, 3 * j + i + 4
            tris += [(a, b, d), (a, d, c_)]
    c = triangulation_net(pts, tris, values)
    assert [c.net(list(p))[0] for p in pts] == values


def test_overlapping_triangles_are_refused():
    pts = [(0, 0), (1, 0), (1, 1), (0, 1)]
    with pytest.raises(ValueError):
        triangulation_net(pts, [(0, 1, 2), (0, 1, 3)], [F(0)] * 4)


def test_cli_writes_a_net_and_refuses_bad_input(tmp_path, capsys):
    out = tmp_path / "net.json"
    assert main(["cpwl", "Max(x, 2*y) - Abs(x - y)/3", "--domain", "-1:1", "-o", str(out)]) == 0
    net = load_model(out)
    assert net.domain == SQUARE
    assert main(["cpwl", "__import__('os').system('true')", "--domain", "0:1", "-o", str(out)]) == 2
    assert "position 0" in capsys.readouterr().err
