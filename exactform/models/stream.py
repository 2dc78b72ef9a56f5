"""The residual stream of a batch, for exact hardmax evaluation (docs/spec.md §1).

Invariant: ``stream[t][r]``, coordinate r of token t, is a ``Fraction`` when it has that value at
every point of the batch (a token's constant and shift coordinates, coordinates a block zeroed), and
otherwise a ``Vector``: one integer per point over one positive denominator.  A coordinate that a
block copies, or that is equal in several tokens because the same computation produced it, is the
*same* ``Vector`` object, and blocks compute once per distinct input: the token structure of a
compiled network (shared inputs, token-constant shifts, hardmax heads whose query is constant) is
found in the values, not assumed.  Every product is one ``fmpz_mat`` product over the vectors a
block reads; every comparison compares integers.
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import flint

Form = tuple[dict[int, Fraction], Fraction]
"""``(coefficients, offset)``: the affine form ``offset + Σ coefficients[k]·values[k]``."""

REDUCE_BITS = 256
"""A vector cancels common factors once its denominator grows past this many bits."""


class Vector:
    """Integers ``num`` over ``den > 0``: one rational per point of the batch.  Compared by identity."""

    __slots__ = ("num", "den", "_range")

    def __init__(self, num: list, den: int):
        if den.bit_length() > REDUCE_BITS:
            g = math.gcd(den, *num)
            if g > 1:
                num, den = [x // g for x in num], den // g
        self.num, self.den, self._range = num, int(den), None

    def range(self) -> tuple[int, int]:
        """``(min, max)`` of the numerators."""
        if self._range is None:
            self._range = int(min(self.num)), int(max(self.num))
        return self._range

    def scaled(self, den: int) -> list:
        """The numerators over ``den`` (a multiple of ``self.den``)."""
        return self.num if den == self.den else [x * (den // self.den) for x in self.num]

    def fractions(self) -> list[Fraction]:
        return [Fraction(int(x), self.den) for x in self.num]


class Constant(Fraction):
    """A constant of the stream: a ``Fraction`` that keeps its hash (tokens and plans are looked up
    by their values, and ``Fraction.__hash__`` computes a modular inverse each time)."""

    __slots__ = ("_hash",)

    def __hash__(self):
        try:
            return self._hash
        except AttributeError:
            self._hash = Fraction.__hash__(self)
            return self._hash


Value = Fraction | Vector
"""Tested as ``type(v) is Vector``: ``isinstance(v, Fraction)`` goes through the ABC machinery of
``numbers.Rational``, too slow for the hot path."""


def numerators(values: list[Value], points: int) -> tuple[list[list], int]:
    """The values as integer lists over their common denominator (constants repeated)."""
    den = math.lcm(*(v.den if type(v) is Vector else v.denominator for v in values))
    return [v.scaled(den) if type(v) is Vector else [v.numerator * (den // v.denominator)] * points
            for v in values], den


def cached(cache: dict, key, make, size: int = 64):
    """``cache[key]``, made by ``make()`` if absent; the cache is emptied when it holds ``size``."""
    if key not in cache:
        if len(cache) >= size:
            cache.clear()
        cache[key] = make()
    return cache[key]


class Affine:
    """Affine forms ``offset + Σ c_k·values[k]``, applied to a token's values.  Constants fold; a
    form that is one vector with coefficient 1 returns that vector itself; the other forms are one
    integer product over the vectors they read.  What folds depends only on which referenced values
    are constants and what they are, so that is compiled once per such pattern (cached)."""

    def __init__(self, forms: list[Form]):
        self.forms = forms
        self.referenced = sorted({k for coefficients, _ in forms for k in coefficients})
        self._compiled: dict[tuple, tuple] = {}

    def __call__(self, values: list[Value], points: int) -> list[Value]:
        key = tuple(None if type(values[k]) is Vector else values[k] for k in self.referenced)
        out, read, matrix, scale = cached(self._compiled, key, lambda: self._compile(values))
        if read:
            rows, den = numerators([values[k] for k in read], points)
            x = flint.fmpz_mat(len(read) + 1, points, list(itertools.chain(*rows, [den] * points)))
            entries, den = (matrix * x).entries(), scale * den
        return [values[v] if kind == "share" else v if kind == "constant" else
                Vector(entries[v * points:(v + 1) * points], den) for kind, v in out]

    def _compile(self, values: list[Value]) -> tuple:
        """``(out, read, matrix, scale)``: per form ("constant", value), ("share", k) or ("row", i) of
        ``matrix · [values[read]; 1]`` (integers over ``scale``)."""
        out, folded = [], []
        for coefficients, offset in self.forms:
            terms = {}
            for k, c in coefficients.items():
                v = values[k]
                if type(v) is not Vector:
                    offset += c * v
                elif c:
                    terms[k] = c
            if not terms:
                out.append(("constant", Constant(offset)))
            elif not offset and len(terms) == 1 and next(iter(terms.values())) == 1:
                out.append(("share", next(iter(terms))))
            else:
                out.append(("row", len(folded)))
                folded.append((terms, offset))
        read = sorted({k for terms, _ in folded for k in terms})
        column = {k: j for j, k in enumerate(read)}
        scale = math.lcm(*(c.denominator for terms, offset in folded for c in (*terms.values(), offset)))
        matrix = flint.fmpz_mat(len(folded), len(read) + 1)
        for i, (terms, offset) in enumerate(folded):
            for k, c in terms.items():
                matrix[i, column[k]] = c.numerator * (scale // c.denominator)
            if offset:
                matrix[i, len(read)] = offset.numerator * (scale // offset.denominator)
        return out, read, matrix, scale


def relu(v: Value) -> Value:
    if type(v) is not Vector:
        return Constant(max(v, 0))
    zero = flint.fmpz(0)
    return Vector([x if x > zero else zero for x in v.num], v.den)


def hardmax(scores: list[Value], values: list[list[Value]], points: int) -> list[Value]:
    """``Σ_{j∈M} values[j] / |M|`` per value row and point, M the argmax set of the token scores
    ``scores[j]`` (hardmax: ties share equally).  A row equal in every token is returned as it is
    (the mean of equal values); a row that *is* each token's score is the maximum itself."""
    size = len(values[0])
    same = [all(v[r] is values[0][r] or (type(v[r]) is not Vector and v[r] == values[0][r]) for v in values)
            for r in range(size)]
    if all(same):
        return list(values[0])
    score_rows, den = numerators(scores, points)
    top = list(map(max, *score_rows)) if len(scores) > 1 else score_rows[0]
    out, winners = [], None
    for r in range(size):
        if same[r]:
            out.append(values[0][r])
        elif all(v[r] is s for v, s in zip(values, scores)):
            out.append(Vector(top, den))
        else:
            if winners is None:
                winners = [[s == m for s, m in zip(row, top)] for row in score_rows]
                counts = [sum(c) for c in zip(*winners)]
                common = math.lcm(*set(counts))
                share = [common // n for n in counts]
            rows, vden = numerators([v[r] for v in values], points)
            total = [0] * points
            for row, win in zip(rows, winners):
                total = [t + x if w else t for t, x, w in zip(total, row, win)]
            out.append(Vector([t * s for t, s in zip(total, share)], vden * common))
    return out


def score(left: list[Value], right: list[Value], points: int) -> Value:
    """``Σ_r left[r]·right[r]`` per point: the score of a query and a key."""
    for fixed, other in ((left, right), (right, left)):
        if all(type(v) is not Vector for v in fixed):
            terms = [(a, v) for a, v in zip(fixed, other) if a]
            if len(terms) == 1 and terms[0][0] == 1:
                return terms[0][1]                      # the usual query 1: the key itself
            return Affine([(dict(enumerate(fixed)), Fraction(0))])(other, points)[0]
    (a, da), (b, db) = numerators(left, points), numerators(right, points)
    total = [0] * points
    for x, y in zip(a, b):
        total = [t + p * q for t, p, q in zip(total, x, y)]
    return Vector(total, da * db)


def fractions(v: Value, points: int) -> list[Fraction]:
    """The value at each point."""
    return v.fractions() if type(v) is Vector else [Fraction(v)] * points
