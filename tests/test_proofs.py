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
