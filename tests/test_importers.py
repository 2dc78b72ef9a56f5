"""Importers: ONNX / .nnet / torch → exact MaxoutNet; ACAS Xu against onnxruntime; bad input → exit 2."""
from __future__ import annotations

import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exactform.formats import InputError
from exactform.importers import import_network

ACAS = Path(__file__).resolve().parent.parent / "data" / "acasxu"
ONNX_FILES = sorted(ACAS.glob("*.onnx"))
UNIT = [(Fraction(-1), Fraction(1))]


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "exactform", *args], capture_output=True, text=True, cwd=cwd)


def random_points(n, dim, seed=0):
    rng = random.Random(seed)
    return [[Fraction(rng.randint(-2 ** 16, 2 ** 16), 2 ** 16) for _ in range(dim)] for _ in range(n)]


def onnxruntime_outputs(path, points):
    import onnxruntime as ort
    session = ort.InferenceSession(str(path))
    name = session.get_inputs()[0].name
    x = np.array([[float(v) for v in p] for p in points], dtype=np.float32)
    return np.concatenate([session.run(None, {name: row.reshape(1, 1, 1, -1)})[0] for row in x])


def worst(exact, floats):
    """Largest float error relative to max(1, |exact|) (outputs reach ~50 on ACAS Xu)."""
    return max(abs(float(e) - f) / max(1.0, abs(float(e))) for row, frow in zip(exact, floats) for e, f in zip(row, frow))


def test_all_acasxu_networks_import_and_agree_with_onnxruntime():
    assert len(ONNX_FILES) == 45
    for k, path in enumerate(ONNX_FILES):
        net = import_network(str(path), UNIT)
        assert net.widths == [5, 50, 50, 50, 50, 50, 50] and net.output_dim == 5
        points = random_points(1000 if k < 2 else 20, 5, seed=k)
        assert worst(net.evaluate_batch(points), onnxruntime_outputs(path, points)) < 1e-4, path.name


def test_nnet_folds_normalisation_exactly():
    nnet = import_network(str(ACAS / "ACASXU_run2a_1_1_batch_2000.nnet"),
                          [(Fraction(0), Fraction(60760)), (Fraction(-3), Fraction(3)), (Fraction(-3), Fraction(3)),
                           (Fraction(100), Fraction(1200)), (Fraction(0), Fraction(1200))])
    onnx = import_network(str(ACAS / "ACASXU_run2a_1_1_batch_2000.onnx"), [(Fraction(-10), Fraction(10))])
    means = [Fraction(s) for s in ("19791.091", "0", "0", "650", "600")]
    ranges = [Fraction(s) for s in ("60261", "6.28318530718", "6.28318530718", "1100", "1200")]
    out_mean, out_range = Fraction("7.5188840201005975"), Fraction("373.94992")
    points = [[nnet.domain.lower[i] + (nnet.domain.upper[i] - nnet.domain.lower[i]) * Fraction(k, 7) for i in range(5)]
              for k in range(8)]
    normalised = [[(x - m) / r for x, m, r in zip(p, means, ranges)] for p in points]
    for a, b in zip(nnet.evaluate_batch(points), onnx.evaluate_batch(normalised)):
        assert max(abs(float(u - (v * out_range + out_mean))) for u, v in zip(a, b)) < 1e-3


def test_nnet_clipping_layer_when_domain_leaves_the_clipping_box():
    path = str(ACAS / "ACASXU_run2a_1_1_batch_2000.nnet")
    net = import_network(path, [(Fraction(-100), Fraction(70000))])
    assert net.widths[:2] == [5, 10]
    clip = [(Fraction(0), Fraction(60760)), (Fraction("-3.141593"), Fraction("3.141593")),
            (Fraction("-3.141593"), Fraction("3.141593")), (Fraction(100), Fraction(1200)), (Fraction(0), Fraction(1200))]
    outside = [Fraction(-50), Fraction(9), Fraction(-7), Fraction(5000), Fraction(600)]
    clipped = [min(max(x, lo), hi) for x, (lo, hi) in zip(outside, clip)]
    assert net(outside) == net(clipped)
    inside = import_network(path, clip)
    assert inside(clipped) == net(clipped)


def test_torch_sequential_in_python_and_saved(tmp_path):
    import torch
    from torch import nn

    from exactform.importers.torch import from_module
    torch.manual_seed(0)
    seq = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    net = from_module(seq, lambda d: __import__("exactform.models", fromlist=["Box"]).Box(
        (Fraction(-1),) * d, (Fraction(1),) * d))
    points = random_points(50, 3)
    with torch.no_grad():
        ref = seq(torch.tensor([[float(v) for v in p] for p in points])).double().tolist()
    assert worst(net.evaluate_batch(points), ref) < 1e-5
    torch.save(seq, tmp_path / "net.pt")
    saved = import_network(str(tmp_path / "net.pt"), UNIT)
    assert saved.to_json() == net.to_json()


def test_unsupported_torch_module_is_named(tmp_path):
    import torch
    from torch import nn
    torch.save(nn.Sequential(nn.Linear(2, 2), nn.Tanh()), tmp_path / "tanh.pt")
    r = cli("import", str(tmp_path / "tanh.pt"), "--domain", "-1:1", "-o", str(tmp_path / "o.json"))
    assert r.returncode == 2 and "Tanh" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def _tiny_onnx(path, op="Relu"):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.array([[1.0, -2.0], [0.5, 0.25]], dtype=np.float32), "W")
    b = numpy_helper.from_array(np.array([0.125, -1.0], dtype=np.float32), "B")
    d = numpy_helper.from_array(np.array([4.0], dtype=np.float32), "D")
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["g"], name="dense", transB=1),
             helper.make_node("Div", ["g", "D"], ["q"], name="scale"),
             helper.make_node(op, ["q"], ["h"], name="act"),
             helper.make_node("MatMul", ["h", "W"], ["y"], name="out")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w, b, d])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_small_onnx_is_exact(tmp_path):
    _tiny_onnx(tmp_path / "t.onnx")
    net = import_network(str(tmp_path / "t.onnx"), UNIT)
    x = [Fraction(1, 3), Fraction(-1, 2)]
    W = [[Fraction(1), Fraction(-2)], [Fraction(1, 2), Fraction(1, 4)]]
    g = [(sum(W[i][k] * x[k] for k in range(2)) + [Fraction(1, 8), Fraction(-1)][i]) / 4 for i in range(2)]
    h = [max(v, Fraction(0)) for v in g]
    assert net(x) == [sum(h[k] * W[k][j] for k in range(2)) for j in range(2)]


def test_unsupported_onnx_op_named(tmp_path):
    _tiny_onnx(tmp_path / "s.onnx", op="Sigmoid")
    r = cli("import", str(tmp_path / "s.onnx"), "--domain", "-1:1", "-o", str(tmp_path / "o.json"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "'act'" in r.stderr and "Sigmoid" in r.stderr


@pytest.mark.parametrize("suffix,content", [(".onnx", b"\x08\x07garbage\xff\xff"),
                                            (".nnet", b"// c\n2,2,1,2,\n2,2,x,\n"),
                                            (".nnet", b"1,2,1,2,\n2,1,\n0,\n0,0,\n1,1,\n")])
def test_malformed_files_exit_2_one_line(tmp_path, suffix, content):
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(content)
    r = cli("import", str(path), "--domain", "-1:1", "-o", str(tmp_path / "o.json"))
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and str(path) in r.stderr
    assert not (tmp_path / "o.json").exists()


def test_cli_import_domain_shapes(tmp_path):
    path = str(ACAS / "ACASXU_run2a_1_1_batch_2000.onnx")
    r = cli("import", path, "--domain", "-1:1,-1/2:1/2,0:0.25,-1:1,-1:1", "-o", str(tmp_path / "n.json"))
    assert r.returncode == 0, r.stderr
    r = cli("import", path, "--domain", "-1:1,0:1", "-o", str(tmp_path / "n.json"))
    assert r.returncode == 2 and "5 input(s)" in r.stderr
    with pytest.raises(InputError):
        import_network(str(tmp_path / "missing.onnx"), UNIT)


def test_onnx_max_of_affine_maps_is_a_maxout_layer(tmp_path):
    """``Max(Gemm(x), Gemm(x), c)`` imports as one layer of rank-3 units, equal to onnxruntime."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    A, B = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    c = rng.standard_normal(3).astype(np.float32)
    R = rng.standard_normal((3, 1)).astype(np.float32)
    inits = [numpy_helper.from_array(v, n) for v, n in ((A, "A"), (B, "B"), (c, "c"), (R, "R"))]
    nodes = [helper.make_node("MatMul", ["x", "A"], ["a"], name="piece_a"),
             helper.make_node("MatMul", ["x", "B"], ["b"], name="piece_b"),
             helper.make_node("Max", ["a", "b", "c"], ["h"], name="maxout"),
             helper.make_node("MatMul", ["h", "R"], ["y"], name="readout")]
    graph = helper.make_graph(nodes, "maxout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])], inits)
    path = tmp_path / "maxout.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    net = import_network(str(path), [(Fraction(-2), Fraction(2))])
    assert net.widths == [2, 3] and net.layers[0].ranks == [3, 3, 3]
    pts = random_points(200, 2, seed=4)
    pts = [[4 * v for v in p] for p in pts]
    exact = net.evaluate_batch(pts)
    x = np.array([[float(v) for v in p] for p in pts], dtype=np.float32)
    y = ort.InferenceSession(str(path)).run(None, {"x": x})[0]
    assert max(abs(Fraction(float(f)) - e[0]) for f, e in zip(y[:, 0], exact)) < Fraction(1, 10 ** 5)
