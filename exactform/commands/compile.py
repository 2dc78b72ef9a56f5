"""``exactform compile NET.json -o TF.json``: the token-shift construction, with its C4 sizes."""
from __future__ import annotations

import json
import time

from ..construct.maxout_to_transformer import (compile_maxout, measured_sizes, predicted_sizes,
                                               shift_constants, source_sizes)
from ..formats import InputError, output_file, write_json
from ..models import MaxoutNet, load_model


def add_parser(sub):
    p = sub.add_parser("compile", help="compile a Maxout net into a hardmax Transformer")
    p.add_argument("net", help="exactform/maxout@1 JSON")
    p.add_argument("-o", "--output", required=True, help="where to write the exactform/transformer@1 JSON")
    p.add_argument("--json", action="store_true", help="print sizes as JSON")
    return p


def run(args) -> int:
    net = load_model(args.net)
    if not isinstance(net, MaxoutNet):
        raise InputError(args.net, "format", "compile takes a Maxout network")
    output_file(args.output, "-o")
    start = time.perf_counter()
    try:
        shifts = shift_constants(net)
    except ValueError as e:
        raise InputError(args.net, "", str(e)) from None
    tf = compile_maxout(net, shifts)
    seconds = time.perf_counter() - start
    predicted, measured = predicted_sizes(net, shifts), measured_sizes(tf)
    write_json(args.output, tf.to_json())
    report = {"source": source_sizes(net), "transformer": measured, "formula_matches": predicted == measured}
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        s = report["source"]
        print(f"maxout:      {s['layers']} layers, widths {s['widths']}, max rank {s['max_rank']}, "
              f"{s['parameters']} parameters ({s['nonzero_parameters']} non-zero)")
        print(f"transformer: {measured['blocks']} blocks, {measured['tokens']} tokens, width {measured['width']}, "
              f"heads {measured['heads']}, {measured['parameters']} parameters "
              f"({measured['nonzero_parameters']} non-zero), numerators ≤ {measured['numerator_bits']} bits, "
              f"denominators ≤ {measured['denominator_bits']} bits")
        print(f"C4 sizes {'match' if predicted == measured else 'DO NOT match'} the closed formula; "
              f"wrote {args.output} in {seconds:.2f} s")
    if predicted != measured:
        diff = {k: (predicted[k], measured[k]) for k in predicted if predicted[k] != measured[k]}
        print(f"C4 mismatch (formula, built): {diff}")
        return 1
    return 0
