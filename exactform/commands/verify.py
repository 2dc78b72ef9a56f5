"""``exactform verify NET PROP.vnnlib [--cert C.json] [--counterexample CE.txt] [--timeout S] [--json]
[--workers N]``: decide a VNN-LIB property of a network exactly (claim V1), as VNN-COMP prints it.

``unsat`` (exit 0): no input of the property's set meets its output constraints, proved on every cell
of a split of each input box by an exact Farkas witness (``--cert``: the certificate); ``sat`` (exit 1):
an exact rational counterexample, re-evaluated exactly, printed as ``((X_0 q) … (Y_0 q))``;
``timeout`` / ``unknown`` (exit 3): no answer, never a guess.  Bad input: one line, exit 2."""
from __future__ import annotations

import json
import time
from fractions import Fraction
from pathlib import Path

from ..executor import ExecutorError, add_executor_arguments, lost_work, make_executor
from . import note_work


def add_parser(sub):
    p = sub.add_parser("verify", help="decide a VNN-LIB property exactly: unsat with a certificate, or sat with an "
                       "exact counterexample")
    p.add_argument("net", help="the network: exactform/maxout@1 or hardmax transformer@1 JSON, or .onnx/.nnet/.pt")
    p.add_argument("property", help="the VNN-LIB file (the violation: sat when some input meets every assertion)")
    p.add_argument("--cert", metavar="C.json", help="on unsat, write the V1 certificate")
    p.add_argument("--counterexample", metavar="CE.txt", help="on sat, write the counterexample (VNN-COMP format)")
    p.add_argument("--timeout", metavar="S", type=float, help="give up after S seconds from the start (reading and "
                   "importing included; checked between cells): timeout, exit 3")
    p.add_argument("--json", action="store_true", help="print one JSON object (rationals as strings)")
    p.add_argument("--c5", metavar="CERT", help="NET is a softmax Transformer and CERT its C5 certificate (exactform "
                   "softmax --cert): prove the property for CERT's Maxout net with every output constraint tightened "
                   "by eps (docs/spec.md §8)")
    add_executor_arguments(p)
    return p


def counterexample_text(x: list, y: list) -> str:
    """VNN-COMP's counterexample format, each value an exact decimal when it has one, else ``(/ p q)``."""
    def text(q):
        twos, fives, d = 0, 0, q.denominator
        while d % 2 == 0:
            d, twos = d // 2, twos + 1
        while d % 5 == 0:
            d, fives = d // 5, fives + 1
        if d != 1:
            return f"(/ {q.numerator} {q.denominator})" if q >= 0 else f"(- (/ {-q.numerator} {q.denominator}))"
        digits = max(twos, fives)
        body = str(abs(q.numerator) * 10 ** digits // q.denominator).rjust(digits + 1, "0")
        return ("-" if q < 0 else "") + (f"{body[:-digits]}.{body[-digits:]}" if digits else body)
    lines = [f"(X_{i} {text(v)})" for i, v in enumerate(x)] + [f"(Y_{j} {text(v)})" for j, v in enumerate(y)]
    return "(" + "\n ".join(lines) + ")\n"


def network(path: str, prop):
    """The model of ``path``: a JSON model as read (hardmax only), a network file imported on the
    property's bounding box."""
    from ..formats import InputError
    from ..importers import SUFFIXES, import_network
    from ..models import load_model
    suffix = Path(path).suffix.lower()
    if suffix in SUFFIXES:
        boxes = [d.box for d in prop.disjuncts]
        hull = [(min(b[i][0] for b in boxes), max(b[i][1] for b in boxes)) for i in range(prop.inputs)]
        if suffix == ".onnx" and (net := bound_network(path, hull)) is not None:
            return net
        return import_network(path, hull, domain_source=path, broadcast=False)
    model = load_model(path)
    if getattr(model, "attention", "hardmax") != "hardmax":
        raise InputError(path, "attention", "softmax attention has no exact rational value; verify needs hardmax")
    return model


def bound_network(path: str, hull: list):
    """The ONNX file as the checker reads it to bind a V1 certificate (``checker.onnx_reader``: ReLU layers
    of Gemm, MatMul and Add, standard library only, no ``onnx`` package), on the box ``hull``: the network
    the certificate will be bound to; None for a graph beyond that reader (the ``onnx`` importer reads it)."""
    from ..checker.onnx_reader import read_onnx
    from ..checker.reader import Malformed
    from ..models import MaxoutLayer, MaxoutNet
    from ..models.box import domain_box
    from ..models.transformer import dense
    try:
        inputs, layers, readout = read_onnx(path)
    except Malformed:
        return None
    if inputs != len(hull):
        return None
    widths = [inputs] + [len(layer) for layer in layers]
    exact = [MaxoutLayer([dense([w for w, _ in unit], width) for unit in layer], [[b for _, b in unit] for unit in layer])
             for layer, width in zip(layers, widths)]
    return MaxoutNet(domain_box(hull, inputs, path, broadcast=False), exact,
                     dense([w for w, _ in readout], widths[-1]), [b for _, b in readout])


def recorded_sources(net: str, prop: str) -> dict:
    """A V1 certificate's ``sources``: each file's name and SHA-256, as read."""
    from ..checker.verify_cert import sha256_file
    return {"net": {"file": Path(net).name, "sha256": sha256_file(net)},
            "property": {"file": Path(prop).name, "sha256": sha256_file(prop)}}


def _softmax(path: str, cert: str) -> tuple[object, dict]:
    """The Maxout net of a C5 certificate that the checker accepts for the softmax Transformer in
    ``path``, and the certificate."""
    from ..checker.reader import Malformed, load, read_transformer
    from ..checker.construction import verify as check_c5
    from ..formats import InputError, Reader
    from ..models import MaxoutNet
    try:
        doc = load(cert)
        result = check_c5(doc, f"{cert}: ")
        if result.code != 0 or doc.get("kind") != "softmax":
            raise InputError(cert, "", f"not a C5 certificate the checker accepts: {result.known}")
        if read_transformer(load(path), f"{path}: model") != read_transformer(doc["transformer"], "transformer"):
            raise InputError(path, "", f"not the softmax Transformer of {cert}")
    except Malformed as e:
        raise InputError(cert, "", str(e)) from None
    return MaxoutNet.from_json(Reader(doc["maxout"])), doc


def run(args) -> int:
    from ..files import output_file
    from ..formats import InputError, write_json, write_text
    from ..importers.vnnlib import read_property
    from ..numbers import format_rational
    from ..search.verify import certificate, check_work, verify

    start = time.perf_counter()
    for option, path in (("--cert", args.cert), ("--counterexample", args.counterexample)):
        if path is not None:        # an output that is an input: files.outputs_apart, before any command
            output_file(path, option)
    if args.timeout is not None and not 0 < args.timeout < 10 ** 7:
        raise InputError("--timeout", "", "expected a positive number of seconds")
    prop = read_property(args.property)
    model, c5 = _softmax(args.net, args.c5) if args.c5 else (network(args.net, prop), None)
    eps = None if c5 is None else Fraction(next(c["eps"] for c in c5["claims"] if c["id"] == "C5"))
    if model.input_dim != prop.inputs:
        raise InputError(args.property, "X", f"{prop.inputs} inputs, the network has {model.input_dim}")
    if model.output_dim != prop.outputs:
        raise InputError(args.property, "Y", f"{prop.outputs} outputs, the network has {model.output_dim}")
    doc = model.to_json()
    try:
        with make_executor(args.workers, args.scheduler) as executor:
            out = verify(doc, prop, None if args.timeout is None else max(args.timeout - (time.perf_counter() - start), 0.0),
                     executor, eps, model)
    except ExecutorError as e:
        return lost_work("verify", e)
    written, ce, needed = None, None, None
    if out.verdict == "unsat" and args.cert:
        sources = recorded_sources(args.net, args.property)
        write_json(args.cert, cert := certificate(doc, prop, out.trees, sources, c5))
        written = args.cert
        needed = note_work(args.cert, check_work(cert, out.tables))
    if out.verdict == "sat":
        ce = {"X": [format_rational(v) for v in out.x], "Y": [format_rational(v) for v in out.y]}
        if args.counterexample:
            write_text(args.counterexample, counterexample_text(out.x, out.y))
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps({"verdict": out.verdict, "seconds": round(seconds, 3), "certificate": written, "check_work": needed,
                          "counterexample": ce, "leaves": out.leaves, "lps": out.lps, "inexact_witnesses": out.inexact,
                          "reason": out.reason or None},
                         sort_keys=True))
    else:
        print(out.verdict)
        if out.verdict == "sat":
            print(counterexample_text(out.x, out.y), end="")
        detail = f"{out.leaves} leaves, {out.lps} LPs, {seconds:.2f} s" + (f"; {out.reason}" if out.reason else "")
        print(f"; {detail}" + (f"; wrote {written}" if written else "") +
              (f"; wrote {args.counterexample}" if ce and args.counterexample else ""))
    return {"unsat": 0, "sat": 1}.get(out.verdict, 3)
