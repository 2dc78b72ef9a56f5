"""Exact rationals: the strict string grammar, exact float conversion, and fast matrices.

Invariant: every number on an exact path is a ``fractions.Fraction`` (user-facing, per entry)
or an integer matrix over one positive common denominator (``QMatrix``, the hot path, backed by
python-flint's ``fmpz_mat``).  No float is ever accepted: ``to_fraction`` raises on one, and
``from_float`` is the single, explicit, exact float → rational door.
"""
from __future__ import annotations

import math
import re
import sys
from fractions import Fraction

import flint

from .checker.reader import MAX_DIGITS, RATIONAL
from .checker.vnnlib import read_decimal

ZERO = Fraction(0)


class _ReadOnlyRow(dict):
    """An empty dict that refuses to be changed (it is shared)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("numbers.ZERO_ROW is shared and read-only; build a new row instead")

    __setitem__ = __delitem__ = __ior__ = setdefault = update = pop = popitem = clear = _refuse


ZERO_ROW = _ReadOnlyRow()
"""The all-zero sparse row ``{column: value}``, shared and read-only (a Transformer has millions);
it pickles and copies like a dict."""
"""The shared zero of models built in this process: ``row.count(ZERO)`` counts zeros at C speed
when they are this object (other zeros still count, through ``Fraction.__eq__``)."""

# MAX_DIGITS (the most decimal digits of a numerator or denominator: the documented limit), the grammar
# RATIONAL and the decimal reader read_decimal are the checker's: one definition, on the trusted side.


class RationalSyntaxError(ValueError):
    """A string that is not a canonical rational of the exactform grammar."""


def parse_rational(text: object) -> Fraction:
    """Parse ``-?N(/D)?`` in canonical form: reduced, ``D > 1``, no sign on zero, no leading zeros.

    Grammar only: no ``eval``, no ``sympify``, no floats, no whitespace, no ``nan``/``inf``.
    """
    if not isinstance(text, str):
        raise RationalSyntaxError(f"expected a rational string such as \"-7/12\", got {_describe(text)}")
    m = RATIONAL.fullmatch(text)
    if m is None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise RationalSyntaxError(f"{shown!r} is not a rational of the form \"-7/12\"")
    sign, num, den = m.groups()
    if len(num) > MAX_DIGITS or (den is not None and len(den) > MAX_DIGITS):
        raise RationalSyntaxError(f"more than {MAX_DIGITS} digits (documented size limit)")
    p, q = int(num), int(den) if den is not None else 1
    if den is not None and (q == 1 or math.gcd(p, q) != 1):
        raise RationalSyntaxError(f"{text!r} is not in canonical form (reduced, denominator > 1)")
    if sign and p == 0:
        raise RationalSyntaxError("'-0' is not canonical; write '0'")
    return Fraction(-p if sign else p, q)


def parse_decimal(text: object) -> Fraction:
    """The exact value of a decimal such as ``-0.25`` or ``5.4e-02`` (for float-text formats like
    ``.nnet`` and ``--domain``), within the size limit: at most ``MAX_DIGITS`` digits and an
    exponent of at most ``MAX_DIGITS`` in absolute value (``1e999999999`` would take hours)."""
    if not isinstance(text, str):
        raise RationalSyntaxError(f"expected a decimal string, got {_describe(text)}")
    try:
        q = read_decimal(text.strip())
    except ValueError as e:
        raise RationalSyntaxError(f"{e} (documented size limit)") from None
    if q is None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise RationalSyntaxError(f"{shown!r} is not a decimal number")
    return q


_FRACTION = re.compile(r"([+-]?)([0-9]+)/([0-9]+)\Z")


def parse_number(text: object) -> Fraction:
    """A number as a person types or lists it, read exactly: an integer or decimal (``3``,
    ``-0.25``, ``1e-3``) or a fraction of integers, reduced or not (``2/4``, ``-7/12``).

    The one rule for the command line, point files and the Python API; canonical form
    (``parse_rational``) is required only inside model and certificate files.  Ints and
    ``Fraction`` pass through; floats are refused (``from_float`` is the explicit door).
    """
    if not isinstance(text, str):
        return to_fraction(text)
    m = _FRACTION.match(text.strip())
    if m is None:
        return parse_decimal(text)
    sign, num, den = m.groups()
    if len(num) > MAX_DIGITS or len(den) > MAX_DIGITS:
        raise RationalSyntaxError(f"more than {MAX_DIGITS} digits (documented size limit)")
    if int(den) == 0:
        raise RationalSyntaxError(f"{text.strip()[:40]!r} divides by zero")
    return Fraction(-int(num) if sign == "-" else int(num), int(den))


def exact_point(point: object, dim: int) -> list[Fraction]:
    """``dim`` numbers of ``parse_number``'s rule (``[Fraction(1, 2), 1, "0.25"]``); a ``ValueError``
    names the index of a bad entry and a ``TypeError`` names a float."""
    if isinstance(point, (str, bytes)) or not hasattr(point, "__len__"):
        raise TypeError(f"expected a list of {dim} numbers, got {type(point).__name__}")
    if len(point) != dim:
        raise ValueError(f"expected {dim} numbers, got {len(point)}")
    out = []
    for i, v in enumerate(point):
        try:
            out.append(parse_number(v))
        except TypeError as e:
            raise TypeError(f"entry [{i}]: {e}") from None
        except RationalSyntaxError as e:
            raise ValueError(f"entry [{i}]: {e}") from None
    return out


def format_rational(value: Fraction | int) -> str:
    """The canonical string of a rational: ``"3"``, ``"-7/12"``."""
    value = to_fraction(value)
    if value.denominator == 1:
        return _digits(value.numerator)
    return f"{_digits(value.numerator)}/{_digits(value.denominator)}"


def _digits(n: int) -> str:
    """``str(n)`` also beyond Python's int-to-str limit (4300 digits): results may be that long;
    inputs are bounded by their readers."""
    try:
        return str(n)
    except ValueError:
        limit = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
        try:
            return str(n)
        finally:
            sys.set_int_max_str_digits(limit)


def outward_decimals(lo: Fraction, hi: Fraction, digits: int) -> tuple[str, str]:
    """``lo`` rounded down and ``hi`` rounded up to ``digits`` significant decimal digits, so the
    printed interval still contains ``[lo, hi]`` (``"0.3333"``, ``"1.235E+7"``)."""
    from decimal import Decimal
    return tuple(str(Decimal(n).scaleb(k)) for n, k in (_decimal(lo, digits, math.floor), _decimal(hi, digits, math.ceil)))


def _decimal(x: Fraction, digits: int, rounding) -> tuple[int, int]:
    """``(n, k)`` with ``n·10^k`` = x rounded by ``rounding`` to ``digits`` significant digits."""
    if x == 0:
        return 0, 0
    e = len(str(abs(x.numerator))) - len(str(x.denominator))    # floor(log10 |x|), up to one
    e += 1 if Fraction(10) ** (e + 1) <= abs(x) else -1 if Fraction(10) ** e > abs(x) else 0
    k = e - digits + 1
    scaled = x / Fraction(10) ** k
    return rounding(scaled), k


def from_float(x: float) -> Fraction:
    """The exact dyadic rational equal to a finite binary float (NaN and infinities raise)."""
    if not math.isfinite(x):
        raise ValueError(f"{x!r} is not a finite number")
    return Fraction(x)


def to_fraction(value: object) -> Fraction:
    """Coerce an exact scalar (int, Fraction, flint fmpz/fmpq, SymPy Rational) to ``Fraction``.

    Floats are refused: a float reaching an exact path is a bug.
    """
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool):
        raise TypeError(f"{value!r} is a bool, not a number")
    if isinstance(value, float):
        raise TypeError(f"the float {value!r} is not exact: write \"{value!r}\" or Fraction(...) for the decimal, "
                        "or numbers.from_float(x) for the float's exact binary value")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, flint.fmpz):
        return Fraction(int(value))
    if isinstance(value, flint.fmpq):
        return Fraction(int(value.p), int(value.q))
    sympy = sys.modules.get("sympy")      # imported lazily: only a loaded SymPy can make a Rational
    if sympy is not None and isinstance(value, sympy.Rational):
        return Fraction(int(value.p), int(value.q))
    raise TypeError(f"{value!r} ({type(value).__name__}) is not an exact rational")


def to_sympy(rows: list[list[Fraction]]):
    """The user-facing SymPy ``Rational`` matrix of a list of rows."""
    import sympy
    return sympy.Matrix([[sympy.Rational(v.numerator, v.denominator) for v in row] for row in rows])


def bit_size(value: Fraction) -> tuple[int, int]:
    """Bits of |numerator| and of denominator."""
    return abs(value.numerator).bit_length(), value.denominator.bit_length()


def _describe(value: object) -> str:
    if isinstance(value, float):
        return f"the float {value!r} (floats are not exact; write a string)"
    return f"{type(value).__name__} {value!r}"[:80]


def selection(rows: int, cols: int, ones) -> flint.fmpz_mat:
    """The 0/1 integer matrix with a 1 at each ``(row, column)`` of ``ones`` (gathers, scatters)."""
    m = flint.fmpz_mat(rows, cols)
    for r, c in ones:
        m[r, c] = 1
    return m


class QMatrix:
    """An exact rational matrix ``num / den``: integer ``fmpz_mat`` over one common ``den > 0``.

    Sharing one denominator makes products integer products and comparisons integer
    comparisons, which is what makes exact evaluation fast (see exactform/benchmarks/numbers_bench.py).
    """

    __slots__ = ("num", "den")

    def __init__(self, num: flint.fmpz_mat, den: int = 1):
        if den <= 0:
            raise ValueError("denominator must be positive")
        self.num, self.den = num, int(den)

    @classmethod
    def from_rows(cls, rows: list[list[Fraction]], ncols: int | None = None) -> "QMatrix":
        ncols = len(rows[0]) if rows else (ncols or 0)
        distinct = {id(v): v for row in rows for v in row}   # entries repeat (0 above all): scale each once
        den = math.lcm(1, *{v.denominator for v in distinct.values()})
        scaled = {k: int(v.numerator * (den // v.denominator)) for k, v in distinct.items()}
        return cls(flint.fmpz_mat(len(rows), ncols, [scaled[id(v)] for row in rows for v in row]), den)

    @classmethod
    def from_sparse(cls, rows: list[dict[int, Fraction]], ncols: int) -> "QMatrix":
        """The matrix whose row i has the entries ``rows[i]`` ({column: value}) and zeros elsewhere."""
        den = math.lcm(1, *{v.denominator for row in rows for v in row.values()})
        num = flint.fmpz_mat(len(rows), ncols)
        for i, row in enumerate(rows):
            for j, v in row.items():
                if v:
                    num[i, j] = v.numerator * (den // v.denominator)
        return cls(num, den)

    @classmethod
    def from_ints(cls, rows: list[list[int]], den: int = 1, ncols: int | None = None) -> "QMatrix":
        ncols = len(rows[0]) if rows else (ncols or 0)
        return cls(flint.fmpz_mat(len(rows), ncols, [x for r in rows for x in r]), den)

    @property
    def shape(self) -> tuple[int, int]:
        return self.num.nrows(), self.num.ncols()

    def int_rows(self) -> list[list[int]]:
        return [[int(x) for x in row] for row in self.num.tolist()]

    def rows(self) -> list[list[Fraction]]:
        return [[Fraction(x, self.den) for x in row] for row in self.int_rows()]

    def columns(self) -> list[list[Fraction]]:
        return [list(c) for c in zip(*self.rows())] if self.shape[0] else [[] for _ in range(self.shape[1])]

    def to_sympy(self):
        import sympy
        return to_sympy(self.rows()) if self.shape[0] else sympy.zeros(0, self.shape[1])

    def __matmul__(self, other: "QMatrix") -> "QMatrix":
        return QMatrix(self.num * other.num, self.den * other.den)

    def __add__(self, other: "QMatrix") -> "QMatrix":
        den = math.lcm(self.den, other.den)
        return QMatrix(self.num * (den // self.den) + other.num * (den // other.den), den)

    def reduced(self) -> "QMatrix":
        """The same matrix with numerators and denominator divided by their gcd."""
        g = self.den
        for x in self.num.entries():
            if g == 1:
                return self
            g = math.gcd(g, int(x))
        if g == 1:
            return self
        return QMatrix(flint.fmpz_mat(*self.shape, [int(x) // g for x in self.num.entries()]), self.den // g)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QMatrix) and self.shape == other.shape and \
            self.num * other.den == other.num * self.den

    def __repr__(self) -> str:
        return f"QMatrix({self.rows()!r})"
