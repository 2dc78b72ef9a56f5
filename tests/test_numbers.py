
import pytest
from hypothesis import given, strategies as st

from exactform.numbers import (MAX_DIGITS, QMatrix, RationalSyntaxError, format_rational, from_float,
                               parse_decimal, parse_rational, to_fraction)


@given(st.fractions())
def test_format_parse_round_trip(q):
    assert parse_rational(format_rational(q)) == q


@pytest.mark.parametrize("text", ["1.5", "1e3", " 1", "+1", "2/4", "1/1", "-0", "01", "1/0", "1/-2", "nan",
                                  "inf", "", "1//2", "__import__('os')", "0x10", "½"])
def test_parse_rejects_noncanonical(text):
    with pytest.raises(RationalSyntaxError):
        parse_rational(text)


@pytest.mark.parametrize("value", [1.5, 1, None, [1], True])
def test_parse_rejects_non_strings(value):
    with pytest.raises(RationalSyntaxError):
        parse_rational(value)


def test_size_limit_is_enforced_quickly():
    assert parse_rational("9" * MAX_DIGITS) == int("9" * MAX_DIGITS)
    with pytest.raises(RationalSyntaxError, match="digits"):
        parse_rational("9" * (MAX_DIGITS + 1))
    with pytest.raises(RationalSyntaxError, match="digits"):
        parse_rational("1/" + "7" * 100_000)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_from_float_is_exact(x):
    q = from_float(x)
    assert float(q) == x and q.denominator & (q.denominator - 1) == 0  # dyadic


@pytest.mark.parametrize("x", [float("nan"), float("inf"), -float("inf")])
def test_from_float_rejects_nonfinite(x):
    with pytest.raises(ValueError):
        from_float(x)


def test_floats_never_coerce():
    with pytest.raises(TypeError):
        to_fraction(0.5)


@given(st.lists(st.lists(st.fractions(max_denominator=50), min_size=3, max_size=3), min_size=1, max_size=4),
       st.lists(st.lists(st.fractions(max_denominator=50), min_size=2, max_size=2), min_size=3, max_size=3))
def test_qmatrix_product_matches_fractions(a, b):
    expected = [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a]
    assert (QMatrix.from_rows(a) @ QMatrix.from_rows(b)).rows() == expected
    assert (QMatrix.from_rows(a) @ QMatrix.from_rows(b)).reduced().rows() == expected


def test_grammars_live_in_the_checker():
    """One definition of the rational grammar, of the decimal reader and of the digit limit: the checker's
    (standard library only), imported by ``numbers`` and the VNN-LIB reader."""
    from exactform import numbers
    from exactform.checker import reader, vnnlib
    assert numbers.RATIONAL is reader.RATIONAL
    assert numbers.read_decimal is vnnlib.read_decimal
    assert numbers.MAX_DIGITS is reader.MAX_DIGITS


def _outcome(read, text):
    try:
        return read(text)
    except ValueError:        # RationalSyntaxError, the checker's Malformed and Unreadable
        return "refused"


_RATIONALS = ["0", "-1", "7", "-7/12", "1/2", "12345678901234567890/7", "9" * MAX_DIGITS, "1/" + "7" * MAX_DIGITS,
              "9" * (MAX_DIGITS + 1), "1/" + "7" * (MAX_DIGITS + 1), "-0", "+1", "01", "1/1", "2/4", "1/0",
              "1/-2", "1/02", "1.5", "1e3", " 1", "1 ", "1\n", "", "-", "1/", "/2", "1//2", "nan", "inf", "0x10", "½", "١"]


@pytest.mark.parametrize("text", _RATIONALS, ids=range(len(_RATIONALS)))
def test_rational_grammar_is_the_checkers(text):
    """``numbers.parse_rational`` and the checker's ``reader.rational`` accept the same strings, with the same value."""
    from exactform.checker import reader
    ours, theirs = _outcome(parse_rational, text), _outcome(lambda t: reader.rational(t, "x"), text)
    assert ours == theirs
    assert (ours == "refused") == (text in _RATIONALS[8:])


_DECIMALS = ["0", "-0", "+1", "1.", ".5", "-0.25", "5.4e-02", "1E3", "007", "1e+4000", "1e-4000",
             "9" * (MAX_DIGITS - 1) + ".9", "1e4001", "1e-4001", "1e000000001", "9" * (MAX_DIGITS + 2),
             ".", "", "e3", "1e", "1.2.3", "--1", "+-1", "1/2", "nan", "inf", "0x10", "1_000", "½", "١"]


@pytest.mark.parametrize("text", _DECIMALS, ids=range(len(_DECIMALS)))
def test_decimal_grammar_is_the_checkers(text):
    """``numbers.parse_decimal`` and the checker's VNN-LIB ``number`` read the same decimals, to the same value."""
    from exactform.checker import vnnlib
    ours, theirs = _outcome(parse_decimal, text), _outcome(lambda t: vnnlib.number(t, "p.vnnlib", "x"), text)
    assert ours == theirs
    assert (ours == "refused") == (text in _DECIMALS[12:])
