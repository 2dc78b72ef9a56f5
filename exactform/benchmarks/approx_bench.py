"""Convex approximation (C6, ``exactform approx``): time to build a rank-P net with its proven bound,
per plane, for a non-smooth and a smooth example, and the ``--eps`` search (doubling + bisection)
relative to building its answer's rank once.

Run: ``.venv/bin/python -m benchmarks approx``.  Prints ratios measured in this one run.
"""

from exactform.benchmarks.timing import best_time, table
from exactform.construct.convex_approx import approx

EXAMPLES = [("sqrt(x**2 + y**2)", "-1:1"), ("log(exp(x) + exp(y))", "0:1"), ("Max(x**2, y) + Abs(x - y)", "-1:1"),
            ("exp(x)", "-1:1")]
rows = []
for text, domain in EXAMPLES:
    for rank in (64, 1024):
        t = best_time(lambda: approx(text, domain, rank=rank), budget=0.5, repeat_max=3)
        rows.append([text, domain, rank, f"{t:.2f}", f"{1e3 * t / rank:.2f}"])
print(table(["f", "domain", "rank P", "build + bound (s)", "ms per plane"], rows))

search = []
for text, domain, eps in [("sqrt(x**2 + y**2)", "-1:1", "1/20"), ("log(exp(x) + exp(y))", "0:1", "1/1000")]:
    found = approx(text, domain, eps=eps)
    t_search = best_time(lambda: approx(text, domain, eps=eps), budget=0.5, repeat_max=3)
    t_once = best_time(lambda: approx(text, domain, rank=found.rank), budget=0.5, repeat_max=3)
    search.append([text, eps, found.rank, f"{t_search:.2f}", f"{t_once:.2f}", f"{t_search / t_once:.1f}x"])
print()
print(table(["f", "eps", "rank found", "search (s)", "that rank once (s)", "ratio"], search))
