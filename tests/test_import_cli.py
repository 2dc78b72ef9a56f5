"""``exactform import``: the sampled self-check (exit 1 beyond float tolerance, ``--no-verify``),
torch files (whole modules, state_dicts, custom classes), ``from_module``, VNN-LIB input boxes."""
from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from support import cli

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
from torch import nn  # noqa: E402

from exactform.formats import InputError  # noqa: E402
from exactform.importers.torch import from_module, torch_reference  # noqa: E402
from exactform.importers.verify import self_check  # noqa: E402
from exactform.importers.vnnlib import read_box  # noqa: E402
from exactform.models import Box, load_model  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _cancellation_onnx(path):
    """``(x·10^8 + 1) − x·10^8``: exactly 1, but 0 in float32 at |x| = 1."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    inits = [numpy_helper.from_array(np.array([1e8], np.float32), "big"),
             numpy_helper.from_array(np.array([1.0], np.float32), "one")]
    nodes = [helper.make_node("Mul", ["x", "big"], ["a"]), helper.make_node("Add", ["a", "one"], ["b"]),
             helper.make_node("Sub", ["b", "a"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_self_check_line_and_exit_1_beyond_tolerance(tmp_path):
    onnx_path = tmp_path / "c.onnx"
    _cancellation_onnx(onnx_path)
    r = cli("import", onnx_path, "--domain", "-1:1", "-o", tmp_path / "c.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "DISAGREES" in r.stderr and "worst" in r.stderr and not (tmp_path / "c.json").exists()
    r = cli("import", onnx_path, "--domain", "-1:1", "-o", tmp_path / "c.json", "--no-verify")
    assert r.returncode == 0 and "skipped (--no-verify)" in r.stdout
    assert load_model(tmp_path / "c.json")([Fraction(1)]) == [Fraction(1)]


def test_self_check_passes_on_acasxu_and_reports_the_worst_difference(tmp_path):
    r = cli("import", "data/acasxu/ACASXU_run2a_1_1_batch_2000.onnx", "--domain", "-1:1", "-o",
            tmp_path / "a.json", "--json")
    assert r.returncode == 0, r.stderr
    check = json.loads(r.stdout)["self_check"]
    assert check["agrees"] and 0 < check["worst"] < 1e-4 and check["points"] == 32


def test_nnet_self_check_through_the_clipping_layer(tmp_path):
    r = cli("import", "data/acasxu/ACASXU_run2a_1_1_batch_2000.nnet", "--domain", "-100:70000", "-o",
            tmp_path / "n.json", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["widths"][1] == 10 and summary["self_check"]["agrees"]       # the clip layer is there
    assert summary["self_check"]["tolerance"] == 1e-9 and summary["self_check"]["worst"] < 1e-12


def test_torch_cnn_file_with_input_shape(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(12, 2)).eval()
    torch.save(model, tmp_path / "cnn.pt")
    r = cli("import", tmp_path / "cnn.pt", "--domain", "0:1", "-o", tmp_path / "cnn.json")
    assert r.returncode == 2 and "--input-shape" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = cli("import", tmp_path / "cnn.pt", "--domain", "0:1", "--input-shape", "1,1,6,6", "-o", tmp_path / "cnn.json")
    assert r.returncode == 0, r.stderr
    assert "torch in float64" in r.stdout and "tolerance 1e-06 for this reference): agrees" in r.stdout
    assert "BatchNormalization" in r.stdout


def test_state_dict_and_custom_class_get_one_line(tmp_path):
    torch.save(nn.Linear(2, 2).state_dict(), tmp_path / "sd.pt")
    r = cli("import", tmp_path / "sd.pt", "--domain", "0:1", "-o", tmp_path / "o.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "state_dict" in r.stderr and "torch.save(model)" in r.stderr and "from_torch" in r.stderr
    torch.save(Skip(), tmp_path / "skip.pt")
    r = cli("import", tmp_path / "skip.pt", "--domain", "0:1", "-o", tmp_path / "o.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "Skip" in r.stderr and "from_torch" in r.stderr


class Skip(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        return self.out(x + nn.functional.leaky_relu(self.fc(x), 0.3))


def test_from_module_residual_forward_agrees_with_torch_float64():
    torch.manual_seed(3)
    module = Skip()
    net = from_module(module, (-2, 2))
    assert net.domain == Box((Fraction(-2),) * 3, (Fraction(2),) * 3)
    check = self_check(net, torch_reference(module, (1, 3)), "torch")
    assert check.ok and check.worst < 1e-7, check.line()      # the slope 0.3 is a float32 attribute in ONNX
    w = [[Fraction(float(v)) for v in row] for row in module.fc.weight.detach().double().tolist()]
    b = [Fraction(float(v)) for v in module.fc.bias.detach().double().tolist()]
    ow = [Fraction(float(v)) for v in module.out.weight.detach().double().tolist()[0]]
    ob = Fraction(float(module.out.bias.item()))
    x = [Fraction(1, 3), Fraction(-5, 4), Fraction(2)]
    h = [sum(wi * xi for wi, xi in zip(row, x)) + bi for row, bi in zip(w, b)]
    leak = Fraction(float(np.float32(0.3)))
    z = [xi + (hi if hi >= 0 else leak * hi) for xi, hi in zip(x, h)]
    assert net(x) == [sum(a * c for a, c in zip(ow, z)) + ob]


def test_from_module_nan_weight_is_refused():
    module = nn.Sequential(nn.Linear(2, 2))
    with torch.no_grad():
        module[0].weight[1, 0] = float("nan")
    with pytest.raises(InputError, match="0.weight.*entry \\[2\\]"):
        from_module(module, (0, 1))


VNNLIB = """; ACAS Xu property 1 style
(declare-const X_0 Real)
(declare-const X_1 Real)
(declare-const Y_0 Real)
(assert (<= X_0 0.679857769))
(assert (>= X_0 0.6))
(assert (>= X_1 (- 0.5)))
(assert (<= -0.25 X_1))   ; a second, tighter lower bound
(assert (<= X_1 1e-1))
(assert (>= Y_0 3.991125645861615))
"""


def test_vnnlib_box_exact_decimals(tmp_path):
    (tmp_path / "p.vnnlib").write_text(VNNLIB)
    box, skipped = read_box(str(tmp_path / "p.vnnlib"))
    assert box == [(Fraction("0.6"), Fraction("0.679857769")), (Fraction(-1, 4), Fraction(1, 10))]
    assert skipped == 1


@pytest.mark.parametrize("text,message", [
    ("(declare-const X_0 Real)\n(assert (<= X_0 1))\n", "X_0: needs both"),
    ("(declare-const X_0 Real)\n(assert (or (<= X_0 1) (>= X_0 0)))\n", "line 2: only input bounds"),
    ("(declare-const X_0 Real)\n(assert (<= (+ X_0 X_0) 1))\n", "line 2"),
    ("(declare-const X_0 Real)\n(assert (<= X_0 1)\n", "line 2: unbalanced"),
    ("(declare-const X_0 Real)\n(assert (<= X_0 nan))\n", "line 2"),
    ("(declare-const Z Real)\n", "line 1: variables are X_i"),
])
def test_vnnlib_rejects_the_rest_with_one_line(tmp_path, text, message):
    (tmp_path / "p.vnnlib").write_text(text)
    with pytest.raises(InputError, match=message.replace("(", "\\(")):
        read_box(str(tmp_path / "p.vnnlib"))


def test_cli_vnnlib_domain(tmp_path):
    prop = tmp_path / "p.vnnlib"
    prop.write_text("".join(f"(declare-const X_{i} Real)\n(assert (>= X_{i} -0.5))\n(assert (<= X_{i} 0.{i + 1}))\n"
                            for i in range(5)))
    r = cli("import", "data/acasxu/ACASXU_run2a_1_1_batch_2000.onnx", "--vnnlib", prop, "-o", tmp_path / "n.json")
    assert r.returncode == 0, r.stderr
    net = load_model(tmp_path / "n.json")
    assert net.domain.upper == tuple(Fraction(i + 1, 10) for i in range(5))
    prop.write_text("(declare-const X_0 Real)\n(assert (>= X_0 0))\n(assert (<= X_0 1))\n")
    r = cli("import", "data/acasxu/ACASXU_run2a_1_1_batch_2000.onnx", "--vnnlib", prop, "-o", tmp_path / "n.json")
    assert r.returncode == 2 and str(prop) in r.stderr and "5 input(s)" in r.stderr


def test_residual_net_with_pass_through_units_compiles_certifies_and_checks(tmp_path):
    from exactform.formats import write_json
    torch.manual_seed(5)
    net = from_module(Skip(), (-1, 1))
    assert 1 in net.layers[0].ranks                      # the skip branch rides on rank-1 units
    write_json(tmp_path / "n.json", net.to_json())
    assert cli("compile", tmp_path / "n.json", "-o", tmp_path / "t.json").returncode == 0
    assert cli("certify", tmp_path / "n.json", tmp_path / "t.json", "-o", tmp_path / "c.json").returncode == 0
    r = cli("check", tmp_path / "c.json")
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_file_onnxruntime_cannot_run_is_one_line_unless_no_verify(tmp_path):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 99                                   # onnxruntime refuses to load it
    onnx.save(model, str(tmp_path / "m.onnx"))
    r = cli("import", tmp_path / "m.onnx", "--domain", "-1:1", "-o", tmp_path / "m.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--no-verify" in r.stderr
    assert not (tmp_path / "m.json").exists()
    r = cli("import", tmp_path / "m.onnx", "--domain", "-1:1", "-o", tmp_path / "m.json", "--no-verify")
    assert r.returncode == 0 and (tmp_path / "m.json").exists()


# --- honest self-check, --strip-softmax, messages --------------------------------------
def test_self_check_of_a_torch_file_states_its_reference_and_a_tolerance_that_catches_a_wrong_weight(tmp_path):
    """Finding 3: the import is exact to the traced graph's float32 slope; torch in float64 uses the
    Python float 0.2, so they differ (~1e-9), well inside 1e-6; a weight moved by 1e-5 is not."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.LeakyReLU(0.2), nn.Linear(4, 2)).eval()
    torch.save(model, tmp_path / "l.pt")
    r = cli("import", tmp_path / "l.pt", "--domain", "-1:1", "-o", tmp_path / "l.json", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    check = summary["self_check"]
    assert check["source"] == "torch in float64" and check["tolerance"] == 1e-6 and 0 < check["worst"] < 1e-6
    assert "float32" in summary["exact_to"]
    net = load_model(tmp_path / "l.json")
    moved = [[w * (1 + Fraction(1, 10**5)) for w in row] for row in net.readout_weight]
    wrong = type(net)(net.domain, net.layers, moved, net.readout_bias)
    assert not self_check(wrong, torch_reference(model, (1, 3))).ok


def test_strip_softmax_is_named_by_the_refusal_and_said_on_stderr_and_in_the_provenance(tmp_path):
    """Finding 4."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 3), nn.LogSoftmax(dim=1)).eval()
    torch.onnx.export(model, (torch.zeros(1, 3),), str(tmp_path / "s.onnx"), dynamo=False)
    r = cli("import", tmp_path / "s.onnx", "--domain", "-1:1", "-o", tmp_path / "s.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--strip-softmax" in r.stderr
    assert not (tmp_path / "s.json").exists()
    r = cli("import", tmp_path / "s.onnx", "--domain", "-1:1", "-o", tmp_path / "s.json", "--strip-softmax")
    assert r.returncode == 0, r.stderr
    assert "LogSoftmax" in r.stderr and "argmax" in r.stderr and "agrees" in r.stdout     # against the logits
    assert cli("compile", tmp_path / "s.json", "-o", tmp_path / "t.json").returncode == 0
    assert cli("certify", tmp_path / "s.json", tmp_path / "t.json", "-o", tmp_path / "c.json").returncode == 0
    r = cli("check", tmp_path / "c.json", "--maxout", tmp_path / "s.json", "--transformer", tmp_path / "t.json")
    assert r.returncode == 0, r.stdout + r.stderr
    net = load_model(tmp_path / "s.json")
    assert len(net.provenance) == 1 and "LogSoftmax" in net.provenance[0]
    x = [Fraction(1, 2), Fraction(-1, 3), Fraction(1)]
    with torch.no_grad():
        logits = model[:-1].double()(torch.tensor([[float(v) for v in x]], dtype=torch.float64))[0].tolist()
    assert max(abs(float(e) - f) for e, f in zip(net(x), logits)) < 1e-9


def test_a_custom_class_file_points_to_from_torch_and_to_torch_export(tmp_path):
    """Finding 2: the refusal names the safe paths; the .pt2 of the same module imports exactly."""
    torch.manual_seed(3)
    module = Skip().eval()
    torch.save(module, tmp_path / "skip.pt")
    r = cli("import", tmp_path / "skip.pt", "--domain", "0:1", "-o", tmp_path / "o.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "exactform.from_torch(module, domain, input_shape=" in r.stderr and ".pt2" in r.stderr
    torch.export.save(torch.export.export(module, (torch.zeros(1, 3),)), tmp_path / "skip.pt2")
    r = cli("import", tmp_path / "skip.pt2", "--domain", "0:1", "-o", tmp_path / "o.json", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["self_check"]["source"] == "torch.export program in float64"
    assert load_model(tmp_path / "o.json")([Fraction(1, 3)] * 3) == from_module(module, (0, 1))([Fraction(1, 3)] * 3)


def test_input_shape_with_a_file_that_states_its_shape_is_exit_2(tmp_path):
    """Finding 6: --input-shape with an ONNX file was silently ignored."""
    r = cli("import", "data/acasxu/ACASXU_run2a_1_1_batch_2000.onnx", "--domain", "-1:1", "--input-shape", "1,5",
            "-o", tmp_path / "a.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--input-shape" in r.stderr
    assert not (tmp_path / "a.json").exists()


@pytest.mark.parametrize("layer,says", [(nn.Sigmoid(), "'Sigmoid'"),
                                        (nn.Upsample(scale_factor=2, mode="bilinear"), "'nearest'")])
def test_a_torch_file_refusal_is_one_line_without_dumps_or_warnings(tmp_path, layer, says):
    """Finding 6: no TorchScript dump, no torch warning before the error line."""
    model = nn.Sequential(nn.Conv2d(1, 1, 1), layer, nn.Flatten()).eval()
    torch.save(model, tmp_path / "m.pt")
    r = cli("import", tmp_path / "m.pt", "--domain", "0:1", "--input-shape", "1,1,2,2", "-o", tmp_path / "m.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr
    assert r.stderr.startswith("exactform: error: ") and not r.stdout


def test_an_onnx_file_named_pt_is_named_as_onnx(tmp_path):
    """Finding 6: it was told that it 'needs a class'."""
    import shutil
    shutil.copy("data/acasxu/ACASXU_run2a_1_1_batch_2000.onnx", tmp_path / "a.pt")
    r = cli("import", tmp_path / "a.pt", "--domain", "-1:1", "-o", tmp_path / "a.json")
    assert r.returncode == 2 and "an ONNX model" in r.stderr and "NET.onnx" in r.stderr


def test_external_data_outside_the_models_folder_is_refused_saying_why(tmp_path):
    """Finding 6: it was refused as 'ValidationError' without saying why."""
    import onnx
    from onnx import TensorProto, helper
    (tmp_path / "model").mkdir()
    (tmp_path / "secret.bin").write_bytes(np.ones(4, np.float32).tobytes())
    w = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 2])
    w.data_location = TensorProto.EXTERNAL
    for k, v in {"location": "../secret.bin", "offset": "0", "length": "16"}.items():
        entry = w.external_data.add()
        entry.key, entry.value = k, v
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "model" / "m.onnx"))
    r = cli("import", tmp_path / "model" / "m.onnx", "--domain", "-1:1", "-o", tmp_path / "m.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "outside the model's folder" in r.stderr and "'w'" in r.stderr


def test_the_torchscript_exporters_graph_dump_never_reaches_the_terminal(tmp_path):
    """Finding 6: the TorchScript exporter prints its graph from C++ when it gives up (here on an
    adaptive pooling whose output size does not divide the input); the import goes on through
    torch.export, and prints nothing of it."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 2), nn.AdaptiveAvgPool2d(2), nn.Flatten()).eval()
    torch.save(model, tmp_path / "p.pt")
    r = cli("import", tmp_path / "p.pt", "--domain", "0:1", "--input-shape", "1,1,4,4", "-o", tmp_path / "p.json")
    assert r.returncode == 0, r.stderr
    assert "Torch IR" not in r.stdout + r.stderr and r.stdout.startswith("imported ") and not r.stderr


@pytest.mark.parametrize("hidden, suffix, extra", [("onnx", ".onnx", "onnx"), ("torch", ".pt", "torch")])
def test_without_the_extra_an_import_names_it_in_one_line(tmp_path, hidden, suffix, extra):
    """A default install (no extras): one line naming ``exactform[EXTRA]``, exit 2, nothing written."""
    import subprocess
    import sys
    net = tmp_path / f"net{suffix}"
    net.write_bytes(b"not read")
    out = tmp_path / "net.json"
    script = (f"import sys; sys.modules[{hidden!r}] = None; from exactform.cli import main; "
              f"sys.exit(main(['import', {str(net)!r}, '--domain', '-1/8:1/8', '-o', {str(out)!r}]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"pip install 'exactform[{extra}]'" in done.stderr and str(net) in done.stderr
    assert not out.exists()
