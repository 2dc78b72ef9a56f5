"""The float Transformer module's layout against exact evaluation: maps run as slab-addition runs
or one GEMM, runs added in place in dependency order, max heads and general hardmax heads with
ties, weight rows given dense or sparse, random nets within 1e-5."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest
import torch

from exactform.backends.differential import float_error
from exactform.backends.torch import (
    _entries,
    _in_place,
    _Map,
    _runs,
    evaluate,
    exact_points_tensor,
    to_module,
)
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.models import Attention, Box, FeedForward, Head, Transformer

F = Fraction


def dense(rows, cols):
    return torch.tensor([[float(r.get(c, 0)) for c in range(cols)] for r in rows], dtype=torch.float64)


def sparse_rows(rng, rows, cols, density):
    return [{c: F(rng.choice([-2, -1, 1, 1, 3]), rng.choice([1, 2, 4])) for c in range(cols) if rng.random() < density}
            for _ in range(rows)]


STRUCTURED = [
    [{0: F(1)}, {1: F(1)}, {2: F(1)}],                                   # a selection: a view of x
    [{c: F(1)} for c in (0, 2, 4)] + [{c: F(-1)} for c in (0, 2, 4)],    # ± copies, column step 2
    [{0: F(1), 3: F(-1)}, {1: F(1), 4: F(-1)}, {}, {2: F(1, 2)}],        # a zero row: not assigning
    [{4: F(1)}, {3: F(1)}, {2: F(1)}],                                   # decreasing columns: one run each
]


@pytest.mark.parametrize("case", range(len(STRUCTURED) + 6))
def test_map_runs_and_gemm_agree_with_the_matrix(case):
    rng = random.Random(case)
    rows = STRUCTURED[case] if case < len(STRUCTURED) else sparse_rows(rng, 7, 6, [0.1, 0.3, 0.9][case % 3])
    cols, tokens, batch = 6, 3, 5
    bias = None if case % 2 else [[F(rng.randint(-4, 4), 3) for _ in range(tokens)] for _ in rows]
    m = _Map(rows, cols, torch.float64, bias)
    assert (m.runs is None) == (_runs(rows) is None)
    x = torch.randn(cols, tokens, batch, dtype=torch.float64)
    expected = torch.einsum("rc,ctb->rtb", dense(rows, cols), x)
    if bias is not None:
        expected = expected + dense([dict(enumerate(b)) for b in bias], tokens).unsqueeze(-1)
    assert torch.allclose(m(x), expected, atol=1e-12)
    y = torch.randn(len(rows), tokens, batch, dtype=torch.float64)
    assert torch.allclose(m.accumulate(y.clone(), x), y + expected, atol=1e-12)
    one_token = x[:, :1]                                                 # broadcast over the tokens
    assert torch.allclose(m.accumulate(y.clone(), one_token), y + m(one_token).expand_as(y), atol=1e-12)


def test_structured_maps_take_few_runs():
    assert _runs(STRUCTURED[0]) == [[(slice(0, 3, 1), slice(0, 3, 1), 1)]]
    assert _runs(STRUCTURED[1]) == [[(slice(0, 3, 1), slice(0, 5, 2), 1), (slice(3, 6, 1), slice(0, 5, 2), -1)]]
    assert _runs([{c: F(1) for c in range(9)}] * 3, limit=8) is None     # many non-zeros: a GEMM
    assert _Map(STRUCTURED[0], 6, torch.float32).view and not _Map(STRUCTURED[1], 6, torch.float32).view


def test_runs_in_place_equal_runs_on_a_copy():
    # the advance block's shape on coordinates (h, z, out): h ← h − h + out, z ← z − z, out ← out − out
    n = 4
    rows = [{i: F(-1), 2 * n + i: F(1)} for i in range(n)] + [{n + i: F(-1)} for i in range(2 * n)]
    runs = [r for group in _runs(rows) for r in group]
    positions = list(range(3 * n))
    order = _in_place(runs, positions, positions)
    assert order is not None
    X = torch.randn(3 * n, 2, 5, dtype=torch.float64)
    snapshot = X.clone()
    expected = X.clone()
    for rs, cs, a in runs:
        expected[rs].add_(snapshot[cs], alpha=float(a))
    for rs, cs, a in order:
        X[rs].add_(X[cs], alpha=float(a))
    assert torch.equal(X, expected)
    # a swap reads what the other run writes, both ways: no in-place order
    swap = [(slice(0, 1, 1), slice(1, 2, 1), 1.0), (slice(1, 2, 1), slice(0, 1, 1), 1.0)]
    assert _in_place(swap, [0, 1], [0, 1]) is None


def test_weight_rows_dense_or_sparse():
    assert _entries([F(0), F(1, 2), F(0), F(-3)]) == _entries({1: F(1, 2), 2: F(0), 3: F(-3)}) == {1: F(1, 2), 3: F(-3)}


def key_value_transformer(tokens: int, value_is_key: bool) -> Transformer:
    """Coordinates: 1, x, the position one-hot, k, out.  A ReLU pair, shifted off in the last
    token, writes ``k = x`` in every token but the last (``k = 0`` there); one head with query 1 and
    key k, value k (a max head) or ``1 + t`` (a general head): for x > 0 the first T − 1 tokens tie,
    for x < 0 the last token wins, at x = 0 all tie and the value is the mean."""
    T = tokens
    width = T + 4
    k, out, last = T + 2, T + 3, T + 1
    row = lambda entries: [F(entries.get(c, 0)) for c in range(width)]
    ff = FeedForward([row({1: 1, last: -4}), row({1: -1, last: -4})], [F(0), F(0)],
                     [[F(1), F(-1)] if r == k else [F(0), F(0)] for r in range(width)], [F(0)] * width)
    value = row({k: 1}) if value_is_key else row({0: 1, **{2 + t: t for t in range(T)}})
    head = Head([row({0: 1})], [row({k: 1})], [value], [[F(int(r == out))] for r in range(width)])
    embed = [[F(int(r == 1))] for r in range(width)]
    position = [row({0: 1, 2 + t: 1}) for t in range(T)]
    return Transformer(Box((F(-1),), (F(1),)), T, width, "hardmax", embed, position, [ff, Attention([head])], 0,
                       [row({out: 1})], [F(0)], {})


@pytest.mark.parametrize("value_is_key", [True, False])
def test_hardmax_ties_in_max_heads_and_general_heads(value_is_key):
    tf = key_value_transformer(3, value_is_key)
    module = to_module(tf, torch.float32)
    assert module.blocks[1].maximum == value_is_key
    pts = [[F(0)], [F(1, 3)], [F(-1, 3)], [F(1, 2 ** 30)], [F(-1)]]
    exact = tf.evaluate_batch(pts)
    assert exact[0] != exact[1]
    for dtype in (torch.float32, torch.float64):
        out = evaluate(to_module(tf, dtype), exact_points_tensor(pts, dtype)).double().tolist()
        assert all(abs(F(f) - e) < F(1, 10 ** 6) for row, ref in zip(out, exact) for f, e in zip(row, ref))
    # the tie itself is exact in float: every token scores 0 at x = 0
    tie = evaluate(module, exact_points_tensor(pts[:1], torch.float32)).double().tolist()[0]
    assert [F(v) for v in tie] == exact[0]


def test_random_relu_nets_float32_within_1e5():
    from exactform.benchmarks.torch_bench import relu_net
    torch.set_num_threads(1)
    rng = random.Random(3)
    pts = [[F(rng.randint(-2 ** 20, 2 ** 20), 2 ** 20) for _ in range(5)] for _ in range(60)]
    for width, seed in ((50, 0), (20, 1)):
        net = relu_net(width, seed=seed)
        exact = net.evaluate_batch(pts)
        assert float_error(compile_maxout(net), pts, exact=exact).worst < F(1, 10 ** 5)
