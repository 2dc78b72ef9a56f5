"""``exactform equiv`` and the E1 checker, against independent oracles: function-preserving rewrites
(equal by construction), exact evaluation (a plain-Fraction evaluator here, ``exactform.models``),
points chosen by hand where a pair differs, and tampered certificates."""
from __future__ import annotations

import ast
import copy
import json
import random
from fractions import Fraction
from pathlib import Path

import pytest
from exactform.proofs.nets import permuted, random_net, random_points, relu_net, rescaled_and_split

from exactform.checker import equiv as check_equiv
from exactform.checker.reader import Refuted
from exactform.cli import main
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.numbers import format_rational
from exactform.models import Attention, FeedForward, Head, MaxoutLayer, MaxoutNet, Transformer
from exactform.search.equiv import certificate, compare
from exactform.geometry.lp import argmaximize, dual_simplex, solve
from support import acas_and_float16, box_of, maxout_value, sign_transformer, small_pairs, tiny_bump

F = Fraction
ROOT = Path(__file__).resolve().parents[1]


def proved(a, b, tolerance=None, relax=True):
    """Compare, and check the certificate with the E1 checker; returns the outcome."""
    outcome = compare(a.to_json(), b.to_json(), box_of(a), tolerance, relax=relax)
    assert outcome.equal, outcome.point
    cert = json.loads(json.dumps(certificate(a.to_json(), b.to_json(), box_of(a), tolerance, outcome.tree)))
    assert check_equiv.check(cert, "cert").startswith("A(x) = B(x)" if tolerance is None else "|A(x) - B(x)|")
    return outcome, cert


@pytest.mark.parametrize("seed", range(3))
def test_rewritten_maxout_nets_are_proved_equal_without_splits(seed):
    rng = random.Random(seed)
    net = random_net(rng, [2, 5, 4, 2], max_rank=3, outputs=2)
    for other in (permuted(net, rng), rescaled_and_split(net, rng)):
        for x in random_points(rng, net.domain, 10):           # the rewrites are exact (oracle)
            assert maxout_value(net, x) == maxout_value(other, x)
        outcome, _ = proved(net, other)
        assert outcome.splits == 0


@pytest.mark.parametrize("seed", range(3))
def test_a_net_and_its_transformer_are_proved_equal_without_splits(seed):
    net = relu_net(random.Random(seed), [3, 5, 5, 4], outputs=2) if seed < 2 else \
        random_net(random.Random(seed), [2, 4, 3], max_rank=3, outputs=1)
    outcome, _ = proved(net, compile_maxout(net))
    assert outcome.splits == 0 and outcome.leaves == 1


# --- Transformer rewrites and a hand-written alternative construction -----------------------------

def with_blocks(tf: Transformer, blocks: list) -> Transformer:
    return Transformer(tf.domain, tf.tokens, tf.width, tf.attention, tf.embed_weight, tf.embed_bias, blocks,
                       tf.readout_token, tf.readout_weight, tf.readout_bias, tf.layout)


def zero_blocks(tf: Transformer) -> Transformer:
    """A feed-forward block writing nothing and an attention block with a zero output, inserted first."""
    w, zero = tf.width, F(0)
    ff = FeedForward([[F(1)] * w], [F(1)], [[zero] for _ in range(w)], [zero] * w)
    att = Attention([Head([[zero] * w], [[F(2)] * w], [[F(1)] * w], [[zero] for _ in range(w)])])
    return with_blocks(tf, [ff, att] + list(tf.blocks))


def scaled_keys(tf: Transformer, factor: Fraction) -> Transformer:
    blocks = [Attention([Head(h.query, [{c: factor * a for c, a in r.items()} for r in h.key], h.value, h.output) for h in b.heads])
              if isinstance(b, Attention) else b for b in tf.blocks]
    return with_blocks(tf, blocks)


def feedforward_only(net: MaxoutNet) -> Transformer:
    """A hand-written one-token Transformer of a ReLU net: one feed-forward block per layer, each
    writing its ReLUs into fresh coordinates of the residual stream."""
    widths = net.widths
    width, d = sum(widths), net.input_dim
    offsets = [sum(widths[:l]) for l in range(len(widths))]
    blocks = []
    for l, layer in enumerate(net.layers):
        w1 = [[F(0)] * width for _ in range(layer.units)]
        for u, ws in enumerate(layer.weight):
            assert ws[1] == [0] * len(ws[1]) and layer.bias[u][1] == 0      # ReLU units
            w1[u][offsets[l]:offsets[l] + widths[l]] = ws[0]
        w2 = [[F(int(r == offsets[l + 1] + u)) for u in range(layer.units)] for r in range(width)]
        blocks.append(FeedForward(w1, [b[0] for b in layer.bias], w2, [F(0)] * width))
    embed = [[F(int(r == i)) for i in range(d)] for r in range(width)]
    readout = [[F(0)] * offsets[-1] + list(r) for r in net.readout_weight]
    return Transformer(net.domain, 1, width, "hardmax", embed, [[F(0)] * width], blocks, 0, readout,
                       list(net.readout_bias), {})


def test_transformer_rewrites_and_an_alternative_construction_are_proved_equal():
    net = relu_net(random.Random(5), [2, 4, 4], outputs=1)
    tf = compile_maxout(net)
    alternative = feedforward_only(net)
    for x in random_points(random.Random(1), net.domain, 10):
        assert alternative(x) == maxout_value(net, x) == tf(x)
    for a, b in ((tf, zero_blocks(tf)), (tf, scaled_keys(tf, F(7, 3))), (net, alternative), (alternative, tf)):
        outcome, _ = proved(a, b)
        assert outcome.splits == 0


# --- hardmax ties: a pair equal off a hyperplane and different on it ------------------------------

def test_hardmax_ties_are_a_cell_of_their_own():
    a, b, scaled = sign_transformer(2), sign_transformer(3), sign_transformer(2, F(5))
    assert [a([F(v)])[0] for v in (-1, 0, 1)] == [-1, 0, 1]
    assert [b([F(v)])[0] for v in (-1, 0, 1)] == [-1, F(1, 3), 1]
    outcome = compare(a.to_json(), b.to_json(), box_of(a))
    assert not outcome.equal and outcome.point == [0] and (outcome.a, outcome.b) == ([0], [F(1, 3)])
    outcome, cert = proved(a, scaled)
    assert outcome.splits >= 1
    top = compare(a.to_json(), b.to_json(), box_of(a), max_diff=True)
    assert (top.maximum, top.point) == (F(1, 3), [0])                     # on the tie set only


# --- different pairs: counterexamples re-evaluated independently ----------------------------------

def perturbed(net: MaxoutNet, rng: random.Random) -> MaxoutNet:
    other = copy.deepcopy(net)
    layer = other.layers[rng.randrange(len(other.layers))]
    unit = rng.randrange(layer.units)
    layer.weight[unit][0][0] += F(1, 7)
    return MaxoutNet(other.domain, [MaxoutLayer(l.weight, l.bias) for l in other.layers],
                     other.readout_weight, other.readout_bias)


@pytest.mark.parametrize("seed", range(4))
def test_counterexamples_are_exact_points_where_the_outputs_differ(seed):
    rng = random.Random(seed)
    net = relu_net(rng, [2, 5, 5], outputs=2)
    other = perturbed(net, rng)
    outcome = compare(net.to_json(), other.to_json(), box_of(net))
    if outcome.equal:                       # the perturbed unit may be dead on the box: then it is equal
        for x in random_points(rng, net.domain, 50):
            assert maxout_value(net, x) == maxout_value(other, x)
        return
    x = outcome.point
    assert net.domain.contains(x)
    assert maxout_value(net, x) == outcome.a and maxout_value(other, x) == outcome.b and outcome.a != outcome.b


def test_a_pair_that_differs_only_on_a_tiny_sub_box():
    net = relu_net(random.Random(3), [2, 6, 6], outputs=1)
    bumped = tiny_bump(net, F(1, 1000), F(1, 10 ** 6))       # non-zero only where x0 + x1 > 2 − 10⁻⁶
    for x in random_points(random.Random(2), net.domain, 30):
        if x[0] + x[1] < 2 - F(1, 10 ** 6):
            assert maxout_value(net, x) == maxout_value(bumped, x)
    outcome = compare(net.to_json(), bumped.to_json(), box_of(net))
    assert not outcome.equal and outcome.point[0] + outcome.point[1] > 2 - F(1, 10 ** 6)
    assert maxout_value(bumped, outcome.point)[0] - maxout_value(net, outcome.point)[0] > 0
    top = compare(net.to_json(), bumped.to_json(), box_of(net), max_diff=True)
    assert top.maximum == F(1, 1000) and top.point == [1, 1]              # the bump's height, at its apex
    proved(net, bumped, tolerance=F(1, 1000))
    assert not compare(net.to_json(), bumped.to_json(), box_of(net), F(1, 1001)).equal


# --- certificates: the E1 checker rejects tampering ------------------------------------------------

def _cert_with_splits():
    net = relu_net(random.Random(3), [2, 6, 6], outputs=1)
    _, cert = proved(net, tiny_bump(net, F(1, 10), F(1, 4)), tolerance=F(1, 10), relax=False)     # the cell search's tree
    assert "split" in cert["claims"][0]["evidence"]["tree"]
    return cert


def _leaves(tree):
    return [tree] if "children" not in tree else [n for c in tree["children"] for n in _leaves(c)]


def test_tampered_certificates_are_refuted():
    cert = _cert_with_splits()
    witness = copy.deepcopy(cert)
    leaf = next(leaf for leaf in _leaves(witness["claims"][0]["evidence"]["tree"])
                if "bound" in leaf and any(w["value"] for pair in leaf["bound"] for w in pair))
    w = next(w for pair in leaf["bound"] for w in pair if w["value"])
    w["value"][0] = w["value"][0][1:] if w["value"][0].startswith("-") else "-" + w["value"][0]
    dropped = copy.deepcopy(cert)
    dropped["claims"][0]["evidence"]["tree"]["children"].pop()
    weight = copy.deepcopy(cert)
    bias = weight["models"]["b"]["readout"]["bias"]
    bias[0] = format_rational(F(bias[0]) + 1)
    statement = copy.deepcopy(cert)
    statement["claims"][0]["evidence"]["tolerance"] = "1/20"
    decision = copy.deepcopy(cert)
    tree = decision["claims"][0]["evidence"]["tree"]
    tree["decide"], tree["children"][0]["decide"] = [], tree["decide"] + tree["children"][0].get("decide", [])
    for bad in (witness, weight, statement) + ((decision,) if decision["claims"][0]["evidence"]["tree"]["children"][1:]
                                                and cert["claims"][0]["evidence"]["tree"]["decide"] else ()):
        with pytest.raises(Refuted):
            check_equiv.check(bad, "bad")
    with pytest.raises(ValueError):
        check_equiv.check(dropped, "dropped")
    with pytest.raises((Refuted, ValueError)):
        check_equiv.check({"format": cert["format"], "models": cert["models"], "claims": []}, "empty")


def test_hostile_certificates_are_malformed_not_crashes():
    cert = _cert_with_splits()
    tree = cert["claims"][0]["evidence"]["tree"]
    leaf = next(leaf for leaf in _leaves(tree) if "bound" in leaf)
    cases = []
    for change in (lambda w: w.update(index=[10 ** 6], value=["1"]), lambda w: w.update(index=[0], value=[0.5]),
                   lambda w: w.clear()):
        bad = copy.deepcopy(cert)
        change(next(l for l in _leaves(bad["claims"][0]["evidence"]["tree"]) if "bound" in l)["bound"][0][0])
        cases.append(bad)
    deep = copy.deepcopy(cert)
    node = deep["claims"][0]["evidence"]["tree"] = {"split": ["1", "0", "0"], "children": []}
    for _ in range(3000):                                   # deeper than Python's recursion limit
        node["children"] = [{"split": ["1", "0", "0"], "children": []}, copy.deepcopy(leaf)]
        node = node["children"][0]
    node["children"] = [copy.deepcopy(leaf), copy.deepcopy(leaf)]
    for bad in cases + [{**cert, "kind": "equality"}, {**cert, "claims": [{"id": "E1"}]}]:
        with pytest.raises((ValueError, Refuted)):
            check_equiv.check(bad, "hostile")
    try:                                    # a valid deep tree or a refutation, never a RecursionError
        check_equiv.check(deep, "deep")
    except (ValueError, Refuted):
        pass


def test_the_checker_is_standard_library_only():
    source = (ROOT / "exactform" / "checker" / "equiv.py").read_text()
    imported = {a.name.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert imported <= {"__future__", "fractions"}
    relative = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.level}
    assert relative == {"cost", "forms", "reader", "relax", "splits"}



def test_one_reader_of_the_split_records_for_v1_and_e1():
    """Both checkers read a coordinate split and an affine split through ``checker.splits``; neither reads a
    split's ``at`` itself."""
    for name in ("equiv", "verify_cert"):
        tree = ast.parse((ROOT / "exactform" / "checker" / f"{name}.py").read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "splits" for a in n.names}
        assert {"coordinate", "covering", "is_coordinate"} <= names, (name, names)
        reads = [n for n in ast.walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)]
        assert not [n for n in reads if n.slice.value == "at"], name


# --- the command -----------------------------------------------------------------------------------

def _write(tmp_path, name, model):
    path = tmp_path / name
    path.write_text(json.dumps(model.to_json()))
    return str(path)


def test_cli_equal_different_tolerance_and_refusals(tmp_path, capsys):
    net = relu_net(random.Random(3), [2, 6, 6], outputs=1)
    a, b = _write(tmp_path, "a.json", net), _write(tmp_path, "b.json", tiny_bump(net, F(1, 10), F(1, 4)))
    tf = _write(tmp_path, "tf.json", compile_maxout(net))
    assert main(["equiv", a, tf, "--cert", str(tmp_path / "c.json")]) == 0
    assert check_equiv.check(json.loads((tmp_path / "c.json").read_text()), "c").startswith("A(x) = B(x)")
    capsys.readouterr()
    assert main(["equiv", a, b, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    point = [F(v) for v in doc["point"]]
    assert doc["equal"] is False and [F(v) for v in doc["a"]] == maxout_value(net, point)
    assert main(["equiv", a, b, "--max-diff", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["max_diff"] == "1/10"
    assert main(["equiv", a, b, "--max-diff", "--cert", str(tmp_path / "m.json")]) == 0
    assert check_equiv.check(json.loads((tmp_path / "m.json").read_text()), "m").startswith("|A(x) - B(x)|_inf <= 1/10 ")
    assert main(["equiv", a, b, "--max-diff", "--tolerance", "1/11"]) == 1
    assert main(["equiv", a, b, "--tolerance", "1/10", "--cert", str(tmp_path / "t.json")]) == 0
    assert main(["equiv", a, b, "--tolerance", "1/11"]) == 1
    assert main(["equiv", a, b, "--domain", "-1:-1/2"]) == 0          # the bump is near (1, 1)
    capsys.readouterr()
    wide = _write(tmp_path, "wide.json", relu_net(random.Random(3), [3, 2], outputs=1))
    both = sign_transformer(2)
    q = both.blocks[1].heads[0]
    quadratic = with_blocks(both, [both.blocks[0], Attention([Head([[F(1)] + [F(0)] * (both.width - 1)],
                                                                    [[F(1)] + [F(0)] * (both.width - 1)],
                                                                    q.value, q.output)])])
    soft = both.with_attention(F(2))
    for args, field in (([a, wide], "input_dim"), ([_write(tmp_path, "s.json", both), _write(tmp_path, "q.json", quadratic)],
                                                    "block 1 head 0"),
                        ([_write(tmp_path, "s2.json", both), _write(tmp_path, "soft.json", soft)], "attention"),
                        ([a, b, "--tolerance", "0.1"], "--tolerance")):
        assert main(["equiv", *args]) == 2
        assert field in capsys.readouterr().err


def test_an_imported_network_against_its_json(tmp_path):
    nnet = ROOT / "data" / "acasxu" / "ACASXU_run2a_1_1_batch_2000.nnet"
    out = tmp_path / "acas.json"
    assert main(["import", str(nnet), "--domain", "-1/8:1/8", "-o", str(out)]) == 0
    assert main(["equiv", str(nnet), str(out)]) == 0


def test_argmaximize_returns_a_point_attaining_the_optimum():
    import flint
    Q = flint.fmpq
    A, b, c = [[Q(1), Q(1)], [Q(-1), Q(0)], [Q(0), Q(-1)], [Q(1), Q(3)]], [Q(3), Q(0), Q(0), Q(7)], [Q(1), Q(2)]
    value, x = argmaximize(c, A, b)
    assert value == 5 and x == [1, 2]
    value, x, y = solve(c, A, b)                # duality: y ≥ 0, yᵀA = c, y·b = the optimum
    assert all(v >= 0 for v in y) and [sum(y[i] * A[i][j] for i in range(4)) for j in range(2)] == c
    assert sum(yi * bi for yi, bi in zip(y, b)) == value


def test_the_dual_simplex_agrees_with_the_tableau_simplex():
    """Random polytopes in a box (some empty, some degenerate: repeated and redundant rows): the dual
    simplex from the box vertex finds the tableau simplex's optimum, with duals that prove it."""
    import flint
    Q, rng, empty = flint.fmpq, random.Random(0), 0
    for _ in range(300):
        d = rng.randint(1, 4)
        A, b = [], []
        for j in range(d):                       # the box: rows 2j (−x_j ≤ 1) and 2j + 1 (x_j ≤ 1)
            A += [[Q(-1 if k == j else 0) for k in range(d)], [Q(1 if k == j else 0) for k in range(d)]]
            b += [Q(1), Q(1)]
        for _ in range(rng.randint(0, 8)):
            row = [Q(rng.randint(-3, 3), rng.randint(1, 3)) for _ in range(d)]
            A.append(row)
            b.append(Q(rng.randint(-4, 4), rng.randint(1, 4)))
            if rng.random() < 0.2:
                A.append(list(row))
                b.append(b[-1])
        c = [Q(rng.randint(-3, 3)) for _ in range(d)]
        expected = solve(c, A, b)
        found = dual_simplex(c, A, b, [2 * j + (c[j] > 0) for j in range(d)])
        assert (found is None) == (expected is None)
        if found is None:
            empty += 1
            continue
        value, x, y = found
        assert value == expected[0] and all(sum(a * v for a, v in zip(row, x)) <= bi for row, bi in zip(A, b))
        assert all(v >= 0 for v in y) and [sum(y[i] * A[i][j] for i in range(len(A))) for j in range(d)] == c
        assert sum(yi * bi for yi, bi in zip(y, b)) == value
    assert 20 < empty < 280


# --- the pruned search: the same exact maximum as the unpruned one --------------------------------

def assert_pruned_matches_unpruned(a, b, box):
    pruned = compare(a.to_json(), b.to_json(), box, max_diff=True)
    unpruned = compare(a.to_json(), b.to_json(), box, max_diff=True, prune=False)
    assert pruned.maximum == unpruned.maximum, (pruned.maximum, unpruned.maximum)
    gap = max(abs(p - q) for p, q in zip(a(pruned.point), b(pruned.point)))
    assert gap == pruned.maximum and all(lo <= x <= hi for x, (lo, hi) in zip(pruned.point, box))
    return pruned, unpruned


@pytest.mark.parametrize("index", range(4))
def test_the_pruned_max_diff_is_the_unpruned_one(index):
    a, b = small_pairs()[index]
    pruned, unpruned = assert_pruned_matches_unpruned(a, b, box_of(a))
    assert pruned.maximum > 0 and pruned.leaves <= unpruned.leaves
    if index == 3:
        assert pruned.maximum == F(1, 2) and abs(pruned.point[0]) == F(1, 2)


@pytest.mark.slow
def test_the_pruned_tolerance_search_agrees_with_the_unpruned_one():
    for a, b in small_pairs():
        top = compare(a.to_json(), b.to_json(), box_of(a), max_diff=True).maximum
        for eps in (top, top * F(999, 1000)):
            pruned = compare(a.to_json(), b.to_json(), box_of(a), eps, prune=True)
            unpruned = compare(a.to_json(), b.to_json(), box_of(a), eps)
            assert pruned.equal == unpruned.equal == (eps == top) and pruned.tree is None
            if not pruned.equal:
                assert max(abs(p - q) for p, q in zip(pruned.a, pruned.b)) > eps


@pytest.mark.slow
def test_the_pruned_max_diff_of_acas_xu_against_float16():
    acas, rounded = acas_and_float16()
    for side in (F(1, 1024), F(1, 256)):
        pruned, unpruned = assert_pruned_matches_unpruned(acas, rounded, [(-side / 2, side / 2)] * 5)
    assert pruned.maximum > 0                                   # float16 moved the network
    assert pruned.pruned > 0 and pruned.leaves <= unpruned.leaves   # leaves whose maximum could not matter: no LP


def sub_boxes(rng, box, n):
    """n random boxes inside ``box`` (each side a random sub-interval, with dyadic ends)."""
    for _ in range(n):
        ends = [sorted(lo + (hi - lo) * F(rng.randrange(65), 64) for _ in range(2)) for lo, hi in box]
        yield [(lo, hi) for lo, hi in ends]


def pairs_and_boxes():
    acas, rounded = acas_and_float16()
    return [(a, b, box_of(a)) for a, b in small_pairs()] + [(acas, rounded, [(F(-1, 64), F(1, 64))] * 5)]


def test_the_bound_covers_every_box(scale=1):
    """Soundness of the bound itself: on random sub-boxes, |A − B| at sampled points never exceeds
    the box's bound (times ``scale``: a wrong bound under test)."""
    from exactform.search.equiv import Search
    rng, checked = random.Random(0), 0
    for a, b, box in pairs_and_boxes():
        search = Search(a.to_json(), b.to_json(), box, None, True)
        for sub in sub_boxes(rng, box, 6):
            bound = search.bound.upper(sub) * scale
            for x in [[lo + (hi - lo) * F(rng.randrange(9), 8) for lo, hi in sub] for _ in range(8)]:
                assert max(abs(p - q) for p, q in zip(a(x), b(x))) <= bound
                checked += 1
    assert checked > 100


def test_a_bound_proves_a_tolerance_on_the_whole_box():
    """ACAS Xu against float16 on a box of side 1/32: the bound alone proves |A − B|∞ ≤ ε for an ε
    above it (no cell is split), and a tolerance below the sampled maximum is refuted."""
    acas, rounded = acas_and_float16()
    box = [(F(-1, 64), F(1, 64))] * 5
    outcome = compare(acas.to_json(), rounded.to_json(), box, F(1, 100), prune=True, relax=False)
    assert outcome.equal and outcome.pruned == 1 and outcome.leaves == 0
    assert compare(acas.to_json(), rounded.to_json(), box, F(1, 100), prune=True).equal     # relaxed leaves
    outcome = compare(acas.to_json(), rounded.to_json(), box, F(1, 10 ** 6), prune=True)
    assert not outcome.equal and max(abs(p - q) for p, q in zip(outcome.a, outcome.b)) > F(1, 10 ** 6)


def test_a_too_small_bound_is_caught(monkeypatch):
    """The tests above fail when a bound is wrong: the box bound halved is below |A − B| at some
    sampled point, and with the exact ranges the pruned search reads (a ReLU's sign, a leaf's skip)
    divided by 10 it misses a maximum."""
    from exactform.search import equiv
    with pytest.raises(AssertionError):
        test_the_bound_covers_every_box(F(1, 2))
    exact = equiv.interval
    monkeypatch.setattr(equiv, "interval", lambda f, box: tuple(v / 10 for v in exact(f, box)))
    missed = 0
    for a, b in small_pairs():
        try:
            assert_pruned_matches_unpruned(a, b, box_of(a))
        except AssertionError:
            missed += 1
    assert missed > 0
