"""The checker's strict reader (docs/spec.md §4, §6.1) and its exact affine forms, standard library only:
canonical rationals, no floats, no duplicate keys, regular files; every size bounded before anything is
materialised (the file's bytes, its parse's memory estimated from its text, lengths, entries in all)."""

import functools
import gzip
import json
import math
import os
import re
import zlib
from fractions import Fraction
from typing import NamedTuple

FORMAT = "exactform/certificate@2"
MAX_DIGITS = 4000  # decimal digits of a numerator or denominator
MAX_BYTES = 1 << 26  # 64 MiB of JSON in a file, decompressed for *.gz
MAX_MEMORY = 450 << 20  # bytes a parsed file may take, estimated from its text before parsing
MAX_LENGTH = 10**5  # a vector's length, a matrix's rows, a Transformer's width or tokens
MAX_ENTRIES = 10**7  # list entries materialised while reading one certificate (MNIST CNN: 5.5·10^6)
MAX_STATES = 10**6  # tokens × width: the forms of one state of the walk
MAX_BITS = 1 << 14  # bits of a derived numerator or denominator (every sum and product of forms)
ONE = -1  # key of the constant term of an affine form {variable: coefficient}
RATIONAL = re.compile(r"(-?)(0|[1-9][0-9]*)(?:/([1-9][0-9]*))?")  # canonical rational (fullmatch)


class Malformed(ValueError):
    """Not a readable certificate or model, or beyond a work limit (exit 2)."""


class Refuted(Exception):
    """A claim does not follow from the certificate (exit 1)."""


class _Float(str):
    """A JSON float literal or constant, kept so that the reader can name its field."""


class Blob(NamedTuple):
    """A file's bytes held in memory (the API's documents), named as its errors name it."""

    name: str
    data: bytes

    def __str__(self) -> str:
        return self.name


def contents(source, limit: int | None = None, gz: bool = False) -> bytes:
    """The bytes of ``source`` (a ``Blob``, or the path of a regular file, decompressed if ``gz`` and it is
    named *.gz), at most ``limit`` of them (default ``MAX_BYTES``); every file the checker reads is read here."""
    limit = MAX_BYTES if limit is None else limit
    if isinstance(source, Blob):
        data = source.data[: limit + 1]
    else:
        try:
            if not os.path.isfile(source):
                why = "not a regular file" if os.path.exists(source) else "No such file or directory"
                raise Malformed(f"{source}: {why}")
            with (gzip.open if gz and str(source).endswith(".gz") else open)(source, "rb") as f:
                data = f.read(limit + 1)
        except (OSError, EOFError, zlib.error) as e:
            raise Malformed(f"{source}: {getattr(e, 'strerror', None) or e}") from None
    if len(data) > limit:
        raise Malformed(
            f"{source}: larger than {limit} bytes{' (decompressed)' if gz else ''}: beyond the checker's limit"
        )
    return data


def load(path) -> object:
    """A JSON document (``contents``) whose parse is estimated to fit in MAX_MEMORY; floats and
    40+-digit integers kept as markers to refuse."""
    data = contents(path, gz=True)
    # CPython's sizes, rounded up: a list 64 B + 16 B an entry, an object 240 B + 100 B a member,
    # a string 50 B + its text
    memory = (
        64 * data.count(b"[")
        + 240 * data.count(b"{")
        + 100 * data.count(b":")
        + 16 * data.count(b",")
        + 25 * data.count(b'"')
        + 2 * len(data)
    )
    if memory > MAX_MEMORY:
        raise Malformed(
            f"{path}: parsing would take about {memory >> 20} MiB, beyond the checker's limit of {MAX_MEMORY >> 20} MiB"
        )
    floats = []

    def marker(s):  # none is valid anywhere: more than 1000 stop the parse
        if len(floats) >= 1000:
            raise ValueError(f'more than 1000 float literals such as {s[:40]} (rationals are strings such as "-7/12")')
        floats.append(s)
        return _Float(s)

    try:
        return json.loads(
            data,
            parse_float=marker,
            parse_constant=marker,
            object_pairs_hook=_object,
            parse_int=lambda s: marker(s) if len(s.lstrip("-")) > 40 else int(s),
        )
    except (ValueError, RecursionError) as e:
        raise Malformed(f"{path}: not JSON: {str(e)[:80]}") from None


def _object(pairs):
    """A JSON object's members as a dict; a duplicate key is refused (docs/spec.md §4)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError(f"duplicate key in {[k[:40] for k in sorted(k for k, _ in pairs)[:5]]}")
    return out


def _fail(where, message):
    """Refuse: ``Malformed`` naming the field."""
    raise Malformed(f"{where}: {message}")


def fields(obj, where, required, optional=()):
    """``obj``, an object with the ``required`` fields and no others than ``optional`` (docs/spec.md §6.1)."""
    if not isinstance(obj, dict):
        _fail(where, "expected an object")
    for k in sorted(obj.keys() - set(required) - set(optional)):
        _fail(where, f"unknown field {k[:40]!r}")
    for k in (k for k in required if k not in obj):
        _fail(where, f"missing field {k[:40]!r}")
    return obj


def integer(v, where, low=0, high=MAX_LENGTH):
    """``v``, a JSON integer in [low, high]."""
    if type(v) is not int or not low <= v <= high:
        _fail(where, f"expected an integer in [{low}, {high}], got {str(v)[:40]}")
    return v


def items(v, where, n=None, nonempty=False):
    """``v``, a list (of ``n`` entries when given; non-empty when asked)."""
    if not isinstance(v, list) or (n is not None and len(v) != n) or (nonempty and not v):
        _fail(where, f"expected a {'non-empty ' if nonempty else ''}list{'' if n is None else f' of {n} entries'}")
    return v


class Tally:
    """The list entries materialised while reading one certificate and the files bound to it, refused beyond
    MAX_ENTRIES in all (docs/spec.md §6.1): one per check, passed to every reader function that materialises."""

    def __init__(self):
        self.entries = 0

    def charge(self, n: int, where: str) -> int:
        """Account for ``n`` list entries about to be materialised; refuse beyond MAX_ENTRIES in all."""
        self.entries += n
        if self.entries > MAX_ENTRIES:
            _fail(where, f"more than {MAX_ENTRIES} entries in all: beyond the checker's work limit")
        return n


def rational(v, where, i=None) -> Fraction:
    """A canonical rational string ``-?N(/D)?``: reduced, D > 1, ≤ MAX_DIGITS digits each (docs/spec.md §4)."""
    if type(v) is str:
        value = _canonical(v)
        if isinstance(value, Fraction):
            return value
    at = where if i is None else f"{where}[{i}]"
    if isinstance(v, _Float):
        _fail(at, f'float literal {v[:40]} (rationals are strings such as "-7/12")')
    if not isinstance(v, str):
        _fail(at, 'expected a rational string such as "-7/12"')
    if _canonical(v) is _NOT_RATIONAL:
        _fail(at, f'{v[:40]!r} is not a rational of at most {MAX_DIGITS} digits such as "-7/12"')
    _fail(at, f"{v[:40]!r} is not canonical (reduced, denominator > 1, no '-0')")


_NOT_RATIONAL = "not a rational of at most MAX_DIGITS digits"
_NOT_CANONICAL = "not reduced, or a denominator 1, or -0"


@functools.lru_cache(maxsize=10**6)
def _canonical(text: str):
    """The rational a canonical string denotes, or why it is not one (``_NOT_RATIONAL``, ``_NOT_CANONICAL``).
    A pure function, cached: a model repeats few distinct numbers."""
    m = RATIONAL.fullmatch(text)
    if not m or len(m[2]) > MAX_DIGITS or len(m[3] or "") > MAX_DIGITS:
        return _NOT_RATIONAL
    p, d = int(m[2]), int(m[3] or 1)
    if (m[3] and d == 1) or math.gcd(p, d) != 1 or (m[1] and p == 0):
        return _NOT_CANONICAL
    return Fraction(-p if m[1] else p, d)


def row(v, where, n, entry=rational) -> dict:
    """The non-zero entries {index: entry} of a length-n vector, dense or ``{"length", "index", "value"}``;
    an entry is a rational, or a row when the vector is the list of rows of a matrix."""
    if isinstance(v, list):
        if len(v) != n:
            _fail(where, f"{len(v)} entries, expected {n}")
        out = {}
        for i, x in enumerate(v):
            q = entry(x, where, i)
            if q:
                out[i] = q
        return out
    fields(v, where, ("length", "index", "value"))
    index, value = items(v["index"], f"{where}.index"), items(v["value"], f"{where}.value", len(v["index"]))
    if integer(v["length"], f"{where}.length") != n:
        _fail(f"{where}.length", f"{v['length']}, expected {n}")
    out, last = {}, -1
    for k, (i, x) in enumerate(zip(index, value)):
        last = integer(i, f"{where}.index[{k}]", last + 1, n - 1)
        q = entry(x, f"{where}.value", k)
        if not q:
            _fail(f"{where}.value[{k}]", "a listed sparse entry is zero")
        out[i] = q
    return out


def dense(v, where, n, tally: Tally) -> list:
    r = row(v, where, n)
    return [r.get(i, Fraction(0)) for i in range(tally.charge(n, where))]


def matrix(v, where, rows, cols, tally: Tally, nonempty=False) -> list:
    """``rows`` rows (any number if None) of ``cols`` entries; all-zero rows may be left out of a sparse list."""
    n = (
        rows
        if rows is not None
        else len(items(v, where, nonempty=nonempty))
        if isinstance(v, list)
        else integer(fields(v, where, ("length", "index", "value"))["length"], f"{where}.length", int(nonempty))
    )
    r, zero = row(v, where, n, lambda x, at, i: row(x, f"{at}[{i}]", cols)), {}
    return [r.get(i, zero) for i in range(tally.charge(n, where))]


def affine_rows(weight, bias, wat, bat, cols, tally: Tally) -> list:
    """``[(weights, bias)]``: a non-empty list of rows of length ``cols`` and one bias per row."""
    rows = matrix(weight, wat, None, cols, tally, nonempty=True)
    return list(zip(rows, dense(bias, bat, len(rows), tally)))


def box(v, where, n, tally: Tally) -> list:
    fields(v, where, ("lower", "upper"))
    out = list(zip(dense(v["lower"], f"{where}.lower", n, tally), dense(v["upper"], f"{where}.upper", n, tally)))
    for i, (lo, hi) in enumerate(out):
        if lo > hi:
            _fail(f"{where}.lower[{i}]", "above the upper bound: the box is empty")
    return out


# box [(lower, upper)] per input; layers [layer][unit][piece] = (weights {input: a}, bias); readout [(weights, bias)]
Maxout = NamedTuple("Maxout", [("box", list), ("layers", list), ("readout", list)])
# scale: softmax λ or None (hardmax); embed [coordinate] weights; position [token][coordinate]; blocks
# ("feedforward", w1 rows, b1, w2 columns, b2) | ("attention", [(query, key, value, output)]); token: read out
Transformer = NamedTuple(
    "Transformer",
    [
        ("box", list),
        ("tokens", int),
        ("width", int),
        ("scale", object),
        ("embed", list),
        ("position", list),
        ("blocks", list),
        ("token", int),
        ("readout", list),
    ],
)


def read_maxout(v, where, tally: Tally | None = None) -> Maxout:
    """A Maxout net (docs/spec.md §4), its entries charged to ``tally`` (a new one when None: a model read alone)."""
    tally = Tally() if tally is None else tally
    if isinstance(v, dict) and v.get("format") != "exactform/maxout@1":
        _fail(f"{where}.format", f'expected "exactform/maxout@1" (a Maxout net), got {str(v.get("format"))[:40]!r}')
    fields(v, where, ("format", "input_dim", "domain", "layers", "readout"), ("provenance",))
    n = integer(v["input_dim"], f"{where}.input_dim", 1)
    layers = []
    for index, layer in enumerate(items(v["layers"], f"{where}.layers", nonempty=True)):
        at = f"{where}.layers[{index}]"
        units = items(fields(layer, at, ("weight", "bias"))["weight"], f"{at}.weight", nonempty=True)
        layers.append(
            [
                affine_rows(ws, bs, f"{at}.weight[{i}]", f"{at}.bias[{i}]", n, tally)
                for i, (ws, bs) in enumerate(zip(units, items(layer["bias"], f"{at}.bias", len(units))))
            ]
        )
        n = len(units)
    r = fields(v["readout"], f"{where}.readout", ("weight", "bias"))
    return Maxout(
        box(v["domain"], f"{where}.domain", v["input_dim"], tally),
        layers,
        affine_rows(r["weight"], r["bias"], f"{where}.readout.weight", f"{where}.readout.bias", n, tally),
    )


def read_transformer(v, where, tally: Tally | None = None) -> Transformer:
    """A Transformer (docs/spec.md §4), its entries charged to ``tally`` (a new one when None: a model read alone)."""
    tally = Tally() if tally is None else tally
    if isinstance(v, dict) and v.get("format") != "exactform/transformer@1":
        _fail(
            f"{where}.format", f'expected "exactform/transformer@1" (a Transformer), got {str(v.get("format"))[:40]!r}'
        )
    fields(
        v,
        where,
        ("format", "input_dim", "tokens", "width", "attention", "domain", "embed", "blocks", "readout"),
        ("layout",),
    )
    d, T, w = (integer(v[k], f"{where}.{k}", 1) for k in ("input_dim", "tokens", "width"))
    if T * w > MAX_STATES:
        _fail(f"{where}.tokens", f"tokens × width = {T * w}, beyond the checker's limit {MAX_STATES}")
    tally.charge(T * w, f"{where}.tokens")
    scale = None
    if v["attention"] != "hardmax":
        scale = rational(
            fields(v["attention"], f"{where}.attention", ("softmax",))["softmax"], f"{where}.attention.softmax"
        )
        if scale <= 0:
            _fail(f"{where}.attention.softmax", "λ must be positive")
    fields(v["embed"], f"{where}.embed", ("weight", "bias"))
    blocks = []
    for b, block in enumerate(items(v["blocks"], f"{where}.blocks")):
        at = f"{where}.blocks[{b}]"
        if isinstance(block, dict) and block.get("kind") == "feedforward":
            fields(block, at, ("kind", "w1", "b1", "w2", "b2"))
            w1 = matrix(block["w1"], f"{at}.w1", None, w, tally, nonempty=True)
            columns = [{} for _ in range(tally.charge(len(w1), at))]
            for r, entries in enumerate(matrix(block["w2"], f"{at}.w2", w, len(w1), tally)):
                for u, a in entries.items():
                    columns[u][r] = a
            blocks.append(
                (
                    "feedforward",
                    w1,
                    dense(block["b1"], f"{at}.b1", len(w1), tally),
                    columns,
                    dense(block["b2"], f"{at}.b2", w, tally),
                )
            )
        else:
            heads = items(fields(block, at, ("kind", "heads"))["heads"], f"{at}.heads", nonempty=True)
            if block["kind"] != "attention":
                _fail(f"{at}.kind", 'expected "feedforward" or "attention"')
            blocks.append(("attention", [head(h, f"{at}.heads[{i}]", w, tally) for i, h in enumerate(heads)]))
    r = fields(v["readout"], f"{where}.readout", ("token", "weight", "bias"))
    return Transformer(
        box(v["domain"], f"{where}.domain", d, tally),
        T,
        w,
        scale,
        matrix(v["embed"]["weight"], f"{where}.embed.weight", w, d, tally),
        [
            dense(p, f"{where}.embed.bias[{t}]", w, tally)
            for t, p in enumerate(items(v["embed"]["bias"], f"{where}.embed.bias", T))
        ],
        blocks,
        integer(r["token"], f"{where}.readout.token", 0, T - 1),
        affine_rows(r["weight"], r["bias"], f"{where}.readout.weight", f"{where}.readout.bias", w, tally),
    )


def head(h, at, w, tally: Tally) -> tuple:
    """``(query, key, value, output)`` of a head with at least one query row and one value row."""
    query = matrix(fields(h, at, ("query", "key", "value", "output"))["query"], f"{at}.query", None, w, tally, True)
    value = matrix(h["value"], f"{at}.value", None, w, tally, True)
    return (
        query,
        matrix(h["key"], f"{at}.key", len(query), w, tally),
        value,
        matrix(h["output"], f"{at}.output", w, len(value), tally),
    )


def combine(terms, constant=0) -> dict:
    """Σ a·form + constant over ``terms = [(a, form)]``, zero coefficients dropped.  A coefficient read once is
    a·x (x itself for a = 1); a sum of more Fractions is taken as one integer fraction ``[numerator,
    denominator]`` (Fraction arithmetic is slow) and reduced at the end; other numbers (flint's ``fmpq``, for
    the prover's bounds) are summed by their own arithmetic.  A coefficient, and any common denominator its sum
    needs on the way, beyond ``MAX_BITS`` is refused."""
    sums = {ONE: constant} if constant else {}
    for a, form in terms:
        p, q = a.numerator, a.denominator
        for k, x in form.items():
            s = sums.get(k)
            if s is None:
                sums[k] = x if p == q else a if x == 1 and type(a) is Fraction else a * x
                continue
            if type(x) is not Fraction or type(p) is not int or type(s) is not list and type(s) is not Fraction:
                sums[k] = (Fraction(*s) if type(s) is list else s) + (x if p == q else a * x)  # ints, flint's fmpq
                continue
            n, d = p * x.numerator, q * x.denominator
            if type(s) is not list:
                s = sums[k] = [s.numerator, s.denominator]
            if s[1] % d == 0:
                s[0] += n * (s[1] // d)
            elif d % s[1] == 0:
                s[0], s[1] = s[0] * (d // s[1]) + n, d
            else:
                g = math.gcd(s[1], d)
                s[0], s[1] = s[0] * (d // g) + n * (s[1] // g), s[1] // g * d
                if s[1].bit_length() > MAX_BITS:
                    r = math.gcd(*s)
                    s[0], s[1] = s[0] // r, s[1] // r
                    if s[1].bit_length() > MAX_BITS:
                        _fail("a form", f"a derived number exceeds {MAX_BITS} bits, beyond the checker's work limit")
    out = {}
    for k, s in sums.items():
        if type(s) is list:
            if not s[0]:
                continue
            s = Fraction(*s)
        elif not s:
            continue
        if s.denominator.bit_length() > MAX_BITS or s.numerator.bit_length() > MAX_BITS:
            _fail("a form", f"a derived number exceeds {MAX_BITS} bits, beyond the checker's work limit")
        out[k] = s
    return out


def slack(form, err) -> Fraction:
    """Σ |a_k|·err_k: how far the form moves when each variable k moves by at most err_k."""
    return sum((abs(a) * err[k] for k, a in form.items() if k != ONE and err[k]), Fraction(0))


def dot(pairs) -> Fraction:
    """Σ a·b exactly, as one integer sum over the common denominator (one Fraction, not one per term)."""
    terms = [(a.numerator * b.numerator, a.denominator * b.denominator) for a, b in pairs if b]
    den = 1
    for _, d in terms:
        if den % d == 0:
            continue
        den = math.lcm(den, d)
        if den.bit_length() > MAX_BITS:
            _fail("a bound", f"a derived denominator exceeds {MAX_BITS} bits, beyond the checker's work limit")
    return Fraction(sum(n * (den // d) for n, d in terms), den)


def bounded(numbers, where: str):
    """Refuse a derived number beyond MAX_BITS (boxes and perturbations, after every layer or block)."""
    if any(max(q.numerator.bit_length(), q.denominator.bit_length()) > MAX_BITS for q in numbers):
        raise Malformed(f"{where}: a derived number exceeds {MAX_BITS} bits, beyond the checker's work limit")


def interval(form, box, err=None) -> tuple:
    """Exact bounds of the form over the box of its variables, widened by ``slack(form, err)``."""
    ends, s = (
        [(a, box[k] if a > 0 else box[k][::-1]) for k, a in form.items() if k != ONE],
        slack(form, err) if err else 0,
    )
    return (
        form.get(ONE, 0) + dot((a, e[0]) for a, e in ends) - s,
        form.get(ONE, 0) + dot((a, e[1]) for a, e in ends) + s,
    )


def text(q) -> str:
    """A derived rational as the statements write it; refused beyond MAX_DIGITS digits (docs/spec.md §6.6)."""
    if (
        max(q.numerator.bit_length(), q.denominator.bit_length()) > 13300
        or max(map(len, str(abs(q)).split("/"))) > MAX_DIGITS
    ):
        raise Refuted(f"a derived number has more than {MAX_DIGITS} digits")
    return str(q)


class Result(NamedTuple):
    """A verdict: code 0 every claim holds, 1 a claim fails or is missing, 2 not a certificate; claims
    [(claim, holds, the checker's statement or why it fails)]; known: what is now known, or why not."""

    code: int
    claims: list
    known: str
    ok = property(lambda self: self.code == 0, doc="every check of the certificate holds")


def domain(box) -> str:
    """A box as the statements write it: ``[lo,hi]^n`` when every input has the same interval (docs/spec.md §6.6)."""
    if len(box) > 1 and len(set(box)) == 1:
        return f"[{text(box[0][0])},{text(box[0][1])}]^{len(box)}"
    return " x ".join(f"[{text(lo)},{text(hi)}]" for lo, hi in box)
