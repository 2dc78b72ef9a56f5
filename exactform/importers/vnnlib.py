"""VNN-LIB properties, read exactly (decimals as rationals).

``read_box``: the input box only, for ``import --vnnlib``: ``(declare-const X_i Real)`` and
``(assert (<= X_i c))`` / ``(assert (>= X_i c))`` (either argument order); assertions over the
outputs ``Y_i`` alone are counted and skipped; anything else is an ``InputError`` naming the line.

``read_property``: the VNN-COMP grammar, for ``verify``.  The file states the *violation*: the
property fails exactly when some x satisfies every assertion.  Assertions are formulas built with
``and`` / ``or`` from atoms ``(<= s t)`` / ``(>= s t)`` over linear terms (numbers, ``X_i``, ``Y_j``,
``+``, ``-``, ``*`` by a number, ``/`` by a non-zero number); the conjunction of all of them is expanded into disjunctive
normal form, a list of ``Disjunct`` (at most ``MAX_DISJUNCTS``).  In each disjunct the atoms on one
input alone are that input's bounds (every input needs both), the rest are kept as rows
``Σ a_i X_i + Σ b_j Y_j + c ≥ 0``.  Several bounds on one input intersect.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

from ..formats import InputError
from ..numbers import RationalSyntaxError, parse_decimal

_VAR = re.compile(r"([XY])_(0|[1-9][0-9]*)\Z")
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


MAX_DISJUNCTS = 10 ** 4
"""Disjuncts of the expanded property: bounds the work before it starts."""


class Atom(NamedTuple):
    """The linear constraint ``Σ x[i]·X_i + Σ y[j]·Y_j + c ≥ 0`` (non-zero coefficients only)."""
    x: dict
    y: dict
    c: Fraction


class Disjunct(NamedTuple):
    """One way the property can fail: x in ``box`` with every atom of ``atoms`` true."""
    box: list
    atoms: list


class Property(NamedTuple):
    inputs: int
    outputs: int
    disjuncts: list


def _text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, "", f"cannot read: {e.strerror if isinstance(e, OSError) else e}") from None


def read_property(path: str) -> Property:
    """The property of a VNN-LIB file in disjunctive normal form (module docstring)."""
    declared: dict[str, set] = {"X": set(), "Y": set()}
    dnf: list[list[tuple[Atom, str]]] = [[]]
    for form, line in _forms(_text(path), path):
        where = f"line {line}"
        if not isinstance(form, list) or not form:
            raise InputError(path, where, "expected a command such as (assert ...)")
        if form[0] == "declare-const" and len(form) == 3 and form[2] == "Real" and isinstance(form[1], str):
            m = _VAR.match(form[1])
            if m is None:
                raise InputError(path, where, f"variables are X_i (inputs) and Y_i (outputs), got {form[1]!r}")
            declared[m.group(1)].add(int(m.group(2)))
            continue
        if form[0] != "assert" or len(form) != 2:
            raise InputError(path, where, "only (declare-const X_i Real) and (assert ...) are supported")
        alternatives = _dnf(form[1], path, where, declared)
        if len(dnf) * len(alternatives) > MAX_DISJUNCTS:
            raise InputError(path, where, f"more than {MAX_DISJUNCTS} disjuncts once expanded")
        dnf = [d + a for d in dnf for a in alternatives]
    sizes = {}
    for kind, name in (("X", "input"), ("Y", "output")):
        if not declared[kind]:
            raise InputError(path, "", f"no {name} variables (declare-const {kind}_i Real)")
        sizes[kind] = max(declared[kind]) + 1
        missing = next((i for i in range(sizes[kind]) if i not in declared[kind]), None)
        if missing is not None:
            raise InputError(path, f"{kind}_{missing}", f"{name}s must be {kind}_0 .. {kind}_n-1; this one is not declared")
    return Property(sizes["X"], sizes["Y"], [_disjunct(d, sizes["X"], path, k) for k, d in enumerate(dnf)])


def _disjunct(atoms: list, n: int, path: str, k: int) -> Disjunct:
    """The input bounds of one conjunction of atoms, and the atoms that are not bounds."""
    lower: dict[int, Fraction] = {}
    upper: dict[int, Fraction] = {}
    rest = []
    for atom, where in atoms:
        if len(atom.x) == 1 and not atom.y:
            (i, a), = atom.x.items()
            table, pick = (lower, max) if a > 0 else (upper, min)
            table[i] = pick(table[i], -atom.c / a) if i in table else -atom.c / a
        else:
            rest.append(atom)
    for i in range(n):
        at = f"X_{i}" if k == 0 else f"disjunct {k}: X_{i}"
        if i not in lower or i not in upper:
            raise InputError(path, at, f"needs both a lower and an upper bound (has "
                             f"{'lower' if i in lower else 'upper' if i in upper else 'neither'})")
        if lower[i] > upper[i]:
            raise InputError(path, at, f"empty: lower bound {lower[i]} exceeds upper bound {upper[i]}")
    return Disjunct([(lower[i], upper[i]) for i in range(n)], rest)


def _dnf(expr, path: str, where: str, declared: dict) -> list[list[tuple[Atom, str]]]:
    """The formula as a list of alternatives, each a list of atoms (with the place they were read)."""
    if isinstance(expr, list) and expr and expr[0] in ("and", "or") and len(expr) > 1:
        parts = [_dnf(e, path, where, declared) for e in expr[1:]]
        if expr[0] == "or":
            return [a for p in parts for a in p]
        if math.prod(len(p) for p in parts) > MAX_DISJUNCTS:
            raise InputError(path, where, f"more than {MAX_DISJUNCTS} disjuncts once expanded")
        out = [[]]
        for p in parts:
            out = [a + b for a in out for b in p]
        return out
    if not (isinstance(expr, list) and len(expr) == 3 and expr[0] in ("<=", ">=")):
        raise InputError(path, where, f"expected (and ...), (or ...), (<= s t) or (>= s t), got {_show(expr)}")
    s, t = (_linear(e, path, where, declared) for e in expr[1:])
    if expr[0] == "<=":
        s, t = t, s
    diff = {k: v for k in s.keys() | t.keys() if (v := s.get(k, 0) - t.get(k, 0))}    # s − t ≥ 0
    atom = Atom({int(k[2:]): a for k, a in diff.items() if k and k[0] == "X"},
                {int(k[2:]): a for k, a in diff.items() if k and k[0] == "Y"}, diff.get("", Fraction(0)))
    return [[(atom, where)]]


def _linear(expr, path: str, where: str, declared: dict) -> dict:
    """A linear term as ``{variable name: coefficient, "": constant}``."""
    if isinstance(expr, str):
        m = _VAR.match(expr)
        if m is None:
            return {"": _number(expr, path, where)}
        if int(m.group(2)) not in declared[m.group(1)]:
            raise InputError(path, where, f"{expr} is not declared before use")
        return {expr: Fraction(1)}
    if isinstance(expr, list) and len(expr) >= 2 and expr[0] in ("+", "-", "*", "/"):
        terms = [_linear(e, path, where, declared) for e in expr[1:]]
        if expr[0] == "/":
            if len(terms) != 2 or not set(terms[1]) <= {""} or not terms[1].get(""):
                raise InputError(path, where, f"not linear: {_show(expr)} (a quotient needs a non-zero number as divisor)")
            return {k: v / terms[1][""] for k, v in terms[0].items()}
        if expr[0] == "*":
            if len(terms) != 2 or not (set(terms[0]) <= {""} or set(terms[1]) <= {""}):
                raise InputError(path, where, f"not linear: {_show(expr)} (a product needs a number as one factor)")
            c, term = (terms[0], terms[1]) if set(terms[0]) <= {""} else (terms[1], terms[0])
            return {k: c.get("", 0) * v for k, v in term.items()}
        if expr[0] == "-":
            terms = [{k: -v for k, v in terms[0].items()}] if len(terms) == 1 else \
                [terms[0]] + [{k: -v for k, v in t.items()} for t in terms[1:]]
        out: dict = {}
        for t in terms:
            for k, v in t.items():
                out[k] = out.get(k, 0) + v
        return out
    raise InputError(path, where, f"expected a linear term, got {_show(expr)}")


def read_box(path: str) -> tuple[list[tuple[Fraction, Fraction]], int]:
    """``([(lower_i, upper_i) for X_i], number of output assertions skipped)``."""
    text = _text(path)
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
