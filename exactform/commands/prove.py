"""``exactform prove [C1 … C8] [--json] [--junit FILE] [--out DIR] [--script-timeout S] [--workers N]
[--scheduler ADDRESS]``: run the proof scripts as parallel tasks, each reported as it finishes.

Each claim has a script ``exactform/proofs/C<k>.py`` (shipped with the package; ``proofs/`` in the
repository links there), runnable alone, exiting non-zero on failure.  A claim whose script is
missing is reported as "not available", never as proved.  ``--timeout`` limits the whole command,
as everywhere; ``--script-timeout`` each script.  The Coq theorems (``proofs/coq_theorems.py``) run
beside them and are reported on a line of their own, "not checked here" where ``coqc`` is absent.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

from ..executor import ExecutorError, add_executor_arguments, lost_work, make_executor

CLAIMS = [f"C{k}" for k in range(1, 9)]
COQ = "Coq"
"""The Coq theorems, proved once for all (``proofs/coq/``): not a claim of their own, a line of their own."""
NOT_CHECKED = 3
"""``proofs/coq_theorems.py``'s exit status when ``coqc`` is absent."""
PROOFS = Path(__file__).resolve().parents[1] / "proofs"


def add_parser(sub):
    p = sub.add_parser("prove", help="run the proof scripts (one per claim C1 … C8)")
    p.add_argument("claims", nargs="*", metavar="CLAIM", help="C1 ... C8, Coq (default: all)")
    p.add_argument("--json", action="store_true", help="machine-readable results")
    p.add_argument("--verbose", action="store_true", help="print each script's output (always for a failed one)")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    p.add_argument("--out", metavar="DIR", help="where the scripts write their certificates")
    p.add_argument("--script-timeout", type=float, default=600, metavar="SECONDS",
                   help="seconds per script (default 600); --timeout limits the whole command")
    add_executor_arguments(p)
    return p


def run_script(claim: str, as_json: bool, timeout: float, out: str | None) -> dict:
    """Run ``proofs/<claim>.py`` (a task: scripts run in parallel, results are kept in claim order)."""
    import json
    import os
    import subprocess
    import sys
    import time

    script = PROOFS / ("coq_theorems.py" if claim == COQ else f"{claim}.py")
    if not script.exists():
        return {"claim": claim, "ok": False, "status": "not available", "seconds": 0, "output": ""}
    env = dict(os.environ) | ({"EXACTFORM_PROOF_OUT": out} if out else {})
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, str(script)] + (["--json"] if as_json else []),
                              capture_output=True, text=True, timeout=timeout, env=env)
        code, stdout, output = done.returncode, done.stdout, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        code, stdout, output = 1, "", f"timed out after {timeout:g} s"
    status = "proved" if code == 0 else "not checked here" if claim == COQ and code == NOT_CHECKED else "failed"
    result = {"claim": claim, "ok": code == 0, "status": status,
              "seconds": round(time.perf_counter() - start, 2), "output": output}
    if as_json:
        try:
            result |= json.loads(stdout.strip().splitlines()[-1]) | {"ok": code == 0}
        except (ValueError, IndexError):
            pass
    return result


def run(args) -> int:
    import json

    from ..formats import InputError, output_file, output_folder
    from ..progress import Tasks

    known = {c.upper(): c for c in CLAIMS + [COQ]}
    args.claims = [known.get(c.upper(), c) for c in args.claims]          # c1 is C1, coq is Coq
    unknown = [c for c in args.claims if c not in CLAIMS + [COQ]]
    if unknown:
        raise InputError("prove", "claims", f"unknown claim {unknown[0]!r} (expected C1 ... C8 or Coq)")
    if args.junit is not None:
        output_file(args.junit, "--junit")
    out = None
    if args.out is not None:
        output_folder(args.out, "--out").mkdir(parents=True, exist_ok=True)
        out = str(Path(args.out).resolve())
    claims = args.claims or CLAIMS + [COQ]
    results: list[dict | None] = [None] * len(claims)
    task = partial(run_script, as_json=args.json, timeout=args.script_timeout, out=out)
    with make_executor(args.workers, args.scheduler) as executor:
        try:
            with Tasks(len(claims), "claims", quiet=args.json) as tasks:
                for i, r in executor.as_completed(task, claims):
                    results[i] = r
                    tasks.done(_verdict(r, args.verbose))
        except ExecutorError as e:
            return lost_work("prove", e)
    if args.junit:
        _junit(args.junit, results, args.out)
    coq = [r for r in results if r["claim"] == COQ]
    results = [r for r in results if r["claim"] != COQ]
    if args.json:
        public = [{k: v for k, v in r.items() if k != "output"} for r in results + coq]
        print(json.dumps(public[0] if len(public) == 1 else
                         {"claims": public[:len(results)]} | ({"coq": public[-1]} if coq else {}), sort_keys=True))
    else:
        proved = sum(r["ok"] for r in results)
        print("; ".join(([f"{proved} of {len(results)} claims proved"] if results else []) +
                        [f"{r['claim']} {r['status']}" for r in results if not r["ok"]] +
                        [f"Coq theorems {r['status']}" for r in coq]))
    return 0 if all(r["ok"] for r in results) and all(r["status"] != "failed" for r in coq) else 1


def _verdict(r: dict, verbose: bool) -> str:
    """One line per script, ending with the script's own last line; its whole output when verbose
    or failed."""
    if r["status"] == "not available":
        return f"{r['claim']}: not available (no proofs/{r['claim']}.py)"
    if r["status"] == "not checked here":
        return r["output"].strip().splitlines()[0]
    lines = r["output"].rstrip().splitlines()
    own = lines[-1].strip() if lines else ""
    head = f"{r['claim']}: {r['status'] if r['ok'] else r['status'].upper()} ({r['seconds']:.1f} s)"
    if r["ok"] and not verbose:
        return f"{head}; {own}" if own else head
    return head + "\n" + "\n".join(lines)


def _junit(path: str, results: list[dict], out: str | None = None) -> None:
    """One test case per claim (its script) and, with ``--out``, one per certificate the scripts
    wrote there and per claim in it, as re-checked by the independent checker."""
    from xml.etree import ElementTree as ET

    from ..checker.report import junit_cases
    from ..checker.command import check_file
    from ..formats import write_text
    root = ET.Element("testsuites", name="exactform")
    suite = ET.SubElement(root, "testsuite", name="exactform.prove", tests=str(len(results)),
                          failures=str(sum(r["status"] == "failed" for r in results)),
                          skipped=str(sum(r["status"] in ("not available", "not checked here") for r in results)))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="exactform.prove", name=r["claim"], time=str(r["seconds"]))
        if r["status"] == "failed":
            ET.SubElement(case, "failure", message=f"{r['claim']} failed").text = r["output"][-4000:]
        elif r["status"] == "not available":
            ET.SubElement(case, "skipped", message="no proof script")
        elif r["status"] == "not checked here":
            ET.SubElement(case, "skipped", message="coqc is absent: the Coq theorems are not checked here")
            ET.SubElement(case, "system-out").text = r["output"][-4000:]
        else:
            ET.SubElement(case, "system-out").text = r["output"][-4000:]
    certificates = sorted(str(p) for p in Path(out).rglob("*cert*.json")) if out else []
    if certificates:
        checked = ET.SubElement(root, "testsuite", name="exactform.check")
        tests, failures = junit_cases(checked, certificates, [check_file(c) for c in certificates])
        checked.set("tests", str(tests))
        checked.set("failures", str(failures))
    write_text(path, ET.tostring(root, encoding="unicode") + "\n")
