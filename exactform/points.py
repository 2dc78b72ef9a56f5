"""Evaluation points: ``[["1/2", "-3"], ...]`` read strictly, checked against a domain."""
from __future__ import annotations

from fractions import Fraction

from .formats import InputError, encode_vector, load_json
from .models import Box


def read_points(path: str, dim: int) -> list[list[Fraction]]:
    doc = load_json(path)
    return [p.vector(dim) for p in doc.list(nonempty=True)]


def check_domain(points: list[list[Fraction]], box: Box, source: str) -> None:
    """Refuse points outside the box: the model's claims hold only on its domain."""
    for n, point in enumerate(points):
        i = box.first_violation(point)
        if i is not None:
            raise InputError(source, f"[{n}][{i}]", f"{point[i]} is outside the domain "
                             f"[{box.lower[i]}, {box.upper[i]}] (use --allow-outside to evaluate anyway)")


def encode_points(points: list[list[Fraction]]) -> list[list[str]]:
    return [encode_vector(p) for p in points]



