"""Float32 throughput of the compiled Transformer vs its source network (same points, CPU, one
thread; goal tf/src ≥ 1/8), exact evaluation per point, and import/compile times — ACAS Xu and
random ReLU nets of widths 50, 100, 200. One table, one run.  Each throughput is the best over
chunk sizes (``--chunks``) of the best of ``--repeats`` runs, timed in CPU time of this process,
so that waiting for the cores of a shared machine does not decide the ratio; the chunk sizes
chosen are printed.  Then the rigorous float32 error bound (``eval --margins``) against the exactly measured
error on ACAS Xu points (goal: bound / exact ≤ 1000).

    .venv/bin/python benchmarks/torch_bench.py [--points 100000] [--threads 1]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

ACAS = str(Path(__file__).resolve().parent / "data" / "ACASXU_run2a_1_1_batch_2000.onnx")


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def relu_net(width: int, depth: int = 3, inputs: int = 5, seed: int = 0):
    import torch
    from torch import nn

    from exactform.importers.torch import from_module
    from exactform.models import Box
    torch.manual_seed(seed)
    mods = [nn.Linear(inputs, width), nn.ReLU()]
    for _ in range(depth - 1):
        mods += [nn.Linear(width, width), nn.ReLU()]
    seq = nn.Sequential(*mods, nn.Linear(width, 5))
    return from_module(seq, lambda d: Box((Fraction(-1),) * d, (Fraction(1),) * d))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--exact-points", type=int, default=5)
    parser.add_argument("--chunks", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch

    from exactform.backends.torch import to_module
    from exactform.construct.maxout_to_transformer import compile_maxout
    from exactform.importers import import_network
    torch.set_num_threads(args.threads)
    x = torch.rand(args.points, 5) * 2 - 1
    rng = random.Random(0)
    pts = [[Fraction(rng.randint(-1000, 1000), 1000) for _ in range(5)] for _ in range(args.exact_points)]

    cases = [("ACAS Xu 1_1", lambda: import_network(ACAS, [(Fraction(-1), Fraction(1))]))]
    cases += [(f"ReLU 3x{w}", lambda w=w: relu_net(w)) for w in (50, 100, 200)]
    head = (f"{'network':<12} {'T':>2} {'import s':>8} {'compile s':>9} {'src pts/s (chunk)':>18} "
            f"{'tf pts/s (chunk)':>17} {'tf/src':>7} {'exact src ms/pt':>15} {'exact tf ms/pt':>14}")
    print(f"{args.points} points, float32, CPU, {args.threads} thread(s)\n{head}")
    misses = []
    for name, build in cases:
        net, t_import = timed(build)
        tf, t_compile = timed(lambda net=net: compile_maxout(net))
        rates = [throughput(to_module(model, torch.float32), x, args.chunks, args.repeats) for model in (net, tf)]
        net.evaluate_batch(pts[:1]), tf.evaluate_batch(pts[:1])             # warm-up: exact weight caches
        _, t_exact_src = timed(lambda net=net: net.evaluate_batch(pts))
        _, t_exact_tf = timed(lambda tf=tf: tf.evaluate_batch(pts))
        T = tf.tokens
        (src, src_chunk), (rate, chunk) = rates
        print(f"{name:<12} {T:>2} {t_import:>8.2f} {t_compile:>9.2f} {src:>11.0f} ({src_chunk:>4}) {rate:>10.0f} "
              f"({chunk:>4}) {rate / src:>7.3f} {1000 * t_exact_src / len(pts):>15.1f} {1000 * t_exact_tf / len(pts):>14.1f}")
        if rate / src < 1 / 8:
            misses.append(f"{name} throughput")
    ratios = margins(args.exact_points * 4)
    if ratios[0] < 1 or ratios[-1] > 1000:
        misses.append("rigorous bound")
    if misses:
        print(f"missed: {', '.join(misses)}")
    return 1 if misses else 0


def throughput(module, x, chunks: list[int], repeats: int) -> tuple[float, int]:
    """(points per CPU second, chunk size): the best over chunk sizes of the best of ``repeats`` runs."""
    from exactform.backends.torch import evaluate
    best = (0.0, 0)
    for chunk in chunks:
        evaluate(module, x[:chunk], chunk=chunk)                       # warm-up
        times = []
        for _ in range(repeats):
            start = time.process_time()
            evaluate(module, x, chunk=chunk)
            times.append(time.process_time() - start)
        best = max(best, (len(x) / min(times), chunk))
    return best


def margins(n: int) -> list[float]:
    """The ratios of the rigorous bound to the exact error over n ACAS Xu points, sorted (printed:
    median and worst)."""
    from exactform.backends.torch import rigorous_error
    from exactform.construct.maxout_to_transformer import compile_maxout
    from exactform.importers import import_network
    net = import_network(ACAS, [(Fraction(-1), Fraction(1))])
    tf = compile_maxout(net)
    rng = random.Random(1)
    pts = [[Fraction(rng.randint(-2 ** 20, 2 ** 20), 2 ** 20) for _ in range(5)] for _ in range(n)]
    (out, bound, undecided), t = timed(lambda: rigorous_error(tf, pts))
    exact = net.evaluate_batch(pts)
    ratios = sorted(b / float(max(abs(Fraction(f) - e) for f, e in zip(row, ref)))
                    for row, ref, b in zip(out.double().tolist(), exact, bound.amax(dim=1).tolist()))
    print(f"rigorous float32 bound / exact error on {n} ACAS Xu points: median {ratios[n // 2]:.4f}, "
          f"worst {ratios[-1]:.4f} (goal ≤ 1000, never < 1); undecided rows {int(undecided.sum())}; {t:.2f} s")
    return ratios


if __name__ == "__main__":
    sys.exit(main())
