"""The float rounding-error model used by the margin check (``TorchTransformer.bound``).

Model (Higham, *Accuracy and Stability of Numerical Algorithms*, §2–3): every IEEE operation is
correctly rounded, ``fl(a∘b) = (a∘b)(1+δ) + η``, ``|δ| ≤ u`` (``u = 2^-24`` for float32,
``2^-53`` for float64) and ``|η| ≤ 2^-150`` (float32; ``2^-1075`` float64) for underflow. Then any
evaluation order of a sum of ``m`` terms, each a product of two floats or a float, satisfies

    |fl(Σ a_k b_k) − Σ a_k b_k| ≤ γ_m Σ |a_k b_k| + 2m·η,   γ_m = m u / (1 − m u),

which covers BLAS blocking and FMA. Errors of inputs and weights propagate through
``ŵx̂ − wx = ŵ(x̂ − x) + (ŵ − w)x`` with ``|x| ≤ |x̂| + e``; ReLU is 1-Lipschitz. The bound itself is
computed in float64 on non-negative numbers; sums of at most 2^12 such terms have relative error
below 2^-41, so every computed bound is multiplied by ``INFLATE = 1 + 2^-40`` to stay an upper bound.
Assumes IEEE float32 arithmetic as on CPU (no TF32, no flush-to-zero beyond the η term).
"""
from __future__ import annotations

import math
from fractions import Fraction

INFLATE = 1 + 2.0 ** -40


def unit_roundoff(dtype) -> tuple[Fraction, float]:
    """``(u, 2η)`` for a torch float dtype."""
    import torch
    if dtype == torch.float32:
        return Fraction(1, 2 ** 24), 2.0 ** -149
    if dtype == torch.float64:
        return Fraction(1, 2 ** 53), 2.0 ** -1074
    raise ValueError(f"no rounding model for {dtype}")


def gamma(m: int, dtype) -> float:
    """``γ_m`` rounded up to a float64."""
    u, _ = unit_roundoff(dtype)
    if m * u >= 1:
        return math.inf
    return round_up(m * u / (1 - m * u))


def round_up(x: Fraction) -> float:
    """The least float64 ≥ x."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def representation_error(exact: Fraction, rounded: float) -> float:
    """``|rounded − exact|`` rounded up to a float64."""
    return round_up(abs(Fraction(rounded) - exact))
