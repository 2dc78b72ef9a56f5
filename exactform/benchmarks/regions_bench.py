"""Exact region counting speed.

- issue 6 targets: a 2→16→16→1 ReLU net in 2-D (< 10 s) and a 1-D sawtooth with 2^17 = 131072
  ≥ 10^5 linear regions (< 10 s);
- n-D (issue 15): ReLU nets 3→9→9→1, 4→9→9→1, 4→10→10→1 on [−1, 1]^d with float32 weights (as a
  trained net has; read exactly), goal ≥ 2× the speed of relucent (a float-based polyhedral-complex
  explorer, an optional peer: ``pip install relucent``, skipped when absent) with identical
  activation-region counts; 5-D and 6-D figures for exactform alone (``--peer-all``: relucent too).

Prints JSON rows; exit 1 if a target is missed or a count differs.
Usage: python benchmarks/regions_bench.py [--peer-all]"""
from __future__ import annotations

import json
import sys
import time
from fractions import Fraction as F

import numpy as np

from exactform.executor import make_executor
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


def main() -> int:
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
