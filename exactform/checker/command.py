"""``exactform check`` (docs/spec.md §6.6): one verdict per certificate, bound to the user's model files.
Loads the walk (C1–C5) or ``equiv`` (E1) by the certificate's kind, ``smt`` with ``--smt`` and ``report``
with ``--junit``; none of them imports this module, so there is no cycle."""

import argparse
import json
import os
import sys

from . import cost
from .reader import Malformed, Refuted, Result, load

BINDING = {
    "equality": ("maxout", "transformer"),
    "softmax": ("maxout", "transformer"),
    "equivalence": ("a", "b"),
    "verification": ("net", "property"),
}
ROLES = list(dict.fromkeys(r for roles in BINDING.values() for r in roles))  # the binding flags, in order


def check_file(path, smt: bool = False, max_work: int | None = None, **bound) -> Result:
    """The verdict on one certificate within the work bound ``max_work`` (None: the kind's default, ``cost.MAX_WORK``
    for V1 and E1, ``cost.WALK_WORK`` for the walk); ``bound``: {role: model file} for the roles its kind names
    (``maxout``/``transformer``, or ``a``/``b`` for E1), each role or none."""
    claim = "certificate"
    try:
        doc, bound = load(path), {k: v for k, v in bound.items() if v is not None}
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if not isinstance(kind, str):  # the kind's own reader names what is wrong with it
            kind = None
        if isinstance(doc, dict) and str(doc.get("format")).startswith(("exactform/maxout@", "exactform/transformer@")):
            raise Malformed(f"{path}: a model ({doc['format']}), not a certificate: exactform certify NET TF -o CERT")
        roles = BINDING.get(kind, ())
        if bound and set(bound) != set(roles):  # another kind's files: the binding fails; half a pair: usage
            why = (
                f"{'an' if kind == 'equivalence' else 'a'} {kind} certificate is bound with "
                + " ".join(f"--{r} FILE" for r in roles)
                + f", not {' '.join(f'--{r}' for r in sorted(bound))}"
            )
            if set(bound) & set(roles) or kind not in BINDING:
                raise Malformed(f"{path}: {why}")
            return Result(1, [("binding", False, why)], f"nothing is known about the files given: {why}")
        if kind in ("equivalence", "verification"):  # E1, V1: their own files, loaded only for them
            from importlib import import_module

            claim, check = ("E1", "equiv") if kind == "equivalence" else ("V1", "verify_cert")
            try:
                known = import_module(f".{check}", __package__).check(
                    doc, str(path), *(bound.get(r) for r in roles), limit=max_work or cost.MAX_WORK
                )
            except (Malformed, RecursionError) as e:
                raise Malformed(f"{path}: {e}") from None
            if kind == "verification" and not bound:
                known = f"not bound to any file: {known}\n{recorded(doc)}"
            return Result(0, [(claim, True, known)], known)
        from .construction import verify

        return verify(doc, f"{path}: ", bound.get("maxout"), bound.get("transformer"), smt, max_work or cost.WALK_WORK)
    except ValueError as e:  # Malformed included
        return Result(2, [], str(e))
    except Refuted as e:
        return Result(1, [(claim, False, str(e))], f"nothing is known: {e}")


def recorded(doc: dict) -> str:
    """A V1 certificate's recorded sources as data (JSON, control and non-ASCII characters escaped): what
    the prover says it read, which no unbound check reads."""
    sources = doc["claims"][0]["evidence"]["sources"]
    return f"recorded sources (data from the certificate, not read): {json.dumps(sources, sort_keys=True)}"


def add_parser(sub):
    p = sub.add_parser("check", help="re-verify certificates with the independent standard-library checker")
    p.add_argument("certificates", nargs="+", help="certificate files, or folders of *cert*.json(.gz) files")
    for role, what in (
        ("maxout", "the embedded Maxout net"),
        ("transformer", "the embedded Transformer"),
        ("a", "model A of an E1 certificate"),
        ("b", "model B of an E1 certificate"),
        ("net", "the network of a V1 certificate (JSON, ONNX or .nnet: read and compared exactly)"),
        ("property", "the VNN-LIB file of a V1 certificate (read and compared)"),
    ):
        p.add_argument(f"--{role}", metavar="FILE", help=f"bind: {what} must be this file's")
    p.add_argument(
        "--smt", action="store_true", help="also prove the obligations with Z3, queries built from the models"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="print every claim's statement")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report (one case per claim)")
    p.add_argument(
        "--max-work",
        metavar="N",
        type=_work,
        default=None,
        help=f"the bound on a certificate's work, checked before any arithmetic (default {cost.MAX_WORK:.3g} for V1 "
        f"and E1, about 4 CPU minutes, {cost.WALK_WORK:.3g} for C1-C5; a larger one, knowingly, for a "
        "certificate that needs it)",
    )
    p.epilog = "exactform --timeout SECONDS check ... stops the check after SECONDS (exit 3)."
    return p


def _work(text: str) -> int:
    """A positive integer, digits or ``AeB`` (A, B digits)."""
    mantissa, _, exponent = text.partition("e")
    if not (mantissa.isdigit() and (exponent.isdigit() or not _)) or int(mantissa) == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer such as 1000000000 or 1e9")
    return int(mantissa) * 10 ** int(exponent or 0)


def run(args) -> int:
    """One line per certificate as it is checked, its failures, what is known; outputs checked first."""
    bound = {r: getattr(args, r) for r in ROLES if getattr(args, r) is not None}
    try:
        files = [
            f
            for p in args.certificates
            for f in (
                sorted(os.path.join(p, n) for n in os.listdir(p) if "cert" in n and n.endswith((".json", ".json.gz")))
                if os.path.isdir(p)
                else [p]
            )
        ]
        if not files or (len(files) > 1 and bound):
            raise Malformed(
                f"{' '.join(args.certificates)}: "
                + (
                    "no certificate files"
                    if not files
                    else "/".join(f"--{r}" for r in ROLES) + " bind exactly one certificate"
                )
            )
        if args.junit is not None:
            from .report import writable

            writable(args.junit, files + list(bound.values()))
    except (Malformed, OSError) as e:
        print(
            f"exactform: error: {getattr(e, 'strerror', None) and f'{e.filename}: {e.strerror}' or e}", file=sys.stderr
        )
        return 2
    results = []
    for f in files:
        r = check_file(f, args.smt, args.max_work, **bound)
        results.append(r)
        if r.code == 2:
            print(f"exactform: error: {r.known}", file=sys.stderr, flush=True)
            continue
        print(f"{f}: " + ", ".join(f"{c} {'holds' if h else 'FAILS'}" for c, h, _ in r.claims))
        print("".join(f"  {c}: {words}\n" for c, h, words in r.claims if not h or args.verbose), end="")
        print("".join(f"{f}: {line}\n" for line in r.known.split("\n")), end="", flush=True)
    if len(files) > 1:
        print(
            f"{sum(h for r in results for _, h, _ in r.claims)} of {sum(len(r.claims) for r in results)} claims "
            f"hold in {sum(r.ok for r in results)} of {len(files)} certificates"
        )
    if args.junit is not None:
        from .report import write_junit

        write_junit(args.junit, files, results)
    return max(r.code for r in results)
