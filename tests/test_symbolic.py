"""provers.symbolic: C1, C3 and the per-token Transformer bounds."""
import itertools
import random
from fractions import Fraction

import pytest
from exactform.proofs.nets import random_net, random_points, relu_net

from exactform.construct.maxout_to_transformer import compile_maxout, shift_constants
from exactform.models import Head
from exactform.models.stream import fractions
from exactform.provers.symbolic import analyse, hardmax_max_identity, transformer_bounds, weak_orderings

SHAPES = [([2, 3, 2], 3, 1), ([1, 1], 1, 1), ([3, 4, 4, 2], 4, 3), ([2, 2], 2, 2)]


@pytest.mark.parametrize("dims,rank,outputs", SHAPES)
def test_compiled_pairs_are_proved(dims, rank, outputs):
    net = random_net(random.Random(sum(dims)), dims, rank, outputs)
    a = analyse(net, compile_maxout(net))
    assert a.holds and not a.defects
    assert len(a.heads) == sum(dims[1:])
    for l, layer in enumerate(net.layers):            # every token holds a piece of every unit
        for t, values in enumerate(a.values[l]):
            for i, row in enumerate(values.rows()):
                j = a.heads[sum(net.widths[1:l + 1]) + i].pieces[t]
                assert row == layer.weight[i][j] + [layer.bias[i][j]]


def test_too_small_shift_is_reported_with_block_token_unit_interval():
    net = relu_net(random.Random(7), [3, 4, 3])
    small = [[[r / 4 for r in row] for row in layer] for layer in shift_constants(net)]
    a = analyse(net, compile_maxout(net, small))
    assert not a.holds
    assert a.defects[0].startswith("block 0 (feed-forward) token ")
    assert "unit" in a.defects[0] and "neither fixed nor half of an identity pair" in a.defects[0]
    with pytest.raises(ValueError, match="neither fixed nor"):
        transformer_bounds(net, compile_maxout(net, small))


def test_a_changed_weight_or_head_is_refuted():
    net = random_net(random.Random(2), [2, 3], 2)
    tf = compile_maxout(net)
    tf.blocks[0].w1[0][tf.layout["h"][0]] += 1
    assert "not a piece" in analyse(net, tf).defects[0]
    tf = compile_maxout(net)
    head = tf.blocks[1].heads[0]
    tf.blocks[1].heads[0] = Head(query=head.key, key=head.key, value=head.value, output=head.output)
    assert "query depends on the input" in analyse(net, tf).defects[0]


def test_readout_mismatch_is_refuted():
    net = random_net(random.Random(3), [2, 2], 2)
    tf = compile_maxout(net)
    tf.readout_bias[0] += Fraction(1, 3)
    a = analyse(net, tf)
    assert not a.holds and "read-out" in a.defects[0]


def test_block_bounds_contain_the_exact_residual_stream():
    net = random_net(random.Random(5), [2, 3, 2], 3, outputs=2)
    tf = compile_maxout(net)
    bounds = transformer_bounds(net, tf)
    assert [b.block for b in bounds] == list(range(len(tf.blocks)))
    points = random_points(random.Random(1), net.domain, 30) + [list(c) for c in net.domain.corners()]
    for stream, b in zip(itertools.islice(tf.streams(points), 1, None), bounds):
        for t, values in enumerate(stream):
            for r, (lo, hi) in enumerate(b.state[t]):
                assert all(lo <= v <= hi for v in fractions(values[r], len(points))), (b.block, t, r)


def test_hardmax_lemma_symbolically():
    assert [sum(1 for _ in weak_orderings(T)) for T in range(1, 5)] == [1, 3, 13, 75]
    assert hardmax_max_identity(3) == 13
