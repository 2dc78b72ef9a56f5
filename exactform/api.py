"""The Python API (``docs/api.md``): the same exact objects and checks as the command line.

Numbers follow one rule (``numbers.parse_number``): ints, ``Fraction`` and exact decimal or
fraction strings (``"0.001"``, ``"1e-3"``, ``"2/4"``) are read exactly; floats are refused.
Bad input raises ``InputError`` (as on the command line); a claim that the prover cannot
establish raises ``NotProved`` and nothing is returned for it; both are ``exactform.Error``, a
``ValueError``.  ``exactform/__init__.pyi`` re-exports these names for type checkers.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence, TypeVar, Union

from .errors import Error, InputError, NotProved  # noqa: F401 (Error: re-exported by exactform)
from .models import MaxoutNet, Transformer

if TYPE_CHECKING:
    import torch

Number = Union[int, Fraction, str]
"""An exact number: an int, a ``Fraction`` or a decimal/fraction string."""
Domain = Sequence[tuple[Number, Number]]
"""``[(lower, upper), ...]``: one pair per input, or one pair for every input."""
PathLike = Union[str, "os.PathLike[str]"]

CERTIFICATE = "exactform/certificate@"
"""The prefix of the certificate formats (``exactform.checker.reader.FORMAT`` is the current one)."""


def load(path: PathLike) -> MaxoutNet | Transformer | dict[str, Any]:
    """A model (``exactform/maxout@1``, ``exactform/transformer@1``) or a certificate
    (``exactform/certificate@2``, returned as its dict; ``check`` verifies it), read strictly.
    ``load_maxout``, ``load_transformer`` and ``load_certificate`` return one type each."""
    from .formats import load_json
    from .models import load_model
    doc = load_json(path)
    if _is_certificate(doc.value):
        return doc.value
    return load_model(path)


def load_maxout(path: PathLike) -> MaxoutNet:
    """An ``exactform/maxout@1`` file as a ``MaxoutNet`` (``InputError`` for anything else)."""
    return _need_file(path, load(path), MaxoutNet)


def load_transformer(path: PathLike) -> Transformer:
    """An ``exactform/transformer@1`` file as a ``Transformer`` (``InputError`` for anything else)."""
    return _need_file(path, load(path), Transformer)


def load_certificate(path: PathLike) -> dict[str, Any]:
    """An ``exactform/certificate@…`` file as its dict, unchecked (``check`` verifies it)."""
    return _need_file(path, load(path), dict)


def save(obj: MaxoutNet | Transformer | dict[str, Any], path: PathLike) -> None:
    """Write a model or certificate as canonical JSON, atomically (nothing is written on error)."""
    from .formats import output_file, write_json
    output_file(path)
    if isinstance(obj, (MaxoutNet, Transformer)):
        write_json(path, obj.to_json())
    elif _is_certificate(obj):
        write_json(path, obj)
    else:
        raise TypeError(f"expected a MaxoutNet, a Transformer or a certificate dict, got {type(obj).__name__}")


def compile_network(net: MaxoutNet) -> Transformer:
    """The hardmax token-shift Transformer computing ``net`` exactly on its domain (claims C1–C4
    are proved by ``certify``); exported as ``exactform.compile``."""
    from .construct.maxout_to_transformer import compile_maxout
    _need(net, MaxoutNet, "compile")
    try:
        return compile_maxout(net)
    except ValueError as e:
        raise InputError("<net>", "", str(e)) from None


def certify(net: MaxoutNet, tf: Transformer | None = None, smt: bool = False) -> dict[str, Any]:
    """Prove C1–C4 for ``net`` and ``tf`` (default ``compile(net)``) and return the certificate
    (a dict in the ``exactform/certificate@2`` format); ``NotProved`` if a claim fails.  ``smt``:
    also run the prover's Z3 queries (``check(..., smt=True)`` derives and runs its own)."""
    from .provers.write import certify as prove
    from .layout import check_size
    _need(net, MaxoutNet, "certify")
    tf = compile_network(net) if tf is None else _need(tf, Transformer, "certify")
    try:
        check_size(net)
    except ValueError as e:
        raise InputError("<net>", "", str(e)) from None
    cert = prove(net, tf, smt=smt)
    failed = [f"{claim}: {p[0]}" for claim, p in cert.problems.items() if p]
    if failed:
        raise NotProved(f"not certified: {failed[0]}", failed)
    return cert.document


compile = compile_network
"""``exactform.compile(net)`` (named so in the API; Python's built-in of that name is not used here)."""


@dataclass(frozen=True)
class CheckResult:
    """The independent checker's verdict: truthy exactly when every claim holds.
    ``claims``: ``(claim id, holds, the checker's statement or why it fails)``; ``known``: what is
    now known, in words (or why nothing is, or the one-line error for a malformed certificate)."""
    ok: bool
    claims: list[tuple[str, bool, str]]
    known: str

    def __bool__(self) -> bool:
        return self.ok and bool(self.claims) and all(holds for _, holds, _ in self.claims)


def check(certificate: dict[str, Any] | PathLike, maxout: MaxoutNet | PathLike | None = None,
          transformer: Transformer | PathLike | None = None, smt: bool = False,
          a: MaxoutNet | Transformer | PathLike | None = None, b: MaxoutNet | Transformer | PathLike | None = None,
          net: MaxoutNet | Transformer | PathLike | None = None, property: PathLike | None = None) -> CheckResult:
    """Re-verify a certificate (a dict or a file) with the independent checker (``exactform.checker``),
    bound to the given Maxout net and Transformer (C1–C5), models ``a`` and ``b`` (E1), or ``net`` (a model,
    or a JSON, ONNX or ``.nnet`` file, read by the checker) and ``property`` (a VNN-LIB file) (V1); any
    binding requires the two of the certificate's kind (a certificate of another kind is not ok).  Falsy
    when a claim fails or the certificate is malformed (``known`` says why); a missing file raises
    ``InputError``, as ``load`` does."""
    from .checker.command import check_file
    models = {"maxout": maxout, "transformer": transformer, "a": a, "b": b, "net": net, "property": property}
    bound = {role: _source(m, f"<{role}>") for role, m in models.items() if m is not None}
    result = check_file(_source(certificate, "<certificate>"), smt, **bound)
    return CheckResult(bool(result.ok), [(str(c), bool(h), str(m)) for c, h, m in result.claims], str(result.known))


def import_network(path: PathLike, domain: Domain) -> MaxoutNet:
    """An ONNX, ``.nnet`` or ``torch.save`` ReLU network as an exact ``MaxoutNet`` on ``domain``
    (every float weight converted to its exact rational)."""
    from .importers import import_network as load_network
    return load_network(str(path), _domain(domain))


def from_torch(module: torch.nn.Module, domain: Domain, input_shape: Sequence[int] | None = None) -> MaxoutNet:
    """A torch module (eval mode; Linear, Conv, pooling, BatchNorm, LeakyReLU/PReLU, clipping,
    residual ``forward``…, docs/importers.md) as an exact ``MaxoutNet``; the input, of
    ``input_shape`` (default: the first ``Linear``'s features), is flattened row-major."""
    from .errors import requires
    requires("torch", "from_torch")
    from .importers.torch import from_module
    from .models.box import domain_box
    pairs = _domain(domain)
    return from_module(module, lambda dim: domain_box(pairs, dim, "domain"), input_shape)


@dataclass(frozen=True)
class SoftmaxResult:
    """A softmax(λ) Transformer with ``|Tf_λ(x) − M(x)|∞ ≤ bound ≤ eps`` proved on the domain (C5),
    and its certificate."""
    transformer: Transformer
    scale: Fraction
    bound: Fraction
    certificate: dict[str, Any]


def approx(expr: str, domain: Domain, eps: Number | None = None, rank: int | None = None) -> MaxoutNet:
    """A Maxout net within a proven uniform bound of the convex Lipschitz ``expr`` on ``domain``
    (claim C6): within ``eps`` (the smallest rank found; ``NotProved`` if none up to the limit is),
    or of ``rank`` planes.  ``InputError`` if ``expr`` is not shown convex (naming the sub-expression).
    ``exactform.construct.convex_approx.approx`` returns the bound, Lipschitz constant and rule too."""
    from .construct.convex_approx import ApproxError, approx as build
    from .expression import ExpressionError
    from .geometry.convexity import DomainError, NotConvex
    from .numbers import RationalSyntaxError, parse_number
    try:
        result = build(expr, _domain(domain), eps=None if eps is None else parse_number(eps), rank=rank)
    except (ExpressionError, NotConvex, DomainError) as e:
        raise InputError("expr", "", str(e)) from None
    except (ApproxError, RationalSyntaxError) as e:
        raise InputError("approx", "", str(e)) from None
    if not result.meets:
        raise NotProved(f"no rank up to the limit has a proven bound <= {eps}: best {result.bound} at rank {result.rank}")
    return result.net


def softmax(net: MaxoutNet, eps: Number) -> SoftmaxResult:
    """The token-shift Transformer of ``net`` with softmax(λ) attention, λ the least scale whose
    proven bound meets ``eps`` (claim C5); ``NotProved`` if none does."""
    from .provers.write import certify_softmax
    from .numbers import RationalSyntaxError, parse_number
    from .provers.softmax import depth_bound, log_lemma, scale_threshold, short_scale
    _need(net, MaxoutNet, "softmax")
    try:
        eps = parse_number(eps)
    except RationalSyntaxError as e:
        raise InputError("eps", "", str(e)) from None
    if eps <= 0:
        raise InputError("eps", "", f"must be positive, got {eps}")
    threshold = scale_threshold(net, eps)
    if threshold is None:
        raise NotProved("a shift margin R_ij − B_ij is zero, so no λ absorbs the softmax perturbation")
    lam = short_scale(threshold)
    result, lemma = depth_bound(net, lam), log_lemma(net.max_rank)
    if not (result.holds and result.bound <= eps and lemma.ok):
        raise NotProved(f"the proven bound {result.bound} does not meet eps = {eps} at λ = {lam}")
    tf = compile_network(net).with_attention(lam)
    cert = certify_softmax(net, tf, eps, result.log_tokens)
    failed = [f"{claim}: {p[0]}" for claim, p in cert.problems.items() if p]
    if failed:
        raise NotProved(f"not certified: {failed[0]}", failed)
    return SoftmaxResult(tf, lam, result.bound, cert.document)


def evaluate(model: MaxoutNet | Transformer, points: Iterable[Sequence[Number]],
             allow_outside: bool = False) -> list[list[Fraction]]:
    """Exact outputs of a Maxout net or hardmax Transformer at each point; a point outside the
    model's domain (where no claim holds) is a ``ValueError`` unless ``allow_outside``."""
    from .numbers import exact_point
    rows = [exact_point(p, model.input_dim) for p in points]
    for n, row in enumerate(rows):
        i = None if allow_outside else model.domain.first_violation(row)
        if i is not None:
            raise ValueError(f"point {n}: entry [{i}] = {row[i]} is outside the domain "
                             f"[{model.domain.lower[i]}, {model.domain.upper[i]}]")
    return model.evaluate_batch(rows)


@dataclass(frozen=True)
class VerifyResult:
    """A VNN-LIB property decided exactly (claim V1): truthy exactly when it holds (``"unsat"``: no input
    meets the property's violation; ``certificate`` proves it).  ``"sat"``: ``counterexample`` is an
    exact ``(x, y)``, re-evaluated exactly; ``"timeout"`` or ``"unknown"``: no answer (``reason``)."""
    verdict: str
    counterexample: tuple[list[Fraction], list[Fraction]] | None
    certificate: dict[str, Any] | None
    reason: str

    def __bool__(self) -> bool:
        return self.verdict == "unsat"


def verify(net: PathLike, property: PathLike, timeout: float | None = None) -> VerifyResult:
    """``exactform verify NET PROPERTY --cert``: the network file (JSON model, ONNX, ``.nnet``, ``.pt``;
    an imported one on the property's input box) against the VNN-LIB file, within ``timeout`` seconds.
    The certificate records both files' SHA-256, as the command's does."""
    from .commands.verify import network, recorded_sources
    from .importers.vnnlib import read_property
    from .search.verify import certificate, verify as decide
    if timeout is not None and not 0 < timeout < 10 ** 7:
        raise InputError("timeout", "", "expected a positive number of seconds")
    prop = read_property(str(property))
    model = network(str(net), prop)
    doc = model.to_json()
    out = decide(doc, prop, timeout)
    cert = None
    if out.verdict == "unsat":
        cert = certificate(doc, prop, out.trees, recorded_sources(str(net), str(property)))
    counterexample = (list(out.x), list(out.y)) if out.verdict == "sat" else None
    return VerifyResult(out.verdict, counterexample, cert, out.reason)


@dataclass(frozen=True)
class EquivResult:
    """Two models compared exactly on a box (claim E1): truthy exactly when ``|A(x) − B(x)|∞ ≤ tolerance``
    (0 by default) for every x of the box, and then ``certificate`` proves it; else ``point`` is an x
    where they differ by more, with the exact outputs ``a`` and ``b`` there."""
    equal: bool
    point: list[Fraction] | None
    a: list[Fraction] | None
    b: list[Fraction] | None
    certificate: dict[str, Any] | None

    def __bool__(self) -> bool:
        return self.equal


def equiv(a: MaxoutNet | Transformer, b: MaxoutNet | Transformer, domain: Domain | None = None,
          tolerance: Number | None = None) -> EquivResult:
    """``exactform equiv A B --cert`` on ``domain`` (default: A's domain), hardmax models only."""
    from .numbers import RationalSyntaxError, parse_number
    from .search.equiv import certificate, compare
    for name, model in (("a", a), ("b", b)):
        if not isinstance(model, (MaxoutNet, Transformer)):
            raise InputError(name, "", f"expected a MaxoutNet or Transformer, got {type(model).__name__}")
        if getattr(model, "attention", "hardmax") != "hardmax":
            raise InputError(name, "attention", "softmax attention has no exact rational value; equiv needs hardmax")
    if a.input_dim != b.input_dim or a.output_dim != b.output_dim:
        raise InputError("b", "", f"{b.input_dim} inputs and {b.output_dim} outputs, A has {a.input_dim} and {a.output_dim}")
    box = _domain(domain) if domain is not None else list(zip(a.domain.lower, a.domain.upper))
    try:
        eps = None if tolerance is None else parse_number(tolerance)
    except RationalSyntaxError as e:
        raise InputError("tolerance", "", str(e)) from None
    if eps is not None and eps < 0:
        raise InputError("tolerance", "", "must be non-negative")
    a_json, b_json = a.to_json(), b.to_json()
    outcome = compare(a_json, b_json, box, eps, prune=False)
    if outcome.equal:
        return EquivResult(True, None, None, None, certificate(a_json, b_json, box, eps, outcome.tree))
    return EquivResult(False, list(outcome.point), list(outcome.a), list(outcome.b), None)


def _domain(domain: Domain) -> list[tuple[Fraction, Fraction]]:
    from .numbers import RationalSyntaxError, parse_number
    pairs = []
    for k, pair in enumerate(domain):
        try:
            lo, hi = (parse_number(v) for v in pair)
        except (RationalSyntaxError, TypeError, ValueError) as e:
            raise InputError("domain", f"[{k}]", f"expected a (lower, upper) pair of exact numbers: {e}") from None
        if lo > hi:
            raise InputError("domain", f"[{k}]", f"lower bound {lo} exceeds upper bound {hi}")
        pairs.append((lo, hi))
    if not pairs:
        raise InputError("domain", "", "expected at least one (lower, upper) pair")
    return pairs


def _is_certificate(obj: object) -> bool:
    return isinstance(obj, dict) and str(obj.get("format", "")).startswith(CERTIFICATE)


T = TypeVar("T")


def _need(obj: object, cls: type[T], what: str) -> T:
    if not isinstance(obj, cls):
        raise TypeError(f"{what} takes a {cls.__name__}, got {type(obj).__name__}")
    return obj


def _need_file(path: PathLike, obj: object, cls: type[T]) -> T:
    if not isinstance(obj, cls):
        wanted = {MaxoutNet: MaxoutNet.FORMAT, Transformer: Transformer.FORMAT}.get(cls, f"{CERTIFICATE}…")
        raise InputError(str(path), "format", f"expected {wanted}, got a {type(obj).__name__}")
    return obj


def _source(obj: object, name: str):
    """What the checker reads: a path as given (``InputError`` if missing), or a model or certificate as
    canonical JSON in memory (``checker.reader.Blob``), named ``name`` in the checker's messages."""
    from .checker.reader import Blob
    from .formats import canonical_json
    if isinstance(obj, (str, os.PathLike)):
        if not Path(obj).is_file():
            raise InputError(str(obj), "", "no such file")
        return str(obj)
    if isinstance(obj, (MaxoutNet, Transformer)):
        return Blob(name, canonical_json(obj.to_json()).encode())
    if _is_certificate(obj):
        return Blob(name, canonical_json(obj).encode())
    raise TypeError(f"expected a MaxoutNet, a Transformer, a certificate dict or a path, got {type(obj).__name__}")
