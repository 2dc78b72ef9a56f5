"""``exactform import``: the sampled self-check (exit 1 beyond float tolerance, ``--no-verify``),
torch files (whole modules, state_dicts, custom classes), ``from_module``, VNN-LIB input boxes."""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
from torch import nn  # noqa: E402

from exactform.formats import InputError  # noqa: E402
from exactform.importers.torch import from_module, torch_reference  # noqa: E402
from exactform.importers.verify import self_check  # noqa: E402
from exactform.importers.vnnlib import read_box  # noqa: E402
from exactform.models import Box, load_model  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "exactform", *map(str, args)], capture_output=True, text=True)


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
    assert "torch (float64)" in r.stdout and "agrees" in r.stdout and "BatchNormalization" in r.stdout


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
