"""Exact region counts (C7): hand-checkable counts, Transformers vs their source nets, methods
agreeing with each other, the region-rich family, and where a float grid miscounts."""
from fractions import Fraction as F

import numpy as np
import pytest

from exactform.construct.cpwl import expression_net
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.construct.region_rich import region_rich_net, seed_bound
from exactform.geometry.regions import RegionLimit, count_regions
from exactform.models import Box, MaxoutLayer, MaxoutNet

ONE, ZERO = F(1), F(0)
SQUARE = Box((F(-1), F(-1)), (ONE, ONE))


def relu_net(box, hidden, readout, bias=ZERO):
    """One ReLU layer: ``hidden`` = [(weights, bias)], read-out weights."""
    layer = MaxoutLayer([[w, [ZERO] * len(w)] for w, _ in hidden], [[b, ZERO] for _, b in hidden])
    return MaxoutNet(box, [layer], [readout], [bias])


def tent(depth):
    """The sawtooth: the tent map composed ``depth`` times on [0, 1] (2^depth pieces)."""
    first = MaxoutLayer([[[ONE], [ZERO]], [[ONE], [ZERO]]], [[ZERO, ZERO], [F(-1, 2), ZERO]])
    fold = MaxoutLayer([[[F(2), F(-4)], [ZERO, ZERO]], [[F(2), F(-4)], [ZERO, ZERO]]], [[ZERO, ZERO], [F(-1, 2), ZERO]])
    return MaxoutNet(Box((ZERO,), (ONE,)), [first] + [fold] * (depth - 1), [[F(2), F(-4)]], [ZERO])


def test_abs_has_two_regions():
    net = relu_net(Box((-ONE,), (ONE,)), [([ONE], ZERO), ([-ONE], ZERO)], [ONE, ONE])
    assert count_regions(net).to_json() == {"regions": 2, "activation_regions": 2, "method": "exact-1d-breakpoints"}


@pytest.mark.parametrize("depth", [1, 2, 5, 8])
def test_sawtooth_has_two_to_the_depth_regions(depth):
    result = count_regions(tent(depth))
    assert (result.regions, result.activation_regions) == (2 ** depth, 2 ** depth)


def test_abs_x_plus_abs_y_has_four_regions_by_every_method():
    net = expression_net("Abs(x) + Abs(y)", SQUARE).net
    for method in ("polygon", "polytope"):
        assert count_regions(net, method).regions == 4
    assert count_regions(net, parts=3).regions == 4        # sub-boxes merged across their facets


@pytest.mark.parametrize("k", [2, 3, 5])
def test_max_of_k_lines_in_2d(k):
    # tangent planes of x² + y² at k points of the square: plane j is the max exactly on the
    # Voronoi cell of point j, so there are k regions
    pts = [(F(j, k) - F(1, 2), F(j * j % k, k) - F(1, 3)) for j in range(k)]
    terms = ", ".join(f"{2 * a}*x + {2 * b}*y - {a * a + b * b}" for a, b in pts)
    assert count_regions(expression_net(f"Max({terms})", SQUARE).net).regions == k


def test_relus_that_cancel_are_one_region():
    # ReLU(x) − ReLU(−x) − x ≡ 0 and ReLU(y) − ReLU(−y) = y: the function is affine (one region),
    # though the net has 4 activation regions.
    net = relu_net(SQUARE, [([ONE, ZERO], ZERO), ([-ONE, ZERO], ZERO), ([ZERO, ONE], ZERO), ([ZERO, -ONE], ZERO)],
                   [ONE, -ONE, ONE, -ONE])
    result = count_regions(net)
    assert (result.regions, result.activation_regions) == (1, 4)
    assert count_regions(net, "polytope").regions == 1


def test_three_dimensional_count_by_both_exact_methods():
    box = Box((-ONE,) * 3, (ONE,) * 3)
    net = expression_net("Abs(x) + Abs(y) + Abs(z)", box).net
    assert count_regions(net).to_json() == {"regions": 8, "activation_regions": 8, "method": "exact-double-description"}
    assert count_regions(net, "polytope").to_json() == {"regions": 8, "activation_regions": 8, "method": "exact-lp"}


@pytest.mark.parametrize("expr", ["Abs(x) + Abs(y)", "Max(x, 2*y) - Abs(x - y)/3", "Min(Abs(x), y + 1/2)"])
def test_transformer_has_the_regions_of_its_source_net(expr):
    net = expression_net(expr, SQUARE).net
    assert count_regions(compile_maxout(net)).regions == count_regions(net).regions


def test_transformer_of_sawtooth_matches():
    net = tent(4)
    assert count_regions(compile_maxout(net)).regions == count_regions(net).regions == 16


def test_random_relu_net_counts_agree_across_methods_and_splits():
    rng = np.random.default_rng(7)
    hidden = [([F(int(a), 4) for a in rng.integers(-4, 5, 2)], F(int(rng.integers(-3, 4)), 4)) for _ in range(6)]
    net = relu_net(SQUARE, hidden, [F(int(a)) for a in rng.integers(-3, 4, 6)])
    a, b, c = count_regions(net), count_regions(net, "polytope"), count_regions(net, parts=2)
    assert a.regions == b.regions == c.regions
    assert a.activation_regions == b.activation_regions == c.activation_regions


def test_region_rich_family_meets_the_bound_exactly_at_small_depth():
    for (m, T, q, D) in [(1, 2, 1, 9), (2, 3, 1, 6), (1, 2, 2, 9), (2, 2, 2, 6)]:
        assert count_regions(region_rich_net(m, T, q, D)).regions == seed_bound(m, T, q, D)


def test_parity_limit_is_refused():
    with pytest.raises(ValueError, match="parity"):
        region_rich_net(1, 3, 1, 6)


def test_max_regions_stops_with_a_clear_error():
    with pytest.raises(RegionLimit, match="max-regions"):
        count_regions(tent(6), max_regions=10)


def test_a_dense_float_grid_miscounts_where_the_exact_method_does_not():
    # a tent of width 1/150 between two neighbouring points of a 101-point grid on [-1, 1]:
    # the grid sees f = 0 everywhere (1 region); exactly, there are 4
    net = expression_net("Max(x - 1/300, 0) - 2*Max(x - 2/300, 0) + Max(x - 3/300, 0)", Box((-ONE,), (ONE,))).net
    assert count_regions(net).regions == 4
    xs = np.linspace(-1, 1, 101)
    ys = np.array([float(net([F(x)])[0]) for x in xs])
    slopes = np.round(np.diff(ys) / np.diff(xs), 9)
    float_regions = 1 + int(np.sum(slopes[1:] != slopes[:-1]))
    assert float_regions == 1


def random_relu_net(box, width, seed):
    rng = np.random.default_rng(seed)
    hidden = [([F(int(a), 4) for a in rng.integers(-4, 5, box.dim)], F(int(rng.integers(-3, 4)), 4)) for _ in range(width)]
    return relu_net(box, hidden, [F(int(a)) for a in rng.integers(-3, 4, width)])


SPLIT_NETS = {
    "tent": tent(5),
    "relu-1d": random_relu_net(Box((-ONE,), (ONE,)), 8, 3),
    "narrow-tent": expression_net("Max(x - 1/300, 0) - 2*Max(x - 2/300, 0) + Max(x - 3/300, 0)", Box((-ONE,), (ONE,))).net,
    "abs-2d": expression_net("Abs(x) + Abs(y)", SQUARE).net,
    "relu-2d": random_relu_net(SQUARE, 8, 11),
    "max-abs-2d": expression_net("Max(x, 2*y) - Abs(x - y)/3", SQUARE).net,
    "region-rich": region_rich_net(1, 2, 2, 9),
    "transformer-2d": compile_maxout(expression_net("Min(Abs(x), y + 1/2)", SQUARE).net),
}


@pytest.mark.parametrize("name", sorted(SPLIT_NETS))
def test_counts_do_not_depend_on_the_split(name):
    # the merge inside each sub-box plus the join across sub-box facets is the whole merge
    net = SPLIT_NETS[name]
    counts = {parts: count_regions(net, parts=parts).to_json() for parts in (1, 2, 3, 4)}
    assert len({str(c) for c in counts.values()}) == 1, counts


def test_lp_counts_do_not_depend_on_the_split():
    net = expression_net("Abs(x) + Max(y, 2*z - 1/3) - Abs(x - y)", Box((-ONE,) * 3, (ONE,) * 3)).net
    counts = [count_regions(net, parts=parts).to_json() for parts in (1, 2)]
    assert counts[0] == counts[1]


def test_counts_on_worker_processes_match_serial():
    from exactform.executor import LocalProcesses
    with LocalProcesses(2) as executor:
        for name in ("relu-1d", "relu-2d", "region-rich"):
            net = SPLIT_NETS[name]
            assert count_regions(net, parts=3, executor=executor).to_json() == count_regions(net).to_json()


# --- n-D: cells with their vertices (double description) -------------------------------------------

def brute_vertices(cell):
    """Every point where d linearly independent constraints vanish and all hold (exact)."""
    from itertools import combinations

    import flint

    from exactform.geometry.cells import evaluate
    d = len(cell.vertices[0])
    found = set()
    for rows in combinations(cell.constraints, d):
        A = flint.fmpq_mat([list(g[:-1]) for g in rows])
        if A.rank() < d:
            continue
        x = A.solve(flint.fmpq_mat([[-g[-1]] for g in rows]))
        point = tuple(x[k, 0] for k in range(d))
        if all(evaluate(g, point) >= 0 for g in cell.constraints):
            found.add(point)
    return found


@pytest.mark.parametrize("seed", range(6))
def test_cuts_keep_exactly_the_vertices_and_their_incidences(seed):
    # random cuts, half of them through an existing vertex (degenerate): the vertex list stays
    # exactly the polytope's vertices (brute force), without repeats, with exact incidences
    from exactform.geometry.cells import Vertices, box_cell, evaluate
    rng = np.random.default_rng(seed)
    d = 3 + seed % 2
    cell = box_cell(Box((-ONE,) * d, (ONE,) * d), "vertices")
    for step in range(6):
        a = [F(int(v), 4) for v in rng.integers(-4, 5, d)]
        if not any(a):
            continue
        if step % 2:
            v = cell.vertices[int(rng.integers(len(cell.vertices)))]
            c = -sum(x * y for x, y in zip(a, (F(int(t.p), int(t.q)) for t in v)))
        else:
            c = F(int(rng.integers(-4, 5)), 8)
        from exactform.geometry.cells import rational
        g = tuple(rational(x) for x in a) + (rational(c),)
        parts = [p for p in cell.cut(g) if p is not None]
        assert parts
        cell = parts[int(rng.integers(len(parts)))]
        assert isinstance(cell, Vertices)
        assert len(set(cell.vertices)) == len(cell.vertices)
        assert set(cell.vertices) == brute_vertices(cell)
        for v, t in zip(cell.vertices, cell.tight):
            assert t == sum(1 << i for i, h in enumerate(cell.constraints) if evaluate(h, v) == 0)


def dyadic_relu_net(widths, seed, zeros=0.3):
    """A deep ReLU net with small dyadic weights, a share of them zero (coinciding and parallel
    hyperplanes, neurons dead on whole cells, equal output maps on neighbouring cells)."""
    rng = np.random.default_rng(seed)
    layers = []
    for n_in, n_out in zip(widths, widths[1:-1]):
        W = rng.integers(-4, 5, (n_out, n_in)) * (rng.random((n_out, n_in)) > zeros)
        b = rng.integers(-2, 3, n_out)
        layers.append(MaxoutLayer([[[F(int(w), 4) for w in row], [ZERO] * n_in] for row in W],
                                  [[F(int(c), 4), ZERO] for c in b]))
    readout = [[F(int(w)) for w in rng.integers(-2, 3, widths[-2])]]
    return MaxoutNet(Box((-ONE,) * widths[0], (ONE,) * widths[0]), layers, readout, [ZERO])


@pytest.mark.parametrize("widths,seed", [([3, 5, 4, 1], 0), ([3, 6, 3, 1], 1), ([4, 4, 3, 1], 2), ([3, 4, 4, 1], 3)])
def test_vertices_and_exact_lp_give_the_same_counts(widths, seed):
    net = dyadic_relu_net(widths, seed)
    a, b = count_regions(net), count_regions(net, "polytope")
    assert (a.regions, a.activation_regions) == (b.regions, b.activation_regions)
    assert a.regions < a.activation_regions or seed != 0       # merges do occur (seed 0)


def test_vertices_counts_do_not_depend_on_the_split():
    net = dyadic_relu_net([3, 5, 4, 1], 0)
    assert count_regions(net, parts=2).to_json() == count_regions(net).to_json()


def test_faces_meet_agrees_with_the_exact_lp():
    # every pair of cells with opposite constraints: the fast test equals the LP on that hyperplane
    from exactform.geometry.regions import _faces_meet, _meet_on, cells_in_box
    net = dyadic_relu_net([3, 5, 4, 1], 4)
    pieces = cells_in_box(net, net.domain)
    outcomes = []
    for n, P in enumerate(pieces[:25]):
        for Q in pieces[n + 1:]:
            for i, h in enumerate(P.cell.constraints):
                neg = tuple(-v for v in h)
                if neg in Q.cell.constraints:
                    j = Q.cell.constraints.index(neg)
                    others = [g for k, g in enumerate(P.cell.constraints) if k != i] + \
                             [g for k, g in enumerate(Q.cell.constraints) if k != j]
                    outcomes.append(_meet_on(h, others))
                    assert _faces_meet(P.cell, i, Q.cell, j) == outcomes[-1]
    assert outcomes.count(True) > 10 and outcomes.count(False) > 10


def test_transformer_in_three_dimensions_has_the_regions_of_its_source():
    box = Box((-ONE,) * 3, (ONE,) * 3)
    net = expression_net("Abs(x) + Max(y, 2*z - 1/3) - Abs(x - y)", box).net
    tf = compile_maxout(net)
    assert count_regions(tf).regions == count_regions(net).regions == 8
    assert count_regions(tf).to_json()["activation_regions"] == count_regions(tf, "polytope").activation_regions


# --- regions --cells -------------------------------------------------------------------------------

def read_cells(tmp_path, net, *flags):
    import json

    from exactform.cli import main
    from exactform.formats import write_json
    write_json(tmp_path / "net.json", net.to_json())
    assert main(["regions", str(tmp_path / "net.json"), "--cells", str(tmp_path / "cells.jsonl"), *flags]) == 0
    header, *cells = [json.loads(line) for line in (tmp_path / "cells.jsonl").read_text().splitlines()]
    return header, cells


@pytest.mark.parametrize("workers", ["1", "2"])
def test_cells_file_holds_every_cell_exactly(tmp_path, workers):
    net = dyadic_relu_net([3, 5, 4, 1], 0)
    header, cells = read_cells(tmp_path, net, "--workers", workers)
    result = count_regions(net)
    assert header["cells"] == len(cells) == result.activation_regions and header["regions"] == result.regions
    planes = []
    for n, c in enumerate(cells):
        assert c["cell"] == n
        hs = [[F(v) for v in h] for h in c["halfspaces"]]
        vs = [[F(v) for v in x] for x in c["vertices"]]
        # every vertex satisfies every halfspace, and each halfspace is tight on ≥ 3 vertices (a facet)
        for h in hs:
            values = [sum(a * x for a, x in zip(h, v)) + h[-1] for v in vs]
            assert min(values) >= 0 and values.count(0) >= 3
        # the output map is the net's, exactly, at the centroid of the cell
        centre = [sum(col) / len(vs) for col in zip(*vs)]
        (out,) = [[F(v) for v in m] for m in c["output"]]
        assert sum(a * x for a, x in zip(out, centre)) + out[-1] == net(centre)[0]
        planes.append({tuple(h) for h in hs})
    for n, c in enumerate(cells):
        for m in c["neighbours"]:
            assert n in cells[m]["neighbours"]
            assert any(tuple(-v for v in h) in planes[m] for h in planes[n])     # opposite sides of a facet


def test_cells_neighbours_agree_with_the_exact_lp(tmp_path):
    from exactform.geometry.regions import _share_facet, cells_in_box
    from exactform.geometry.cells import Polytope
    net = dyadic_relu_net([3, 4, 3, 1], 5)
    _, cells = read_cells(tmp_path, net)
    pieces = cells_in_box(net, net.domain)
    lp = [Polytope(tuple(p.cell.constraints)) for p in pieces]
    for n in range(len(pieces)):
        assert cells[n]["neighbours"] == [m for m in range(len(pieces)) if m != n and _share_facet(lp[n], lp[m])]


def test_cells_file_in_2d_lists_the_quadrants(tmp_path):
    header, cells = read_cells(tmp_path, expression_net("Abs(x) + Abs(y)", SQUARE).net)
    assert header["method"] == "exact-2d-polygons" and len(cells) == 4
    assert all(len(c["neighbours"]) == 2 and len(c["halfspaces"]) == 4 for c in cells)


def test_cells_file_in_a_missing_folder_is_refused_before_any_work(tmp_path, capsys):
    from exactform.cli import main
    from exactform.formats import write_json
    write_json(tmp_path / "net.json", tent(3).to_json())
    assert main(["regions", str(tmp_path / "net.json"), "--cells", str(tmp_path / "no" / "cells.jsonl")]) == 2
    assert "--cells" in capsys.readouterr().err


def test_cells_distributed_to_workers_are_the_serial_cells(monkeypatch):
    from exactform.executor import LocalProcesses
    from exactform.geometry import regions
    monkeypatch.setattr(regions, "DISTRIBUTE_AT", 1)          # distribute after the first stage
    net = dyadic_relu_net([3, 5, 4, 1], 0)
    serial = regions.cells_in_box(net, net.domain)
    with LocalProcesses(2) as executor:
        spread = regions.cells_in_box(net, net.domain, executor=executor)
        assert count_regions(net, executor=executor).to_json() == count_regions(net).to_json()
    assert [(p.pattern, p.output, p.cell) for p in spread] == [(p.pattern, p.output, p.cell) for p in serial]
