"""``exactform equiv A B [--domain L:U,...] [--json] [--cert C.json] [--max-diff] [--tolerance E]
[--workers N] [--scheduler ADDR]``: exact equivalence of two models on a box (claim E1), with a
certificate or a verified exact counterexample.  Exit 0: equal (within ε); 1: a point where they
differ (by more than ε), or work lost by the executor; 2: bad input or a model outside the method.

Without ``--cert`` the search skips what exact bounds show cannot change the answer (the box's
bound of |A − B|∞ against ε; a leaf's exact range against ε or, for ``--max-diff``, the largest value
found); a certificate needs a witness on every leaf, so with ``--cert`` the claim is proved by the
unpruned search."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..executor import ExecutorError, add_executor_arguments, lost_work, make_executor
from . import note_work


def add_parser(sub):
    p = sub.add_parser("equiv", help="decide exactly whether two models agree on a box (certificate or "
                       "counterexample)")
    p.add_argument("a", help="model A: exactform/maxout@1 or transformer@1 JSON, or .onnx/.nnet/.pt")
    p.add_argument("b", help="model B, likewise")
    p.add_argument("--domain", help="the box: one L:U for all inputs or one per input (default: A's box, else B's)")
    p.add_argument("--json", action="store_true", help="print the answer as JSON (rationals as strings)")
    p.add_argument("--cert", metavar="C.json", help="when the claim is proved, write its exactform certificate")
    p.add_argument("--max-diff", action="store_true", help="the exact max over the box of |A(x) − B(x)|∞ "
                   "and a point attaining it")
    p.add_argument("--tolerance", metavar="E", help="accept |A(x) − B(x)|∞ ≤ E (a rational such as 1/1000)")
    add_executor_arguments(p)
    return p


def _models(paths: list[str], pairs):
    """The two models (JSON models as read, networks imported on the box) and the box's pairs."""
    from ..formats import InputError
    from ..importers import SUFFIXES, import_network
    from ..models import load_model
    imported = [Path(p).suffix.lower() in SUFFIXES for p in paths]
    models = [None if imp else load_model(p) for p, imp in zip(paths, imported)]
    if pairs is None:
        first = next((m for m in models if m is not None), None)
        if first is None:
            raise InputError(paths[0], "", "two imported networks need --domain")
        pairs = list(zip(first.domain.lower, first.domain.upper))
    models = [import_network(p, pairs) if m is None else m for p, m in zip(paths, models)]
    for p, m in zip(paths, models):
        if getattr(m, "attention", "hardmax") != "hardmax":
            raise InputError(p, "attention", "softmax attention has no exact rational value; equiv needs hardmax")
    return models, pairs


def run(args) -> int:
    from ..checker.forms import Unsupported
    from ..checker import reader
    from ..driver import Stopped
    from ..formats import InputError, canonical_json, write_text
    from ..models.box import domain_box, parse_domain
    from ..numbers import RationalSyntaxError, format_rational, parse_rational
    from ..search.equiv import certificate, check_work, compare
    from ..progress import Count

    start = time.perf_counter()
    try:
        tolerance = None if args.tolerance is None else parse_rational(args.tolerance)
    except RationalSyntaxError as e:
        raise InputError("--tolerance", "", str(e)) from None
    if tolerance is not None and tolerance < 0:
        raise InputError("--tolerance", "", "must be non-negative")
    (ma, mb), pairs = _models([args.a, args.b], parse_domain(args.domain) if args.domain else None)
    if ma.input_dim != mb.input_dim:
        raise InputError(args.b, "input_dim", f"{mb.input_dim} inputs, A has {ma.input_dim}")
    if ma.output_dim != mb.output_dim:
        raise InputError(args.b, "readout.weight", f"{mb.output_dim} outputs, A has {ma.output_dim}")
    domain = domain_box(pairs, ma.input_dim)
    box = list(zip(domain.lower, domain.upper))
    a, b = ma.to_json(), mb.to_json()
    count = Count("cells", "of the box's volume in closed relaxed leaves")
    try:
        with make_executor(args.workers, args.scheduler) as executor, count:
            outcome = compare(a, b, box, tolerance, args.max_diff, prune=args.max_diff or not args.cert,
                              executor=executor, progress=count)
    except Stopped:
        print(f"exactform: equiv: when stopped: {count.so_far()}", file=sys.stderr)
        raise
    except Unsupported as e:
        raise InputError(args.a if str(e).startswith("A") else args.b, "", str(e)[3:]) from None
    except ExecutorError as e:
        return lost_work("equiv", e)
    seconds = time.perf_counter() - start
    if args.max_diff:
        holds = tolerance is None or outcome.maximum <= tolerance
        claim_tolerance = outcome.maximum if tolerance is None else tolerance
    else:
        holds, claim_tolerance = outcome.equal, tolerance
    stats = (f"{outcome.leaves} leaves, {outcome.splits} splits, {outcome.pruned} pruned (leaves without an LP, or the box), "
             f"{outcome.nodes} nodes, {seconds:.2f} s")
    written = needed = None
    if holds and args.cert:
        tree = outcome.tree if not args.max_diff else compare(a, b, box, claim_tolerance).tree
        write_text(args.cert, document := canonical_json(certificate(a, b, box, claim_tolerance, tree)))
        written = args.cert
        needed = note_work(args.cert, check_work(a, b, tree, box))
        if (size := len(document.encode())) > reader.MAX_BYTES:
            print(f"exactform: warning: {args.cert} is {size} bytes, beyond the checker's file limit of {reader.MAX_BYTES} "
                  "(docs/spec.md §6.1): `exactform check` refuses it; its leaves were checked here by the checker's code",
                  file=sys.stderr)
    text = lambda v: [format_rational(x) for x in v]  # noqa: E731
    if args.json:
        doc = {"equal": outcome.equal if not args.max_diff else outcome.maximum == 0, "leaves": outcome.leaves,
               "splits": outcome.splits, "pruned": outcome.pruned, "seconds": round(seconds, 3)}
        if args.max_diff:
            doc["max_diff"], doc["attained"] = format_rational(outcome.maximum), outcome.attained
        if tolerance is not None:
            doc["within_tolerance"] = holds
        if outcome.point is not None:
            doc |= {"point": text(outcome.point), "a": text(outcome.a), "b": text(outcome.b)}
        if written:
            doc["certificate"], doc["check_work"] = written, needed
        print(json.dumps(doc, sort_keys=True))
    else:
        if args.max_diff:
            if outcome.attained:
                print(f"max |A(x) − B(x)|∞ over the box = {outcome.maximum}, attained at x = {text(outcome.point)} "
                      f"(A = {text(outcome.a)}, B = {text(outcome.b)}); {stats}")
            else:
                gap = max(abs(p - q) for p, q in zip(outcome.a, outcome.b))
                print(f"sup |A(x) − B(x)|∞ over the box = {outcome.maximum}, a supremum not attained (a hardmax "
                      f"discontinuity): approached towards x = {text(outcome.point)}, where |A − B|∞ = {gap} "
                      f"(A = {text(outcome.a)}, B = {text(outcome.b)}); {stats}")
        elif holds:
            within = "" if tolerance is None else f" within {tolerance}"
            print(f"equal{within} on the box, proved exactly ({stats})")
        else:
            print(f"different: at x = {text(outcome.point)}, A(x) = {text(outcome.a)}, B(x) = {text(outcome.b)} "
                  f"(exact, re-evaluated; {stats})")
        if written:
            print(f"wrote {written}")
    return 0 if holds else 1
