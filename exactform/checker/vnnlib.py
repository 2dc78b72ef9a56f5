"""VNN-LIB properties read exactly, standard library only: the one reader of the prover
(``importers.vnnlib``) and of the checker (``verify_cert``, which compares the property embedded in
a V1 certificate with the user's file).  Grammar and meaning: docs/spec.md §8.

The file states the *violation*: the property fails exactly when some x satisfies every assertion.
Assertions are formulas built with ``and`` / ``or`` from atoms ``(<= s t)`` / ``(>= s t)`` over linear
terms (decimals read exactly, ``X_i``, ``Y_j``, ``+``, ``-``, ``*`` by a number, ``/`` by a non-zero
number); the conjunction of all of them is expanded into disjunctive normal form, a list of
``Disjunct``.  In each disjunct the atoms on one input alone are that input's bounds (every input
needs both; several bounds intersect), the rest are rows ``Σ a_i X_i + Σ b_j Y_j + c ≥ 0``.
Work is bounded before it starts: the file's bytes, the numbers' digits and exponents, the
disjuncts and the atoms of the expansion."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

from .reader import MAX_DIGITS, MAX_ENTRIES, Malformed, contents

MAX_DISJUNCTS = 10**4
"""Disjuncts of the expanded property."""
MAX_ATOMS = MAX_ENTRIES
"""Atoms of the expanded property, counted once per disjunct they are in."""

VAR = re.compile(r"([XY])_(0|[1-9][0-9]*)\Z")
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_DECIMAL = re.compile(r"([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?")  # read_decimal's grammar


class Unreadable(Malformed):
    """A file that is not a property of this grammar: ``path: where: message``."""

    def __init__(self, path, where: str, message: str):
        self.path, self.where, self.message = str(path), where, message
        super().__init__(f"{path}: {where}: {message}" if where else f"{path}: {message}")


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


def rows(prop: Property) -> list:
    """``[(box, [atom as {index: q}])]``, an atom a row over X_0.., Y_0.. (index n + j) and 1 (index n + m):
    the form ``verify_cert.read_property`` reads from a certificate."""
    n, m = prop.inputs, prop.outputs
    return [
        (list(d.box), [dict(a.x) | {n + j: q for j, q in a.y.items()} | ({n + m: a.c} if a.c else {}) for a in d.atoms])
        for d in prop.disjuncts
    ]


def text(path) -> str:
    """The UTF-8 text of a file or ``reader.Blob`` of at most ``MAX_BYTES`` bytes (``reader.contents``)."""
    try:
        data = contents(path)
    except Malformed as e:
        raise Unreadable(path, "", f"cannot read: {str(e).removeprefix(f'{path}: ')}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Unreadable(path, "", f"cannot read: {e}") from None


def read_property(path) -> Property:
    """The property of a VNN-LIB file in disjunctive normal form (module docstring)."""
    declared: dict[str, set] = {"X": set(), "Y": set()}
    dnf: list[list[tuple[Atom, str]]] = [[]]
    for form, line in forms(text(path), path):
        where = f"line {line}"
        if not isinstance(form, list) or not form:
            raise Unreadable(path, where, "expected a command such as (assert ...)")
        if form[0] == "declare-const" and len(form) == 3 and form[2] == "Real" and isinstance(form[1], str):
            m = VAR.match(form[1])
            if m is None:
                raise Unreadable(path, where, f"variables are X_i (inputs) and Y_i (outputs), got {form[1]!r}")
            declared[m.group(1)].add(int(m.group(2)))
            continue
        if form[0] != "assert" or len(form) != 2:
            raise Unreadable(path, where, "only (declare-const X_i Real) and (assert ...) are supported")
        try:
            alternatives = _dnf(form[1], path, where, declared)
        except RecursionError:
            raise Unreadable(path, where, "nested too deeply") from None
        dnf = _product([dnf, alternatives], path, where)
    sizes = {}
    for kind, name in (("X", "input"), ("Y", "output")):
        if not declared[kind]:
            raise Unreadable(path, "", f"no {name} variables (declare-const {kind}_i Real)")
        sizes[kind] = max(declared[kind]) + 1
        missing = next((i for i in range(sizes[kind]) if i not in declared[kind]), None)
        if missing is not None:
            raise Unreadable(
                path, f"{kind}_{missing}", f"{name}s must be {kind}_0 .. {kind}_n-1; this one is not declared"
            )
    return Property(sizes["X"], sizes["Y"], [_disjunct(d, sizes["X"], path, k) for k, d in enumerate(dnf)])


def _product(parts: list, path, where: str) -> list:
    """Every way of taking one alternative of each part, each the concatenation of their atoms, once
    the number of alternatives and of atoms in all is known to be within the limits."""
    count, atoms = 1, 0
    for p in parts:  # atoms: each of p's atoms is in count·(later counts) results
        count, atoms = count * len(p), atoms * len(p) + count * sum(map(len, p))
        if count > MAX_DISJUNCTS:
            raise Unreadable(path, where, f"more than {MAX_DISJUNCTS} disjuncts once expanded")
    if atoms > MAX_ATOMS:
        raise Unreadable(path, where, f"more than {MAX_ATOMS} atoms in all once expanded")
    out = [[]]
    for p in parts:
        out = [a + b for a in out for b in p]
    return out


def _disjunct(atoms: list, n: int, path, k: int) -> Disjunct:
    """The input bounds of one conjunction of atoms, and the atoms that are not bounds."""
    lower: dict[int, Fraction] = {}
    upper: dict[int, Fraction] = {}
    rest = []
    for atom, where in atoms:
        if len(atom.x) == 1 and not atom.y:
            ((i, a),) = atom.x.items()
            table, pick = (lower, max) if a > 0 else (upper, min)
            table[i] = pick(table[i], -atom.c / a) if i in table else -atom.c / a
        else:
            rest.append(atom)
    for i in range(n):
        at = f"X_{i}" if k == 0 else f"disjunct {k}: X_{i}"
        if i not in lower or i not in upper:
            raise Unreadable(
                path,
                at,
                f"needs both a lower and an upper bound (has "
                f"{'lower' if i in lower else 'upper' if i in upper else 'neither'})",
            )
        if lower[i] > upper[i]:
            raise Unreadable(path, at, f"empty: lower bound {lower[i]} exceeds upper bound {upper[i]}")
    return Disjunct([(lower[i], upper[i]) for i in range(n)], rest)


def _dnf(expr, path, where: str, declared: dict) -> list[list[tuple[Atom, str]]]:
    """The formula as a list of alternatives, each a list of atoms (with the place they were read)."""
    if isinstance(expr, list) and expr and expr[0] in ("and", "or") and len(expr) > 1:
        parts = [_dnf(e, path, where, declared) for e in expr[1:]]
        if expr[0] == "and":
            return _product(parts, path, where)
        if sum(map(len, parts)) > MAX_DISJUNCTS:
            raise Unreadable(path, where, f"more than {MAX_DISJUNCTS} disjuncts once expanded")
        return [a for p in parts for a in p]
    if not (isinstance(expr, list) and len(expr) == 3 and expr[0] in ("<=", ">=")):
        raise Unreadable(path, where, f"expected (and ...), (or ...), (<= s t) or (>= s t), got {show(expr)}")
    s, t = (_linear(e, path, where, declared) for e in expr[1:])
    if expr[0] == "<=":
        s, t = t, s
    diff = {}  # s − t ≥ 0
    for k in s.keys() | t.keys():
        v = s.get(k, 0) - t.get(k, 0)
        if v:
            diff[k] = v
    atom = Atom(
        {int(k[2:]): a for k, a in diff.items() if k and k[0] == "X"},
        {int(k[2:]): a for k, a in diff.items() if k and k[0] == "Y"},
        diff.get("", Fraction(0)),
    )
    return [[(atom, where)]]


def _linear(expr, path, where: str, declared: dict) -> dict:
    """A linear term as ``{variable name: coefficient, "": constant}``."""
    if isinstance(expr, str):
        m = VAR.match(expr)
        if m is None:
            return {"": number(expr, path, where)}
        if int(m.group(2)) not in declared[m.group(1)]:
            raise Unreadable(path, where, f"{expr} is not declared before use")
        return {expr: Fraction(1)}
    if isinstance(expr, list) and len(expr) >= 2 and expr[0] in ("+", "-", "*", "/"):
        terms = [_linear(e, path, where, declared) for e in expr[1:]]
        if expr[0] == "/":
            if len(terms) != 2 or not set(terms[1]) <= {""} or not terms[1].get(""):
                raise Unreadable(
                    path, where, f"not linear: {show(expr)} (a quotient needs a non-zero number as divisor)"
                )
            return {k: v / terms[1][""] for k, v in terms[0].items()}
        if expr[0] == "*":
            if len(terms) != 2 or not (set(terms[0]) <= {""} or set(terms[1]) <= {""}):
                raise Unreadable(path, where, f"not linear: {show(expr)} (a product needs a number as one factor)")
            c, term = (terms[0], terms[1]) if set(terms[0]) <= {""} else (terms[1], terms[0])
            return {k: c.get("", 0) * v for k, v in term.items()}
        if expr[0] == "-":
            terms = (
                [{k: -v for k, v in terms[0].items()}]
                if len(terms) == 1
                else [terms[0]] + [{k: -v for k, v in t.items()} for t in terms[1:]]
            )
        out: dict = {}
        for t in terms:
            for k, v in t.items():
                out[k] = out.get(k, 0) + v
        return out
    raise Unreadable(path, where, f"expected a linear term, got {show(expr)}")


def forms(source: str, path):
    """Top-level s-expressions with their first line; comments run from ``;`` to the line end."""
    stack: list[list] = []
    start = 0
    for line, raw in enumerate(source.splitlines(), 1):
        for token in _TOKEN.findall(raw.split(";", 1)[0]):
            if token == "(":
                if not stack:
                    start = line
                stack.append([])
            elif token == ")":
                if not stack:
                    raise Unreadable(path, f"line {line}", "unbalanced ')'")
                done = stack.pop()
                if stack:
                    stack[-1].append(done)
                else:
                    yield done, start
            elif stack:
                stack[-1].append(token)
            else:
                raise Unreadable(path, f"line {line}", f"unexpected {token[:40]!r} outside a command")
    if stack:
        raise Unreadable(path, f"line {start}", "unbalanced '(' (the command is not closed)")


def read_decimal(text: str) -> Fraction | None:
    """The exact value of a decimal such as ``-0.25``, ``.5`` or ``5.4e-02`` (VNN-LIB's numbers, and
    ``numbers.parse_decimal``'s), None if ``text`` is not one; ValueError beyond MAX_DIGITS digits or an
    exponent beyond ±MAX_DIGITS (``1e999999999``), checked before any arithmetic."""
    m = _DECIMAL.fullmatch(text)
    if not m:
        return None
    sign, digits, exponent = m.groups()
    if len(digits) > MAX_DIGITS + 1 or exponent is not None and (len(exponent) > 8 or abs(int(exponent)) > MAX_DIGITS):
        raise ValueError(f"more than {MAX_DIGITS} digits or an exponent beyond ±{MAX_DIGITS}")
    return Fraction(sign + digits + (f"e{exponent}" if exponent is not None else ""))


def number(expr, path, where: str) -> Fraction:
    """A decimal such as ``-0.25`` or ``5.4e-02``, or ``(- d)``, read exactly by ``read_decimal``: at most
    ``MAX_DIGITS`` digits and an exponent of at most ``MAX_DIGITS`` in absolute value, checked before parsing."""
    negative = isinstance(expr, list) and len(expr) == 2 and expr[0] == "-"
    value = expr[1] if negative else expr
    try:
        q = read_decimal(value) if isinstance(value, str) and not (negative and value.startswith(("+", "-"))) else None
    except ValueError as e:
        raise Unreadable(path, where, str(e)) from None
    if q is None:
        raise Unreadable(
            path,
            where,
            f"{show(value)!r} is not a decimal number"
            if isinstance(value, str)
            else f"expected a decimal number, got {show(expr)}",
        )
    return -q if negative else q


def show(expr) -> str:
    out = expr if isinstance(expr, str) else "(" + " ".join(show(e) for e in expr) + ")"
    return out[:40]
