"""The whole Python API in one typed script (``mypy --strict examples/api.py`` passes; run it from a
clone: ``python examples/api.py``).  docs/api.md describes each call."""
from fractions import Fraction
from pathlib import Path
import tempfile

import exactform

HERE = Path(__file__).parent


def main() -> None:
    net: exactform.MaxoutNet = exactform.load_maxout(HERE / "relu_net.json")
    tf: exactform.Transformer = exactform.compile(net)
    cert: dict[str, object] = exactform.certify(net, tf)
    result: exactform.CheckResult = exactform.check(cert, maxout=net, transformer=tf)
    assert result, result.known
    outputs: list[list[Fraction]] = exactform.evaluate(tf, [["1/2", 1], [Fraction(-1, 3), "0.25"]])
    assert outputs == exactform.evaluate(net, [["1/2", 1], [Fraction(-1, 3), "0.25"]])
    with tempfile.TemporaryDirectory() as tmp:
        exactform.save(cert, Path(tmp) / "relu_net.cert.json")
        exactform.save(tf, Path(tmp) / "tf.json")
        again: dict[str, object] = exactform.load_certificate(Path(tmp) / "relu_net.cert.json")
        assert exactform.check(Path(tmp) / "relu_net.cert.json") and again == cert
        assert exactform.load_transformer(Path(tmp) / "tf.json").to_json() == tf.to_json()
        model = exactform.load(Path(tmp) / "tf.json")          # a MaxoutNet, a Transformer or a certificate dict
        assert isinstance(model, exactform.Transformer)
        try:
            exactform.check(Path(tmp) / "missing.cert.json")
        except exactform.InputError as e:                     # an exactform.Error, a ValueError
            print("refused:", e)
    cone: exactform.MaxoutNet = exactform.approx("sqrt(x**2 + y**2)", [(-1, 1)], eps="1/4")
    exactform.compile(cone)
    soft: exactform.SoftmaxResult = exactform.softmax(net, eps="1/100")
    print(f"softmax: λ = {soft.scale}, proven |Tf_λ − M| ≤ {soft.bound}")
    try:
        exactform.softmax(net, eps=0)
    except exactform.Error as e:
        print("refused:", e)
    onnx = HERE.parent / "data" / "acasxu" / "ACASXU_run2a_1_1_batch_2000.onnx"
    if onnx.exists():
        acas: exactform.MaxoutNet = exactform.import_network(onnx, [("-1/2", "1/2")])
        print("ACAS Xu:", acas.input_dim, "inputs")


def torch_example() -> exactform.MaxoutNet:
    import torch
    module = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    return exactform.from_torch(module, [(-1, 1)])


if __name__ == "__main__":
    main()
    print("from_torch:", torch_example().input_dim, "inputs")
