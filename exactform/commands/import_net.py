"""``exactform import NET.onnx|.nnet|.pt --domain L:U[,L:U...] -o NET.json``: an exact Maxout net."""
from __future__ import annotations

import json
import re
import time
from fractions import Fraction

from ..formats import InputError, write_json
from ..numbers import RationalSyntaxError, parse_decimal, parse_rational

_DECIMAL = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")


def add_parser(sub):
    p = sub.add_parser("import", help="import an ONNX, .nnet or torch.save ReLU network exactly")
    p.add_argument("net", help="NET.onnx, NET.nnet or NET.pt (an nn.Sequential of Linear/ReLU)")
    p.add_argument("--domain", required=True,
                   help="input box: one L:U for all inputs or one per input, e.g. -1:1 or 0:1,-1/2:1/2")
    p.add_argument("-o", "--output", required=True, help="where to write the exactform/maxout@1 JSON")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    return p


def parse_domain(text: str) -> list[tuple[Fraction, Fraction]]:
    """``"L:U,L:U"`` with exact rationals (``-7/12``) or decimals (``0.25``, read exactly)."""
    pairs = []
    for k, part in enumerate(text.split(",")):
        bounds = part.split(":")
        if len(bounds) != 2:
            raise InputError("--domain", f"[{k}]", f"expected L:U, got {part[:40]!r}")
        lo, hi = (_number(b, k) for b in bounds)
        if lo > hi:
            raise InputError("--domain", f"[{k}]", f"lower bound {lo} exceeds upper bound {hi}")
        pairs.append((lo, hi))
    return pairs


def _number(text: str, k: int) -> Fraction:
    text = text.strip()
    try:
        return parse_decimal(text) if _DECIMAL.match(text) else parse_rational(text)
    except RationalSyntaxError as e:
        raise InputError("--domain", f"[{k}]", str(e)) from None


def run(args) -> int:
    from ..importers import import_network
    start = time.perf_counter()
    net = import_network(args.net, parse_domain(args.domain))
    seconds = time.perf_counter() - start
    write_json(args.output, net.to_json())
    summary = {"widths": net.widths, "max_rank": net.max_rank, "parameters": net.parameter_count(),
               "seconds": round(seconds, 3), "output": args.output}
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print(f"imported {args.net}: widths {net.widths}, max rank {net.max_rank}, "
              f"{net.parameter_count()} parameters, exact, in {seconds:.2f} s; wrote {args.output}")
    return 0
