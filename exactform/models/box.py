"""The input domain: a box ``[lower, upper]`` with rational corners."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from ..formats import InputError, Reader, encode_row
from ..numbers import RationalSyntaxError, parse_number


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
        return {"lower": encode_row(self.lower), "upper": encode_row(self.upper)}

    @classmethod
    def from_json(cls, r: Reader, dim: int) -> "Box":
        r.dict({"lower", "upper"})
        lower, upper = r.field("lower").vector(dim, sparse=True), r.field("upper").vector(dim, sparse=True)
        for i, (lo, hi) in enumerate(zip(lower, upper)):
            if lo > hi:
                raise r.field("lower").item(i).error(f"lower bound {lo} exceeds upper bound {hi}")
        return cls(tuple(lower), tuple(upper))


def parse_domain(text: str) -> list[tuple[Fraction, Fraction]]:
    """``--domain L:U[,L:U...]``, each end a number of ``numbers.parse_number`` (``-7/12``, ``2/4``,
    ``0.25``, ``1e-3``: read exactly)."""
    pairs = []
    for k, part in enumerate(text.split(",")):
        ends = part.split(":")
        if len(ends) != 2:
            raise InputError("--domain", f"[{k}]", f"expected L:U, got {part[:40]!r}")
        try:
            lo, hi = (parse_number(e) for e in ends)
        except RationalSyntaxError as e:
            raise InputError("--domain", f"[{k}]", str(e)) from None
        if lo > hi:
            raise InputError("--domain", f"[{k}]", f"lower bound {lo} exceeds upper bound {hi}")
        pairs.append((lo, hi))
    return pairs


def domain_box(pairs: list[tuple[Fraction, Fraction]], dim: int, source: str = "--domain",
               broadcast: bool = True) -> Box:
    """One pair for every coordinate, or (``broadcast``) a single pair for all of them."""
    if len(pairs) not in ((1, dim) if broadcast else (dim,)):
        raise InputError(source, "", f"{len(pairs)} L:U pairs for {dim} input(s); give "
                         f"{'one pair or ' if broadcast else ''}one per input")
    pairs = pairs * dim if len(pairs) == 1 else pairs
    return Box(tuple(lo for lo, _ in pairs), tuple(hi for _, hi in pairs))
