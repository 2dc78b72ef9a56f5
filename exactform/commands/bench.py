"""``exactform bench [NAME ...]``: the performance suite shipped with the package
(``exactform/benchmarks/``, ``benchmarks/`` in a source checkout), each script printing a table of
ratios measured in one run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..formats import InputError

SUITE = Path(__file__).resolve().parents[1] / "benchmarks"


def add_parser(sub):
    p = sub.add_parser("bench", help="run the benchmark suite (numbers, certify, smt, torch, regions, scale)")
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    return p


def run(args) -> int:
    known = sorted(p.stem.removesuffix("_bench") for p in SUITE.glob("*_bench.py"))
    unknown = [n for n in args.names if n not in known]
    if unknown:
        raise InputError("bench", "names", f"no benchmark {unknown[0]!r}; there are {', '.join(known)}")
    return subprocess.call([sys.executable, "-m", "exactform.benchmarks", *args.names])
