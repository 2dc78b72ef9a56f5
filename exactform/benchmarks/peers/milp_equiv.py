"""A big-M MILP peer of ``exactform equiv --max-diff``: HiGHS maximises ``|A(x) − B(x)|∞`` over the box
of two ``exactform/maxout@1`` networks, in floating point; the point it returns is then re-evaluated
exactly (``Fraction``), which gives a true lower bound of the maximum, never more.

``python milp_equiv.py A.json B.json [--time-limit S]`` prints one JSON line: ``objective`` (HiGHS'
best value, floating point), ``bound`` (its dual bound, floating point), ``status`` (``optimal`` when
every one of the 2·outputs problems was solved to optimality), ``point`` (the returned point as exact
rationals, clipped into the box), ``exact_at_point`` (``|A − B|∞`` there, exactly), ``seconds``.

It runs in its own virtual environment (``pip install highspy``): it is a peer for the benchmark
``python -m exactform.benchmarks equiv``, never a dependency of exactform, so it reads the JSON with
the standard library alone.  Encoding: every unit ``h = max_j z_j`` whose pieces' interval bounds
(computed exactly) overlap gets one binary per piece, ``Σ δ_j = 1``, ``h ≥ z_j`` and
``h ≤ z_j + (max_k u_k − l_j)(1 − δ_j)``; a unit with a dominating piece is that piece.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from fractions import Fraction

Net = tuple[list[Fraction], list[Fraction], list[tuple[list[list[list[Fraction]]], list[list[Fraction]]]],
            list[list[Fraction]], list[Fraction]]
"""``(lower, upper, layers, readout weight, readout bias)``; a layer is ``(weight[unit][piece][input],
bias[unit][piece])``."""


def dense(value) -> list:
    """A JSON vector or matrix of the maxout@1 format (dense lists or sparse ``{length, index, value}``
    objects, nested) as nested lists of ``Fraction``."""
    if isinstance(value, str):
        return Fraction(value)
    if isinstance(value, dict):
        out = [None] * value["length"]
        for i, v in zip(value["index"], value["value"]):
            out[i] = dense(v)
        zero = next((v for v in out if v is not None), Fraction(0))
        return [v if v is not None else _zero_like(zero) for v in out]
    return [dense(v) for v in value]


def _zero_like(v):
    return [_zero_like(x) for x in v] if isinstance(v, list) else Fraction(0)


def read_net(path: str) -> Net:
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != "exactform/maxout@1":
        raise SystemExit(f"milp_equiv: {path}: not an exactform/maxout@1 network")
    layers = [(dense(l["weight"]), dense(l["bias"])) for l in doc["layers"]]
    return (dense(doc["domain"]["lower"]), dense(doc["domain"]["upper"]), layers,
            dense(doc["readout"]["weight"]), dense(doc["readout"]["bias"]))


def evaluate(net: Net, x: list[Fraction]) -> list[Fraction]:
    """The network's outputs at ``x``, exactly."""
    h = x
    for weight, bias in net[2]:
        h = [max(sum(w * v for w, v in zip(piece, h)) + b for piece, b in zip(pieces, bs))
             for pieces, bs in zip(weight, bias)]
    return [sum(w * v for w, v in zip(row, h)) + c for row, c in zip(net[3], net[4])]


def difference(a: Net, b: Net, x: list[Fraction]) -> Fraction:
    """``|A(x) − B(x)|∞``, exactly."""
    return max(abs(p - q) for p, q in zip(evaluate(a, x), evaluate(b, x)))


def _interval(row: list[Fraction], c: Fraction, lo: list[Fraction], hi: list[Fraction]) -> tuple[Fraction, Fraction]:
    return (c + sum(w * (l if w > 0 else u) for w, l, u in zip(row, lo, hi)),
            c + sum(w * (u if w > 0 else l) for w, l, u in zip(row, lo, hi)))


def _encode(model, net: Net, x: list, pad: float) -> list:
    """Add ``net``'s units to the HiGHS ``model`` over the input variables ``x``; its output expressions."""
    h, lo, hi = x, net[0], net[1]
    for weight, bias in net[2]:
        nh, nlo, nhi = [], [], []
        for pieces, bs in zip(weight, bias):
            bounds = [_interval(p, c, lo, hi) for p, c in zip(pieces, bs)]
            exprs = [sum(float(w) * v for w, v in zip(p, h) if w) + float(c) for p, c in zip(pieces, bs)]
            top = max(u for _, u in bounds)
            m = max(range(len(bounds)), key=lambda j: bounds[j][0])        # never below: kept
            live = [m] + [j for j, (_, u) in enumerate(bounds) if j != m and u > bounds[m][0]]
            if len(live) == 1:
                unit = exprs[live[0]]
            else:
                unit = model.addVariable(lb=float(max(l for l, _ in bounds)) - pad, ub=float(top) + pad)
                picks = [model.addVariable(lb=0, ub=1, type=_integer()) for _ in live]
                model.addConstr(sum(picks) == 1)
                for j, d in zip(live, picks):
                    model.addConstr(unit - exprs[j] >= 0)
                    model.addConstr(unit - exprs[j] + float(top - bounds[j][0]) * d <= float(top - bounds[j][0]) + pad)
            nh.append(unit)
            nlo.append(max(l for l, _ in bounds))
            nhi.append(top)
        h, lo, hi = nh, nlo, nhi
    return [sum(float(w) * v for w, v in zip(row, h) if w) + float(c) for row, c in zip(net[3], net[4])]


def _integer():
    import highspy
    return highspy.HighsVarType.kInteger


def solve(a: Net, b: Net, time_limit: float) -> dict:
    """HiGHS' maximum of ``|A − B|∞`` (one MILP per output and sign) and the exact value at its point."""
    import highspy
    start = time.perf_counter()
    lower, upper = a[0], a[1]
    best, bound, status, point = None, float("-inf"), "optimal", None
    outputs = len(a[4])
    for k in range(outputs):
        for sign in (1, -1):
            model = highspy.Highs()
            model.setOptionValue("output_flag", False)
            model.setOptionValue("mip_rel_gap", 0.0)
            model.setOptionValue("time_limit", max(1.0, time_limit - (time.perf_counter() - start)))
            x = [model.addVariable(lb=float(l), ub=float(u)) for l, u in zip(lower, upper)]
            ya, yb = _encode(model, a, x, 1e-6)[k], _encode(model, b, x, 1e-6)[k]
            model.maximize(sign * (ya - yb))
            state = model.getModelStatus()
            if state != highspy.HighsModelStatus.kOptimal:
                status = model.modelStatusToString(state)
            info = model.getInfo()
            bound = max(bound, info.mip_dual_bound)
            if info.primal_solution_status and (best is None or info.objective_function_value > best):
                best = info.objective_function_value
                values = model.vals(x)
                point = [min(max(Fraction(float(v)), l), u) for v, l, u in zip(values, lower, upper)]
    exact = difference(a, b, point) if point is not None else None
    return {"objective": best, "bound": bound, "status": status,
            "point": None if point is None else [str(v) for v in point],
            "exact_at_point": None if exact is None else str(exact), "seconds": time.perf_counter() - start}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="milp_equiv.py", description=__doc__.split("\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds for all the MILPs together")
    args = parser.parse_args(argv)
    a, b = read_net(args.a), read_net(args.b)
    if (a[0], a[1]) != (b[0], b[1]) or len(a[4]) != len(b[4]):
        raise SystemExit("milp_equiv: the two networks need the same box and the same number of outputs")
    print(json.dumps(solve(a, b, args.time_limit)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
