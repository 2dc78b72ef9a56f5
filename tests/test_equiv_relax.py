"""ε-equivalence by the differential relaxation: the relaxation's rows hold at
every point (checked against exact evaluation of every node, pairs included), ``equiv --tolerance``
proves a network against its quantised copy on a property region with relaxed E1 leaves that the
checker accepts, finds exact counterexamples, and the checker refuses tampered relaxed leaves."""
from __future__ import annotations

import copy
import json
import random
from itertools import product
from fractions import Fraction
from pathlib import Path

import pytest
from exactform.proofs.nets import random_net, relu_net

from exactform.checker import equiv as check_equiv
from exactform.checker.forms import Forms, outputs, read_model
from exactform.checker.reader import ONE, Malformed, Refuted
from exactform.checker.relax import LeafRows, pairs
from exactform.models import MaxoutNet
from exactform.search.equiv import certificate, compare
from support import hardmax_step, node_values, quantised

F = Fraction
ROOT = Path(__file__).resolve().parents[1]


def paired_table(a, b, box: list) -> tuple[Forms, list]:
    """The node table of A then B over ``box`` and the pairs of their units (``relax.pairs``)."""
    Fm = Forms(box)
    outputs(Fm, read_model(a.to_json(), "a"))
    mark = len(Fm.calls)
    outputs(Fm, read_model(b.to_json(), "b"))
    return Fm, pairs(Fm, mark)


@pytest.mark.parametrize("seed", range(6))
def test_every_row_holds_at_every_point(seed):
    """The rows of ``relax.LeafRows`` — node bounds, pieces, chords and the pairs' differential rows —
    are ≥ 0 at (x, the nodes' exact values) for random x in random sub-boxes: the relaxation is sound,
    whatever the pairing found."""
    rng = random.Random(seed)
    a = relu_net(rng, [2, 5, 5, 4], outputs=2) if seed % 2 else random_net(rng, [2, 4, 4], max_rank=2, outputs=2)
    b = quantised(a, F(1, 4 + seed))
    box = [(F(-1), F(1))] * 2
    Fm = Forms(box)
    ya = outputs(Fm, read_model(a.to_json(), "a"))
    mark = len(Fm.calls)
    yb = outputs(Fm, read_model(b.to_json(), "b"))
    related = pairs(Fm, mark)
    assert related or seed % 2 == 0, "a ReLU network and its rounded copy pair their units"
    for _ in range(4):
        lo = [F(rng.randint(-8, 6), 8) for _ in box]
        cube = [(l, l + F(rng.randint(1, 16 - int(8 + 8 * l)), 8) if l < 1 else l) for l in lo]
        cube = [(l, min(h, F(1))) for l, h in cube]
        rows = LeafRows(Fm, cube, [], related)
        for _ in range(12):
            x = [l + (h - l) * F(rng.randint(0, 64), 64) for l, h in cube]
            v = node_values(Fm, x)
            for i in range(len(rows)):
                g, _ = rows[i]
                assert sum((c * v[k] for k, c in g.items()), F(0)) >= 0, (i, rows.slots[i], x)
    assert ya and yb


def acas(tmp_path) -> tuple[dict, dict, list]:
    """ACAS Xu 1_1 (read-out 0) against its float16 copy, on the φ3 region scaled by 1/10 about its centre."""
    from exactform.benchmarks.equiv_bench import float16
    from exactform.importers import import_network
    net = import_network(str(ROOT / "data/acasxu/ACASXU_run2a_1_1_batch_2000.onnx"), [(F(-1), F(1))] * 5)
    net = MaxoutNet(net.domain, net.layers, net.readout_weight[:1], net.readout_bias[:1])
    lo = [F("-0.3035"), F("-0.0095"), F("0.4934"), F("0.3"), F("0.3")]
    hi = [F("-0.2986"), F("0.0095"), F("0.5"), F("0.5"), F("0.5")]
    box = [((l + h) / 2 - (h - l) / 20, (l + h) / 2 + (h - l) / 20) for l, h in zip(lo, hi)]
    return net.to_json(), float16(net).to_json(), box


@pytest.fixture(scope="module")
def acas_proved() -> tuple:
    """``acas`` and the search's outcome at ε = 1/20 (one search, ~1 CPU s, for the tests that read it)."""
    a, b, box = acas(None)
    return a, b, box, compare(a, b, box, F(1, 20))


def test_acas_against_float16_on_a_property_region(acas_proved):
    a, b, box, outcome = acas_proved
    assert outcome.equal and outcome.tree is not None
    cert = json.loads(json.dumps(certificate(a, b, box, F(1, 20), outcome.tree)))
    leaves = [n for n in _nodes(cert["claims"][0]["evidence"]["tree"]) if "relaxed" in n]
    assert leaves, "the region is proved by relaxed leaves"
    assert check_equiv.check(cert, "c").startswith("|A(x) - B(x)|_inf <= 1/20")

    tight = copy.deepcopy(cert)                 # a smaller tolerance, stated consistently: the witnesses fail
    ev = tight["claims"][0]["evidence"]
    ev["tolerance"] = "1/100000000"
    tight["claims"][0]["statement"] = check_equiv.statement(box, F(1, 10 ** 8))
    with pytest.raises(Refuted):
        check_equiv.check(tight, "c")

    moved = copy.deepcopy(cert)                 # B's read-out bias moved by 1: |A − B| ≥ 1 − 1/20 everywhere
    bias = moved["models"]["b"]["readout"]["bias"]
    bias[0] = str(F(bias[0]) + 1)
    with pytest.raises(Refuted):
        check_equiv.check(moved, "c")

    for leaf in leaves[:1]:
        wrong = copy.deepcopy(cert)             # one multiplier changed
        node = next(n for n in _nodes(wrong["claims"][0]["evidence"]["tree"]) if "relaxed" in n)
        w = node["relaxed"][0][0]
        w["value"][0] = str(F(w["value"][0]) * 1000 + 7)
        with pytest.raises(Refuted):
            check_equiv.check(wrong, "c")
        other = copy.deepcopy(cert)             # the witness of −D used for +D: names another atom's row
        node = next(n for n in _nodes(other["claims"][0]["evidence"]["tree"]) if "relaxed" in n)
        node["relaxed"][0] = [node["relaxed"][0][1], node["relaxed"][0][0]]
        with pytest.raises(Refuted):
            check_equiv.check(other, "c")
        short = copy.deepcopy(cert)
        node = next(n for n in _nodes(short["claims"][0]["evidence"]["tree"]) if "relaxed" in n)
        node["relaxed"] = node["relaxed"][:0]
        with pytest.raises(Malformed):
            check_equiv.check(short, "c")
    exact = copy.deepcopy(cert)                 # equality claimed: a relaxed leaf cannot show it
    exact["claims"][0]["evidence"]["tolerance"] = None
    exact["claims"][0]["statement"] = check_equiv.statement(box, None)
    with pytest.raises(Refuted):
        check_equiv.check(exact, "c")


def test_the_relaxed_search_writes_v1s_coordinate_split_and_the_checker_reads_it_by_v1s_rules():
    """E1's relaxed tree cuts the box as V1's does, ``{"split": i, "at": c, "children": [below, above]}``
    (``checker.splits``); the older affine record of the same cut (x_i − c, children [≥ 0, ≤ 0]) is the same
    split; a cut outside the cell, halves swapped, an index past the inputs, a float ``at`` or a third child
    are refused."""
    a = relu_net(random.Random(1), [2, 8, 8], outputs=1)
    b, box, eps = quantised(a, F(1, 16)), list(zip(a.domain.lower, a.domain.upper)), F(1453, 250)
    outcome = compare(a.to_json(), b.to_json(), box, eps)
    assert outcome.equal
    cert = json.loads(json.dumps(certificate(a.to_json(), b.to_json(), box, eps, outcome.tree)))
    tree = cert["claims"][0]["evidence"]["tree"]
    splits = [n for n in _nodes(tree) if "split" in n]
    assert splits and all(type(n["split"]) is int and set(n) == {"split", "at", "children"} for n in splits)
    assert check_equiv.check(cert, "c")

    affine = copy.deepcopy(cert)
    for n in _nodes(affine["claims"][0]["evidence"]["tree"]):
        if "split" in n:
            i, c = n.pop("split"), F(n.pop("at"))
            n["split"] = [str(F(int(j == i))) for j in range(len(box))] + [str(-c)]
            n["children"] = n["children"][::-1]
    assert check_equiv.check(affine, "c") == check_equiv.check(cert, "c")

    def tampered(change):
        bad = copy.deepcopy(cert)
        change(next(n for n in _nodes(bad["claims"][0]["evidence"]["tree"]) if "split" in n))
        return bad
    i = splits[0]["split"]
    with pytest.raises(Refuted, match="outside the cell"):
        check_equiv.check(tampered(lambda n: n.__setitem__("at", str(box[i][1] + 1))), "c")
    with pytest.raises(Refuted):
        check_equiv.check(tampered(lambda n: n.__setitem__("children", n["children"][::-1])), "c")
    for change, field in ((lambda n: n.__setitem__("split", len(box)), "split"),
                          (lambda n: n.__setitem__("at", 0.25), "at"),
                          (lambda n: n["children"].append({"relaxed": []}), "children")):
        with pytest.raises(Malformed, match=field):
            check_equiv.check(tampered(change), "c")


def test_counterexample_beyond_tolerance_is_exact():
    """A copy rounded coarsely differs by more than ε somewhere: the point is exact and re-evaluates."""
    rng = random.Random(3)
    a = relu_net(rng, [2, 6, 6], outputs=1)
    b = quantised(a, F(1, 2))
    eps = F(1, 1000)
    outcome = compare(a.to_json(), b.to_json(), list(zip(a.domain.lower, a.domain.upper)), eps)
    assert not outcome.equal
    assert max(abs(p - q) for p, q in zip(a(outcome.point), b(outcome.point))) > eps


def _nodes(tree):
    stack = [tree]
    while stack:
        n = stack.pop()
        yield n
        stack += n.get("children", [])


@pytest.mark.slow
def test_workers_give_the_same_tree(monkeypatch):
    """The relaxation's cells expanded breadth first and proved as tasks on 2 processes: the same tree
    as one process, and the checker accepts it."""
    import exactform.search.equiv as search
    from exactform.executor import make_executor
    from exactform.progress import Count
    monkeypatch.setattr(search, "RELAXED_SUBTREES", 2)
    a, b, box = acas(None)
    box = [(lo - 4 * (hi - lo), hi + 4 * (hi - lo)) for lo, hi in box]
    trees = []
    for workers in (1, 2):
        with make_executor(workers, None) as executor, Count("cells") as count:
            outcome = compare(a, b, box, F(1, 20), executor=executor, progress=count)
        assert outcome.equal
        trees.append(json.dumps(outcome.tree))
        leaves = [n for n in _nodes(outcome.tree) if "children" not in n]
        assert all("relaxed" in n for n in leaves)             # every leaf relaxed: together, the whole box
        assert abs(count.part - 1) < 1e-9 and count.n >= len(leaves)
    assert trees[0] == trees[1] and trees[0].count('"relaxed"') > 1
    cert = json.loads(json.dumps(certificate(a, b, box, F(1, 20), json.loads(trees[1]))))
    assert check_equiv.check(cert, "c").startswith("|A(x) - B(x)|_inf <= 1/20")


def test_the_work_bound_is_the_runs(acas_proved, tmp_path, capsys):
    """``check --max-work N`` replaces the bound for this run: a certificate over it is refused before
    any arithmetic (exit 2, the message names the option), accepted under a larger one; the prover's
    ``check_work`` is the figure the checker compares."""
    from exactform.checker import cost
    from exactform.cli import main
    from exactform.formats import write_json
    from exactform.search.equiv import check_work
    a, b, box, outcome = acas_proved
    path = tmp_path / "r.cert.json"
    write_json(path, certificate(a, b, box, F(1, 20), outcome.tree))
    needed = check_work(a, b, outcome.tree, box)
    assert main(["check", str(path), "--max-work", str(needed - 1)]) == 2
    assert "--max-work" in capsys.readouterr().err
    assert main(["check", str(path), "--max-work", str(needed)]) == 0
    assert main(["check", str(path), "--max-work", "1e12"]) == 0 and main(["check", str(path)]) == 0
    assert not hasattr(cost, "LIMIT")                # the bound is a parameter: no run leaves it behind
    for bad in ("0", "1.5e9", "-3", "1e", "x"):
        with pytest.raises(SystemExit) as e:
            main(["check", str(path), "--max-work", bad])
        assert e.value.code == 2


def test_stated_tightenings_hold_at_every_point():
    """Gaps and pairs' h tightened by back-substitution (``LeafRows.backsubstituted``) — on the sides the
    prover states and on every side — still contain every point's value, every row still holds, and some
    bound is narrower than forward propagation's: a stated bound is only as strong as the rows it sums."""
    import numpy as np

    from exactform.checker.relax import node_bounds
    from exactform.search.relaxation import Relaxation
    stated = 0
    for seed, part in product(range(3), range(3)):
        rng = random.Random(seed)
        a = relu_net(rng, [2, 10, 10, 10, 10], outputs=2)
        b = quantised(a, F(1, 6 + seed))
        box = [(F(-1), F(1))] * 2
        Fm, related = paired_table(a, b, box)
        rng.seed(part)
        cube = box if not part else [(lo, min(lo + F(rng.randint(2, 8), 8), F(1))) for lo in
                                     (F(rng.randint(-8, 4), 8) for _ in box)]
        floats = [np.array([float(e) for e in ends]) for ends in zip(*cube)]
        shown = Relaxation(Fm, box, [], related).bounds(*floats, tighten=True)[4]
        every = {k: [0, 1] for k, (kind, data) in enumerate(Fm.nodes) if kind == "max" and len(data) == 2} | \
            {("h", n): [0, 1] for n in range(len(related))}
        plain = node_bounds(Fm, cube, related)
        for tight in (shown, every):
            rows = LeafRows(Fm, cube, [], related, tight)
            stated += sum(rows.gaps[k] != plain[1][k] for k in tight if isinstance(k, int))
            stated += sum(rows.hinges[k[1]] != plain[3][k[1]] for k in tight if isinstance(k, tuple))
            for _ in range(10):
                v = node_values(Fm, [lo + (hi - lo) * F(rng.randint(0, 64), 64) for lo, hi in cube])
                for i in range(len(rows)):
                    assert sum((c * v[k] for k, c in rows[i][0].items()), F(0)) >= 0, (i, rows.slots[i])
                for k, (gl, gu) in rows.gaps.items():
                    P, Q = (sum((c * v[j] for j, c in dict(f).items()), F(0)) for f in Fm.nodes[k][1])
                    assert gl <= P - Q <= gu
                for n, state in rows.hinges.items():
                    h = sum((c * v[j] for j, c in rows.hinge(n).items()), F(0))
                    assert len(state) == 1 or state[0] <= h <= state[1]
    assert stated, "some back-substitution tightened a bound"


@pytest.mark.slow
def test_tightenings_are_checked(tmp_path):
    """On the φ1 region scaled by 1/10 the leaves state tightened gaps (back-substitution) and check;
    refused: a node that is not a max of two pieces or not a pair's second, a side out of range, an entry
    of three fields, tightenings where no relaxed leaf is, a million entries (the work bound, before any
    sum), the tightenings dropped (the leaves' witnesses then fail)."""
    a, b, _ = acas(tmp_path)
    lo = [F("0.6"), F("-0.5"), F("-0.5"), F("0.45"), F("-0.5")]
    hi = [F("0.6799"), F("0.5"), F("0.5"), F("0.5"), F("-0.45")]
    box = [((l + h) / 2 - (h - l) / 20, (l + h) / 2 + (h - l) / 20) for l, h in zip(lo, hi)]
    outcome = compare(a, b, box, F(1, 20))
    assert outcome.equal and outcome.tree is not None
    cert = json.loads(json.dumps(certificate(a, b, box, F(1, 20), outcome.tree)))
    assert check_equiv.check(cert, "c").startswith("|A(x) - B(x)|_inf <= 1/20")
    assert any(n.get("tighten") for n in _nodes(cert["claims"][0]["evidence"]["tree"]))

    def tampered(change):
        bad = copy.deepcopy(cert)
        change(next(n for n in _nodes(bad["claims"][0]["evidence"]["tree"]) if n.get("tighten")))
        return bad

    def not_a_max(n):
        n["tighten"][0][0] = 0

    def not_a_pair(n):
        n["tighten"][0][1] = 2 + n["tighten"][0][1] % 2
        n["tighten"][0][0] = 5          # the first node: no pair's second

    def side(n):
        n["tighten"][0][1] = 4

    def three(n):
        n["tighten"][0].append([])

    def dropped(n):
        for m in _nodes(n):
            m.pop("tighten", None)
    for change in (not_a_max, not_a_pair, side, three):
        with pytest.raises(Malformed):
            check_equiv.check(tampered(change), "c")
    many = copy.deepcopy(cert)                  # a million tightenings: refused by the work bound, before any sum
    node = next(n for n in _nodes(many["claims"][0]["evidence"]["tree"]) if n.get("tighten"))
    node["tighten"] = [node["tighten"][0]] * 10 ** 6
    with pytest.raises(Malformed, match="work"):
        check_equiv.check(many, "c")
    stray = copy.deepcopy(cert)                 # tightenings on a node that is not a relaxed leaf
    tree = stray["claims"][0]["evidence"]["tree"]
    tree["tighten"] = next(n for n in _nodes(tree) if n.get("tighten"))["tighten"]
    with pytest.raises(Malformed):
        check_equiv.check(stray, "c")
    bad = copy.deepcopy(cert)
    dropped(bad["claims"][0]["evidence"]["tree"])
    with pytest.raises(Refuted):
        check_equiv.check(bad, "c")


def test_a_certificate_over_the_file_limit_is_announced(tmp_path, monkeypatch, capsys):
    """``equiv --cert`` says when the certificate it wrote is beyond the checker's file limit (spec §6.1),
    which ``exactform check`` then refuses (exit 2): the limit here lowered to 1000 bytes."""
    from exactform.checker import reader
    from exactform.cli import main
    from exactform.formats import write_json
    rng = random.Random(5)
    a = relu_net(rng, [2, 4, 4], outputs=1)
    for name, net in (("a", a), ("b", quantised(a, F(1, 64)))):
        write_json(tmp_path / f"{name}.json", net.to_json())
    monkeypatch.setattr(reader, "MAX_BYTES", 1000)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--tolerance", "1", "--cert", str(cert)]) == 0
    assert "beyond the checker's file limit of 1000" in capsys.readouterr().err
    assert main(["check", str(cert)]) == 2


@pytest.mark.parametrize("seed", range(4))
def test_back_substituted_atom_plans_are_witnesses(seed):
    """``Relaxation.atom_plan`` (the float back-substitution that replaces the leaf LP): its bound is above
    the atom at exact points of the cell, its multipliers rebuild that bound from the leaf's rows (the
    bookkeeping matches the substitution), and where the bound is negative they round to a witness the
    checker's exact test accepts; an atom that holds somewhere gets no witness."""
    import numpy as np
    from exactform.checker.relax import infeasible
    from exactform.search.relaxation import Relaxation, dyadic
    rng = random.Random(seed)
    a = relu_net(rng, [2, 6, 6, 5], outputs=2)
    b = quantised(a, F(1, 64))
    box = [(F(-1), F(1))] * 2
    Fm = Forms(box)
    ya = outputs(Fm, read_model(a.to_json(), "a"))
    mark = len(Fm.calls)
    diff = [check_equiv.combine([(1, p), (-1, q)]) for p, q in zip(ya, outputs(Fm, read_model(b.to_json(), "b")))]
    witnessed = refused = 0
    for eps in (F(1, 2), F(1, 1000)):
        atoms = [check_equiv.combine([(s, f)], -eps) for f in diff for s in (1, -1)]
        p = Relaxation(Fm, box, atoms, pairs(Fm, mark))
        for _ in range(3):
            l0, l1 = F(rng.randint(-8, 4), 8), F(rng.randint(-8, 4), 8)
            cube = [(l0, l0 + F(1, 2)), (l1, l1 + F(1, 4))]
            lo, hi = (np.array([float(v) for v in e]) for e in zip(*cube))
            bounds = p.bounds(lo, hi, tighten=True)
            rows = LeafRows(Fm, cube, atoms, p.pairs, bounds[4])
            for j, atom in enumerate(atoms):
                top, w, _ = p.atom_plan(j, bounds)
                for _ in range(8):
                    v = node_values(Fm, [lo_ + (hi_ - lo_) * F(rng.randint(0, 32), 32) for lo_, hi_ in cube])
                    assert float(sum(c * v[k] for k, c in atom.items())) <= top + 1e-9
                W = dyadic(dict(enumerate(w.tolist())))
                total = {}
                for i, q in W.items():
                    for k, c in rows[i][0].items():
                        total[k] = total.get(k, F(0)) + q * c
                at = sum(float(c) * (1.0 if k == ONE else float(rows.bounds[k][c > 0])) for k, c in total.items())
                assert at == pytest.approx(top, abs=1e-6 * (1 + abs(top)))
                if top < -1e-6:
                    assert infeasible(rows, W)
                    witnessed += 1
                elif any(float(sum(c * v[k] for k, c in atom.items())) >= 0
                         for v in [node_values(Fm, [lo_ for lo_, _ in cube])]):
                    assert not infeasible(rows, W)
                    refused += 1
    assert witnessed, "some atoms are closed by back-substitution alone"


def test_the_searches_run_one_blas_thread(tmp_path):
    """The relaxation's matrices are small: BLAS threads only spin (and, on a loaded machine, slow the
    search several times over); ``Relaxed.run`` and verify's cell expansion hold BLAS to one thread
    and give the caller's setting back."""
    from threadpoolctl import threadpool_info, threadpool_limits
    a, b, box = acas(tmp_path)
    seen = []
    blas = lambda: [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]  # noqa: E731
    with threadpool_limits(limits=2, user_api="blas"):
        outcome = compare(a, b, box, F(1, 20), progress=lambda *_: seen.append(blas()))
        after = blas()
    assert outcome.equal and seen and all(set(n) == {1} for n in seen) and set(after) == {2}, (seen, after)


@pytest.mark.parametrize("kind", ["relu", "maxout rank 3", "transformer", "hardmax step"])
def test_float_bounds_are_the_checkers_in_floating_point(kind):
    """``Relaxation.bounds`` (each run of nodes bounded by one sparse product) is ``relax.node_bounds`` in
    floating point: the same node bounds, gaps and pairs' h on random sub-boxes, for a ReLU net and its
    rounded copy (paired units), Maxout units of up to three pieces, a net beside its compiled Transformer
    and a Transformer whose hardmax nodes average tied tokens."""
    import numpy as np

    from exactform.checker.relax import node_bounds
    from exactform.construct.maxout_to_transformer import compile_maxout
    from exactform.search.relaxation import Relaxation
    rng = random.Random(7)
    a = random_net(rng, [2, 4, 4], max_rank=3, outputs=2) if kind == "maxout rank 3" else \
        hardmax_step() if kind == "hardmax step" else relu_net(rng, [2, 6, 6, 4], outputs=2)
    b = compile_maxout(a) if kind == "transformer" else hardmax_step() if kind == "hardmax step" else quantised(a, F(1, 5))
    box = [(F(-1), F(1))] * 2
    Fm, related = paired_table(a, b, box)
    assert bool(related) == (kind in ("relu", "maxout rank 3"))
    assert (kind == "hardmax step") == any(k != "max" for k, _ in Fm.nodes)
    assert (kind == "maxout rank 3") == any(k == "max" and len(d) > 2 for k, d in Fm.nodes)
    p = Relaxation(Fm, box, [], related)
    for _ in range(6):
        lo = [F(rng.randint(-8, 6), 8) for _ in box]
        cube = [(l, min(l + F(rng.randint(1, 8), 8), F(1))) for l in lo]
        L, U, gaps, _, _, hinges = p.bounds(*(np.array([float(e) for e in ends]) for ends in zip(*cube)))
        exact, gaps_exact, _, hinges_exact = node_bounds(Fm, cube, related)
        close = lambda x, q: abs(x - float(q)) <= 1e-9 * (1 + abs(float(q)))  # noqa: E731
        assert all(close(L[z], lo_) and close(U[z], hi_) for z, (lo_, hi_) in enumerate(exact))
        assert gaps.keys() == gaps_exact.keys() and hinges.keys() == hinges_exact.keys()
        assert all(close(gaps[k][i], gaps_exact[k][i]) for k in gaps for i in (0, 1))
        assert all(len(hinges[n]) == len(hinges_exact[n]) and all(map(close, hinges[n], hinges_exact[n])) for n in hinges)


def test_the_json_says_the_work_bound_that_checks_the_certificate(tmp_path, capsys, monkeypatch):
    """``equiv --cert --json`` reports ``check_work``, the checker's own figure for the certificate it wrote:
    ``check --max-work`` at that figure accepts it, one below refuses it (exit 2) before any arithmetic."""
    from exactform.cli import main
    from exactform.formats import write_json
    a = relu_net(random.Random(5), [2, 4, 4], outputs=1)
    for name, net in (("a", a), ("b", quantised(a, F(1, 64)))):
        write_json(tmp_path / f"{name}.json", net.to_json())
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--tolerance", "1", "--cert", str(cert),
                 "--json"]) == 0
    needed = json.loads(capsys.readouterr().out)["check_work"]
    assert type(needed) is int and needed > 0
    assert main(["check", str(cert), "--max-work", str(needed)]) == 0
    assert main(["check", str(cert), "--max-work", str(needed - 1)]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("limit", ["--timeout", "RLIMIT_CPU"])
def test_a_stopped_search_says_how_far_it_got(tmp_path, limit):
    """``equiv`` stopped by ``--timeout`` or at a CPU-time limit (``ulimit -t``: SIGXCPU) exits 3 with one
    line saying why, one saying how far the search got (cells, and the box's share in closed relaxed
    leaves), no traceback and no certificate (ACAS Xu 1_1 on the whole φ1 region takes ~50 CPU s)."""
    import re
    import resource
    import subprocess
    import sys
    from exactform.benchmarks import equiv_regions as er
    a, b = er.pair(ROOT / "data/acasxu/ACASXU_run2a_1_1_batch_2000.onnx", er.region(1), [0])
    for name, net in (("a", a), ("b", b)):
        (tmp_path / f"{name}.json").write_text(json.dumps(net.to_json()))
    argv = [sys.executable, "-m", "exactform", "equiv", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
            "--domain", er.domain_text(list(zip(a.domain.lower, a.domain.upper))), "--tolerance", "1/20",
            "--cert", str(tmp_path / "c.json")]
    def cpu():              # and no core file if a signal's default action ends the child
        resource.setrlimit(resource.RLIMIT_CPU, (4, 30))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    done = subprocess.run(argv + (["--timeout", "6"] if limit == "--timeout" else []), capture_output=True, text=True,
                          preexec_fn=cpu if limit == "RLIMIT_CPU" else None, timeout=120)
    why = "after 6 s (--timeout)" if limit == "--timeout" else "at the CPU-time limit (SIGXCPU)"
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert f"exactform: stopped {why}: nothing written" in done.stderr
    far = re.search(r"equiv: when stopped: (\d+) cells searched, (\d+\.\d)% of the box's volume in closed relaxed leaves",
                    done.stderr)
    # 4 CPU s always reach a cell; 6 s of wall time with four processes on two cores once did not
    assert far and int(far[1]) >= (1 if limit == "RLIMIT_CPU" else 0) and 0 <= float(far[2]) < 100
    assert not (tmp_path / "c.json").exists()
