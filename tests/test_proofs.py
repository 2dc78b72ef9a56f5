"""``exactform prove``: the run of every proof script (C1–C8 and Coq, what ``make demo`` ends with)
is the README's, in tests/test_readme.py (once for the suite); here, the Coq theorems without coqc."""
import os
import subprocess
import sys
from pathlib import Path


def test_without_coqc_the_coq_theorems_are_reported_not_checked_here():
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))          # no coqc on this PATH
    done = subprocess.run([sys.executable, "-m", "exactform", "prove", "Coq"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "Coq: not checked here (no coqc on PATH" in done.stdout and "proved" not in done.stdout, done.stdout


def test_without_coqc_the_junit_report_says_not_checked_here(tmp_path):
    """The report CI reads: the Coq case is skipped and its output carries the line a reader needs."""
    from xml.etree import ElementTree as ET
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))          # no coqc on this PATH
    report = tmp_path / "report.xml"
    done = subprocess.run([sys.executable, "-m", "exactform", "prove", "Coq", "--junit", str(report)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    case = next(c for c in ET.parse(report).getroot().iter("testcase") if c.get("name") == "Coq")
    assert case.find("skipped") is not None and case.find("failure") is None
    assert "Coq: not checked here (no coqc on PATH" in (case.findtext("system-out") or "")
