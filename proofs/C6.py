"""Claim C6 (docs/spec.md §3): CPWL functions compile to exact Maxout nets (hence Transformers), each
proved equal to its input on the domain; convex functions are approximated by tangent planes with
a proven uniform bound, checked against sampled errors and, for quadratics, the exact worst error.

Usage: python proofs/C6.py [--json] [--out DIR]     (exit 0: every check holds; 1: one fails)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from fractions import Fraction as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from exactform.construct.convex_approx import tangent_plane_net  # noqa: E402
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
    approximations = []
    for f, n in [("x**2 + y**2", 3), ("x**2 + y**2", 5), ("x**2 + x*y + y**2", 5),
                 ("log(exp(x) + exp(y))", 3), ("log(exp(x) + exp(y))", 5), ("log(exp(x) + exp(y))", 9)]:
        a = tangent_plane_net(f, UNIT, n)
        holds = a.sampled_worst_error <= a.bound and (a.exact_worst_error is None or a.exact_worst_error <= a.bound)
        ok &= holds
        approximations.append({"f": f, "domain": "[0,1]^2", "grid": n, **a.to_json(), "holds": holds})
    return {"claim": "C6", "ok": bool(ok), "cpwl": compiled, "convex": approximations,
            "note": "sampled_worst_error is a certified upper value at random sample points (sampled, not a bound); "
                    "exact_worst_error is the exact maximum, for quadratics"}


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
        for a in report["convex"]:
            exact = f", exact worst {a['exact_worst_error']}" if a["exact_worst_error"] else ""
            print(f"{a['f']} grid {a['grid']}x{a['grid']}: proven bound {a['bound_float']:.3g}{exact}, "
                  f"sampled worst {a['sampled_worst_error']:.3g} ({'ok' if a['holds'] else 'FAIL'})")
        print("C6 holds" if report["ok"] else "C6 FAILS")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
