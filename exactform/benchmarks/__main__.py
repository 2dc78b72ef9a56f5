"""``python -m exactform.benchmarks [NAME ...] [OPTIONS]`` (``python -m benchmarks`` in a checkout): run
every ``*_bench.py`` here (or the named ones), each as its own ``__main__``, with the options that follow
the names (``python -m exactform.benchmarks verify --props 3 --instances 5``); a script that exits
non-zero is reported and the rest still run.  A NAME is ``NAME_bench.py``, a script's own stem
(``equiv_bench``), or one of ``NAMED``: ``equiv`` is the ε-equivalence benchmark on ACAS Xu regions
(``equiv_regions.py``, hours at its defaults: run by name only), the older ``equiv_bench.py`` is
``equiv_bench``."""
import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
NAMED = {"equiv": "equiv_regions"}
given = sys.argv[1:]
split = next((k for k, a in enumerate(given) if a.startswith("-")), len(given))
names, options = given[:split], given[split:]
names = names or sorted(p.stem for p in here.glob("*_bench.py"))
failed = []
for name in names:
    print(f"\n### {name}\n", flush=True)
    script = here / f"{NAMED.get(name, name)}.py"
    sys.argv = [str(script if script.is_file() else here / f"{name}_bench.py"), *options]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            failed.append(name)
if failed:
    print(f"\nbenchmarks that reported a miss or failure: {', '.join(failed)}")
sys.exit(1 if failed else 0)
