import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))      # support.py and inprocess.py, the shared helpers

# CI (CI=true) draws the same Hypothesis examples on every run, so a landing is decided by the code,
# not by the draw; local runs draw fresh examples and keep exploring.  What they find is fixed and
# kept as an explicit @example (tests/test_approx.py has one).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from the checkout's files (tracked and untracked, not ignored; without ``data/``)."""
    root = Path(__file__).resolve().parents[1]
    tmp = tmp_path_factory.mktemp("wheel")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root, capture_output=True,
                           text=True, check=True).stdout.split()
    for f in files:
        if (root / f).is_file() and not f.startswith("data/"):
            (tmp / "src" / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / f, tmp / "src" / f)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(tmp / "src"), "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(tmp / "dist")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return next((tmp / "dist").glob("*.whl"))


def pytest_collection_modifyitems(items):
    """Files with the most ``slow`` tests first (stable otherwise): with ``-n auto --dist loadfile`` each
    file runs on one worker, and starting the longest first keeps the last minutes from running on one
    core while the other waits."""
    slow = {}
    for item in items:
        slow[item.fspath] = slow.get(item.fspath, 0) + (item.get_closest_marker("slow") is not None)
    items.sort(key=lambda item: -slow[item.fspath])
