"""Random exact Maxout networks of given shapes, for tests, proof scripts and benchmarks.

Weights are dyadic rationals ``k/2^bits`` (what a float importer produces), so sizes and
timings resemble those of real imported networks.
"""
from __future__ import annotations

import random
from fractions import Fraction

from .models import Box, MaxoutLayer, MaxoutNet


def random_maxout(seed: int, widths: list[int], ranks: int | list[list[int]] = 2, outputs: int = 1,
                  relu: bool = False, bits: int = 8) -> MaxoutNet:
    """A Maxout net ``widths[0] → widths[1] → … → outputs`` on the box ``[-1, 1]^d``.

    ``ranks`` is one rank for every unit or ``ranks[l][i]`` (ragged); ``relu=True`` makes every
    unit ``max(w·h + b, 0)``.
    """
    rng = random.Random(seed)

    def number() -> Fraction:
        return Fraction(rng.randint(-2 ** bits, 2 ** bits), 2 ** bits)

    layers = []
    for l, (n_in, n_out) in enumerate(zip(widths, widths[1:])):
        weight, bias = [], []
        for i in range(n_out):
            k = 2 if relu else (ranks if isinstance(ranks, int) else ranks[l][i])
            ws = [[number() for _ in range(n_in)] for _ in range(k)]
            bs = [number() for _ in range(k)]
            if relu:
                ws[1], bs[1] = [Fraction(0)] * n_in, Fraction(0)
            weight.append(ws)
            bias.append(bs)
        layers.append(MaxoutLayer(weight, bias))
    readout = [[number() for _ in range(widths[-1])] for _ in range(outputs)]
    box = Box(tuple([Fraction(-1)] * widths[0]), tuple([Fraction(1)] * widths[0]))
    return MaxoutNet(box, layers, readout, [number() for _ in range(outputs)])
