"""The input box of a VNN-LIB property: ``(declare-const X_i Real)`` and ``(assert (<= X_i c))`` /
``(assert (>= X_i c))`` (either argument order), with exact decimals ``c`` (``(- c)`` for negatives).

A strict, small reader of that part only: assertions over the outputs ``Y_i`` alone are the
property to verify, not the domain, and are counted and skipped; anything else (disjunctions,
linear constraints on inputs, other commands) is an ``InputError`` naming the line. Several
bounds on one input intersect (the assertions are a conjunction); every input needs both.
"""
from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

from ..formats import InputError
from ..numbers import RationalSyntaxError, parse_decimal

_VAR = re.compile(r"([XY])_(0|[1-9][0-9]*)\Z")
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def read_box(path: str) -> tuple[list[tuple[Fraction, Fraction]], int]:
    """``([(lower_i, upper_i) for X_i], number of output assertions skipped)``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, "", f"cannot read: {e.strerror if isinstance(e, OSError) else e}") from None
    lower: dict[int, Fraction] = {}
    upper: dict[int, Fraction] = {}
    declared: set[int] = set()
    skipped = 0
    for form, line in _forms(text, path):
        where = f"line {line}"
        if not isinstance(form, list) or not form:
            raise InputError(path, where, "expected a command such as (assert ...)")
        head = form[0]
        if head == "declare-const" and len(form) == 3 and form[2] == "Real" and isinstance(form[1], str):
            m = _VAR.match(form[1])
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


def _forms(text: str, path: str):
    """Top-level s-expressions with their first line; comments run from ``;`` to the line end."""
    stack: list[list] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        for token in _TOKEN.findall(raw.split(";", 1)[0]):
            if token == "(":
                if not stack:
                    start = number
                stack.append([])
            elif token == ")":
                if not stack:
                    raise InputError(path, f"line {number}", "unbalanced ')'")
                done = stack.pop()
                if stack:
                    stack[-1].append(done)
                else:
                    yield done, start
            elif stack:
                stack[-1].append(token)
            else:
                raise InputError(path, f"line {number}", f"unexpected {token[:40]!r} outside a command")
    if stack:
        raise InputError(path, f"line {start}", "unbalanced '(' (the command is not closed)")


def _variables(expr) -> set[str]:
    if isinstance(expr, str):
        return {expr} if _VAR.match(expr) else set()
    return set().union(*(_variables(e) for e in expr)) if expr else set()


def _bound(expr, path: str, where: str) -> tuple[int, Fraction, bool]:
    """``(<= X_i c)``, ``(>= X_i c)``, ``(<= c X_i)`` or ``(>= c X_i)`` → ``(i, c, is_upper)``."""
    if not (isinstance(expr, list) and len(expr) == 3 and expr[0] in ("<=", ">=")):
        raise InputError(path, where, "only input bounds (<= X_i c) / (>= X_i c) are supported "
                         "(no disjunctions or linear constraints over inputs)")
    op, a, b = expr
    for var, num, flipped in ((a, b, False), (b, a, True)):
        m = _VAR.match(var) if isinstance(var, str) else None
        if m is not None and m.group(1) == "X":
            return int(m.group(2)), _number(num, path, where), (op == "<=") != flipped
    raise InputError(path, where, "a bound compares one X_i with a number")


def _number(expr, path: str, where: str) -> Fraction:
    negative = isinstance(expr, list) and len(expr) == 2 and expr[0] == "-"
    text = expr[1] if negative else expr
    if not isinstance(text, str) or text.startswith(("+", "-")) and negative:
        raise InputError(path, where, f"expected a decimal number, got {_show(expr)}")
    try:
        value = parse_decimal(text)
    except RationalSyntaxError as e:
        raise InputError(path, where, str(e)) from None
    return -value if negative else value


def _show(expr) -> str:
    text = expr if isinstance(expr, str) else "(" + " ".join(_show(e) for e in expr) + ")"
    return text[:40]
