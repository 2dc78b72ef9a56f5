"""``exactform import NET.onnx|.nnet|.pt --domain L:U[,L:U...] -o NET.json``: an exact Maxout net."""
from __future__ import annotations

import json
import time
from ..formats import write_json
from ..models.box import parse_domain


def add_parser(sub):
    p = sub.add_parser("import", help="import an ONNX, .nnet or torch.save ReLU network exactly")
    p.add_argument("net", help="NET.onnx, NET.nnet or NET.pt (an nn.Sequential of Linear/ReLU)")
    p.add_argument("--domain", required=True,
                   help="input box: one L:U for all inputs or one per input, e.g. -1:1 or 0:1,-1/2:1/2")
    p.add_argument("-o", "--output", required=True, help="where to write the exactform/maxout@1 JSON")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    return p


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
