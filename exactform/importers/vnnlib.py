"""VNN-LIB properties, read exactly (decimals as rationals), for the commands.

``read_property``: the VNN-COMP grammar, for ``verify``; the reader is the checker's own
(``checker/vnnlib.py``: grammar, disjunctive normal form, limits), so the prover and the checker read
a property identically; here its errors become ``InputError``.

``read_box``: the input box only, for ``import --vnnlib``: ``(declare-const X_i Real)`` and
``(assert (<= X_i c))`` / ``(assert (>= X_i c))`` (either argument order); assertions over the
outputs ``Y_i`` alone are counted and skipped; anything else is an ``InputError`` naming the line.
"""
from __future__ import annotations

from fractions import Fraction

from ..checker import vnnlib
from ..checker.vnnlib import MAX_DISJUNCTS, VAR, Atom, Disjunct, Property, Unreadable, forms, number, text  # noqa: F401
from ..formats import InputError


def read_property(path: str) -> Property:
    """The property of a VNN-LIB file in disjunctive normal form (``checker/vnnlib.py``)."""
    try:
        return vnnlib.read_property(path)
    except Unreadable as e:
        raise InputError(e.path, e.where, e.message) from None


def read_box(path: str) -> tuple[list[tuple[Fraction, Fraction]], int]:
    """``([(lower_i, upper_i) for X_i], number of output assertions skipped)``."""
    try:
        return _box(path)
    except Unreadable as e:
        raise InputError(e.path, e.where, e.message) from None


def _box(path: str) -> tuple[list[tuple[Fraction, Fraction]], int]:
    lower: dict[int, Fraction] = {}
    upper: dict[int, Fraction] = {}
    declared: set[int] = set()
    skipped = 0
    for form, line in forms(text(path), path):
        where = f"line {line}"
        if not isinstance(form, list) or not form:
            raise InputError(path, where, "expected a command such as (assert ...)")
        head = form[0]
        if head == "declare-const" and len(form) == 3 and form[2] == "Real" and isinstance(form[1], str):
            m = VAR.match(form[1])
            if m is None:
                raise InputError(path, where, f"variables are X_i (inputs) and Y_i (outputs), got {form[1]!r}")
            if m.group(1) == "X":
                declared.add(int(m.group(2)))
            continue
        if head != "assert" or len(form) != 2:
            raise InputError(path, where, "only (declare-const X_i Real) and (assert ...) are supported")
        names = _variables(form[1])
        if names and all(n.startswith("Y") for n in names):
            skipped += 1
            continue
        index, bound, is_upper = _bound(form[1], path, where)
        if index not in declared:
            raise InputError(path, where, f"X_{index} is not declared before use")
        table, pick = (upper, min) if is_upper else (lower, max)
        table[index] = pick(table[index], bound) if index in table else bound
    if not declared:
        raise InputError(path, "", "no input variables (declare-const X_i Real)")
    n = max(declared) + 1
    for i in range(n):
        if i not in declared:
            raise InputError(path, f"X_{i}", "inputs must be X_0 .. X_n-1; this one is not declared")
        if i not in lower or i not in upper:
            raise InputError(path, f"X_{i}", f"needs both a lower and an upper bound (has "
                             f"{'lower' if i in lower else 'upper' if i in upper else 'neither'})")
        if lower[i] > upper[i]:
            raise InputError(path, f"X_{i}", f"empty: lower bound {lower[i]} exceeds upper bound {upper[i]}")
    return [(lower[i], upper[i]) for i in range(n)], skipped


def _variables(expr) -> set[str]:
    if isinstance(expr, str):
        return {expr} if VAR.match(expr) else set()
    return set().union(*(_variables(e) for e in expr)) if expr else set()


def _bound(expr, path: str, where: str) -> tuple[int, Fraction, bool]:
    """``(<= X_i c)``, ``(>= X_i c)``, ``(<= c X_i)`` or ``(>= c X_i)`` → ``(i, c, is_upper)``."""
    if not (isinstance(expr, list) and len(expr) == 3 and expr[0] in ("<=", ">=")):
        raise InputError(path, where, "only input bounds (<= X_i c) / (>= X_i c) are supported "
                         "(no disjunctions or linear constraints over inputs)")
    op, a, b = expr
    for var, num, flipped in ((a, b, False), (b, a, True)):
        m = VAR.match(var) if isinstance(var, str) else None
        if m is not None and m.group(1) == "X":
            return int(m.group(2)), number(num, path, where), (op == "<=") != flipped
    raise InputError(path, where, "a bound compares one X_i with a number")
