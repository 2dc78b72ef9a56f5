"""Tf(x) = M(x) exactly for the token-shift construction, and the facts it rests on."""
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from exactform.construct.maxout_to_transformer import compile_maxout, measured_sizes, predicted_sizes, shift_constants
from exactform.geometry.bounds import maxout_bounds
from exactform.layout import Layout, power_of_two_at_least
from exactform.models import Box, MaxoutLayer, MaxoutNet
from exactform.proofs.nets import random_net, random_points, relu_net, tie_points

shapes = st.tuples(st.integers(1, 4), st.lists(st.integers(1, 5), min_size=1, max_size=4),
                   st.integers(1, 4), st.integers(1, 3), st.integers(0, 2**32))


@settings(max_examples=25, deadline=None)
@given(shapes)
def test_transformer_equals_maxout_exactly(shape):
    n0, hidden, max_rank, outputs, seed = shape
    rng = random.Random(seed)
    net = random_net(rng, [n0, *hidden], max_rank, outputs, radius=Fraction(rng.randint(1, 4), rng.randint(1, 3)))
    tf = compile_maxout(net)
    points = [list(c) for c in net.domain.corners()][:16] + random_points(rng, net.domain, 8) + \
        tie_points(rng, net, 4)
    assert tf.evaluate_batch(points) == net.evaluate_batch(points)
    assert tf(points[0]) == net(points[0])


def test_tie_points_are_ties_and_are_used():
    rng = random.Random(3)
    net = random_net(rng, [2, 3], 3)
    ties = tie_points(rng, net, 5)
    assert ties, "the generator must find tie points"
    layer = net.layers[0]
    for x in ties:
        values = [[sum(w * v for w, v in zip(ws, x)) + b for ws, b in zip(wss, bs)]
                  for wss, bs in zip(layer.weight, layer.bias)]
        assert any(len(v) != len(set(v)) for v in values)
    assert compile_maxout(net).evaluate_batch(ties) == net.evaluate_batch(ties)


def test_relu_net_acas_shape():
    rng = random.Random(0)
    net = relu_net(rng, [5, 12, 12, 12, 5], outputs=5)
    tf = compile_maxout(net)
    pts = random_points(rng, net.domain, 10)
    assert tf.evaluate_batch(pts) == net.evaluate_batch(pts)


@given(st.fractions(min_value=-50, max_value=50), st.fractions(min_value=0, max_value=60))
def test_pair_identity_and_off_token(a, r):
    """ReLU(a − R·c) − ReLU(−a − R·c): equals a when c = 0, and both terms vanish when c = 1, R ≥ |a|."""
    relu = lambda v: max(v, Fraction(0))
    assert relu(a) - relu(-a) == a
    if r >= abs(a):
        assert relu(a - r) == 0 and relu(-a - r) == 0


def test_shift_constants_dominate_piece_bounds():
    rng = random.Random(5)
    net = random_net(rng, [3, 4, 4], 3)
    bounds, R = maxout_bounds(net), shift_constants(net)
    for l, layer in enumerate(net.layers):
        for i in range(layer.units):
            for j in range(layer.ranks[i]):
                lo, hi = bounds.pieces[l][i][j]
                r = R[l][i][j]
                assert r >= 2 * max(-lo, hi) and is_power_of_two(r)


def is_power_of_two(r: Fraction) -> bool:
    return 1 in (r.numerator, r.denominator) and all(v & (v - 1) == 0 for v in (r.numerator, r.denominator))


def test_bounds_contain_sampled_activations():
    rng = random.Random(9)
    net = random_net(rng, [2, 5, 3], 3)
    bounds = maxout_bounds(net)
    from exactform.models.maxout import homogeneous
    acts = net.hidden_batch(homogeneous(random_points(rng, net.domain, 30) + [list(c) for c in net.domain.corners()]))
    for l, act in enumerate(acts):
        for i, row in enumerate(act.rows()[:-1]):
            lo, hi = bounds.inputs[l][i]
            assert all(lo <= v <= hi for v in row)


def test_too_small_shift_breaks_equality():
    """A deliberately wrong R_ij (far below max|a_ij|) makes the Transformer differ somewhere."""
    net = MaxoutNet(Box((Fraction(-1),), (Fraction(1),)), [MaxoutLayer([[[Fraction(4)], [Fraction(-4)]]],
                                                                      [[Fraction(0), Fraction(0)]])],
                    [[Fraction(1)]], [Fraction(0)])
    bad = compile_maxout(net, shifts=[[[Fraction(1, 2), Fraction(1, 2)]]])
    pts = [[Fraction(k, 4)] for k in range(-4, 5)]
    assert bad.evaluate_batch(pts) != net.evaluate_batch(pts)
    assert compile_maxout(net).evaluate_batch(pts) == net.evaluate_batch(pts)


@pytest.mark.parametrize("x,expected", [(Fraction(0), Fraction(1)), (Fraction(1), Fraction(1)),
                                        (Fraction(3), Fraction(4)), (Fraction(1, 3), Fraction(1, 2)),
                                        (Fraction(4), Fraction(4)), (Fraction(5, 8), Fraction(1))])
def test_power_of_two_at_least(x, expected):
    assert power_of_two_at_least(x) == expected


def test_c4_formula_matches_built_object():
    rng = random.Random(11)
    for dims, rank in [([1, 1], 1), ([3, 5, 2], 4), ([2, 7, 1, 3], 2), ([5, 2, 6], 3)]:
        net = random_net(rng, dims, rank, outputs=2)
        tf = compile_maxout(net)
        assert predicted_sizes(net, shift_constants(net)) == measured_sizes(tf)
        assert len(tf.blocks) == 3 * len(net.layers) and tf.tokens == net.max_rank
        assert tf.width == Layout(net.max_rank, max(net.widths)).width


def test_shift_coordinates_are_never_written():
    rng = random.Random(2)
    net = random_net(rng, [2, 3, 3], 3)
    tf = compile_maxout(net)
    shift = range(*tf.layout["shift"])
    for block in tf.blocks:
        assert not set(block.writes) & set(shift)
