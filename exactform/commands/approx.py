"""``exactform approx 'EXPR' --domain L:U[,L:U...] (--eps E | --rank P) -o NET.json [--json]``: a
convex Lipschitz function (restricted grammar, convexity proved by DCP rules) → a Maxout net of
supporting planes with a proven uniform error bound on the box (claim C6; ``compile`` then gives
the Transformer).  Exit 0: the proven bound is ≤ E (or --rank was given); 1: no rank up to the
stated limit meets E (nothing written); 2: bad input, not shown convex, not Lipschitz."""
from __future__ import annotations

import json
import sys


def add_parser(sub):
    p = sub.add_parser("approx", help="approximate a convex Lipschitz function by a Maxout net with a proven bound")
    p.add_argument("expression", help="e.g. 'sqrt(x**2 + y**2)', 'Max(x**2, y)', 'log(exp(x) + exp(y))'")
    p.add_argument("--domain", required=True, help="L:U for every variable, or one L:U per variable (comma-separated)")
    p.add_argument("--vars", help="variable order, comma-separated (default: sorted names)")
    goal = p.add_mutually_exclusive_group(required=True)
    goal.add_argument("--eps", help="target uniform error (exact rational or decimal): the smallest rank found")
    goal.add_argument("--rank", type=int, help="number of planes P (the grid has ⌊P^(1/d)⌋ per axis)")
    p.add_argument("-o", "--output", required=True, help="where to write the exactform/maxout@1 JSON")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def run(args) -> int:
    from ..construct.convex_approx import ApproxError, approx, rank_limit
    from ..construct.analytic import parse_analytic
    from ..construct.expression import ExpressionError
    from ..formats import InputError, write_json
    from ..numbers import RationalSyntaxError, parse_decimal, parse_rational
    from ..prove.convexity import DomainError, NotConvex
    try:
        root = parse_analytic(args.expression)
    except ExpressionError as e:
        raise InputError("expression", "", str(e)) from None
    eps = None
    if args.eps is not None:
        try:
            eps = parse_rational(args.eps) if "/" in args.eps else parse_decimal(args.eps)
        except RationalSyntaxError as e:
            raise InputError("--eps", "", str(e)) from None
        if eps <= 0:
            raise InputError("--eps", "", f"must be positive, got {eps}")
    names = args.vars.split(",") if args.vars else None
    try:
        result = approx(root, args.domain, eps=eps, rank=args.rank, variables=names)
    except (NotConvex, DomainError) as e:
        raise InputError("expression", "", str(e)) from None
    except ApproxError as e:
        raise InputError("approx", "", str(e)) from None
    report = result.to_json()
    limit = rank_limit(root, len(result.variables))
    report["rank_limit"] = limit
    if result.meets:
        write_json(args.output, result.net.to_json())
    if args.json:
        print(json.dumps(report, sort_keys=True))
    elif result.meets:
        print(f"wrote {args.output}: {result.rank} planes ({result.grid} per axis) on "
              f"({', '.join(result.variables)}); convex by DCP ({result.convexity[-1].rule}); "
              f"proven |f - net| <= {result.bound} (~{float(result.bound):.3g}); Lipschitz L <= {result.lipschitz}, "
              f"diameter <= {result.diameter}, L*D*P^(-1/d) = {float(result.rate):.3g}")
    if not result.meets:
        print(f"exactform: no rank up to {limit} (the limit for this expression) has a proven bound <= {eps}: "
              f"best {result.bound} (~{float(result.bound):.3g}) at rank {result.rank}; nothing written",
              file=sys.stderr)
        return 1
    return 0
