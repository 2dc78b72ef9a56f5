"""ACAS Xu end to end: import (exact) → compile → certify → check → float32 on 100,000 points.

    .venv/bin/python examples/acasxu.py [NET.onnx] [--out DIR]

Each step prints its wall time. Certification and checking run the ``exactform certify`` /
``exactform check`` commands; if they are not installed the step says so and is skipped.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NET = Path(__file__).resolve().parent.parent / "data" / "acasxu" / "ACASXU_run2a_1_1_batch_2000.onnx"


def step(name, fn):
    start = time.perf_counter()
    result = fn()
    print(f"{name:<34} {time.perf_counter() - start:8.2f} s")
    return result


def cli(*args) -> int:
    r = subprocess.run([sys.executable, "-m", "exactform", *args], capture_output=True, text=True)
    if r.returncode:
        print(r.stdout + r.stderr, end="")
    return r.returncode


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("net", nargs="?", default=str(NET))
    parser.add_argument("--out", default=None)
    parser.add_argument("--points", type=int, default=100_000)
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="acasxu-"))
    out.mkdir(parents=True, exist_ok=True)

    import torch

    from exactform.backends.differential import float_error
    from exactform.backends.torch import evaluate, to_module
    from exactform.construct.maxout_to_transformer import compile_maxout
    from exactform.formats import write_json
    from exactform.importers import import_network
    from exactform.numbers import from_float
    from fractions import Fraction

    domain = [(Fraction(-1, 2), Fraction(1, 2))]           # the operating box, normalised inputs
    net = step("import (exact)", lambda: import_network(args.net, domain))
    tf = step("compile (token-shift)", lambda: compile_maxout(net))
    write_json(out / "net.json", net.to_json())
    write_json(out / "tf.json", tf.to_json())
    if (Path(__file__).resolve().parents[1] / "exactform" / "commands" / "certify.py").exists():
        if step("certify (C1–C4)", lambda: cli("certify", str(out / "net.json"), str(out / "tf.json"),
                                                "-o", str(out / "cert.json"))) != 0:
            return 1
        if step("check certificate", lambda: cli("check", str(out / "cert.json"))) != 0:
            return 1
    else:
        print("certify / check: NOT RUN (exactform certify is not installed in this checkout)")

    torch.manual_seed(0)
    x = torch.rand(args.points, 5) - 0.5                     # inside the box
    module = to_module(tf, torch.float32)
    step(f"float32 Transformer, {args.points} pts", lambda: evaluate(module, x, chunk=2048))
    sample = [[from_float(float(v)) for v in row] for row in x[:300].tolist()]
    err = step("float32 vs exact (300 pts)", lambda: float_error(tf, sample, exact=net.evaluate_batch(sample)))
    print(f"worst float32 error of the compiled Transformer: {float(err.worst):.3g} (target 1e-5)")
    return 0 if err.worst < Fraction(1, 10 ** 5) else 1


if __name__ == "__main__":
    sys.exit(main())
