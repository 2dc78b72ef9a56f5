"""``exactform certify-all FOLDER [--out DIR] [--domain L:U,...] [--workers N] [--scheduler ADDRESS]``:
import, compile, certify (C1–C4) and check every network of a folder, one task per network.

Networks: ``*.json`` files in ``exactform/maxout@1`` format, ``*.onnx``, ``*.nnet``, ``*.pt``/``*.pth``;
of two files sharing a stem (``a.onnx``, ``a.nnet``) the first in that order (``SUFFIXES``) is
certified, and a line says which was left out; ``--only`` picks one suffix instead.
Domains: ``--domain`` for every imported network if given; else a JSON net's own; a ``.nnet`` net's
operating box ``[min, max]`` from its header (the importer folds the normalisation in); an ONNX or
torch net takes normalised inputs, so its box is the header box normalised, ``(min − mean)/range``
to ``(max − mean)/range``, from the folder's ``.nnet`` headers, which must agree (ACAS Xu: all do).

A certificate ``DIR/<stem>.cert.json`` is written, as soon as its task returns, only for a network
that was certified and whose certificate the independent checker accepted (a stale one of a failed
network is removed), so an interrupted run keeps what it finished.  A run resumes: a certificate
already in ``DIR`` whose embedded net is the network's import and that the checker accepts is kept
(``kept``) instead of proved again.  Certificates are byte-identical whatever runs them;
``DIR/summary.json`` adds per-task times.  Exit 1 if any network fails (named).
"""
from __future__ import annotations

import sys
import time
from fractions import Fraction
from pathlib import Path

from ..executor import ExecutorError, add_executor_arguments, make_executor

SUFFIXES = (".json", ".onnx", ".nnet", ".pt", ".pth")
"""The network files, in the order of preference for one stem: exact JSON first, then ONNX."""


def add_parser(sub):
    p = sub.add_parser("certify-all", help="import, compile, certify and check every network in a folder")
    p.add_argument("folder", help="a folder of .onnx, .nnet, .pt or exactform/maxout@1 .json networks")
    p.add_argument("--out", default="certificates", metavar="DIR",
                   help="where to write <stem>.cert.json and summary.json (default: certificates)")
    p.add_argument("--domain", metavar="L:U[,L:U...]",
                   help="input box of every imported network (default: from the folder's .nnet headers)")
    p.add_argument("--only", metavar="SUFFIX", choices=SUFFIXES,
                   help="certify only the files with this suffix (default: of files sharing a stem, the first "
                        "of .json, .onnx, .nnet, .pt, .pth); the .nnet headers still give the domain")
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


def networks(folder: Path, domain: str | None, only: str | None = None,
             left_out: list[str] | None = None) -> list[tuple[str, str, list | None]]:
    """``(stem, path, domain)`` for every network of the folder, sorted by stem (``None``: a JSON
    net's own domain); of files sharing a stem, the first suffix of ``SUFFIXES`` (the others are
    appended to ``left_out``)."""
    from ..errors import requires_for
    from ..formats import InputError, load_json
    from ..models.box import parse_domain
    if not folder.is_dir():
        raise InputError(str(folder), "", "not a folder")
    chosen: dict[str, Path] = {}
    rank = SUFFIXES.index
    for path in sorted(folder.iterdir(), key=lambda p: (p.stem, rank(p.suffix.lower()) if p.suffix.lower() in SUFFIXES
                                                       else len(SUFFIXES), p.name)):
        if path.suffix.lower() not in ((only,) if only else SUFFIXES) or not path.is_file():
            continue
        if path.suffix.lower() == ".json" and not _is_maxout(load_json(path).value):
            continue
        if path.stem in chosen:
            if chosen[path.stem].suffix.lower() == path.suffix.lower():      # a.onnx and a.ONNX
                raise InputError(str(path), "", f"same stem as {chosen[path.stem]}: rename one")
            if left_out is not None:
                left_out.append(f"{path.name} (certifying {chosen[path.stem].name})")
            continue
        chosen[path.stem] = path
    for path in chosen.values():
        requires_for(str(path))
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


def certify_network(job: tuple[str, str, list | None, str | None]) -> dict:
    """One network, as a pure task: import, compile, certify, check.  Returns the outcome with the
    certificate text (zlib-compressed) when both the prover and the checker accept it; or, when
    ``kept`` (the certificate already written) embeds this import and the checker accepts it, the
    outcome ``kept`` without proving again."""
    import hashlib
    import tempfile
    import zlib

    from ..provers.write import certify
    from ..checker.command import check_file
    from ..construct.maxout_to_transformer import compile_maxout
    from ..formats import InputError, canonical_json, load_json
    from ..importers import import_network
    from ..models import MaxoutNet

    stem, path, domain, kept = job
    outcome = {"name": stem, "file": Path(path).name, "ok": False, "seconds": {}}

    def step(name, fn):
        start = time.perf_counter()
        value = fn()
        outcome["seconds"][name] = round(time.perf_counter() - start, 3)
        return value
    try:
        net = step("import", lambda: MaxoutNet.from_json(load_json(path)) if domain is None
                   else import_network(path, [tuple(pair) for pair in domain]))
        if kept and _embeds(kept, net) and step("check", lambda: check_file(kept)).ok:
            return outcome | {"ok": True, "kept": True}
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


def _embeds(cert_path: str, net) -> bool:
    """Whether the certificate file embeds exactly ``net`` (read strictly; False if unreadable)."""
    from ..formats import InputError, canonical_json, load_json
    try:
        doc = load_json(cert_path).value
    except InputError:
        return False
    return isinstance(doc, dict) and canonical_json(doc.get("maxout")) == canonical_json(net.to_json())


def run(args) -> int:
    import json
    import zlib

    from ..formats import WRITTEN, output_folder, write_json, write_text
    from ..numbers import format_rational
    from ..progress import Tasks
    start = time.perf_counter()
    out = output_folder(args.out, "--out")
    left_out: list[str] = []
    found = networks(Path(args.folder), args.domain, args.only, left_out)
    jobs = [(*job, str(out / f"{job[0]}.cert.json") if (out / f"{job[0]}.cert.json").is_file() else None)
            for job in found]
    shown = [None if box is None else ",".join(f"{format_rational(lo)}:{format_rational(hi)}" for lo, hi in box)
             for _, _, box, _ in jobs]
    boxes = list(dict.fromkeys(b for b in shown if b is not None))
    label = {b: "the domain" if len(boxes) == 1 else f"domain {chr(65 + k)}" for k, b in enumerate(boxes)}
    outcomes: list[dict | None] = [None] * len(jobs)
    with make_executor(args.workers, args.scheduler) as executor:
        if not args.json:
            print(f"certifying {len(jobs)} networks from {args.folder} on {executor.name}" +
                  "".join(f"\n{label[b]}: {b}" for b in boxes) +
                  "".join(f"\nleft out {name}: same stem (--only SUFFIX to choose)" for name in left_out))
        try:
            with Tasks(len(jobs), "networks", quiet=args.json) as tasks:
                for i, o in executor.as_completed(certify_network, jobs):
                    outcomes[i] = o
                    domain = "its own domain" if shown[i] is None else label[shown[i]]
                    seconds = sum(o["seconds"].values())        # each step's in summary.json
                    target = out / f"{o['name']}.cert.json"
                    if o.get("kept"):
                        verdict = f"kept {target.name}, checked in {seconds:.2f} s"
                    elif o["ok"]:
                        out.mkdir(parents=True, exist_ok=True)
                        write_text(target, zlib.decompress(o.pop("certificate")).decode())
                        verdict = f"certified and checked in {seconds:.2f} s"
                    else:
                        target.unlink(missing_ok=True)
                        verdict = f"FAILED at {o['stage']}: {o['message']}"
                    tasks.done(f"{o['file']} on {domain}: {verdict}")
        except ExecutorError as e:
            done = [Path(w).name for w in WRITTEN]
            print(f"exactform: certify-all: {e}; " + (f"kept the certificates finished: {', '.join(done)}"
                                                      if done else "nothing written"), file=sys.stderr)
            return 1
    out.mkdir(parents=True, exist_ok=True)
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
