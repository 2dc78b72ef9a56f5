"""The input domain: a box ``[lower, upper]`` with rational corners."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from ..formats import Reader, encode_vector


@dataclass(frozen=True)
class Box:
    lower: tuple[Fraction, ...]
    upper: tuple[Fraction, ...]

    def __post_init__(self):
        if len(self.lower) != len(self.upper):
            raise ValueError("lower and upper have different lengths")
        for i, (lo, hi) in enumerate(zip(self.lower, self.upper)):
            if lo > hi:
                raise ValueError(f"empty box: lower[{i}] > upper[{i}]")

    @property
    def dim(self) -> int:
        return len(self.lower)

    def contains(self, point) -> bool:
        return all(lo <= x <= hi for lo, x, hi in zip(self.lower, point, self.upper))

    def first_violation(self, point) -> int | None:
        """Index of the first coordinate outside the box, or None."""
        return next((i for i, (lo, x, hi) in enumerate(zip(self.lower, point, self.upper))
                     if not lo <= x <= hi), None)

    def corners(self):
        return product(*zip(self.lower, self.upper))

    def to_json(self) -> dict:
        return {"lower": encode_vector(self.lower), "upper": encode_vector(self.upper)}

    @classmethod
    def from_json(cls, r: Reader, dim: int) -> "Box":
        r.dict({"lower", "upper"})
        lower, upper = r.field("lower").vector(dim), r.field("upper").vector(dim)
        for i, (lo, hi) in enumerate(zip(lower, upper)):
            if lo > hi:
                raise r.field("lower").item(i).error(f"lower bound {lo} exceeds upper bound {hi}")
        return cls(tuple(lower), tuple(upper))
