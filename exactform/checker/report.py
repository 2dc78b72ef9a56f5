"""JUnit XML reports of the checker's verdicts (``check --junit``, ``prove --junit``), standard library
only: one test case per certificate and one per claim; the output is checked before any work and
written atomically."""

import os
import tempfile
from xml.etree import ElementTree as ET

from .reader import Malformed


def writable(path: str, inputs=()) -> None:
    """Refuse, before any work, a report path that is empty, a folder, a device or FIFO, in a missing
    folder, or one of the ``inputs``."""
    folder = os.path.dirname(os.path.abspath(path)) if path else ""
    why = (
        "an empty path"
        if not path
        else f"no folder {folder}"
        if not os.path.isdir(folder)
        else "not a regular file"
        if os.path.exists(path) and not os.path.isfile(path)
        else "one of the inputs"
        if os.path.exists(path) and any(os.path.exists(i) and os.path.samefile(path, i) for i in inputs)
        else None
    )
    if not why:
        try:  # the folder takes a new file: the atomic write's temporary one, tried now
            os.remove(tempfile.mkstemp(dir=folder, prefix=".junit.", suffix=".tmp")[1])
        except OSError as e:
            why = f"cannot write in {folder} ({e.strerror})"
    if why:
        raise Malformed(f"--junit {path!r}: {why}: refused before any work")


def junit_cases(suite, files, results, classname: str = "exactform.check") -> tuple[int, int]:
    """Add the cases to ``suite``; returns (tests, failures)."""
    tests = failures = 0
    for name, r in zip(map(str, files), results):
        for case_name, holds, message in [(name, r.ok, r.known)] + [(f"{name}::{c}", h, w) for c, h, w in r.claims]:
            case = ET.SubElement(suite, "testcase", classname=classname, name=case_name)
            tests, failures = tests + 1, failures + (not holds)
            if not holds:
                ET.SubElement(case, "failure", message=message[:500]).text = message
    return tests, failures


def write_junit(path: str, files, results) -> None:
    """The verdicts as a JUnit XML report, written atomically (docs/spec.md §6.6)."""
    suite = ET.Element("testsuite", name="exactform.check")
    tests, failures = junit_cases(suite, files, results)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".junit.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(ET.tostring(suite, encoding="unicode") + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.remove(tmp)
        raise
