"""``exactform certify-all FOLDER [--out DIR] [--domain L:U,...] [--workers N] [--scheduler ADDRESS]``:
import, compile, certify (C1–C4) and check every network of a folder, one task per network.

Networks: ``*.onnx``, ``*.nnet``, ``*.pt``/``*.pth`` and ``*.json`` files in ``exactform/maxout@1``
format; two files sharing a stem (``a.onnx``, ``a.pt``) are an error naming both, unless ``--only``
picks one suffix.
Domains: ``--domain`` for every imported network if given; else a JSON net's own; a ``.nnet`` net's
operating box ``[min, max]`` from its header (the importer folds the normalisation in); an ONNX or
torch net takes normalised inputs, so its box is the header box normalised, ``(min − mean)/range``
to ``(max − mean)/range``, from the folder's ``.nnet`` headers, which must agree (ACAS Xu: all do).

A certificate ``DIR/<stem>.cert.json`` is written only for a network that was certified and whose
certificate the independent checker accepted (a stale one of a failed network is removed), and
only once every task has returned: lost work writes nothing.  Certificates are byte-identical
whatever runs them; ``DIR/summary.json`` adds per-task times.  Exit 1 if any network fails (named).
"""
from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path

from ..executor import ExecutorError, add_executor_arguments, lost_work, make_executor

SUFFIXES = (".json", ".onnx", ".nnet", ".pt", ".pth")


def add_parser(sub):
    p = sub.add_parser("certify-all", help="import, compile, certify and check every network in a folder")
    p.add_argument("folder", help="a folder of .onnx, .nnet, .pt or exactform/maxout@1 .json networks")
    p.add_argument("--out", default="certificates", metavar="DIR",
                   help="where to write <stem>.cert.json and summary.json (default: certificates)")
    p.add_argument("--domain", metavar="L:U[,L:U...]",
                   help="input box of every imported network (default: from the folder's .nnet headers)")
    p.add_argument("--only", metavar="SUFFIX", choices=SUFFIXES,
                   help="certify only the files with this suffix (.onnx, ...), e.g. when each network is "
                        "there as .onnx and .nnet; the .nnet headers still give the domain")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_executor_arguments(p)
    return p


def nnet_box(path: Path, normalised: bool) -> list[tuple[Fraction, Fraction]]:
    """The operating box of a ``.nnet`` header (lines 4–7 after the comments: mins, maxs, means,
    ranges), raw or normalised; exact decimals."""
    from ..formats import InputError
    rows = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("//")]
    try:
        inputs = int(rows[0].split(",")[1])
        mins, maxs, means, ranges = ([Fraction(f.strip()) for f in row.split(",") if f.strip()][:inputs]
                                     for row in rows[3:7])
    except (IndexError, ValueError) as e:
        raise InputError(str(path), "header", f"cannot read the input box: {e}") from None
    if not normalised:
        return list(zip(mins, maxs))
    return [((lo - m) / r, (hi - m) / r) for lo, hi, m, r in zip(mins, maxs, means, ranges)]


def networks(folder: Path, domain: str | None, only: str | None = None) -> list[tuple[str, str, list | None]]:
    """``(stem, path, domain)`` for every network of the folder, sorted by stem (``None``: a JSON
    net's own domain)."""
    from ..formats import InputError, load_json
    from ..models.box import parse_domain
    if not folder.is_dir():
        raise InputError(str(folder), "", "not a folder")
    chosen: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() not in ((only,) if only else SUFFIXES) or not path.is_file():
            continue
        if path.suffix.lower() == ".json" and not _is_maxout(load_json(path).value):
            continue
        if path.stem in chosen:
            raise InputError(str(path), "", f"same stem as {chosen[path.stem]}: each network needs its own "
                             "<stem>.cert.json; rename one, or choose a format with --only SUFFIX")
        chosen[path.stem] = path
    if not chosen:
        raise InputError(str(folder), "", f"no networks ({', '.join(SUFFIXES)})")
    given = parse_domain(domain) if domain else None
    if given and all(p.suffix.lower() == ".json" for p in chosen.values()):
        raise InputError("--domain", "", "would be ignored: every network of the folder is "
                         "exactform/maxout@1 JSON with its own domain")
    headers = {tuple(nnet_box(p, True)) for p in sorted(folder.glob("*.nnet"))}
    out = []
    for stem, path in chosen.items():
        kind = path.suffix.lower()
        if kind == ".json":
            box = None
        elif given:
            box = given
        elif kind == ".nnet":
            box = nnet_box(path, False)
        elif len(headers) == 1:
            box = list(next(iter(headers)))
        else:
            raise InputError(str(path), "--domain", "no domain: give --domain, or put .nnet files with "
                             f"one operating box in the folder (found {len(headers)} different boxes)")
        out.append((stem, str(path), box))
    return out


def _is_maxout(doc: object) -> bool:
    from ..models import MaxoutNet
    return isinstance(doc, dict) and doc.get("format") == MaxoutNet.FORMAT


def certify_network(job: tuple[str, str, list | None]) -> dict:
    """One network, as a pure task: import, compile, certify, check.  Returns the outcome with the
    certificate text (zlib-compressed) when both the prover and the checker accept it."""
    import hashlib
    import tempfile
    import zlib

    from ..certificate.write import certify
    from ..checker.command import check_file
    from ..construct.maxout_to_transformer import compile_maxout
    from ..formats import InputError, canonical_json, load_json
    from ..importers import import_network
    from ..models import MaxoutNet

    stem, path, domain = job
    outcome = {"name": stem, "file": Path(path).name, "ok": False, "seconds": {}}

    def step(name, fn):
        start = time.perf_counter()
        value = fn()
        outcome["seconds"][name] = round(time.perf_counter() - start, 3)
        return value
    try:
        net = step("import", lambda: MaxoutNet.from_json(load_json(path)) if domain is None
                   else import_network(path, [tuple(pair) for pair in domain]))
        tf = step("compile", lambda: compile_maxout(net))
        cert = step("certify", lambda: certify(net, tf))
    except (InputError, ValueError) as e:
        return outcome | {"stage": next(s for s in ("import", "compile", "certify") if s not in outcome["seconds"]),
                          "message": str(e)}
    if not cert.holds:
        claim, problems = next((c, p) for c, p in cert.problems.items() if p)
        return outcome | {"stage": "certify", "message": f"{claim}: {problems[0]}"}
    text = canonical_json(cert.document)
    with tempfile.TemporaryDirectory() as tmp:
        cert_path = Path(tmp) / f"{stem}.cert.json"
        cert_path.write_text(text, encoding="utf-8")
        result = step("check", lambda: check_file(cert_path))
    if not result.ok:
        return outcome | {"stage": "check", "message": next((f"{c}: {w}" for c, h, w in result.claims if not h), result.known)}
    return outcome | {"ok": True, "sha256": hashlib.sha256(text.encode()).hexdigest(),
                      "certificate": zlib.compress(text.encode(), 6)}


def run(args) -> int:
    import json
    import zlib

    from ..formats import output_folder, write_json, write_text
    from ..numbers import format_rational
    from ..progress import Tasks
    start = time.perf_counter()
    out = output_folder(args.out, "--out")
    jobs = networks(Path(args.folder), args.domain, args.only)
    outcomes: list[dict | None] = [None] * len(jobs)
    with make_executor(args.workers, args.scheduler) as executor:
        if not args.json:
            print(f"certifying {len(jobs)} networks from {args.folder} on {executor.name}")
        try:
            with Tasks(len(jobs), "networks", quiet=args.json) as tasks:
                for i, o in executor.as_completed(certify_network, jobs):
                    outcomes[i] = o
                    box = jobs[i][2]
                    domain = "its own domain" if box is None else "domain " + ",".join(
                        f"{format_rational(lo)}:{format_rational(hi)}" for lo, hi in box)
                    times = ", ".join(f"{k} {v:.2f} s" for k, v in o["seconds"].items())
                    tasks.done(f"{o['file']} on {domain}: " + (f"certified and checked ({times})" if o["ok"] else
                                                               f"FAILED at {o['stage']}: {o['message']}"))
        except ExecutorError as e:
            return lost_work("certify-all", e)
    out.mkdir(parents=True, exist_ok=True)
    for o in outcomes:
        target = out / f"{o['name']}.cert.json"
        if o["ok"]:
            write_text(target, zlib.decompress(o.pop("certificate")).decode())
        else:
            target.unlink(missing_ok=True)
    failed = [o for o in outcomes if not o["ok"]]
    summary = {"networks": outcomes, "certified": len(outcomes) - len(failed), "failed": [o["name"] for o in failed],
               "executor": executor.name, "seconds": round(time.perf_counter() - start, 2)}
    write_json(out / "summary.json", summary)
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print(f"{summary['certified']} of {len(outcomes)} networks certified and checked in "
              f"{summary['seconds']:.1f} s; wrote {out}/" +
              (f"; FAILED: {', '.join(summary['failed'])}" if failed else ""))
    return 1 if failed else 0
