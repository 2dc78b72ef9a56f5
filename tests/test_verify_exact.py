"""``exactform verify`` decides every leaf exactly: thresholds 10⁻¹⁵ from a Maxout net's exact maximum
(below double precision) are decided both ways — unsat with a certificate ``exactform check`` accepts,
sat with an exact counterexample — by an exact LP on the leaf's rows and splits on hidden units'
pre-activations (affine split nodes, spec §8); tampered affine splits are refused, and any affine row
whose two children are proved is accepted."""
from __future__ import annotations

import copy
import json
import random
from fractions import Fraction

import flint
import pytest
from support import cli

from exactform.checker.reader import Refuted
from exactform.checker.verify_cert import check
from exactform.formats import Reader
from exactform.geometry.regions import cells_in_box
from exactform.importers.vnnlib import read_property
from exactform.models import Box, MaxoutNet
from exactform.search.verify import certificate, verify

HEAD = "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n"
BOX = "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
NEAR = Fraction(1, 10 ** 15)
SOURCES = {k: {"file": k, "sha256": "0" * 64} for k in ("net", "property")}


def maxout_net(seed: int, widths=(7, 5)) -> dict:
    """A 2-D Maxout net of rank 2 (two hidden layers, both pieces affine) with rational weights."""
    rng = random.Random(seed)

    def q():
        return str(Fraction(rng.randint(-40, 40), rng.choice([5, 7, 8, 9])))

    def layer(n_in, n_out):
        return {"weight": [[[q() for _ in range(n_in)], [q() for _ in range(n_in)]] for _ in range(n_out)],
                "bias": [[q(), q()] for _ in range(n_out)]}
    dims = (2,) + tuple(widths)
    return {"format": "exactform/maxout@1", "input_dim": 2, "domain": {"lower": ["-1", "-1"], "upper": ["1", "1"]},
            "layers": [layer(a, b) for a, b in zip(dims, dims[1:])],
            "readout": {"weight": [[q() for _ in range(widths[-1])] for _ in range(2)], "bias": [q(), q()]}}


def maximum(net: dict, margin: Fraction | None = None) -> tuple[Fraction, list]:
    """The exact maximum of Y_0 over [−1, 1]² (with ``margin``: where Y_0 − Y_1 ≥ margin) and a point where it
    is attained: the net is affine on each linear region (exact polygons, ``cells_in_box``), so the maximum
    is at a vertex of a region (clipped by the affine Y_0 − Y_1 ≥ margin)."""
    model = MaxoutNet.from_json(Reader(net))
    best, at = None, None
    for piece in cells_in_box(model, Box([Fraction(-1)] * 2, [Fraction(1)] * 2), "polygon"):
        (a0, b0, c0), (a1, b1, c1) = piece.output
        cell = piece.cell if margin is None else \
            piece.cell.clip((a0 - a1, b0 - b1, c0 - c1 - flint.fmpq(margin.numerator, margin.denominator)))
        for x, y in cell.vertices:
            v = a0 * x + b0 * y + c0
            if best is None or v > best:
                best, at = v, [x, y]
    return Fraction(int(best.p), int(best.q)), [Fraction(int(v.p), int(v.q)) for v in at]


def threshold(t: Fraction) -> str:
    return f"(/ {t.numerator} {t.denominator})" if t >= 0 else f"(- (/ {-t.numerator} {t.denominator}))"


def test_maximum_decided_both_ways_to_within_1e_15(tmp_path):
    """Y_0 ≥ max + 10⁻¹⁵: unsat, certificate checked by ``exactform check`` (exit 0); Y_0 ≥ max and
    Y_0 ≥ max − 10⁻¹⁵: sat, the counterexample's exact output meets the threshold."""
    net = tmp_path / "n.json"
    net.write_text(json.dumps(maxout_net(0)))
    top, _ = maximum(maxout_net(0))
    model = MaxoutNet.from_json(Reader(maxout_net(0)))
    for delta, truth in ((NEAR, "unsat"), (Fraction(0), "sat"), (-NEAR, "sat")):
        t = top + delta
        prop = tmp_path / "p.vnnlib"
        prop.write_text(HEAD + BOX + f"(assert (>= Y_0 {threshold(t)}))\n")
        r = cli("verify", net, prop, "--cert", tmp_path / "c.json", "--json", "--timeout", "120")
        out = json.loads(r.stdout)
        assert out["verdict"] == truth, (delta, out.get("reason"))
        if truth == "unsat":
            checked = cli("check", tmp_path / "c.json", "--net", net, "--property", prop)
            assert r.returncode == 0 and checked.returncode == 0, checked.stdout + checked.stderr
        else:
            x = [Fraction(v) for v in out["counterexample"]["X"]]
            y = model(x)
            assert all(-1 <= v <= 1 for v in x) and y[0] >= t and [Fraction(v) for v in out["counterexample"]["Y"]] == list(y)


@pytest.mark.parametrize("seed", [2, 5, 6])
def test_two_atoms_a_polytope_decided_both_ways(seed):
    """Y_0 ≥ c and Y_0 − Y_1 ≥ e, e cutting off the unconstrained maximiser: the leaf is an LP over a
    polytope, not a box; c 10⁻¹⁵ above its exact maximum is unsat (certificate checked), at it and
    10⁻¹⁵ below sat."""
    net = maxout_net(seed)
    model = MaxoutNet.from_json(Reader(net))
    e = _cutting_margin(net, model)
    top, _ = maximum(net, e)
    for delta, truth in ((NEAR, "unsat"), (Fraction(0), "sat"), (-NEAR, "sat")):
        t = top + delta
        text = HEAD + BOX + f"(assert (>= Y_0 {threshold(t)}))\n(assert (>= (- Y_0 Y_1) {threshold(e)}))\n"
        prop = _property(text)
        out = verify(net, prop, 120)
        assert out.verdict == truth, (seed, delta, out.reason)
        if truth == "sat":
            y = model(out.x)
            assert y[0] >= t and y[0] - y[1] >= e and all(-1 <= v <= 1 for v in out.x)
        else:
            check(json.loads(json.dumps(certificate(net, prop, out.trees, SOURCES))), "c")


def _cutting_margin(net: dict, model) -> Fraction:
    """A margin e halfway between Y_0 − Y_1 at a maximiser of Y_0 and its largest value on a grid: the
    constraint binds at the optimum, and a region of the box still meets it."""
    top, at = maximum(net)
    grid = [[Fraction(i, 8) - 1, Fraction(j, 8) - 1] for i in range(17) for j in range(17)]
    spread = max(model(x)[0] - model(x)[1] for x in grid)
    e = (spread + model(at)[0] - model(at)[1]) / 2
    assert maximum(net, e)[0] < top                      # the constraint binds: the maximum moves
    return e


def _property(text: str):
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".vnnlib", delete=False) as f:
        f.write(text)
    return read_property(f.name)


# --- affine splits: tampering refused, any row with both children proved accepted --------------------

@pytest.fixture(scope="module")
def unit_split():
    """An unsat certificate of a two-atom instance 10⁻¹⁵ beyond its maximum, with an affine split on a unit's
    pre-activation in its tree."""
    net = maxout_net(6)
    e = _cutting_margin(net, MaxoutNet.from_json(Reader(net)))
    t = maximum(net, e)[0] + NEAR
    prop = _property(HEAD + BOX + f"(assert (>= Y_0 {threshold(t)}))\n(assert (>= (- Y_0 Y_1) {threshold(e)}))\n")
    out = verify(net, prop, 120)
    assert out.verdict == "unsat"
    cert = json.loads(json.dumps(certificate(net, prop, out.trees, SOURCES)))
    assert _affine(cert["claims"][0]["evidence"]["trees"][0])
    check(cert, "c")
    return cert


def _nodes(tree):
    yield tree
    for child in tree.get("children", []):
        yield from _nodes(child)


def _affine(tree):
    return [n for n in _nodes(tree) if "split" in n and not isinstance(n["split"], int)]


def _tampered(cert, change):
    doc = copy.deepcopy(cert)
    change(_affine(doc["claims"][0]["evidence"]["trees"][0])[0])
    return doc


def _constant_row(node):
    node["split"] = {"length": node["split"]["length"], "index": [node["split"]["length"] - 1], "value": ["1"]}


def _perturbed_row(node):
    node["split"]["value"][0] = str(Fraction(node["split"]["value"][0]) * 2)


@pytest.mark.parametrize("name, change, error", [
    ("children swapped", lambda n: n["children"].reverse(), Refuted),
    ("a child missing", lambda n: n["children"].pop(), ValueError),
    ("a row that is no unit's pre-activation", _constant_row, Refuted),
    ("a wrong row", _perturbed_row, Refuted),
    ("a row of the wrong length", lambda n: n["split"].__setitem__("length", n["split"]["length"] + 1), ValueError),
])
def test_tampered_affine_split_refused(unit_split, name, change, error):
    with pytest.raises(error):
        check(_tampered(unit_split, change), name)


def test_any_affine_row_with_both_children_proved_is_accepted(unit_split):
    """A split at an arbitrary affine row of x and the nodes (here 3·x_0 − z_4 + 1/3) above the whole
    proof, each child the original tree (its leaves' rows gain the split's row first among the affine
    rows, weighted 0): both half-spaces are covered, so the certificate holds; with one child's proof
    dropped it does not."""
    doc = copy.deepcopy(unit_split)
    trees = doc["claims"][0]["evidence"]["trees"]
    length = _affine(trees[0])[0]["split"]["length"]
    base = _rows_without_splits(trees[0])

    def shifted(tree):
        tree = copy.deepcopy(tree)
        for n in _nodes(tree):
            if "witness" in n:
                w = n["witness"]
                w["length"] += 1
                w["index"] = [i + (i >= base) for i in w["index"]]
        return tree
    row = {"length": length, "index": [0, 4, length - 1], "value": ["3", "-1", "1/3"]}
    trees[0] = {"split": row, "children": [shifted(trees[0]), shifted(trees[0])]}
    assert "the property holds (unsat)" in check(doc, "c")
    trees[0]["children"][1] = {"witness": {"length": base + 1, "index": [], "value": []}}
    with pytest.raises(Refuted):
        check(doc, "c")


def _rows_without_splits(tree, above: int = 0) -> int:
    """The rows of a leaf without affine splits above it: a leaf's witness length less its affine ancestors."""
    if "witness" in tree:
        return tree["witness"]["length"] - above
    return _rows_without_splits(tree["children"][0], above + (not isinstance(tree["split"], int)))


def test_exact_leaf_lp_without_points_is_closed_by_bound_rows():
    """A leaf whose node bounds are empty (L > U: the affine rows above it contradict each other) has no
    point: the exact LP's witness is that node's two bound rows, z − L + U − z < 0, and the checker's test
    accepts it."""
    from exactform.checker.forms import Forms, outputs
    from exactform.checker.relax import LeafRows, infeasible
    from exactform.checker.verify_cert import read_model
    from exactform.search.exact_leaf import leaf_lp
    cube = [(Fraction(-1), Fraction(1))] * 2
    F = Forms(cube)
    rows = LeafRows(F, cube, [outputs(F, read_model(maxout_net(0), "net"))[0]])
    rows.bounds[2 + 3] = (Fraction(1), Fraction(0))
    value, w, _ = leaf_lp(rows)
    assert value == -1 and w == {rows.starts[3]: 1, rows.starts[3] + 1: 1} and infeasible(rows, w)
