"""Evaluation points: ``[["1/2", "-3"], ["0.25", "2/4"], [1, 0.5]]``, every entry a number of
``numbers.parse_number`` read exactly (a JSON number literal is read from its text, never through a
float); checked against a domain."""
from __future__ import annotations

from fractions import Fraction

from .formats import InputError, Reader, encode_vector, load_json
from .models import Box
from .numbers import RationalSyntaxError, parse_number


def read_points(path: str, dim: int) -> list[list[Fraction]]:
    return [[_number(x) for x in p.list(dim)] for p in load_json(path).list(nonempty=True)]


def _number(r: Reader) -> Fraction:
    if isinstance(r.value, bool) or not isinstance(r.value, (int, str)):
        raise r.error(f"expected a number such as \"0.5\" or \"2/4\", got {type(r.value).__name__}")
    try:
        return parse_number(str(r.value))     # a JSON literal (int, FloatLiteral) by its text
    except RationalSyntaxError as e:
        raise r.error(str(e)) from None


def check_domain(points: list[list[Fraction]], box: Box, source: str) -> None:
    """Refuse points outside the box: the model's claims hold only on its domain."""
    for n, point in enumerate(points):
        i = box.first_violation(point)
        if i is not None:
            raise InputError(source, f"[{n}][{i}]", f"{point[i]} is outside the domain "
                             f"[{box.lower[i]}, {box.upper[i]}] (use --allow-outside to evaluate anyway)")


def encode_points(points: list[list[Fraction]]) -> list[list[str]]:
    return [encode_vector(p) for p in points]
