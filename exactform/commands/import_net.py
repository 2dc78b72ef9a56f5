"""``exactform import NET.onnx|.nnet|.pt|.pt2 (--domain L:U[,L:U...] | --vnnlib PROP) -o NET.json``:
an exact Maxout net, checked against the source's own float evaluation at sampled points."""
from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

from ..formats import InputError, write_json
from ..models.box import parse_domain


def add_parser(sub):
    p = sub.add_parser("import", help="import an ONNX, .nnet, torch.save or torch.export network exactly")
    p.add_argument("net", help="NET.onnx, NET.nnet, NET.pt (a torch.save'd nn.Module) or NET.pt2 (a torch.export "
                   "program, torch.export.save)")
    box = p.add_mutually_exclusive_group(required=True)
    box.add_argument("--domain", help="input box: one L:U for all inputs or one per input (row-major "
                     "order of the flattened input), e.g. -1:1 or 0:1,-1/2:1/2")
    box.add_argument("--vnnlib", metavar="PROP", help="take the input box from the X_i bounds of a VNN-LIB property")
    p.add_argument("--input-shape", help="the input tensor shape of a .pt module, e.g. 1,1,28,28 "
                   "(default: 1,in_features of a first Linear)")
    p.add_argument("-o", "--output", required=True, help="where to write the exactform/maxout@1 JSON")
    p.add_argument("--strip-softmax", action="store_true", help="drop a final Softmax/LogSoftmax (strictly "
                   "increasing along its axis: the argmax is unchanged, the values are the logits); said on "
                   "stderr and in the net's provenance")
    p.add_argument("--no-verify", action="store_true", help="skip the sampled self-check against the source")
    p.add_argument("--samples", type=int, default=32, help="points of the self-check (default 32)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    return p


def run(args) -> int:
    from ..formats import output_file
    from ..importers import import_network, reference
    from ..importers.verify import EXACT_TO, self_check
    shape = _shape(args.input_shape)
    if output_file(args.output, "-o").resolve() == Path(args.net).resolve():
        raise InputError("-o", "", f"{args.output} is the network being imported")
    if args.vnnlib:
        from ..importers.vnnlib import read_box
        domain, skipped = read_box(args.vnnlib)
    else:
        domain, skipped = parse_domain(args.domain), 0
    if args.samples < 3 or args.samples > 100000:
        raise InputError("--samples", "", f"expected 3 .. 100000 points, got {args.samples}")
    notes: list[str] = []
    start = time.perf_counter()
    with warnings.catch_warnings():          # torch's notices are not exactform's to print
        warnings.simplefilter("ignore")
        net = import_network(args.net, domain, shape, notes, args.vnnlib or "--domain", broadcast=not args.vnnlib,
                             strip_softmax=args.strip_softmax)
    seconds = time.perf_counter() - start
    for line in net.provenance:
        print(f"exactform: note: {line}", file=sys.stderr)
    summary = {"widths": net.widths, "max_rank": net.max_rank, "parameters": net.parameter_count(),
               "seconds": round(seconds, 3), "output": args.output, "rounded": notes, "exact_to": EXACT_TO,
               "provenance": list(net.provenance)}
    lines = [f"imported {args.net}: widths {net.widths}, max rank {net.max_rank}, {net.parameter_count()} "
             f"parameters, exact, in {seconds:.2f} s",
             f"exact to: {EXACT_TO}"]
    if args.vnnlib:
        lines.append(f"domain: the X_i bounds of {args.vnnlib} ({skipped} output assertion(s) not used)")
    lines += [f"rounded: {n}" for n in notes]
    status = 0
    if args.no_verify:
        summary["self_check"] = None
        lines.append("self-check: skipped (--no-verify)")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check = self_check(net, reference(args.net, shape, args.strip_softmax), count=args.samples)
        summary["self_check"] = {"points": check.points, "worst": check.worst, "tolerance": check.tolerance,
                                 "source": check.source, "agrees": check.ok}
        lines.append(check.line())
        status = 0 if check.ok else 1
    if status == 0:
        write_json(args.output, net.to_json())
        lines.append(f"wrote {args.output}")
    else:
        lines.append(f"not written: {args.output} (the exact net and the source disagree beyond the tolerance)")
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print("\n".join(lines), file=sys.stdout if status == 0 else sys.stderr)
    return status


def _shape(text: str | None):
    if text is None:
        return None
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise InputError("--input-shape", "", f"expected sizes such as 1,1,28,28, got {text[:40]!r}") from None
    if not shape or min(shape) < 1 or len(shape) > 8:
        raise InputError("--input-shape", "", f"expected 1 to 8 positive sizes, got {text[:40]!r}")
    return shape
