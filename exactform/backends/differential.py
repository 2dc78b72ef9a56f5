"""Differential check of a float backend against exact evaluation: the worst absolute error,
measured exactly (each float output is converted with ``Fraction(float)``, no rounding)."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class FloatError:
    worst: Fraction            # max over points and outputs of |float − exact|
    point: int                 # index of the point where it occurs
    points: int


def float_error(model, points: list[list[Fraction]], dtype=None, device: str = "cpu",
                exact: list[list[Fraction]] | None = None) -> FloatError:
    """Run ``model`` in the torch backend and exactly; ``exact`` may pass precomputed outputs."""
    import torch

    from .torch import evaluate, exact_points_tensor, to_module
    dtype = dtype or torch.float32
    exact = exact if exact is not None else model.evaluate_batch(points)
    outputs = evaluate(to_module(model, dtype, device), exact_points_tensor(points, dtype, device)).cpu()
    worst, at = Fraction(0), 0
    for n, (row, ref) in enumerate(zip(outputs.double().tolist(), exact)):
        err = max(abs(Fraction(f) - e) for f, e in zip(row, ref))
        if err > worst:
            worst, at = err, n
    return FloatError(worst, at, len(points))


@dataclass(frozen=True)
class MarginReport:
    bound: list[float]          # per point: rigorous bound on max |float32 output − exact output|
    undecided: list[int]        # per point: hardmax rows whose decision rounding could have changed


def margin_check(tf, points: list[list[Fraction]], dtype=None, outputs=None) -> MarginReport:
    """For a hardmax Transformer and exact points: a rigorous bound on how far the float
    computation is from the exact one, and the attention rows whose hardmax decision rounding
    could have changed (``backends.torch.rigorous_error``; the model of ``backends.rounding``).
    Input rounding is included exactly; ``outputs``: the float outputs to bound (default: a run
    of its own)."""
    import torch

    from .torch import rigorous_error
    _, bound, undecided = rigorous_error(tf, points, dtype or torch.float32, outputs)
    return MarginReport(bound.amax(dim=1).tolist(), undecided.tolist())
