"""JUnit XML reports of the checker's verdicts (``check --junit``, ``prove --junit``): one test
case per certificate and one per claim; the verdicts are ``exactform.checker.Result`` as returned."""
from __future__ import annotations

from xml.etree import ElementTree as ET


def junit_cases(suite, files, results, classname: str = "exactform.check") -> tuple[int, int]:
    """Add the cases to ``suite``; returns (tests, failures)."""
    tests = failures = 0
    for name, r in zip(map(str, files), results):
        cases = [(name, r.ok, r.known)] + [(f"{name}::{c}", holds, words) for c, holds, words in r.claims]
        for case_name, holds, message in cases:
            case = ET.SubElement(suite, "testcase", classname=classname, name=case_name)
            tests += 1
            if not holds:
                failures += 1
                ET.SubElement(case, "failure", message=message[:500]).text = message
    return tests, failures


def write_junit(path: str, files, results) -> None:
    from ..formats import write_text
    suite = ET.Element("testsuite", name="exactform.check")
    tests, failures = junit_cases(suite, files, results)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    write_text(path, ET.tostring(suite, encoding="unicode") + "\n")
