"""Importers: ONNX / .nnet / torch → exact MaxoutNet; ACAS Xu against onnxruntime; bad input → exit 2."""
from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from support import cli

from exactform.formats import InputError
from exactform.importers import import_network

ACAS = Path(__file__).resolve().parent.parent / "data" / "acasxu"
ONNX_FILES = sorted(ACAS.glob("*.onnx"))
UNIT = [(Fraction(-1), Fraction(1))]


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


def test_acasxu_networks_import_and_agree_with_onnxruntime():
    """A seeded sample of the 45 (1_1 always); ``python -m benchmarks import`` imports all 45."""
    assert len(ONNX_FILES) == 45
    sample = [0, *random.Random(len(ONNX_FILES)).sample(range(1, len(ONNX_FILES)), 4)]
    for k in sample:
        path = ONNX_FILES[k]
        net = import_network(str(path), UNIT)
        assert net.widths == [5, 50, 50, 50, 50, 50, 50] and net.output_dim == 5
        points = random_points(1000 if k == 0 else 20, 5, seed=k)
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


# --- sizes and work bounded before anything is materialised ------------------
def _hostile(path, nodes, inits=(), in_shape=(1, 2), out_shape=None, raw=()):
    """A graph over input ``x``; ``raw``: ``(name, dims)`` initializers declared with no data."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    tensors = [numpy_helper.from_array(np.asarray(v), n) for n, v in inits]
    tensors += [onnx.TensorProto(name=n, data_type=TensorProto.FLOAT, dims=list(d)) for n, d in raw]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], tensors)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return str(path)


HOSTILE = {
    # a 10^8-entry Expand of the input (the 176-byte file)
    "expand": (lambda p: _hostile(p, [__import__("onnx").helper.make_node("Expand", ["x", "s"], ["y"])],
                                  [("s", np.array([10**4, 10**4], np.int64))], (1, 1)), "Expand output"),
    # ConstantOfShape [10^5, 10^5] (a numpy MemoryError traceback)
    "constant_of_shape": (lambda p: _hostile(p, [
        __import__("onnx").helper.make_node("ConstantOfShape", ["s"], ["c"]),
        __import__("onnx").helper.make_node("Add", ["x", "c"], ["y"])], [("s", np.array([10**5, 10**5], np.int64))]),
        "ConstantOfShape output"),
    # a layer whose Transformer compile refuses (40,000 ReLU units; the had 10^6)
    "wide_layer": (lambda p: _hostile(p, [__import__("onnx").helper.make_node("MatMul", ["x", "w"], ["h"]),
                                          __import__("onnx").helper.make_node("Relu", ["h"], ["y"])],
                                      [("w", np.ones((2, 40000), np.float32))]), "compile refuses"),
    # an initializer declaring 10^10 entries (no data): refused from its dimensions
    "declared_dims": (lambda p: _hostile(p, [__import__("onnx").helper.make_node("MatMul", ["x", "w"], ["y"])],
                                         raw=[("w", (2, 5 * 10**9))]), "initializer 'w'"),
    # a broadcast of two constants to 10^8 entries
    "folded_broadcast": (lambda p: _hostile(p, [__import__("onnx").helper.make_node("Add", ["a", "b"], ["c"]),
                                                __import__("onnx").helper.make_node("Add", ["x", "c"], ["y"])],
                                            [("a", np.zeros((10**4, 1), np.float32)),
                                             ("b", np.zeros((1, 10**4), np.float32))]), "folded constant"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_sizes_are_refused_from_shapes_in_one_line(tmp_path, case):
    make, says = HOSTILE[case]
    path = make(tmp_path / "h.onnx")
    r = cli("import", path, "--domain", "-1:1", "-o", str(tmp_path / "h.json"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr
    assert "documented limit" in r.stderr and not (tmp_path / "h.json").exists()


def test_an_unused_initializer_is_never_converted(tmp_path, monkeypatch):
    """The issue's 72 MB file spent 215 s converting an 18M-entry initializer nothing reads."""
    from onnx import helper

    import exactform.importers.onnx as onnx_importer
    path = _hostile(tmp_path / "u.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                    [("unused", np.ones(10**6, np.float32))])
    sizes = []
    real = onnx_importer.exact_array
    monkeypatch.setattr(onnx_importer, "exact_array", lambda a, what: sizes.append(a.size) or real(a, what))
    net = import_network(path, UNIT)
    assert net([Fraction(-1), Fraction(1, 3)]) == [Fraction(0), Fraction(1, 3)] and sizes == []


def test_the_work_bound_refuses_before_the_terms_are_written(monkeypatch, tmp_path):
    """A product whose terms exceed the work limit is refused by the charge, not by running out."""
    from onnx import helper

    import exactform.importers.graph as graph
    monkeypatch.setattr(graph, "MAX_TERMS", 1000)
    path = _hostile(tmp_path / "w.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                    [("w", np.ones((2, 600), np.float32))])
    with pytest.raises(InputError, match="work limit is 1,000"):
        import_network(path, UNIT)
    monkeypatch.setattr(graph, "MAX_TERMS", 10**6)
    assert import_network(path, UNIT)([Fraction(1), Fraction(2)]) == [Fraction(3)] * 600


# --- torch.export programs are read as data -----------------------------------
def _program(tmp_path, dynamic=False):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).eval()
    shapes = ({0: torch.export.Dim("batch", min=2, max=8)},) if dynamic else None
    path = tmp_path / "p.pt2"
    torch.export.save(torch.export.export(model, (torch.zeros(2 if dynamic else 1, 3),), dynamic_shapes=shapes), path)
    return path


def _rewrite(path, edit):
    """The archive at ``path`` with member ``name`` replaced by ``edit(name, data)`` (None drops it)."""
    import zipfile
    with zipfile.ZipFile(path) as z:
        members = [(i.filename, z.read(i)) for i in z.infolist()]
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members:
            data = edit(name, data)
            if data is not None:
                z.writestr(name, data)
    return path


def _json_edit(member, change):
    import json

    def edit(name, data):
        if not name.endswith(member):
            return data
        doc = json.loads(data)
        change(doc)
        return json.dumps(doc).encode()
    return edit


def test_a_program_imports_without_unpickling_anything(tmp_path, monkeypatch):
    import pickle

    import torch
    path = _program(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("unpickling was attempted")
    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    net = import_network(str(path), UNIT)
    assert net.widths == [3, 4]


def _set_target(doc):
    doc["graph_module"]["graph"]["nodes"][0]["target"] = "torch.save"


def _set_pickle(doc):
    next(iter(doc["config"].values()))["use_pickle"] = True


def _set_guard(doc):
    doc["guards_code"] = ["__import__('pathlib').Path('PWNED').touch()"]


def _set_trace(doc):
    node = doc["graph_module"]["graph"]["nodes"][0]
    node["metadata"]["stack_trace"] = "x\n__import__('pathlib').Path('PWNED').touch()"


@pytest.mark.parametrize("tamper,says", [
    (lambda p: _rewrite(p, _json_edit("models/model.json", _set_target)), "not an ATen operator"),
    (lambda p: _rewrite(p, _json_edit("model_weights_config.json", _set_pickle)), "would run code"),
    (lambda p: _rewrite(p, lambda n, d: d if not n.endswith("archive_version") else d)
     and __import__("zipfile").ZipFile(p, "a").writestr(p.stem + "/data/aotinductor/model.so", b"\x7fELF"),
     "not part of a plain torch.export program"),
    (lambda p: p.write_bytes(b"PK\x03\x04" + b"\x00" * 100) and p, "not a torch.export program"),
])
def test_a_tampered_program_is_one_line(tmp_path, tamper, says):
    path = _program(tmp_path)
    tamper(path)
    r = cli("import", str(path), "--domain", "-1:1", "-o", str(tmp_path / "p.json"), cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("change", [_set_guard, _set_trace])
def test_guard_code_and_metadata_of_a_program_never_run(tmp_path, change):
    path = _rewrite(_program(tmp_path), _json_edit("models/model.json", change))
    r = cli("import", str(path), "--domain", "-1:1", "-o", str(tmp_path / "p.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "PWNED").exists()


def test_a_program_with_dynamic_shapes_is_refused_before_sympy_parses_them(tmp_path):
    path = _program(tmp_path, dynamic=True)
    r = cli("import", str(path), "--domain", "-1:1", "-o", str(tmp_path / "p.json"))
    assert r.returncode == 2 and "static shapes" in r.stderr and len(r.stderr.strip().splitlines()) == 1
