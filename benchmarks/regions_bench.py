"""Exact region counting speed (issue 6 targets): a 2→16→16→1 ReLU net in 2-D (< 10 s) and a
1-D sawtooth with 2^17 = 131072 ≥ 10^5 linear regions (< 10 s).  Prints JSON; exit 1 if a target
is missed.  Usage: python benchmarks/regions_bench.py"""
from __future__ import annotations

import json
import os
import sys
import time
from fractions import Fraction as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from exactform.geometry.regions import count_regions  # noqa: E402
from exactform.models import Box, MaxoutLayer, MaxoutNet  # noqa: E402

ONE, ZERO = F(1), F(0)


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


def sawtooth(depth: int) -> MaxoutNet:
    first = MaxoutLayer([[[ONE], [ZERO]], [[ONE], [ZERO]]], [[ZERO, ZERO], [F(-1, 2), ZERO]])
    fold = MaxoutLayer([[[F(2), F(-4)], [ZERO, ZERO]], [[F(2), F(-4)], [ZERO, ZERO]]], [[ZERO, ZERO], [F(-1, 2), ZERO]])
    return MaxoutNet(Box((ZERO,), (ONE,)), [first] + [fold] * (depth - 1), [[F(2), F(-4)]], [ZERO])


def timed(net):
    start = time.perf_counter()
    result = count_regions(net)
    return result, time.perf_counter() - start


def main() -> int:
    rows = []
    for name, net, target in [("2-16-16-1 ReLU, 2-D", random_relu_net([2, 16, 16, 1]), 10.0),
                              ("sawtooth depth 17, 1-D", sawtooth(17), 10.0)]:
        result, seconds = timed(net)
        rows.append({"case": name, **result.to_json(), "seconds": round(seconds, 2), "target_s": target,
                     "met": seconds < target})
    print(json.dumps(rows, indent=1))
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
