"""Exact region counts (C7): hand-checkable counts, Transformers vs their source nets, methods
agreeing with each other, the region-rich family, and where a float grid miscounts."""
from fractions import Fraction as F

import numpy as np
import pytest

from exactform.benchmarks.regions_bench import random_relu_net as bench_net
from exactform.construct.cpwl import expression_net
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.construct.region_rich import region_rich_net, seed_bound
from exactform.geometry.regions import RegionLimit, cells_in_box, components, count_regions
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
    from exactform.geometry.facets import _faces_meet, _meet_on
    from exactform.geometry.regions import cells_in_box
    net = dyadic_relu_net([3, 5, 4, 1], 4)
    pieces = cells_in_box(net, net.domain)
    outcomes = []
    for n, P in enumerate(pieces[:9]):                  # 25 meeting pairs, 655 not
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


# --- regions --cells: every written cell re-checked independently ---------------------------------

def read_cells(tmp_path, net, *flags):
    import json

    from exactform.cli import main
    from exactform.formats import write_json
    write_json(tmp_path / "net.json", net.to_json())
    assert main(["regions", str(tmp_path / "net.json"), "--cells", str(tmp_path / "cells.jsonl"), *flags]) == 0
    header, *cells = [json.loads(line) for line in (tmp_path / "cells.jsonl").read_text().splitlines()]
    assert sorted(c["cell"] for c in cells) == list(range(len(cells))) == list(range(header["cells"]))
    return header, sorted(cells, key=lambda c: c["cell"])


def value(g, x):
    return sum(a * v for a, v in zip(g, x)) + g[-1]


def maxout_pattern(net, x):
    """The choice of every unit at x, layer by layer (ties: the smallest index), computed afresh."""
    pattern, h = [], list(x)
    for layer in net.layers:
        out = []
        for ws, bs in zip(layer.weight, layer.bias):
            vals = [sum(w * v for w, v in zip(wr, h)) + b for wr, b in zip(ws, bs)]
            pattern.append(vals.index(max(vals)))
            out.append(max(vals))
        h = out
    return pattern


def cell_vertices(c, d):
    """The cell's vertices: listed (polygons, n-D cells) or the interval's endpoints."""
    if "vertices" in c:
        return [[F(v) for v in x] for x in c["vertices"]]
    assert d == 1 and len(c["halfspaces"]) == 2
    return sorted([[-F(h[1]) / F(h[0])] for h in c["halfspaces"]])


def affine_dim(points) -> int:
    """The dimension of the affine hull of ``points`` (Fractions), exactly."""
    import flint
    if not points:
        return -1
    rows = [[flint.fmpq((a - b).numerator, (a - b).denominator) for a, b in zip(p, points[0])] for p in points[1:]]
    return flint.fmpq_mat(rows).rank() if rows else 0


def opposite(h, g) -> bool:
    """g = −c·h for some c > 0: the same hyperplane, the other side."""
    k = next(i for i, a in enumerate(h) if a)
    c = -g[k] / h[k]
    return c > 0 and all(b == -c * a for a, b in zip(h, g))


def share_facet(P, Q, d) -> bool:
    """The cells P, Q (halfspaces) meet in a (d − 1)-dimensional set (brute force): on a
    hyperplane h of P that is one of Q too (the other side), the vertices of the common face
    {h = 0, every other halfspace of P and Q ≥ 0} (solutions of h and d − 1 others) span d − 1."""
    from itertools import combinations

    import flint

    def q(a):
        return flint.fmpq(a.numerator, a.denominator)
    for h in P:
        if not any(opposite(h, g) for g in Q):
            continue
        others = [g for g in P + Q if g is not h and not opposite(h, g)]
        face = set()
        for rows in combinations(others, d - 1):
            rows = (h,) + rows
            A = flint.fmpq_mat([[q(a) for a in g[:-1]] for g in rows])
            if A.rank() < d:
                continue
            sol = A.solve(flint.fmpq_mat([[-q(g[-1])] for g in rows]))
            x = tuple(F(int(sol[k, 0].p), int(sol[k, 0].q)) for k in range(d))
            if all(value(g, x) >= 0 for g in others):
                face.add(x)
        if affine_dim(sorted(face)) == d - 1:
            return True
    return False


def check_cells(net, header, cells, pattern_of=maxout_pattern, facets_brute=True, model=None):
    """Each cell re-checked from its line alone: its vertices satisfy its halfspaces, each
    halfspace is tight on a facet, its centroid is strictly inside and has the recorded pattern
    there, the output map equals the net at the centroid and every vertex; neighbours are symmetric
    and share a facet (brute force), and non-neighbours do not; the counts are the components."""
    d = header["input_dim"]
    planes = []
    for c in cells:
        hs = [[F(v) for v in h] for h in c["halfspaces"]]
        vs = cell_vertices(c, d)
        for h in hs:
            values = [value(h, v) for v in vs]
            assert min(values) >= 0 and affine_dim([v for v, t in zip(vs, values) if t == 0]) == d - 1
        centre = [sum(col) / len(vs) for col in zip(*vs)]
        assert all(value(h, centre) > 0 for h in hs)
        if pattern_of:
            assert c["pattern"] == pattern_of(net, centre)
        out = [[F(v) for v in m] for m in c["output"]]
        for x in [centre] + vs:
            assert [value(m, x) for m in out] == list(net(x))
        planes.append(hs)
    for n, c in enumerate(cells):
        for m in c["neighbours"]:
            assert n in cells[m]["neighbours"] and m != n
    if facets_brute:
        for n in range(len(cells)):
            for m in range(n + 1, len(cells)):
                assert share_facet(planes[n], planes[m], d) == (m in cells[n]["neighbours"]), (n, m)
    for key, count in (("output", "regions"), ("pattern", "activation_regions")):
        pairs = [(n, m) for n, c in enumerate(cells) for m in c["neighbours"] if c[key] == cells[m][key]]
        assert components(len(cells), pairs) == header[count]
    assert count_regions(model or net).to_json() == {k: header[k] for k in ("regions", "activation_regions", "method")}


def maxout_net(box, widths, pieces, seed):
    """A Maxout net with ``pieces`` small dyadic affine pieces per unit (some equal: degenerate)."""
    rng = np.random.default_rng(seed)
    layers = []
    for n_in, n_out in zip(widths, widths[1:-1]):
        W = rng.integers(-3, 4, (n_out, pieces, n_in))
        b = rng.integers(-2, 3, (n_out, pieces))
        layers.append(MaxoutLayer([[[F(int(w), 4) for w in p] for p in u] for u in W],
                                  [[F(int(c), 4) for c in u] for u in b]))
    return MaxoutNet(box, layers, [[F(int(w)) for w in rng.integers(-2, 3, widths[-2])]], [ZERO])


CELL_NETS = {
    "tent-1d": tent(4),
    "relu-1d": random_relu_net(Box((-ONE,), (ONE,)), 8, 3),
    "relu-2d": random_relu_net(SQUARE, 8, 11),
    "maxout3-2d": maxout_net(SQUARE, [2, 4, 3, 1], 3, 1),
    "region-rich-2d": region_rich_net(1, 2, 2, 6),
    "relu-3d-degenerate": dyadic_relu_net([3, 5, 4, 1], 0),
    "relu-3d": dyadic_relu_net([3, 4, 3, 1], 5),
    "maxout3-3d": maxout_net(Box((-ONE,) * 3, (ONE,) * 3), [3, 3, 2, 1], 3, 2),
}


@pytest.mark.parametrize("name", sorted(CELL_NETS))
def test_cells_file_holds_every_cell_exactly(tmp_path, name):
    net = CELL_NETS[name]
    header, cells = read_cells(tmp_path, net)
    check_cells(net, header, cells, facets_brute=len(cells) <= 120)


@pytest.mark.parametrize("corrupt", ["neighbour dropped", "neighbour added", "output changed", "pattern changed",
                                     "halfspace moved", "count changed"])
def test_the_cell_check_rejects_a_corrupted_file(tmp_path, corrupt):
    net = CELL_NETS["relu-2d"]
    header, cells = read_cells(tmp_path, net)
    c = next(c for c in cells if len(c["neighbours"]) >= 2)
    m = c["neighbours"][0]
    if corrupt == "neighbour dropped":
        c["neighbours"].remove(m)
        cells[m]["neighbours"].remove(c["cell"])
    elif corrupt == "neighbour added":
        far = next(k for k in range(len(cells)) if k != c["cell"] and k not in c["neighbours"])
        c["neighbours"].append(far)
        cells[far]["neighbours"].append(c["cell"])
    elif corrupt == "output changed":
        c["output"][0][-1] = str(F(c["output"][0][-1]) + F(1, 10 ** 9))
    elif corrupt == "pattern changed":
        c["pattern"][0] = 1 - c["pattern"][0]
    elif corrupt == "halfspace moved":
        c["halfspaces"][0][-1] = str(F(c["halfspaces"][0][-1]) + F(1, 10 ** 6))
    else:
        header["regions"] += 1
    with pytest.raises(AssertionError):
        check_cells(net, header, cells)


def test_cells_of_a_transformer_are_its_source_nets(tmp_path):
    # the Transformer's own cells (hardmax patterns) carry the source net's output maps
    net = expression_net("Max(x, 2*y) - Abs(x - y)/3", SQUARE).net
    tf = compile_maxout(net)
    header, cells = read_cells(tmp_path, tf)
    check_cells(net, header, cells, pattern_of=None, model=tf)


def test_cells_neighbours_do_not_depend_on_the_method(tmp_path):
    # vertices cells (facets matched exactly) and exact-LP cells (every constraint, matched by LP)
    net = dyadic_relu_net([3, 5, 4, 1], 0)
    _, by_vertices = read_cells(tmp_path, net)
    header, by_lp = read_cells(tmp_path, net, "--method", "polytope")
    assert header["method"] == "exact-lp"
    assert [(c["neighbours"], c["pattern"], c["output"]) for c in by_lp] == \
        [(c["neighbours"], c["pattern"], c["output"]) for c in by_vertices]


def test_cells_are_the_enumerated_cells_whatever_the_workers(tmp_path):
    net = dyadic_relu_net([3, 4, 3, 1], 5)
    _, one = read_cells(tmp_path, net, "--workers", "1")
    _, two = read_cells(tmp_path, net, "--workers", "2")
    pieces = [p.to_json() for p in cells_in_box(net, net.domain)]
    assert one == two
    assert [(c["pattern"], c["vertices"]) for c in one] == [(p["pattern"], p["vertices"]) for p in pieces]


def test_cells_file_in_2d_lists_the_quadrants(tmp_path):
    header, cells = read_cells(tmp_path, expression_net("Abs(x) + Abs(y)", SQUARE).net)
    assert header["method"] == "exact-2d-polygons" and len(cells) == 4
    assert all(len(c["neighbours"]) == 2 and len(c["halfspaces"]) == 4 for c in cells)


def test_the_stream_holds_only_cells_on_open_splits():
    # 1-D: a cell waits only while a split at one of its endpoints is open (at most 2 per split
    # on the current path); in 2-D the held cells are a small share of the cells (here 159 of 678)
    from exactform.geometry.complex import CellStream
    stream = CellStream(tent(10))
    assert sum(1 for _ in stream) == stream.cells == 1024
    assert stream.peak_held <= 2 * 2 * 10
    stream = CellStream(bench_net([2, 24, 24, 1]))
    lines = list(stream)
    assert len(lines) == stream.cells > 600 and stream.peak_held < stream.cells / 3


def test_cells_file_compressed_is_refused_before_any_work(tmp_path, capsys):
    from exactform.cli import main
    from exactform.formats import write_json
    write_json(tmp_path / "net.json", tent(3).to_json())
    assert main(["regions", str(tmp_path / "net.json"), "--cells", str(tmp_path / "c.jsonl.gz")]) == 2
    assert "--cells" in capsys.readouterr().err and not (tmp_path / "c.jsonl.gz").exists()


def test_cells_stopped_by_max_regions_leave_no_file(tmp_path, capsys):
    from exactform.cli import main
    from exactform.formats import write_json
    write_json(tmp_path / "net.json", tent(6).to_json())
    assert main(["regions", str(tmp_path / "net.json"), "--cells", str(tmp_path / "c.jsonl"), "--max-regions", "10"]) == 1
    assert "max-regions" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.json"]


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
