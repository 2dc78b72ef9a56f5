"""The import self-check: the exact net against the source's own float evaluation, *sampled*.

This compares outputs at finitely many points of the domain; it catches conversion mistakes, it
proves nothing. The conversion itself is exact by construction: the net is exact to the float
values the file stores (every weight, and every constant as the exporter wrote it, e.g. a torch
LeakyReLU slope as float32), read as exact rationals. What differs at a sample point is the
reference's own floating-point evaluation — or a bug. The difference is measured relative to
``max(1, |exact|)`` per output entry; each reference states its tolerance (``f.tolerance``):
``1e-3`` for a float32 evaluation (onnxruntime on a float32 file), ``1e-9`` for a float64 one of
the same constants (a float64 file, a ``.nnet``), ``1e-6`` for torch in float64, whose Python-float
constants are unrounded where the file holds their float32 values.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..models import Box, MaxoutNet

EXACT_TO = ("the float values stored in the file (weights, biases and constants as the exporter wrote "
            "them, float32 in a float32 file), read as exact rationals")
"""What every import is exact to."""


@dataclass(frozen=True)
class SelfCheck:
    points: int
    worst: float
    tolerance: float
    source: str

    @property
    def ok(self) -> bool:
        return self.worst <= self.tolerance

    def line(self) -> str:
        verdict = "agrees" if self.ok else "DISAGREES (beyond float tolerance)"
        return (f"self-check (sampled, not a proof): worst |exact - {self.source}| / max(1, |exact|) = "
                f"{self.worst:.3g} at {self.points} points of the domain (tolerance {self.tolerance:g} for this "
                f"reference): {verdict}")


def sample_points(box: Box, count: int, seed: int = 0) -> list[list[Fraction]]:
    """The centre, the two extreme corners and random points of the box; every coordinate is a
    float32 value inside the box where one lies near the sample, so the source sees the same point."""
    rng = random.Random(seed)
    raw = [[(lo + hi) / 2 for lo, hi in zip(box.lower, box.upper)], list(box.lower), list(box.upper)]
    while len(raw) < count:
        raw.append([lo + (hi - lo) * Fraction(rng.randint(0, 1 << 20), 1 << 20)
                    for lo, hi in zip(box.lower, box.upper)])
    out = []
    for p in raw[:count]:
        point = []
        for x, lo, hi in zip(p, box.lower, box.upper):
            f = Fraction(float(np.float32(float(x))))
            point.append(f if lo <= f <= hi else x)
        out.append(point)
    return out


def self_check(net: MaxoutNet, reference, source: str | None = None, count: int = 32, seed: int = 0) -> SelfCheck:
    """``reference(points) -> float outputs`` (with ``source`` and ``tolerance`` attributes) against
    the exact net; ``source`` renames the reference in the line."""
    points = sample_points(net.domain, count, seed)
    exact = net.evaluate_batch(points)
    floats = reference(points)
    worst = 0.0
    for row, frow in zip(exact, floats, strict=True):
        if len(frow) != len(row):
            raise ValueError(f"the source gives {len(frow)} outputs, the exact net {len(row)}")
        for e, f in zip(row, frow):
            d = abs(float(e) - f) / max(1.0, abs(float(e))) if np.isfinite(f) else float("inf")
            worst = max(worst, d)
    return SelfCheck(len(points), worst, reference.tolerance, source or reference.source)
