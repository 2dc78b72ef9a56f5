"""Per-claim results of the certificate checker, for CI reports (``check --junit``, ``prove
--junit``, the pytest plugin).  The verdicts are the checker's own: ``check_certificate`` is run
as is and its lines are split per claim; nothing here decides whether a claim holds."""
from __future__ import annotations

from dataclasses import dataclass, field
from .check import certificate_files, check_certificate


@dataclass
class CertificateResult:
    path: str
    code: int                                  # 0 every claim holds, 1 one fails, 2 not a certificate
    message: str                               # the checker's last line (or its input error)
    claims: list[tuple[str, bool, str]] = field(default_factory=list)   # (id, holds, checker's line)
    lines: list[str] = field(default_factory=list)


def check_one(path, smt: bool = False, say=None) -> CertificateResult:
    """Check one certificate with ``check_certificate``; ``say`` also receives its lines."""
    lines: list[str] = []

    def capture(line: str) -> None:
        lines.append(line)
        if say is not None:
            say(line)
    code = check_certificate(path, smt, capture)
    result = CertificateResult(str(path), code, lines[-1] if lines else "", lines=lines)
    if code == 2:
        return result
    ids = _claim_ids(path)
    for cid, line in zip(ids, lines[:len(ids)]):
        holds = line.startswith(f"{cid} holds (recomputed")
        message = line[len(cid) + len(" FAILS: "):] if line.startswith(f"{cid} FAILS: ") else line
        result.claims.append((cid, holds, message))
    if len(result.claims) != len(ids) or (code == 0) != all(ok for _, ok, _ in result.claims):
        result.claims = [(cid, False, "checker output not understood") for cid in ids]
        result.code = max(code, 1)
    return result


def _claim_ids(path) -> list[str]:
    from ..formats import load_json
    return [c["id"] for c in load_json(path).value["claims"]]


def check_many(paths: list[str], smt: bool = False, say=print) -> tuple[int, list[CertificateResult]]:
    files = certificate_files(paths)
    if not files:
        say(f"{' '.join(map(str, paths))}: no certificate files")
        return 2, []
    results = [check_one(f, smt, say) for f in files]
    return max(r.code for r in results), results


def junit_cases(suite, results: list[CertificateResult], classname: str = "exactform.check") -> tuple[int, int]:
    """One ``testcase`` per certificate and one per claim; returns (tests, failures)."""
    from xml.etree import ElementTree as ET
    tests = failures = 0
    for r in results:
        name = str(r.path)
        case = ET.SubElement(suite, "testcase", classname=classname, name=name)
        tests += 1
        if r.code:
            failures += 1
            ET.SubElement(case, "failure", message=r.message[:500]).text = "\n".join(r.lines)[-4000:]
        for cid, ok, message in r.claims:
            case = ET.SubElement(suite, "testcase", classname=classname, name=f"{name}::{cid}")
            tests += 1
            if not ok:
                failures += 1
                ET.SubElement(case, "failure", message=message[:500]).text = message
    return tests, failures


def write_junit(path: str, results: list[CertificateResult]) -> None:
    from xml.etree import ElementTree as ET

    from ..formats import write_text
    suite = ET.Element("testsuite", name="exactform.check")
    tests, failures = junit_cases(suite, results)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    write_text(path, ET.tostring(suite, encoding="unicode") + "\n")
