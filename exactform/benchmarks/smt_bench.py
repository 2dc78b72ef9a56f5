"""SMT queries (C2 + C3) vs network width: build (SMT-LIB text) and solve (z3) times for random
ReLU nets 5→w→w, w = 50, 100, 200, with the ratios to w = 50 beside the parameter ratio (about
linear growth is the target).  The end-to-end query is timed on the tiny examples it accepts.

Run: ``.venv/bin/python -m benchmarks smt``.  Prints times measured in this one run.
"""
import random
import time
from pathlib import Path

from exactform.benchmarks.timing import table
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.models import load_model
from exactform.proofs.nets import relu_net
from exactform.provers.smt import c2_queries, c3_queries, end_to_end_query, run_queries


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


rows, base = [], None
for width in (50, 100, 200):
    net = relu_net(random.Random(width), [5, width, width])
    tf = compile_maxout(net)
    queries, build = timed(lambda: c2_queries(net, tf) + c3_queries(net, tf))
    results, solve = timed(lambda: run_queries(queries))
    assert all(a == "unsat" for _, a, _ in results)
    per_query = [t for _, _, t in results]
    params, total = net.parameter_count(), build + solve
    base = base or (params, total)
    rows.append([width, params, len(queries), f"{build:.2f}", f"{solve:.2f}",
                 f"{1000 * sum(per_query) / len(per_query):.1f}", f"{1000 * max(per_query):.1f}",
                 f"{params / base[0]:.1f}", f"{total / base[1]:.1f}"])
print(table(["width", "params", "queries", "build s", "solve s", "mean ms", "max ms", "params ×", "time ×"], rows))

examples = Path(__file__).resolve().parents[1] / "proofs" / "examples"
rows = []
for name in ("abs", "relu_net", "maxout_2d"):
    net = load_model(examples / f"{name}.json")
    query = end_to_end_query(net, compile_maxout(net))
    (answer,), solve = timed(lambda: [a for _, a, _ in run_queries([query], timeout_ms=120000)])
    rows.append([name, net.parameter_count(), answer, f"{solve:.2f}"])
print()
print(table(["end to end", "params", "answer", "solve s"], rows))
