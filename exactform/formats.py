"""Strict readers for the JSON formats of docs/spec.md §4, and canonical writers.

Every violation raises ``InputError`` naming the file, the field path and the index
(``net.json: layers[0].weight[3][1]: ...``); the CLI turns it into one line and exit code 2.
Writers produce canonical JSON (sorted keys, fixed separators) so sha256 digests are stable,
and write atomically so a failed command never leaves a half-written file.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import zlib
from fractions import Fraction
from itertools import compress, repeat
from operator import is_not
from pathlib import Path

from .errors import InputError as InputError   # re-exported: commands raise formats.InputError
from .files import WRITTEN as WRITTEN, output_file as output_file, output_folder as output_folder, write_text as write_text
from .files import _file_kind
from .numbers import ZERO, ZERO_ROW, RationalSyntaxError, format_rational, parse_rational


class Reader:
    """A cursor into a parsed JSON document that knows its file and field path."""

    def __init__(self, value: object, source: str = "<input>", path: str = ""):
        self.value, self.source, self.path = value, source, path

    def error(self, message: str) -> InputError:
        return InputError(self.source, self.path, message)

    def field(self, key: str) -> "Reader":
        obj = self.dict()
        if key not in obj:
            raise self.error(f"missing field {key!r}")
        return Reader(obj[key], self.source, f"{self.path}.{key}" if self.path else key)

    def item(self, index: int) -> "Reader":
        return Reader(self.value[index], self.source, f"{self.path}[{index}]")

    def dict(self, keys: set[str] | None = None, optional: set[str] = frozenset()) -> dict:
        if not isinstance(self.value, dict):
            raise self.error(f"expected an object, got {_kind(self.value)}")
        if keys is not None:
            missing = sorted(keys - self.value.keys())
            extra = sorted(self.value.keys() - keys - optional)
            if missing:
                raise self.error(f"missing field {missing[0]!r}")
            if extra:
                raise self.error(f"unknown field {extra[0]!r}")
        return self.value

    def list(self, length: int | None = None, nonempty: bool = False) -> list["Reader"]:
        if not isinstance(self.value, list):
            raise self.error(f"expected a list, got {_kind(self.value)}")
        if length is not None and len(self.value) != length:
            raise self.error(f"expected {length} entries, got {len(self.value)}")
        if nonempty and not self.value:
            raise self.error("expected a non-empty list")
        return [self.item(i) for i in range(len(self.value))]

    def int(self, minimum: int | None = None) -> int:
        v = self.value
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.error(f"expected an integer, got {_kind(v)}")
        if minimum is not None and v < minimum:
            raise self.error(f"expected an integer >= {minimum}, got {v}")
        return v

    def str(self, choices: tuple[str, ...] | None = None) -> str:
        if not isinstance(self.value, str) or isinstance(self.value, FloatLiteral):
            raise self.error(f"expected a string, got {_kind(self.value)}")
        if choices is not None and self.value not in choices:
            raise self.error(f"expected one of {', '.join(choices)}, got {self.value[:40]!r}")
        return self.value

    def rational(self) -> Fraction:
        if isinstance(self.value, FloatLiteral):
            raise self.error(f"{self.value!r} (exact files take rational strings, e.g. \"1/2\")")
        try:
            return parse_rational(self.value)
        except RationalSyntaxError as e:
            raise self.error(str(e)) from None

    def vector(self, length: int | None = None, sparse: bool = False) -> list[Fraction]:
        """A list of rational strings; with ``sparse``, also the sparse object (see ``encode_row``)."""
        values = self.value
        if sparse and isinstance(values, dict):
            return self._sparse_vector(length)
        if isinstance(values, list) and (length is None or len(values) == length):
            try:  # fast path: weight matrices repeat few distinct strings ("0" above all)
                return [_parse_cached(v) for v in values]
            except (RationalSyntaxError, TypeError):
                pass  # the per-entry path below names the offending index
        return [r.rational() for r in self.list(length)]

    def _sparse(self, length: int | None, entry) -> tuple[int, dict]:
        """``{"length": n, "index": [...], "value": [...]}``: n ≤ ``MAX_SPARSE_LENGTH``, strictly
        increasing indices in ``[0, n)`` and one value each, read by ``entry``; ``(n, {index: value})``."""
        self.dict({"length", "index", "value"})
        n = self.field("length").int(minimum=0)
        if length is not None and n != length:
            raise self.field("length").error(f"expected {length}, got {n}")
        if n > MAX_SPARSE_LENGTH:
            raise self.field("length").error(f"more than {MAX_SPARSE_LENGTH} entries (documented size limit)")
        indices = self.field("index").list()
        values = self.field("value").list(len(indices))
        out, previous = {}, -1
        for r, v in zip(indices, values):
            k = r.int(minimum=0)
            if k <= previous or k >= n:
                raise r.error(f"expected an index in ({previous}, {n}) (strictly increasing, below length), got {k}")
            previous, out[k] = k, entry(v)
        return n, out

    def _sparse_vector(self, length: int | None) -> list[Fraction]:
        """A sparse vector (``_sparse``) of canonical non-zero rationals; unlisted entries are 0."""
        n, entries = self._sparse(length, _listed_rational)
        out = [ZERO] * n
        for k, q in entries.items():
            out[k] = q
        return out

    def sparse_row(self, length: int) -> dict[int, Fraction]:
        """A length-``length`` vector, dense or sparse in the file, as ``{index: value}`` of its non-zeros."""
        values = self.value
        if isinstance(values, dict):
            return self._sparse(length, _listed_rational)[1] or ZERO_ROW
        if isinstance(values, list) and len(values) == length:
            try:
                return {i: q for i, v in enumerate(values) if v != "0" and (q := _parse_cached(v))} or ZERO_ROW
            except (RationalSyntaxError, TypeError):
                pass  # the per-entry path names the offending index
        return {i: q for i, q in enumerate(self.vector(length)) if q}

    def sparse_rows(self, rows: int | None, cols: int) -> list[dict[int, Fraction]]:
        """A matrix of ``cols`` columns, each row as ``sparse_row``; the list of rows may itself be
        sparse (``encode_sparse_rows``), its unlisted rows all zero (one shared empty row)."""
        if not isinstance(self.value, dict):
            return [r.sparse_row(cols) for r in self.list(rows)]
        return [ZERO_ROW if r is None else r._listed(r.sparse_row(cols)) for r in self._sparse_list(rows)]

    def _sparse_list(self, length: int | None) -> list["Reader | None"]:
        """The entries of a sparse list of rows, None where unlisted."""
        n, entries = self._sparse(length, lambda v: v)
        return [entries.get(k) for k in range(n)]

    def _listed(self, row):
        """A row listed in a sparse list of rows: not all zero (zero rows are left out)."""
        if not any(row.values() if isinstance(row, dict) else row):
            raise self.error("a listed row must not be all zero (leave it out)")
        return row

    def matrix(self, rows: int | None = None, cols: int | None = None, sparse: bool = False) -> list[list[Fraction]]:
        if sparse and isinstance(self.value, dict):
            if cols is None:
                raise self.error("a sparse list of rows needs a known row length")
            return [[ZERO] * cols if r is None else r._listed(r.vector(cols, sparse)) for r in self._sparse_list(rows)]
        out = [r.vector(cols, sparse) for r in self.list(rows)]
        if cols is None and out and any(len(r) != len(out[0]) for r in out):
            bad = next(i for i, r in enumerate(out) if len(r) != len(out[0]))
            raise self.item(bad).error(f"expected {len(out[0])} entries (as row 0), got {len(out[bad])}")
        return out


def _kind(value: object) -> str:
    return repr(value) if isinstance(value, FloatLiteral) else type(value).__name__


def _listed_rational(v: Reader) -> Fraction:
    """A value listed in a sparse vector: a canonical rational, not zero."""
    try:
        q = _parse_cached(v.value)
    except (RationalSyntaxError, TypeError):
        q = v.rational()                    # names the field
    if q == 0:
        raise v.error("a listed entry must be non-zero (leave zeros out)")
    return q


@functools.lru_cache(maxsize=1 << 16, typed=True)
def _parse_cached(text: object) -> Fraction:
    """``parse_rational`` memoised (Fractions are immutable, so sharing them is safe); "0" is
    ``numbers.ZERO``."""
    if isinstance(text, FloatLiteral):     # a JSON number (typed cache: never the string of the same text)
        raise RationalSyntaxError("not a string")
    return ZERO if text == "0" else parse_rational(text)


MAX_FILE_BYTES = 64 * 2**20
"""Largest JSON file read (a certificate of an ACAS Xu network is about 3 MB)."""


NETWORK_FILES = {".onnx": "an ONNX network", ".nnet": "an NNet network", ".pt": "a torch file", ".pth": "a torch file"}
"""Files the importers read (``exactform import``), named when a JSON reader is given one."""


def load_json(path: str | os.PathLike) -> Reader:
    """Parse a JSON file (gzip-compressed when its name ends in ``.gz``); JSON floats, NaN and
    Infinity are rejected at parse time; at most ``MAX_FILE_BYTES`` are read, decompressed."""
    source = str(path)
    network = NETWORK_FILES.get(Path(source).suffix.lower())
    if network:
        raise InputError(source, "", f"{network}, not exactform JSON: run `exactform import {source} "
                         "--domain L:U -o net.json` first")
    try:
        if Path(path).exists() and not Path(path).is_file():
            raise InputError(source, "", f"{_file_kind(Path(path))}, not a regular file")
        with (gzip.open if source.endswith(".gz") else open)(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise InputError(source, "", f"more than {MAX_FILE_BYTES:,} bytes; the documented limit")
        text = data.decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise InputError(source, "", f"cannot read: {getattr(e, 'strerror', None) or e}") from None
    return parse_json(text, source)


class FloatLiteral(str):
    """A JSON float, NaN or Infinity literal, kept as text so the reader can reject it with its
    field path; it is never converted to a number."""

    def __repr__(self) -> str:
        return f"float literal {str(self)}"


class BigIntLiteral(FloatLiteral):
    """A JSON integer literal of more than ``MAX_INT_DIGITS`` digits, kept as text and rejected
    by the reader with its field path (``int()`` of it would be slow, or refused by Python)."""

    def __repr__(self) -> str:
        return f"integer literal of {len(str(self).lstrip('-'))} digits (limit {MAX_INT_DIGITS})"


MAX_INT_DIGITS = 40
"""JSON integers (sizes, indices, counts) longer than this are refused; rationals are strings,
limited by ``numbers.MAX_DIGITS``."""


def _parse_int(text: str) -> int | BigIntLiteral:
    return int(text) if len(text) <= MAX_INT_DIGITS + 1 else BigIntLiteral(text)


def parse_json(text: str, source: str = "<input>") -> Reader:
    try:
        value = json.loads(text, parse_float=FloatLiteral, parse_constant=FloatLiteral, parse_int=_parse_int)
    except json.JSONDecodeError as e:
        raise InputError(source, "", f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise InputError(source, "", "JSON nested too deeply") from None
    return Reader(value, source)


def check_format(doc: Reader, expected: str) -> None:
    fmt = doc.field("format")
    if fmt.value != expected:
        raise fmt.error(f"expected {expected!r}, got {str(fmt.value)[:60]!r}")


def encode_vector(values: list[Fraction]) -> list[str]:
    return [format_rational(v) for v in values]


def encode_matrix(rows: list[list[Fraction]]) -> list[list[str]]:
    return [encode_vector(r) for r in rows]


def encode_row(values: list[Fraction]) -> list[str] | dict:
    """A model vector, sparse exactly when it has at least 8 entries and fewer than half of them
    are non-zero (``length ≥ 8`` and ``2·nonzeros < length``, a deterministic choice so files stay
    byte-reproducible; shorter vectors are smaller dense):
    ``{"length": n, "index": [i0, i1, ...], "value": ["q0", "q1", ...]}``, else a dense list."""
    zeros = values.count(ZERO)
    if len(values) >= 8 and 2 * (len(values) - zeros) < len(values):
        candidates = compress(range(len(values)), map(is_not, values, repeat(ZERO))) if zeros < len(values) else ()
        nonzero = [i for i in candidates if values[i]]      # C-speed skip of the shared zero
        return {"length": len(values), "index": nonzero, "value": [format_rational(values[i]) for i in nonzero]}
    return encode_vector(values)


def encode_rows(rows: list[list[Fraction]]) -> list:
    return [encode_row(r) for r in rows]


def encode_sparse_row(row: dict[int, Fraction], length: int) -> list[str] | dict:
    """``encode_row`` of the length-``length`` vector with the non-zeros ``row``: the same text."""
    nonzero = sorted(i for i, v in row.items() if v)
    if length >= 8 and 2 * len(nonzero) < length:
        return {"length": length, "index": nonzero, "value": [format_rational(row[i]) for i in nonzero]}
    return [format_rational(row[i]) if i in row else "0" for i in range(length)]


def encode_sparse_rows(rows: list[dict[int, Fraction]], length: int) -> list | dict:
    """A matrix by its rows (each ``encode_sparse_row``), the list of rows itself sparse by the same
    rule as a vector (at least 8 rows, fewer than half of them non-zero): ``{"length": m, "index":
    [i0, ...], "value": [row i0, ...]}``, the unlisted rows all zero."""
    nonzero = [i for i, r in enumerate(rows) if r and any(r.values())]
    if len(rows) >= 8 and 2 * len(nonzero) < len(rows):
        return {"length": len(rows), "index": nonzero, "value": [encode_sparse_row(rows[i], length) for i in nonzero]}
    return [encode_sparse_row(r, length) for r in rows]


MAX_SPARSE_LENGTH = 10 ** 6
"""Largest ``length`` of a sparse vector (the dense form it stands for must fit in memory)."""


def canonical_json(obj: object) -> str:
    """Canonical text: sorted keys, no spaces, trailing newline. Its sha256 is the model's digest."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n"


def sha256(obj: object) -> str:
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


def write_json(path: str | os.PathLike, obj: object) -> None:
    """Write canonical JSON atomically: either the whole file appears, or nothing does."""
    write_text(path, canonical_json(obj))
