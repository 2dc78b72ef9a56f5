import os
import sys
from pathlib import Path

from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "exactform" / "proofs"))   # nets.py, the seeded test nets

# CI (CI=true) draws the same Hypothesis examples on every run, so a landing is decided by the code,
# not by the draw; local runs draw fresh examples and keep exploring.  What they find is fixed and
# kept as an explicit @example (tests/test_approx.py has one).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
