"""``exactform bench [NAME ...]``: the performance suite of a source checkout (``benchmarks/``),
each script printing a table of ratios measured in one run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..formats import InputError

SUITE = Path(__file__).resolve().parents[2] / "benchmarks"


def add_parser(sub):
    p = sub.add_parser("bench", help="run the benchmark suite (numbers, certify, smt, torch, regions, scale)")
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    return p


def run(args) -> int:
    if not (SUITE / "__main__.py").is_file():
        raise InputError(str(SUITE), "", "no benchmark suite here: run `exactform bench` from a source checkout")
    known = sorted(p.stem.removesuffix("_bench") for p in SUITE.glob("*_bench.py"))
    unknown = [n for n in args.names if n not in known]
    if unknown:
        raise InputError("bench", "names", f"no benchmark {unknown[0]!r}; there are {', '.join(known)}")
    return subprocess.call([sys.executable, "-m", "benchmarks", *args.names], cwd=SUITE.parent)
