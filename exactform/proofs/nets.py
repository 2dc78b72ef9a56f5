"""Random exact Maxout networks for tests (shared by the test modules)."""
from __future__ import annotations

import random
from fractions import Fraction

from exactform.models import Box, MaxoutLayer, MaxoutNet


def rational(rng: random.Random, size: int = 20) -> Fraction:
    return Fraction(rng.randint(-size, size), rng.choice([1, 2, 3, 4, 8, 5]))


def random_net(rng: random.Random, dims: list[int], max_rank: int, outputs: int = 1,
               radius: Fraction = Fraction(1)) -> MaxoutNet:
    """A Maxout net with ``dims = [n0, n1, ...]`` and unit ranks drawn from 1..max_rank."""
    layers = []
    for a, b in zip(dims, dims[1:]):
        ranks = [rng.randint(1, max_rank) for _ in range(b)]
        layers.append(MaxoutLayer([[[rational(rng) for _ in range(a)] for _ in range(k)] for k in ranks],
                                  [[rational(rng) for _ in range(k)] for k in ranks]))
    box = Box(tuple([-radius] * dims[0]), tuple([radius] * dims[0]))
    return MaxoutNet(box, layers, [[rational(rng) for _ in range(dims[-1])] for _ in range(outputs)],
                     [rational(rng) for _ in range(outputs)])


def relu_net(rng: random.Random, dims: list[int], outputs: int = 1) -> MaxoutNet:
    """A ReLU net as a Maxout net: every unit is ``max(w·h + b, 0)``."""
    layers = []
    for a, b in zip(dims, dims[1:]):
        layers.append(MaxoutLayer([[[rational(rng) for _ in range(a)], [Fraction(0)] * a] for _ in range(b)],
                                  [[rational(rng), Fraction(0)] for _ in range(b)]))
    box = Box(tuple([Fraction(-1)] * dims[0]), tuple([Fraction(1)] * dims[0]))
    return MaxoutNet(box, layers, [[rational(rng) for _ in range(dims[-1])] for _ in range(outputs)],
                     [rational(rng) for _ in range(outputs)])


def random_points(rng: random.Random, box: Box, count: int) -> list[list[Fraction]]:
    return [[lo + (hi - lo) * Fraction(rng.randint(0, 64), 64) for lo, hi in zip(box.lower, box.upper)]
            for _ in range(count)]


def tie_points(rng: random.Random, net: MaxoutNet, count: int) -> list[list[Fraction]]:
    """Points of the domain where two pieces of a first-layer unit are exactly equal."""
    out = []
    layer = net.layers[0]
    for _ in range(20 * count):
        i = rng.randrange(layer.units)
        if layer.ranks[i] < 2:
            continue
        j, k = rng.sample(range(layer.ranks[i]), 2)
        diff = [a - b for a, b in zip(layer.weight[i][j], layer.weight[i][k])]
        pivots = [c for c, d in enumerate(diff) if d]
        if not pivots:
            continue
        x = random_points(rng, net.domain, 1)[0]
        c = pivots[0]
        rest = sum(d * v for n, (d, v) in enumerate(zip(diff, x)) if n != c)
        x[c] = (layer.bias[i][k] - layer.bias[i][j] - rest) / diff[c]
        if net.domain.contains(x):
            out.append(x)
        if len(out) == count:
            break
    return out
