"""Real architectures end to end: ``import`` (with its self-check) → ``compile`` →
``certify`` → ``check``, each step run as the CLI runs it in its own process, with its wall time,
its CPU time, its peak memory (the child's peak resident set) and the sizes of the files it wrote;
the targets are on wall time.

Networks (random weights, seeded; the architecture, not the training, sets the cost):
  digits-cnn   Conv 1→8 3×3, ReLU, MaxPool 2, Linear → 10 on [0,1]^(8×8)       target ≤ 30 s
  mnist-mlp    784→256→256→10 on [0,1]^784                                    target ≤ 60 s
  mnist-cnn    Conv 1→8 3×3 s2, ReLU, Conv 8→16 3×3 s2, ReLU, Linear → 10      target ≤ 600 s, 8 GB
Usage: ``python benchmarks/import_bench.py [NAME ...] [--step-timeout S]``.
"""
from __future__ import annotations

import argparse
import functools
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from exactform.benchmarks.timing import table
from exactform.executor import ends_with_parent


def networks():
    from torch import nn
    return {
        "digits-cnn": (lambda: nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                             nn.Linear(72, 10)), (1, 1, 8, 8), 30),
        "mnist-mlp": (lambda: nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                            nn.Linear(256, 10)), (1, 784), 60),
        "mnist-cnn": (lambda: nn.Sequential(nn.Conv2d(1, 8, 3, stride=2), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2),
                                            nn.ReLU(), nn.Flatten(), nn.Linear(576, 10)), (1, 1, 28, 28), 600),
    }


_PEAK = ("import re, sys\n"
         "from exactform.cli import main\n"
         "try:\n    code = main(sys.argv[2:])\n"
         "finally:\n    peak = re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read())\n"
         "    open(sys.argv_peak, 'w').write(peak[1] if peak else '')\n"
         "sys.exit(code)\n")
"""The child's peak resident set, from ``VmHWM`` (kB): ``ru_maxrss`` would keep the parent's
peak across ``fork``/``exec``, and the parent has torch loaded."""


def run_step(argv: list[str], timeout: float) -> tuple[str, float, float, str]:
    """(status, wall seconds, CPU seconds, peak MiB) of ``exactform ARGV`` in a child process of
    its own; the CPU time (user + system) does not grow with other work on the machine."""
    peak_file = Path(tempfile.mkstemp(suffix=".peak")[1])
    code = _PEAK.replace("sys.argv_peak", repr(str(peak_file)))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code, "--", *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=functools.partial(ends_with_parent, os.getpid()))
    try:
        out, _ = child.communicate(timeout=timeout)
        lines = out.strip().splitlines() or [""]
        status = "ok" if child.returncode == 0 else f"exit {child.returncode}: {lines[-1][:80]}"
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        status = f"timeout {timeout:.0f} s"
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    text = peak_file.read_text() if peak_file.exists() else ""
    peak_file.unlink(missing_ok=True)
    return status, seconds, cpu, f"{int(text) / 1024:.0f}" if text else "killed"


def main() -> int:
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--step-timeout", type=float, default=900)
    args = parser.parse_args()
    nets = networks()
    rows, missed = [], []
    for name in args.names or list(nets):
        make, shape, target = nets[name]
        torch.manual_seed(0)
        model = make().eval()
        out = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (torch.zeros(shape),), str(out / "net.onnx"), dynamo=False)
        steps = [("import", ["import", str(out / "net.onnx"), "--domain", "0:1", "-o", str(out / "net.json")]),
                 ("compile", ["compile", str(out / "net.json"), "-o", str(out / "tf.json")]),
                 ("certify", ["certify", str(out / "net.json"), str(out / "tf.json"), "-o", str(out / "cert.json")]),
                 ("check", ["check", str(out / "cert.json")])]
        total = total_cpu = 0.0
        for step, argv in steps:
            status, seconds, cpu, peak = run_step(argv, args.step_timeout)
            total, total_cpu = total + seconds, total_cpu + cpu
            written = {"import": "net.json", "compile": "tf.json", "certify": "cert.json"}.get(step)
            if status == "ok" and written and not (out / written).exists():
                status = f"no {written} written"             # a step that claims success must show it
            size = f"{(out / written).stat().st_size / 1e6:.2f} MB" if written and (out / written).exists() else ""
            rows.append([name, step, status, f"{seconds:.1f}", f"{cpu:.1f}", peak, size])
            print(rows[-1], flush=True)
            if status != "ok":
                break
        ok = rows[-1][1] == "check" and rows[-1][2] == "ok"
        rows.append([name, "total", "ok" if ok else "incomplete", f"{total:.1f}", f"{total_cpu:.1f}", "",
                     f"target ≤ {target} s"])
        if not ok or total > target:
            missed.append(name)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall seconds grow with it, CPU seconds do not)")
    print(table(["network", "step", "status", "wall s", "CPU s", "peak MiB", "file / target"], rows))
    missed += acasxu_all()
    if missed:
        print(f"missed target: {', '.join(missed)}")
    return 1 if missed else 0


def acasxu_all(tolerance: float = 1e-4) -> list[str]:
    """Every ACAS Xu network of a checkout (``data/acasxu``, 45 files; tests/test_importers.py
    imports a sample) imported exactly on [-1, 1]^5 and compared with onnxruntime at 20 seeded
    points (relative to max(1, |exact|)); returns the networks beyond ``tolerance``."""
    import random
    from fractions import Fraction

    import numpy as np
    import onnxruntime as ort

    from exactform.importers import import_network
    files = sorted((Path(__file__).resolve().parents[2] / "data" / "acasxu").glob("*.onnx"))
    if not files:
        print("acasxu: skipped (no data/acasxu: a source checkout has the 45 networks)")
        return []
    worst, start = {}, time.perf_counter()
    for k, path in enumerate(files):
        net = import_network(str(path), [(Fraction(-1), Fraction(1))])
        rng = random.Random(k)
        points = [[Fraction(rng.randint(-2 ** 16, 2 ** 16), 2 ** 16) for _ in range(5)] for _ in range(20)]
        session = ort.InferenceSession(str(path))
        name = session.get_inputs()[0].name
        floats = [session.run(None, {name: np.array(p, dtype=np.float32).reshape(1, 1, 1, -1)})[0][0] for p in points]
        worst[path.name] = max(abs(float(e) - f) / max(1.0, abs(float(e)))
                               for row, frow in zip(net.evaluate_batch(points), floats) for e, f in zip(row, frow))
    print(table(["ACAS Xu networks", "worst |exact - onnxruntime|", "seconds"],
                [[len(files), f"{max(worst.values()):.2e} (tolerance {tolerance:g})", f"{time.perf_counter() - start:.1f}"]]))
    return [n for n, w in worst.items() if w >= tolerance]


if __name__ == "__main__":
    sys.exit(main())
