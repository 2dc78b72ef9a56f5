"""Claim C6 (docs/spec.md §3): CPWL functions compile to exact Maxout nets (hence Transformers), each
proved equal to its input on the domain; convex Lipschitz functions — convexity proved by DCP rules
or a certified Hessian — are approximated by supporting planes with a proven uniform bound
(docs/approx.md).  The table gives the proven bound against the rank P beside the Lipschitz rate
L·D·P^(-1/d) for a non-smooth and a smooth example, and the worst error sampled by an independent
mpmath evaluation (50 digits, every half-cell point, the kink included), which must never exceed
the bound.

Usage: python proofs/C6.py [--json] [--out DIR]     (exit 0: every check holds; 1: one fails)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from fractions import Fraction as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the folder holding exactform/

import mpmath  # noqa: E402

from exactform.construct.convex_approx import approx  # noqa: E402
from exactform.construct.cpwl import breakpoints_net, dc_net, expression_net, triangulation_net  # noqa: E402
from exactform.construct.maxout_to_transformer import compile_maxout  # noqa: E402
from exactform.formats import write_json  # noqa: E402
from exactform.models import Box  # noqa: E402
from exactform.prove.regions import count_regions  # noqa: E402

SQUARE = Box((F(-1), F(-1)), (F(1), F(1)))
UNIT = Box((F(0), F(0)), (F(1), F(1)))


def front_ends():
    yield "expression Max(x, 2*y) - Abs(x - y)/3", expression_net("Max(x, 2*y) - Abs(x - y)/3", SQUARE)
    yield "expression Min(Abs(x), Abs(y)) + Max(Abs(x - y), 1/3)", \
        expression_net("Min(Abs(x), Abs(y)) + Max(Abs(x - y), 1/3)", SQUARE)
    yield "breakpoints (0,0) (1,1) (2,0) (3,1/2)", breakpoints_net([F(0), F(1), F(2), F(3)], [F(0), F(1), F(0), F(1, 2)])
    pts = [(0, 0), (1, 0), (1, 1), (0, 1), (F(1, 2), F(1, 3))]
    yield "triangulation: unit square, interior vertex raised", \
        triangulation_net(pts, [(0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)], [F(0), F(1, 2), F(0), F(1, 4), F(1)])
    yield "difference of convex max-affine", dc_net([([F(1), F(0)], F(0)), ([F(-1), F(1)], F(1, 2))],
                                                    [([F(0), F(1)], F(0)), ([F(1, 2), F(-1)], F(0))], SQUARE)


def run(out: str) -> dict:
    os.makedirs(out, exist_ok=True)
    ok, compiled = True, []
    for n, (name, c) in enumerate(front_ends()):
        path = os.path.join(out, f"cpwl_{n}.json")
        write_json(path, c.net.to_json())
        same = count_regions(c.net).regions == count_regions(compile_maxout(c.net)).regions
        ok &= same
        compiled.append({"input": name, "network": path, "proof": c.proof.to_json(),
                         "transformer_regions_match": same})
    approximations = [row for example in EXAMPLES for row in rate_table(*example)]
    ok &= all(r["holds"] for r in approximations)
    return {"claim": "C6", "ok": bool(ok), "cpwl": compiled, "convex": approximations,
            "note": "bound, lipschitz_bound and rate are proven upper bounds; sampled_worst is the largest "
                    "|f - net| found by mpmath at the sample points (sampled, not a bound)"}


EXAMPLES = [  # (expression, domain, the same function in mpmath, its kinks)
    ("sqrt(x**2 + y**2)", "-1:1", lambda x, y: mpmath.sqrt(x * x + y * y), [(0, 0)]),
    ("log(exp(x) + exp(y))", "0:1", lambda x, y: mpmath.log(mpmath.exp(x) + mpmath.exp(y)), []),
]
GRIDS = (2, 4, 8, 16, 32)


def rate_table(text, domain, f, kinks) -> list[dict]:
    mpmath.mp.dps = 50
    rows = []
    for n in GRIDS:
        a = approx(text, domain, rank=n * n)
        box = a.net.domain
        axes = [[lo + (hi - lo) * F(k, 2 * n) for k in range(2 * n + 1)] for lo, hi in zip(box.lower, box.upper)]
        points = [[x, y] for x in axes[0] for y in axes[1]] + [[F(p) for p in k] for k in kinks]
        worst = max(abs(f(*[mpmath.mpf(c.numerator) / c.denominator for c in p]) - mpmath.mpf(v.numerator) / v.denominator)
                    for p, (v,) in zip(points, a.net.evaluate_batch(points)))
        holds = worst <= mpmath.mpf(a.bound.numerator) / a.bound.denominator and a.bound <= a.lipschitz_bound \
            and a.lipschitz_bound <= a.rate + F(1, 10 ** 9)
        rows.append({"f": text, "domain": domain, "rank": a.rank, "bound": str(a.bound), "bound_float": float(a.bound),
                     "lipschitz_bound": float(a.lipschitz_bound), "rate": float(a.rate), "lipschitz": str(a.lipschitz),
                     "diameter": str(a.diameter), "sampled_worst": float(worst), "samples": len(points),
                     "methods": a.methods, "holds": bool(holds)})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", default=os.path.join(os.environ.get("EXACTFORM_PROOF_OUT", "exactform-proofs"), "C6"))
    args = p.parse_args(argv)
    report = run(args.out)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        for c in report["cpwl"]:
            print(f"{c['input']}: equal on {c['proof']['cells']} exact cells; Transformer regions match: "
                  f"{c['transformer_regions_match']} ({c['network']})")
        print("\nconvex approximation: proven bound vs rank P, beside the rate L*D*P^(-1/d) (d = 2)")
        print(f"{'f':22} {'P':>5} {'proven bound':>13} {'Lipschitz-only':>15} {'L*D*P^-1/2':>11} "
              f"{'sampled worst':>14}")
        for a in report["convex"]:
            print(f"{a['f']:22} {a['rank']:5d} {a['bound_float']:13.4g} {a['lipschitz_bound']:15.4g} "
                  f"{a['rate']:11.4g} {a['sampled_worst']:14.4g}{'' if a['holds'] else '  FAIL'}")
        print("C6 holds" if report["ok"] else "C6 FAILS")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
