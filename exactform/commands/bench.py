"""``exactform bench [NAME ...]``: the performance suite shipped with the package
(``exactform/benchmarks/``, ``benchmarks/`` in a source checkout), each script printing a table of
ratios measured in one run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..formats import InputError

SUITE = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmarks() -> list[str]:
    """The names of the suite's benchmarks (``benchmarks/NAME_bench.py``)."""
    return sorted(p.stem.removesuffix("_bench") for p in SUITE.glob("*_bench.py"))


def add_parser(sub):
    known = benchmarks()
    p = sub.add_parser("bench", help=f"run the benchmark suite ({', '.join(known)})")
    p.add_argument("names", nargs="*", metavar="NAME", help=f"benchmarks to run, of {', '.join(known)} (default: all)")
    return p


def run(args) -> int:
    known = benchmarks()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        raise InputError("bench", "names", f"no benchmark {unknown[0]!r}; there are {', '.join(known)}")
    return subprocess.call([sys.executable, "-m", "exactform.benchmarks", *args.names])
