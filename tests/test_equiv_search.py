"""The equivalence search on large boxes: a counterexample is looked for
first, by exact evaluation at points of the box, before any cell is split; Maxout units of rank > 2
are decided without witness LPs in the pruned search; ε-equivalence on whole property regions."""
from __future__ import annotations

from fractions import Fraction as F

import pytest
from support import acas_and_float16, maxout_value

from exactform.models import MaxoutNet
from exactform.search.equiv import compare


def moved_readout(net: MaxoutNet, delta: F) -> MaxoutNet:
    weight = [list(r) for r in net.readout_weight]
    weight[0][0] += delta
    return MaxoutNet(net.domain, net.layers, weight, net.readout_bias)


@pytest.mark.parametrize("prune", [True, False])
def test_an_easy_counterexample_on_a_large_box_is_found_first(prune):
    """ACAS Xu 1_1 against itself with one read-out weight moved by 2^-20, on [-1/2, 1/2]^5: they
    differ wherever the first unit of the last layer is non-zero (before: no answer in 300 s)."""
    acas, _ = acas_and_float16()
    moved = moved_readout(acas, F(1, 2 ** 20))
    out = compare(acas.to_json(), moved.to_json(), [(F(-1, 2), F(1, 2))] * 5, prune=prune)
    assert not out.equal and out.splits == 0
    assert all(-F(1, 2) <= v <= F(1, 2) for v in out.point)
    a, b = maxout_value(acas, out.point), maxout_value(moved, out.point)
    assert (out.a, out.b) == (a, b) and a != b and a[1:] == b[1:]


@pytest.mark.parametrize("seed", [0, 2, 3])        # (seed 1: ~10 CPU s of tolerance search)
def test_maxout_units_of_rank_above_two_take_no_witness_lp_in_the_pruned_search(seed, monkeypatch):
    """Rank-3 Maxout nets against quantised copies: the pruned --max-diff and --tolerance answers are
    the unpruned ones, and the pruned search never asks for a Farkas witness (before: one witness LP
    per piece and cell for every unit of rank > 2, 75 ms a cell on ACAS-sized cells)."""
    import random

    from exactform.proofs.nets import random_net
    from support import quantised

    from exactform.search import equiv
    a = random_net(random.Random(seed), [2, 5, 4], max_rank=3, outputs=1)
    b = quantised(a, F(1, 3))
    box = [(F(-1), F(1))] * 2
    unpruned = compare(a.to_json(), b.to_json(), box, max_diff=True, prune=False)

    def no_witness(*args, **kwargs):
        raise AssertionError("the pruned search asked for a witness")
    monkeypatch.setattr(equiv.Cell, "witness", no_witness)
    pruned = compare(a.to_json(), b.to_json(), box, max_diff=True)
    assert pruned.maximum == unpruned.maximum > 0
    assert max(abs(p - q) for p, q in zip(a(pruned.point), b(pruned.point))) == pruned.maximum
    for eps in (pruned.maximum, pruned.maximum * F(99, 100)):
        assert compare(a.to_json(), b.to_json(), box, eps, prune=True).equal == (eps == pruned.maximum)


def test_a_tolerance_the_whole_box_bound_misses_is_proved_on_halves():
    """A 2→8→8→1 ReLU net against its weights rounded to 1/64: max |A − B| = 0.707..., the bound over
    [-1, 1]^2 is 1.87..., over a quarter of it 0.70...: ε = 1 is proved on sub-boxes of the box, with
    no cell searched, and ε just below the maximum is still refuted."""
    import random

    from exactform.proofs.nets import relu_net
    from support import quantised

    from exactform.search.equiv import Search
    a = relu_net(random.Random(0), [2, 8, 8], outputs=1)
    b = quantised(a, F(1, 64))
    box = [(F(-1), F(1))] * 2
    assert Search(a.to_json(), b.to_json(), box, None, False).bound.upper(box) > 1
    proved = compare(a.to_json(), b.to_json(), box, F(1), prune=True, relax=False)
    assert proved.equal and proved.leaves == 0 and proved.pruned > 1
    assert compare(a.to_json(), b.to_json(), box, F(1), prune=True).equal          # relaxed leaves
    top = compare(a.to_json(), b.to_json(), box, max_diff=True).maximum
    refuted = compare(a.to_json(), b.to_json(), box, top * F(999, 1000), prune=True)
    assert not refuted.equal and max(abs(p - q) for p, q in zip(refuted.a, refuted.b)) > top * F(999, 1000)


def test_a_counterexample_on_a_small_part_of_the_box_is_found_by_the_float_screen():
    """A net and the net plus a bump of height 1/1000 on the corner x0 + x1 > 2 − 1/8 (1/512 of the
    box): 65 random points are unlikely to meet it, a float screen of 4096 grid points does, and
    the point reported is evaluated exactly (floats only chose it)."""
    import random

    from exactform.proofs.nets import relu_net
    from support import tiny_bump

    net = relu_net(random.Random(3), [2, 6, 6], outputs=1)
    bumped = tiny_bump(net, F(1, 1000), F(1, 8))
    for prune in (True, False):
        out = compare(net.to_json(), bumped.to_json(), [(F(-1), F(1))] * 2, prune=prune)
        assert not out.equal and out.splits == 0 and out.point[0] + out.point[1] > 2 - F(1, 8)
        assert maxout_value(bumped, out.point)[0] - maxout_value(net, out.point)[0] == out.b[0] - out.a[0] > 0
