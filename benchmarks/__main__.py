"""``python -m benchmarks [NAME ...]``: run every ``benchmarks/*_bench.py`` (or the named ones)."""
import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
names = sys.argv[1:] or sorted(p.stem.removesuffix("_bench") for p in here.glob("*_bench.py"))
for name in names:
    print(f"\n### {name}\n", flush=True)
    runpy.run_path(str(here / f"{name}_bench.py"), run_name="__main__")
