"""Exact region counting speed.

- targets: a 2→16→16→1 ReLU net in 2-D (< 10 s) and a 1-D sawtooth with 2^17 = 131072
  ≥ 10^5 linear regions (< 10 s);
- n-D: ReLU nets 3→9→9→1, 4→9→9→1, 4→10→10→1 on [−1, 1]^d with float32 weights (as a
  trained net has; read exactly), goal ≥ 2× the speed of relucent (a float-based polyhedral-complex
  explorer, an optional peer: ``pip install relucent``, skipped when absent) with identical
  activation-region counts; 5-D and 6-D figures for exactform alone (``--peer-all``: relucent too).

``--cells``: ``regions --cells`` instead, on nets from 10^3 to 1.3·10^5 cells (1-D, 2-D) and 4-D
ones: time, cells held at once and peak resident memory, each in a fresh process.

Prints JSON rows; exit 1 if a target is missed or a count differs.
Usage: python benchmarks/regions_bench.py [--peer-all | --cells]"""
from __future__ import annotations

import json
import sys
import time
from fractions import Fraction as F

import numpy as np

from exactform.executor import make_executor
from exactform.formats import write_json
from exactform.geometry.regions import count_regions
from exactform.models import Box, MaxoutLayer, MaxoutNet

ONE, ZERO = F(1), F(0)
ND_NETS = [[3, 9, 9, 1], [4, 9, 9, 1], [4, 10, 10, 1]]
ND_MORE = [[5, 9, 9, 1], [6, 8, 8, 1]]


def random_relu_net(widths, seed=0) -> MaxoutNet:
    """A ReLU net with small dyadic weights (as a float32-trained net would have, exactly)."""
    rng = np.random.default_rng(seed)
    layers = []
    for n_in, n_out in zip(widths, widths[1:-1]):
        W = rng.integers(-64, 65, (n_out, n_in))
        b = rng.integers(-32, 33, n_out)
        layers.append(MaxoutLayer([[[F(int(w), 64) for w in row], [ZERO] * n_in] for row in W],
                                  [[F(int(c), 64), ZERO] for c in b]))
    readout = [[F(int(w), 8) for w in rng.integers(-8, 9, widths[-2])]]
    return MaxoutNet(Box((-ONE,) * widths[0], (ONE,) * widths[0]), layers, readout, [ZERO])


def float32_weights(widths, seed=0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(W, b) per layer, uniform in ±1/√fan-in (PyTorch's default), rounded to float32: a generic
    net (no two hyperplanes coincide), as relucent requires."""
    rng = np.random.default_rng(seed)
    out = []
    for n_in, n_out in zip(widths, widths[1:]):
        r = 1 / np.sqrt(n_in)
        out.append((rng.uniform(-r, r, (n_out, n_in)).astype(np.float32), rng.uniform(-r, r, n_out).astype(np.float32)))
    return out


def exact_net(weights, d: int) -> MaxoutNet:
    """The net of ``float32_weights``, every weight converted exactly to a rational."""
    layers = [MaxoutLayer([[[F(float(w)) for w in row], [ZERO] * len(row)] for row in W], [[F(float(c)), ZERO] for c in b])
              for W, b in weights[:-1]]
    W, b = weights[-1]
    return MaxoutNet(Box((-ONE,) * d, (ONE,) * d), layers, [[F(float(w)) for w in row] for row in W],
                     [F(float(c)) for c in b])


def sawtooth(depth: int) -> MaxoutNet:
    first = MaxoutLayer([[[ONE], [ZERO]], [[ONE], [ZERO]]], [[ZERO, ZERO], [F(-1, 2), ZERO]])
    fold = MaxoutLayer([[[F(2), F(-4)], [ZERO, ZERO]], [[F(2), F(-4)], [ZERO, ZERO]]], [[ZERO, ZERO], [F(-1, 2), ZERO]])
    return MaxoutNet(Box((ZERO,), (ONE,)), [first] + [fold] * (depth - 1), [[F(2), F(-4)]], [ZERO])


def sawtooth_grid(kx: int, ky: int) -> MaxoutNet:
    """saw_kx(x) + saw_ky(y) on [0, 1]^2: 2^kx · 2^ky rectangular regions (hand-checkable)."""
    def unit(coord: int, width: int, bias) -> tuple:
        w = [ZERO] * width
        for k, c in coord:
            w[k] = c
        return [w, [ZERO] * width], [bias, ZERO]

    def layer(units):
        return MaxoutLayer([u[0] for u in units], [u[1] for u in units])
    half = F(-1, 2)
    first = [unit([(0, ONE)], 2, ZERO), unit([(0, ONE)], 2, half), unit([(1, ONE)], 2, ZERO), unit([(1, ONE)], 2, half)]
    layers = [layer(first)]
    for k in range(1, max(kx, ky)):
        fold = []
        for c, depth in ((0, kx), (2, ky)):
            if k < depth:       # (a, b) -> (max(t, 0), max(t − 1/2, 0)), t = 2a − 4b ≥ 0: one more fold
                fold += [unit([(c, F(2)), (c + 1, F(-4))], 4, ZERO), unit([(c, F(2)), (c + 1, F(-4))], 4, half)]
            else:               # (a, b) -> (t/2, 0): the same t = 2a − 4b, carried unfolded
                fold += [unit([(c, ONE), (c + 1, F(-2))], 4, ZERO), unit([], 4, ZERO)]
        layers.append(layer(fold))
    return MaxoutNet(Box((ZERO, ZERO), (ONE, ONE)), layers, [[F(2), F(-4), F(2), F(-4)]], [ZERO])


def timed(net, workers: int | None = 1):
    """``count_regions`` as ``exactform regions --workers N`` runs it (None: the default count)."""
    start = time.perf_counter()
    with make_executor(workers) as executor:
        result = count_regions(net, executor=executor)
    return result, time.perf_counter() - start


def relucent_cells(weights, d: int, workers: int) -> tuple[int, float] | None:
    """relucent's number of cells meeting [−1, 1]^d and its wall time; None when not installed."""
    try:
        from relucent import Complex
        from relucent.model.model import LinearLayer, ReLULayer, ReLUNetwork
    except ImportError:
        return None
    layers = []
    for k, (W, b) in enumerate(weights):
        layers.append(LinearLayer(weight=W.astype(np.float64), bias=b.astype(np.float64)))
        if k < len(weights) - 1:
            layers.append(ReLULayer())
    start = time.perf_counter()
    complex_ = Complex(ReLUNetwork(layers))
    found = complex_.bfs(start=np.zeros(d), cube_radius=1.0, cube_mode="intersect", nworkers=workers, verbose=0)
    if not (found.complete and found.verified):
        raise RuntimeError("relucent did not complete its search")
    return len(complex_), time.perf_counter() - start


def cells_rows(nets) -> list[dict]:
    """``regions --cells`` (``commands.regions.write_cells``) on each net in a fresh process:
    cells, the most cells held at once, seconds, file size and peak resident memory (the
    process's maximum RSS, and its RSS before the stream started: imports and model)."""
    import subprocess
    import tempfile
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, net in nets:
            model = f"{folder}/net.json"
            write_json(model, net.to_json())
            done = subprocess.run([sys.executable, "-c", CELLS_CHILD, model, f"{folder}/cells.jsonl"],
                                  capture_output=True, text=True, check=True)
            rows.append({"case": name, **json.loads(done.stdout)})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


CELLS_CHILD = """
import json, os, resource, sys, time
from exactform.commands.regions import write_cells
from exactform.models import load_model
model, out = sys.argv[1:]
net = load_model(model)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
stream = write_cells(out, model, net, None, None)
print(json.dumps({**stream.count().to_json(), "cells": stream.cells, "peak_held_cells": stream.peak_held,
                  "seconds": round(time.perf_counter() - start, 2), "file_MB": round(os.path.getsize(out) / 1e6, 1),
                  "rss_before_MB": round(before / 1024, 1),
                  "peak_rss_MB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


CELL_NETS = [("sawtooth depth 10, 1-D", lambda: sawtooth(10)), ("sawtooth depth 14, 1-D", lambda: sawtooth(14)),
             ("sawtooth depth 17, 1-D", lambda: sawtooth(17)),
             ("sawtooth grid 5x5, 2-D", lambda: sawtooth_grid(5, 5)), ("sawtooth grid 7x7, 2-D", lambda: sawtooth_grid(7, 7)),
             ("sawtooth grid 8x9, 2-D", lambda: sawtooth_grid(8, 9)),
             ("2-32-32-1 ReLU, 2-D", lambda: exact_net(float32_weights([2, 32, 32, 1]), 2)),
             ("2-64-64-1 ReLU, 2-D", lambda: exact_net(float32_weights([2, 64, 64, 1]), 2)),
             ("4-8-8-1 ReLU, 4-D", lambda: exact_net(float32_weights([4, 8, 8, 1]), 4)),
             ("4-10-10-1 ReLU, 4-D", lambda: exact_net(float32_weights([4, 10, 10, 1]), 4)),
             ("4-12-12-1 ReLU, 4-D", lambda: exact_net(float32_weights([4, 12, 12, 1]), 4))]


def main() -> int:
    if "--cells" in sys.argv:
        print(json.dumps(cells_rows([(name, make()) for name, make in CELL_NETS]), indent=1))
        return 0
    rows = []
    for name, net, target in [("2-16-16-1 ReLU, 2-D", random_relu_net([2, 16, 16, 1]), 10.0),
                              ("sawtooth depth 17, 1-D", sawtooth(17), 10.0)]:
        result, seconds = timed(net)
        rows.append({"case": name, **result.to_json(), "seconds": round(seconds, 2), "target_s": target,
                     "met": seconds < target})
    peer_all = "--peer-all" in sys.argv
    for widths in ND_NETS + ND_MORE:
        weights = float32_weights(widths)
        net = exact_net(weights, widths[0])
        result, serial = timed(net, 1)
        again, default = timed(net, None)
        row = {"case": "-".join(map(str, widths)) + f" ReLU, {widths[0]}-D", **result.to_json(),
               "seconds_1_worker": round(serial, 2), "seconds_default_workers": round(default, 2),
               "default_vs_1_worker": round(serial / default, 2), "met": again.to_json() == result.to_json()}
        if widths in ND_NETS or peer_all:
            for workers in (1, 2):
                peer = relucent_cells(weights, widths[0], workers)
                if peer is None:
                    row["relucent"] = "not installed: skipped (pip install relucent)"
                    break
                cells, seconds = peer
                row[f"relucent_{workers}_worker_s"] = round(seconds, 2)
                row[f"speed_vs_relucent_{workers}"] = round(seconds / min(serial, default), 2)
                row["met"] = row["met"] and cells == result.activation_regions
                if widths in ND_NETS:
                    row["goal_vs_relucent"] = 2.0
                    row["met"] = row["met"] and seconds / min(serial, default) >= 2.0
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1))
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
