"""Torch backend, differential harness, margin check and ONNX export against exact evaluation."""
from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch
from support import cli

from exactform.backends.differential import float_error, margin_check
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.importers import import_network
from exactform.models import Box, MaxoutLayer, MaxoutNet

ACAS = Path(__file__).resolve().parent.parent / "data" / "acasxu" / "ACASXU_run2a_1_1_batch_2000.onnx"
F = Fraction


def points(n, dim, seed=0):
    rng = random.Random(seed)
    return [[F(rng.randint(-2 ** 20, 2 ** 20), 2 ** 20) for _ in range(dim)] for _ in range(n)]


def acas():
    net = import_network(str(ACAS), [(F(-1), F(1))])
    return net, compile_maxout(net)


def test_acasxu_float32_transformer_within_1e5_of_exact():
    torch.set_num_threads(1)
    net, tf = acas()
    pts = points(200, 5)
    exact = net.evaluate_batch(pts)
    assert tf.evaluate_batch(pts[:3]) == exact[:3]          # the construction is exact on the domain
    source = float_error(net, pts, exact=exact)
    compiled = float_error(tf, pts, exact=exact)
    assert compiled.worst < F(1, 10 ** 5), float(compiled.worst)
    assert source.worst < F(1, 10 ** 5)
    assert float_error(tf, pts[:50], torch.float64, exact=exact[:50]).worst < F(1, 10 ** 12)


def test_maxout_ranks_and_softmax_module():
    box = Box((F(-1), F(-1)), (F(1), F(1)))
    layer = MaxoutLayer([[[F(1), F(0)], [F(0), F(1)], [F(-1), F(-1, 2)]], [[F(1, 3), F(2)]]],
                        [[F(0), F(1, 4), F(-1, 8)], [F(1)]])
    net = MaxoutNet(box, [layer], [[F(1), F(-2)]], [F(1, 2)])
    tf = compile_maxout(net)
    pts = points(100, 2, seed=3)
    exact = net.evaluate_batch(pts)
    assert float_error(net, pts, exact=exact).worst < F(1, 10 ** 6)
    assert float_error(tf, pts, exact=exact).worst < F(1, 10 ** 6)
    from exactform.backends.torch import evaluate, exact_points_tensor, to_module
    soft = evaluate(to_module(tf.with_attention(F(10 ** 6)), torch.float64), exact_points_tensor(pts, torch.float64))
    assert max(abs(float(e[0]) - s) for e, s in zip(exact, soft[:, 0].tolist())) < 1e-3


def test_margin_check_flags_a_near_tie():
    # y = ReLU(x0 − x1): at x = (1, 1 − 2^-30) the exact score gap is 2^-30, below float32's
    # input rounding (1 − 2^-30 rounds to 1), so the decision may have changed; at (1, 0) it cannot.
    box = Box((F(-2), F(-2)), (F(2), F(2)))
    net = MaxoutNet(box, [MaxoutLayer([[[F(1), F(-1)], [F(0), F(0)]]], [[F(0), F(0)]])], [[F(1)]], [F(0)])
    report = margin_check(compile_maxout(net), [[F(1), 1 - F(1, 2 ** 30)], [F(1), F(0)]])
    assert report.undecided[0] > 0 and report.undecided[1] == 0
    assert report.bound[0] >= 2 ** -30 and report.bound[1] < 1e-4


def test_margin_bound_is_rigorous_on_acasxu():
    torch.set_num_threads(1)
    net, tf = acas()
    pts = points(20, 5, seed=5)
    exact = net.evaluate_batch(pts)
    report = margin_check(tf, pts)
    from exactform.backends.torch import evaluate, exact_points_tensor, to_module
    out = evaluate(to_module(tf), exact_points_tensor(pts, torch.float32)).double().tolist()
    for row, ref, b in zip(out, exact, report.bound):
        assert max(abs(F(f) - e) for f, e in zip(row, ref)) <= F(b)


def test_onnx_export_runs_in_onnxruntime(tmp_path):
    import onnxruntime as ort
    net, tf = acas()
    tf_path = tmp_path / "tf.json"
    tf_path.write_text(json.dumps(tf.to_json()))
    r = cli("export", tf_path, "-o", tmp_path / "tf.onnx")
    assert r.returncode == 0, r.stderr
    pts = points(200, 5, seed=7)
    x = np.array([[float(v) for v in p] for p in pts], dtype=np.float32)
    y = ort.InferenceSession(str(tmp_path / "tf.onnx")).run(None, {"x": x})[0]
    exact = net.evaluate_batch(pts)
    assert max(abs(F(float(f)) - e) for row, ref in zip(y, exact) for f, e in zip(row, ref)) < F(1, 10 ** 5)


def test_eval_cli_torch_backend(tmp_path, capsys):
    from exactform.cli import main            # in this process: torch is loaded once for the whole suite
    box = Box((F(-1),), (F(1),))
    net = MaxoutNet(box, [MaxoutLayer([[[F(1)], [F(-1)]]], [[F(0), F(0)]])], [[F(1)]], [F(0)])   # |x|
    (tmp_path / "net.json").write_text(json.dumps(net.to_json()))
    (tmp_path / "p.json").write_text(json.dumps([["-1/2"], ["1/3"]]))
    argv = ["eval", str(tmp_path / "net.json"), "--points", str(tmp_path / "p.json"), "--backend", "torch"]
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)["outputs"]
    assert out[0] == [0.5] and abs(out[1][0] - 1 / 3) < 1e-7
    assert main(argv) == 0 and "float32" in capsys.readouterr().out


def test_eval_cli_compare_and_margins(tmp_path, capsys):
    """--compare measures |float − exact| exactly; --margins bounds it rigorously (and flags near-ties)."""
    from exactform.cli import main
    box = Box((F(-1),), (F(1),))
    net = MaxoutNet(box, [MaxoutLayer([[[F(1)], [F(-1)]]], [[F(0), F(0)]])], [[F(1)]], [F(0)])   # |x|
    (tmp_path / "tf.json").write_text(json.dumps(compile_maxout(net).to_json()))
    (tmp_path / "p.json").write_text(json.dumps([["1/3"], ["1/1024"], ["0"]]))
    argv = ["eval", str(tmp_path / "tf.json"), "--points", str(tmp_path / "p.json"), "--backend", "torch"]
    assert main(argv + ["--compare", "--margins", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    worst = F(report["worst_error"])
    assert 0 < worst < F(1, 10 ** 7)                         # 1/3 is not a float: a real, exact error
    assert all(b >= 0 for b in report["error_bound"]) and F(max(report["error_bound"])) >= worst
    assert report["undecided_rows"][0] == 0 and report["undecided_rows"][2] > 0   # x = 0: the pieces tie
    assert main(["eval", str(tmp_path / "p.json"), "--points", str(tmp_path / "p.json")]) == 2


def exact_errors(model, pts, outputs):
    exact = model.evaluate_batch(pts)
    return [max(abs(F(f) - e) for f, e in zip(row, ref)) for row, ref in zip(outputs.double().tolist(), exact)]


def test_margin_bound_follows_the_exact_error_on_acasxu():
    # within 1000× of the exactly measured error (the goal), never below it
    from exactform.backends.torch import rigorous_error
    torch.set_num_threads(1)
    net, tf = acas()
    pts = points(30, 5, seed=11)
    out, bound, undecided = rigorous_error(tf, pts)
    errors = exact_errors(net, pts, out)
    for err, b in zip(errors, bound.amax(dim=1).tolist()):
        assert err <= F(b) <= 1000 * err
    assert undecided.sum() == 0


def test_margin_bound_on_adversarial_inputs():
    # large magnitudes (weights and inputs near 2^20) and near ties (pieces 2^-40 apart, exact
    # ties): the bound is never below the exact error, and rows are undecided only where the two
    # exact scores are within the bound of each other
    from exactform.backends.torch import rigorous_error
    big = F(2 ** 20)
    box = Box((-big, -big), (big, big))
    layer = MaxoutLayer([[[F(3, 7), F(-1)], [F(3, 7) + F(1, 2 ** 40), F(-1)]], [[F(1), F(1)], [F(0), F(0)]]],
                        [[F(1, 3), F(1, 3)], [F(0), F(0)]])
    net = MaxoutNet(box, [layer], [[big, F(-1, 3)]], [F(1, 5)])
    tf = compile_maxout(net)
    rng = random.Random(4)
    pts = [[F(rng.randint(-2 ** 40, 2 ** 40), 2 ** 20), F(rng.randint(-2 ** 40, 2 ** 40), 2 ** 20)] for _ in range(20)]
    pts += [[F(0), F(0)], [F(1, 3), -F(1, 3)], [F(7, 3) * 2 ** 18, F(1, 2 ** 30)]]
    out, bound, undecided = rigorous_error(tf, pts)
    errors = exact_errors(net, pts, out)
    assert any(e > 0 for e in errors)
    for err, b in zip(errors, bound.amax(dim=1).tolist()):
        assert err <= F(b)
    # unit 2 is ReLU(x + y): its two scores x + y and 0 are within the bound exactly near x = −y
    assert undecided[21] > 0


def test_margin_bound_is_of_the_outputs_given():
    # the bound is measured against a float64 reference, so a wrong output raises it
    from exactform.backends.torch import rigorous_error
    net, tf = acas()
    pts = points(5, 5, seed=2)
    out, bound, _ = rigorous_error(tf, pts)
    shifted = out.clone()
    shifted[:, 0] += 1e-3
    _, wrong, _ = rigorous_error(tf, pts, outputs=shifted)
    assert (wrong[:, 0] >= 0.9e-3).all() and (wrong[:, 1:] == bound[:, 1:]).all()
