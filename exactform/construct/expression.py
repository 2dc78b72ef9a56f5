"""A restricted expression grammar, parsed by our own tokenizer and recursive descent.

Nothing in the input is ever evaluated: no ``eval``, ``sympify`` or ``parse_expr``.  The grammar::

    expr  := term (('+' | '-') term)*
    term  := unary (('*' | '/') unary)*
    unary := ('+' | '-') unary | power
    power := atom ('**' exponent)?                   (only when the builder allows powers)
    exponent := ['-'] NUMBER | '(' ['-'] NUMBER ['/' NUMBER] ')'    (a rational constant)
    atom  := NUMBER | NAME | FUNCTION '(' expr (',' expr)* ')' | '(' expr ')'
    NUMBER := digits ('.' digits)?                    (an exact decimal)
    NAME  := a letter, then letters, digits or '_'   (names starting with '_' are refused)

Which functions exist, and what the operators mean, is up to a *builder*; anything else is refused
with a one-line ``ExpressionError`` naming the position (0-based character offset).
"""
from __future__ import annotations

import re
from fractions import Fraction

from ..numbers import RationalSyntaxError, parse_decimal

MAX_LENGTH = 10_000
MAX_DEPTH = 100

_TOKEN = re.compile(r"\s*(?:(?P<num>[0-9]+(?:\.[0-9]+)?)|(?P<name>[A-Za-z][A-Za-z0-9_]*)"
                    r"|(?P<op>\*\*|[-+*/(),]))")


class ExpressionError(ValueError):
    """A string outside the grammar; ``pos`` is the 0-based offset of the offending character."""

    def __init__(self, pos: int, message: str):
        self.pos = pos
        super().__init__(f"at position {pos}: {message}")


def tokenize(text: str) -> list[tuple[str, str, int]]:
    """``(kind, text, position)`` triples, kind in num/name/op, ending with ``("end", "", len)``."""
    if not isinstance(text, str):
        raise ExpressionError(0, f"expected a string, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(MAX_LENGTH, f"expression longer than {MAX_LENGTH} characters")
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            at = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise ExpressionError(at, f"unexpected character {text[at]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    out.append(("end", "", len(text)))
    return out


class Parser:
    """Recursive descent over the tokens; ``builder`` gives the meaning of every construct."""

    def __init__(self, text: str, builder):
        self.tokens, self.i, self.b, self.depth = tokenize(text), 0, builder, 0

    def parse(self):
        value = self.expr()
        kind, tok, pos = self.tokens[self.i]
        if kind != "end":
            raise ExpressionError(pos, f"unexpected {tok!r}")
        return value

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self, tok: str) -> int:
        kind, text, pos = self.tokens[self.i]
        if kind != "op" or text != tok:
            raise ExpressionError(pos, f"expected {tok!r}, got {text or 'end of input'!r}")
        self.i += 1
        return pos

    def expr(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(self.peek()[2], f"nested more than {MAX_DEPTH} deep")
        value = self.term()
        while self.peek()[:2] in (("op", "+"), ("op", "-")):
            _, op, pos = self.peek()
            self.i += 1
            rhs = self.term()
            value = self.b.add(value, rhs) if op == "+" else self.b.add(value, self.b.neg(rhs))
        self.depth -= 1
        return value

    def term(self):
        value = self.unary()
        while self.peek()[:2] in (("op", "*"), ("op", "/")):
            _, op, pos = self.peek()
            self.i += 1
            rhs = self.unary()
            value = self.b.mul(value, rhs, pos) if op == "*" else self.b.div(value, rhs, pos)
        return value

    def unary(self):
        if self.peek()[:2] in (("op", "+"), ("op", "-")):
            _, op, _ = self.peek()
            self.i += 1
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ExpressionError(self.peek()[2], f"nested more than {MAX_DEPTH} deep")
            value = self.unary()
            self.depth -= 1
            return value if op == "+" else self.b.neg(value)
        return self.power()

    def power(self):
        value = self.atom()
        if self.peek()[:2] == ("op", "**"):
            pos = self.peek()[2]
            self.i += 1
            value = self.b.pow(value, self.exponent(), pos)
        return value

    def exponent(self) -> Fraction:
        """A rational constant: ``2``, ``-1``, ``1.5``, ``(1/2)``, ``(-3/2)``."""
        grouped = self.peek()[:2] == ("op", "(")
        if grouped:
            self.take("(")
        sign = 1
        if self.peek()[:2] == ("op", "-"):
            self.i += 1
            sign = -1
        p = sign * self.number("'**' takes a rational constant exponent")
        if grouped:
            if self.peek()[:2] == ("op", "/"):
                at = self.take("/")
                q = self.number("'**' takes a rational constant exponent")
                if q == 0:
                    raise ExpressionError(at, "division by zero")
                p /= q
            self.take(")")
        return p

    def number(self, message: str) -> Fraction:
        kind, tok, at = self.peek()
        if kind != "num":
            raise ExpressionError(at, message)
        self.i += 1
        try:
            return parse_decimal(tok)
        except RationalSyntaxError as e:
            raise ExpressionError(at, str(e)) from None

    def atom(self):
        kind, tok, pos = self.peek()
        if kind == "num":
            return self.b.number(self.number("expected a number"))   # at most numbers.MAX_DIGITS digits
        if kind == "name":
            self.i += 1
            if self.peek()[:2] == ("op", "("):
                self.take("(")
                args = [self.expr()]
                while self.peek()[:2] == ("op", ","):
                    self.i += 1
                    args.append(self.expr())
                self.take(")")
                return self.b.call(tok, args, pos)
            return self.b.name(tok, pos)
        if (kind, tok) == ("op", "("):
            self.take("(")
            value = self.expr()
            self.take(")")
            return value
        raise ExpressionError(pos, f"unexpected {tok or 'end of input'!r}")
