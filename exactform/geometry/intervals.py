"""Outward-rounded interval arithmetic on arb endpoints: ``Iv(lo, hi)`` stands for the real interval
``[lo.lower(), hi.upper()]``, so every operation below returns an interval containing the image of
every point of its arguments, whatever the rounding (python-flint ``arb`` is rigorous).

Endpoints rather than arb's midpoint-radius balls keep sign information (``x² ⊆ [0, 1]`` on
``[−1, 1]``, where the ball ``x·x`` would contain negatives) and make monotone functions exact up to
rounding.  Rational bounds come out through ``lower()``/``upper()`` as exact dyadic ``Fraction``\\ s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import flint

from .enclosure import ball, bounds

INF = flint.arb("inf")


@dataclass(frozen=True)
class Iv:
    lo: flint.arb
    hi: flint.arb

    @classmethod
    def of(cls, lo: Fraction, hi: Fraction) -> "Iv":
        return cls(ball(lo), ball(hi))

    @classmethod
    def point(cls, x: Fraction) -> "Iv":
        b = ball(x)
        return cls(b, b)

    @classmethod
    def around(cls, b: flint.arb) -> "Iv":
        """The interval of the arb ball ``b``."""
        return cls(b, b)

    def is_finite(self) -> bool:
        return self.lo.is_finite() and self.hi.is_finite()

    def lower(self) -> Fraction:
        return bounds(self.lo)[0]

    def upper(self) -> Fraction:
        return bounds(self.hi)[1]

    def positive(self) -> bool:
        """Certainly > 0."""
        return bool(self.lo > 0)

    def negative(self) -> bool:
        return bool(self.hi < 0)

    def nonnegative(self) -> bool:
        return bool(self.lo >= 0)

    def nonpositive(self) -> bool:
        return bool(self.hi <= 0)

    def magnitude(self) -> flint.arb:
        """A ball whose upper end bounds ``max |x|`` over the interval."""
        return self.lo.abs_upper().max(self.hi.abs_upper()) if self.is_finite() else INF

    def __add__(self, other: "Iv") -> "Iv":
        return Iv(self.lo + other.lo, self.hi + other.hi)

    def __neg__(self) -> "Iv":
        return Iv(-self.hi, -self.lo)

    def __sub__(self, other: "Iv") -> "Iv":
        return self + (-other)

    def __mul__(self, other: "Iv") -> "Iv":
        """Extended multiplication: infinite ends stand for unbounded sets of *finite* reals, so an
        exact 0 times ±∞ is 0; an indeterminate product gives the whole line."""
        p = [_times(a, b) for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        if any(x.is_nan() for x in p):
            return Iv(-INF, INF)
        return Iv(_min(p), _max(p))

    def scale(self, c: flint.arb) -> "Iv":
        return self * Iv.around(c)

    def hull(self, other: "Iv") -> "Iv":
        return Iv(self.lo.min(other.lo), self.hi.max(other.hi))

    def intersect(self, other: "Iv") -> "Iv":
        """Both enclose the same set: so does their intersection.  An endpoint that is not finite
        (no bound, or arb could not bound it) adds nothing: the other one is kept, as arb's max/min
        of a finite and a [±inf] ball would lose it."""
        def pick(a, b, both):
            return b if not a.is_finite() else a if not b.is_finite() else both(a, b)
        return Iv(pick(self.lo, other.lo, flint.arb.max), pick(self.hi, other.hi, flint.arb.min))

    def symmetric(self) -> "Iv":
        """``[−m, m]`` with m = max |x|: the hull of ``s·x`` for s ∈ [−1, 1]."""
        m = self.magnitude()
        return Iv(-m, m)

    def nonnegative_part(self) -> "Iv":
        """The interval intersected with [0, ∞) — valid only where the true values are known ≥ 0."""
        zero = flint.arb(0)
        return Iv(self.lo.max(zero), self.hi.max(zero))

    def exp(self) -> "Iv":
        return Iv(self.lo.exp(), self.hi.exp())

    def log(self) -> "Iv":
        if not self.positive():
            return Iv(-INF, INF)
        return Iv(self.lo.log(), self.hi.log())

    def power(self, p: Fraction) -> "Iv":
        """``x^p`` for rational p at the points of x where it is defined: a non-integer p needs
        x ≥ 0 (else the whole line); a negative p on ``[0, b]`` gives ``[b^p, ∞)``, on an interval
        with 0 inside the whole line."""
        if p == 0:
            return Iv.point(Fraction(1))
        if p.denominator == 1:
            n = int(p)
            if n < 0:
                if self.positive() or self.negative():
                    return Iv(1 / self.hi, 1 / self.lo).power(Fraction(-n))
                if self.nonnegative() and bool(self.hi > 0):
                    return Iv(1 / self.hi, INF).power(Fraction(-n))
                return Iv(-INF, INF)
            a, b = _ipow(self.lo, n), _ipow(self.hi, n)
            if n % 2:
                return Iv(a, b)
            if self.nonnegative():
                return Iv(a, b)
            if self.nonpositive():
                return Iv(b, a)
            return Iv(flint.arb(0), a.max(b))
        if not self.nonnegative():
            return Iv(-INF, INF)
        if p < 0 and not bool(self.hi > 0):
            return Iv(-INF, INF)
        q = flint.arb(flint.fmpq(p.numerator, p.denominator))
        a = self.lo ** q if self.positive() else (flint.arb(0) if p > 0 else INF)
        b = self.hi ** q if bool(self.hi > 0) else flint.arb(0)
        return Iv(a, b) if p > 0 else Iv(b, a)


def _ipow(b: flint.arb, n: int) -> flint.arb:
    """``b^n`` (n ≥ 1) by repeated squaring: a ball containing the n-th power of every point of b."""
    out, base = flint.arb(1), b
    while n:
        if n & 1:
            out = out * base
        base, n = base * base, n >> 1
    return out


def _times(a: flint.arb, b: flint.arb) -> flint.arb:
    return flint.arb(0) if a.is_zero() or b.is_zero() else a * b


def _min(xs):
    out = xs[0]
    for x in xs[1:]:
        out = out.min(x)
    return out


def _max(xs):
    out = xs[0]
    for x in xs[1:]:
        out = out.max(x)
    return out


def sqrt_upper(q: Fraction, bits: int = 64) -> Fraction:
    """A rational ``≥ √q`` within ``2^{−bits}`` of it (q ≥ 0)."""
    scale = 4 ** bits
    n = q.numerator * scale
    r = math.isqrt(-(-n // q.denominator))
    if r * r * q.denominator < n:
        r += 1
    return Fraction(r, 2 ** bits)


def round_up(q: Fraction, digits: int = 12) -> Fraction:
    """The smallest rational with ``digits`` significant decimal digits that is ≥ q (q exact if short)."""
    if q <= 0:
        return -round_down(-q, digits) if q else q
    scale = _scale(q, digits)
    return Fraction(math.ceil(q * scale)) / scale


def round_down(q: Fraction, digits: int = 12) -> Fraction:
    if q <= 0:
        return -round_up(-q, digits) if q else q
    scale = _scale(q, digits)
    return Fraction(math.floor(q * scale)) / scale


def _scale(q: Fraction, digits: int) -> Fraction:
    """``10^s`` with ``q·10^s`` exactly ``digits`` digits before the point (q > 0)."""
    e = (q.numerator.bit_length() - q.denominator.bit_length()) * 30103 // 100000   # ≈ ⌊log₁₀ q⌋
    while Fraction(10) ** (e + 1) <= q:
        e += 1
    while Fraction(10) ** e > q:
        e -= 1
    return Fraction(10) ** (digits - 1 - e)
