"""``exactform prove [C1 … C8] [--json] [--junit FILE] [--out DIR]``: run the proof scripts.

Each claim has a script ``proofs/C<k>.py``, runnable alone, exiting non-zero on failure.  A claim
whose script is missing is reported as "not available", never as proved.
"""
from __future__ import annotations

from pathlib import Path

CLAIMS = [f"C{k}" for k in range(1, 9)]
PROOFS = Path(__file__).resolve().parents[2] / "proofs"


def add_parser(sub):
    p = sub.add_parser("prove", help="run the proof scripts in proofs/ (one per claim)")
    p.add_argument("claims", nargs="*", metavar="CLAIM", help="C1 ... C8 (default: all)")
    p.add_argument("--json", action="store_true", help="machine-readable results")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    p.add_argument("--out", metavar="DIR", help="where the scripts write their certificates")
    p.add_argument("--timeout", type=float, default=600, help="seconds per script (default 600)")
    return p


def run(args) -> int:
    import json
    import os
    import subprocess
    import sys
    import time

    from ..formats import InputError

    unknown = [c for c in args.claims if c not in CLAIMS]
    if unknown:
        raise InputError("prove", "claims", f"unknown claim {unknown[0]!r} (expected C1 ... C8)")
    env = dict(os.environ)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        env["EXACTFORM_PROOF_OUT"] = str(Path(args.out).resolve())
    results = []
    for claim in args.claims or CLAIMS:
        script = PROOFS / f"{claim}.py"
        if not script.exists():
            results.append({"claim": claim, "ok": False, "status": "not available", "seconds": 0, "output": ""})
            if not args.json:
                print(f"{claim}: not available (no {script.relative_to(PROOFS.parent)})")
            continue
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, str(script)] + (["--json"] if args.json else []),
                                  capture_output=True, text=True, timeout=args.timeout, env=env,
                                  cwd=PROOFS.parent)
            code, stdout, output = done.returncode, done.stdout, done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            code, stdout, output = 1, "", f"timed out after {args.timeout:g} s"
        seconds = time.perf_counter() - start
        status = "proved" if code == 0 else "failed"
        result = {"claim": claim, "ok": code == 0, "status": status, "seconds": round(seconds, 2), "output": output}
        if args.json:
            try:
                result |= json.loads(stdout.strip().splitlines()[-1]) | {"ok": code == 0}
            except (ValueError, IndexError):
                pass
        else:
            print(output.rstrip())
            print(f"{claim}: {status.upper() if code else status} ({seconds:.1f} s)\n")
        results.append(result)
    if args.junit:
        _junit(args.junit, results)
    if args.json:
        public = [{k: v for k, v in r.items() if k != "output"} for r in results]
        print(json.dumps(public[0] if len(public) == 1 else {"claims": public}, sort_keys=True))
    else:
        proved = sum(r["ok"] for r in results)
        print(f"{proved} of {len(results)} claims proved" +
              "".join(f"; {r['claim']} {r['status']}" for r in results if not r["ok"]))
    return 0 if all(r["ok"] for r in results) else 1


def _junit(path: str, results: list[dict]) -> None:
    from xml.etree import ElementTree as ET

    from ..formats import write_text
    suite = ET.Element("testsuite", name="exactform.prove", tests=str(len(results)),
                       failures=str(sum(r["status"] == "failed" for r in results)),
                       skipped=str(sum(r["status"] == "not available" for r in results)))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="exactform.prove", name=r["claim"], time=str(r["seconds"]))
        if r["status"] == "failed":
            ET.SubElement(case, "failure", message=f"{r['claim']} failed").text = r["output"][-4000:]
        elif r["status"] == "not available":
            ET.SubElement(case, "skipped", message="no proof script")
        else:
            ET.SubElement(case, "system-out").text = r["output"][-4000:]
    write_text(path, ET.tostring(suite, encoding="unicode") + "\n")
