"""``exactform equiv`` on deep chains: no recursion on the model's depth in the prover, the
box bound, the exact evaluation, the certificate writer or the E1 checker.  The chain keeps two unfixed ReLU-like
nodes per layer on the box (``(a, b) -> (max(a, b), max(-a, -b))``), so every layer is a node the
evaluation must go through; B differs from A only in the read-out, by 10^-6 on the first unit."""
from __future__ import annotations

import json
import sys
from fractions import Fraction as F

import pytest

from exactform.checker import equiv as check_equiv
from exactform.cli import main
from exactform.models import Box, MaxoutLayer, MaxoutNet
from exactform.search.equiv import certificate, compare

SHIFT = F(1, 10 ** 6)


def chain(layers: int, first: F = F(1)) -> MaxoutNet:
    layer = MaxoutLayer([[[F(1), F(0)], [F(0), F(1)]], [[F(-1), F(0)], [F(0), F(-1)]]], [[F(0), F(0)], [F(0), F(0)]])
    return MaxoutNet(Box((F(-1), F(-1)), (F(1), F(1))), [layer] * layers, [[first, F(1, 3)]], [F(0)])


def units(layers: int, x: list) -> tuple:
    """The chain's two units after ``layers`` layers, evaluated one layer at a time (the oracle)."""
    a, b = x
    for _ in range(layers):
        a, b = max(a, b), max(-a, -b)
    return a, b


def top_unit(layers: int, x: list) -> F:
    return units(layers, x)[0]


@pytest.mark.slow
def test_a_300_layer_chain_in_every_mode():
    a, b = chain(300), chain(300, 1 + SHIFT)
    box = [(F(-1), F(1))] * 2
    proved = compare(a.to_json(), b.to_json(), box, SHIFT, prune=False)
    assert proved.equal and proved.tree is not None
    cert = json.loads(json.dumps(certificate(a.to_json(), b.to_json(), box, SHIFT, proved.tree)))
    assert check_equiv.check(cert, "cert").startswith("|A(x) - B(x)|_inf <= 1/1000000 ")
    assert compare(a.to_json(), b.to_json(), box, SHIFT).equal                       # the box bound
    assert not compare(a.to_json(), b.to_json(), box, SHIFT / 2, prune=True).equal
    top = compare(a.to_json(), b.to_json(), box, max_diff=True)
    assert top.maximum == SHIFT * top_unit(300, top.point) == SHIFT                 # max(a, b) ≤ 1 = the box's corner


def test_a_400_layer_chain_through_the_command_below_a_300_frame_stack(tmp_path, capsys):
    """Python's recursion limit set below the depth: any recursion on the layers would raise."""
    paths = []
    for name, net in (("a", chain(400)), ("b", chain(400, 1 + SHIFT))):
        paths.append(str(tmp_path / f"{name}.json"))
        (tmp_path / f"{name}.json").write_text(json.dumps(net.to_json()))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        assert main(["equiv", *paths, "--tolerance", "1/1000000", "--cert", str(tmp_path / "c.json")]) == 0
        cert = json.loads((tmp_path / "c.json").read_text())
        assert check_equiv.check(cert, "c.json").startswith("|A(x) - B(x)|_inf <= 1/1000000 ")
        capsys.readouterr()
        assert main(["equiv", *paths, "--cert", str(tmp_path / "d.json"), "--json"]) == 1
    finally:
        sys.setrecursionlimit(limit)
    doc = json.loads(capsys.readouterr().out)
    x = [F(v) for v in doc["point"]]
    assert F(doc["b"][0]) - F(doc["a"][0]) == SHIFT * top_unit(400, x) != 0
    assert not (tmp_path / "d.json").exists()


@pytest.mark.parametrize("layers", [300, 1000])
def test_the_exact_evaluation_of_a_deep_chain(layers):
    a = chain(layers)
    x = [F(1, 3), F(-2, 7)]
    u, v = units(layers, x)
    assert a(x) == [u + v / 3]
