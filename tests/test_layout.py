"""exactform.layout: the token-shift layout is checked on construction, and the compiled
Transformers use exactly the coordinates, block shapes, shifts and sizes it states."""
import random

import pytest
from exactform.proofs.nets import random_net, relu_net

from exactform.construct.maxout_to_transformer import compile_maxout, measured_sizes, shift_constants
from exactform.geometry.bounds import magnitude, maxout_bounds
from exactform.layout import NAMES, SHAPES, Block, Layout, closed_sizes, padded_piece
from exactform.models import Attention

NETS = [relu_net(random.Random(0), [2, 3, 2]), random_net(random.Random(1), [3, 4, 4, 2], 4, 3),
        random_net(random.Random(2), [1, 1], 1), random_net(random.Random(3), [2, 5, 1], 3, 2)]


@pytest.mark.parametrize("tokens,n", [(1, 1), (2, 3), (4, 50)])
def test_blocks_tile_the_column(tokens, n):
    lay = Layout(tokens, n)
    blocks = [lay.blocks[name] for name in NAMES]
    assert blocks[0].start == 0 and blocks[-1].stop == lay.width == 1 + tokens + 3 * n
    assert all(a.stop == b.start for a, b in zip(blocks, blocks[1:]))
    assert [len(b) for b in blocks] == [1, tokens, n, n, n]
    coords = [lay.const] + [lay.shift(j) for j in range(tokens)] + [f(i) for f in (lay.h, lay.z, lay.out) for i in range(n)]
    assert coords == list(range(lay.width))


def test_construction_and_indexing_are_checked():
    with pytest.raises(ValueError):
        Layout(0, 3)
    with pytest.raises(ValueError):
        Layout(2, 0)
    with pytest.raises(ValueError):
        Layout(2.0, 3)
    with pytest.raises(ValueError):
        Block("h", 3, 2)
    lay = Layout(2, 3)
    for get, size in ((lay.shift, 2), (lay.h, 3), (lay.z, 3), (lay.out, 3)):
        with pytest.raises(IndexError):
            get(size)
        with pytest.raises(IndexError):
            get(-1)
    with pytest.raises(IndexError):
        lay.blocks["h"].first(4)


def test_declared_layout_is_read_back_and_tampering_refused():
    lay = Layout(3, 4)
    assert Layout.from_json(lay.to_json()) == lay
    good = lay.to_json()
    for bad in ({**good, "construction": "other"}, {**good, "z": [9, 13]}, {**good, "h": [4, 9]},
                {k: v for k, v in good.items() if k != "out"}, {**good, "extra": [0, 1]}, {**good, "shift": "1:4"}, {**good, "shift": [1.0, 4.0]}, {**good, "shift": [True, 4]}):
        with pytest.raises(ValueError):
            Layout.from_json(bad)


def reads_writes(block, width: int) -> tuple[set[int], set[int]]:
    """Coordinates a compiled block reads (non-zero input columns) and writes (non-zero output rows)."""
    if isinstance(block, Attention):
        reads = {c for h in block.heads for m in (h.query, h.key, h.value) for row in m for c in range(width) if row.get(c)}
        writes = {r for h in block.heads for r in range(width) if any(h.output[r].values())}
    else:
        reads = {c for row in block.w1 for c in range(width) if row.get(c)}
        writes = {r for r in range(width) if any(block.w2[r].values()) or block.b2[r]}
    return reads, writes


@pytest.mark.parametrize("net", NETS)
def test_compiled_blocks_have_the_stated_shapes(net):
    tf = compile_maxout(net)
    lay = Layout.from_json(tf.layout)
    assert (lay.tokens, lay.n, lay.width) == (net.max_rank, max(net.widths), tf.width)
    for b, block in enumerate(tf.blocks):
        shape, layer = SHAPES[b % 3], net.layers[b // 3]
        reads, writes = reads_writes(block, tf.width)
        assert block.kind == shape.kind
        assert reads <= lay.coordinates(shape.reads), shape.name
        assert writes <= lay.coordinates(shape.writes), shape.name
        if shape.name in ("pieces", "max"):
            target = lay.z if shape.name == "pieces" else lay.out
            assert writes == {target(i) for i in range(layer.units)}
    assert not any(any(tf.embed_weight[lay.shift(j)].values()) for j in range(lay.tokens))


@pytest.mark.parametrize("net", NETS)
def test_shifts_are_least_powers_of_two_over_twice_the_padded_piece(net):
    R, pieces = shift_constants(net), maxout_bounds(net).pieces
    for l, layer in enumerate(net.layers):
        for i, rank in enumerate(layer.ranks):
            for j in range(net.max_rank):
                p = padded_piece(rank, j)
                assert p == (j if j < rank else rank - 1)
                r, need = R[l][i][j], 2 * magnitude(pieces[l][i][p])
                assert r.numerator & (r.numerator - 1) == 0 and r.denominator & (r.denominator - 1) == 0
                assert r >= need and (r / 2 < need if need > 0 else r == 1)


@pytest.mark.parametrize("net", NETS)
def test_closed_sizes_are_the_built_sizes(net):
    sizes, measured = closed_sizes(net.widths, net.max_rank, net.output_dim), measured_sizes(compile_maxout(net))
    assert [sizes.blocks, sizes.tokens, sizes.width, sizes.heads, sizes.hidden, sizes.parameters] == \
        [measured[k] for k in ("blocks", "tokens", "width", "heads", "hidden", "parameters")]


def test_a_wrong_formula_is_caught():
    """The size test is not vacuous: a net one unit wider has other sizes."""
    net = NETS[0]
    wider = closed_sizes([w + 1 for w in net.widths], net.max_rank, net.output_dim)
    assert wider.parameters != measured_sizes(compile_maxout(net))["parameters"]
