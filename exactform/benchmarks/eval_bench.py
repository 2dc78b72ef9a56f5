"""Exact evaluation: the compiled hardmax Transformer vs its source network on the same batch
(goal: the Transformer within 10× of the source).  CPU seconds of this process for one
``evaluate_batch`` call each, first call (weights' caches and plans built) and second call, and a
check that both outputs are exactly equal; then the per-call cost of single points.  One run,
ratios within the run.

Networks: the digits CNN of ``examples/digits.py`` (seeded random weights, as ``import_bench``; the
architecture, not the training, sets the cost) on the 360 test images of scikit-learn's digits
(float32 pixels / 16, read exactly), ACAS Xu 1_1 and a random ReLU 3×100 (``torch_bench``) on 360
random points.

    .venv/bin/python benchmarks/eval_bench.py [--points 360]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from fractions import Fraction

from exactform.benchmarks.timing import table

SINGLE = 20
"""Points evaluated one call each, after the batch (caches warm): the per-call cost."""


def digits(points: int):
    """The digits CNN and its test images (the first ``points`` of them)."""
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from exactform.benchmarks.import_bench import networks
    from exactform.importers.torch import from_module
    torch.manual_seed(0)
    make, shape, _ = networks()["digits-cnn"]
    net = from_module(make(), [(Fraction(0), Fraction(1))], input_shape=shape)
    images = torch.tensor(load_digits().images / 16.0, dtype=torch.float32).reshape(-1, 64)
    _, test = train_test_split(images, test_size=0.2, random_state=0)
    return net, [[Fraction(v) for v in row] for row in test[:points].tolist()]


def on_box(net, points: int):
    """``net`` and ``points`` seeded random dyadic points of its domain."""
    rng = random.Random(0)
    return net, [[lo + (hi - lo) * Fraction(rng.randint(0, 2 ** 20), 2 ** 20)
                  for lo, hi in zip(net.domain.lower, net.domain.upper)] for _ in range(points)]


def cpu(fn):
    start = time.process_time()
    result = fn()
    return result, time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=360)
    args = parser.parse_args()

    from exactform.benchmarks.torch_bench import ACAS, relu_net
    from exactform.construct.maxout_to_transformer import compile_maxout
    from exactform.importers import import_network

    n = args.points
    cases = [("digits CNN", lambda: digits(n)),
             ("ACAS Xu 1_1", lambda: on_box(import_network(ACAS, [(Fraction(-1), Fraction(1))]), n)),
             ("ReLU 3x100", lambda: on_box(relu_net(100), n))]
    rows, misses = [], []
    for name, build in cases:
        try:
            net, points = build()
        except ImportError as e:
            print(f"{name}: skipped ({e.name} is not installed; the test extra has it)")
            continue
        tf = compile_maxout(net)
        times = []
        for _ in range(2):                                  # first call, then with caches warm
            expected, t_net = cpu(lambda: net.evaluate_batch(points))
            got, t_tf = cpu(lambda: tf.evaluate_batch(points))
            if got != expected:
                misses.append(f"{name}: outputs differ")
            times.append((t_net, t_tf))
        (n1, t1), (n2, t2) = times
        single = [cpu(lambda m=m: [m.evaluate_batch([p]) for p in points[:SINGLE]])[1] * 1000 / SINGLE
                  for m in (net, tf)]
        rows.append([name, f"{tf.tokens}", f"{tf.width}", len(points), f"{n1:.3f} / {t1:.3f}", f"{t1 / n1:.1f}",
                     f"{n2:.3f} / {t2:.3f}", f"{t2 / n2:.1f}", "equal" if got == expected else "DIFFER",
                     f"{single[0]:.2f} / {single[1]:.2f}"])
        if t2 / n2 > 10:
            misses.append(f"{name} ratio {t2 / n2:.1f}")
    print(table(["network", "T", "width", "points", "first call: source / Tf s", "ratio", "second call: source / Tf s",
                 "ratio", "outputs", f"one point at a time: source / Tf ms (first {SINGLE})"], rows))
    if misses:
        print(f"missed: {', '.join(misses)}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
