"""``exactform eval MODEL --points P.json [--json] [--backend exact|torch]``: exact outputs as
rational strings; rigorous enclosures for softmax Transformers (never exact); or float outputs
(JSON numbers) from the torch backend."""
from __future__ import annotations

import json
from fractions import Fraction

from ..formats import InputError
from ..models import Transformer, load_model
from ..numbers import format_rational, outward_decimals
from ..points import check_domain, encode_points, read_points


def add_parser(sub):
    p = sub.add_parser("eval", help="evaluate a model on points")
    p.add_argument("model", help="exactform/maxout@1 or exactform/transformer@1 JSON")
    p.add_argument("--points", required=True, help='JSON list of points, e.g. [["1/2", "-3"]]')
    p.add_argument("--json", action="store_true", help='print {"outputs": [[...], ...]}')
    p.add_argument("--allow-outside", action="store_true",
                   help="evaluate points outside the model's domain (no claim holds there)")
    p.add_argument("--backend", choices=("exact", "torch"), default="exact")
    p.add_argument("--digits", type=int, choices=range(10, 1001), metavar="10..1000",
                   help="softmax Transformers: precision of the rigorous enclosures (default 40)")
    p.add_argument("--dtype", choices=("float32", "float64"), help="torch backend only (default float32)")
    p.add_argument("--device", help="torch backend only: cpu (default) or cuda")
    p.add_argument("--compare", action="store_true",
                   help="torch backend: also evaluate exactly and report the worst |float − exact| (measured exactly)")
    p.add_argument("--margins", action="store_true",
                   help="torch backend, hardmax Transformer: a rigorous bound on |float − exact| per point and the "
                        "hardmax rows whose decision float rounding could have changed")
    return p


TORCH_ONLY = ("dtype", "device", "compare", "margins")


def run(args) -> int:
    if args.backend != "torch":
        given = [f"--{name}" for name in TORCH_ONLY if getattr(args, name) not in (None, False)]
        if given:
            raise InputError(given[0], "", "would be ignored: it applies to --backend torch only")
    model = load_model(args.model)
    softmax = isinstance(model, Transformer) and not model.is_hardmax
    if args.digits is not None and (args.backend == "torch" or not softmax):
        raise InputError("--digits", "", "would be ignored: it sets the enclosures of a softmax Transformer "
                         "(exact backend); this model's outputs are exact")
    args.shown = args.digits or 12                      # digits printed in text mode
    args.digits = args.digits or 40
    if args.backend == "torch":
        from ..errors import requires
        requires("torch", "--backend torch")
        args.dtype, args.device = args.dtype or "float32", args.device or "cpu"
        return _run_torch(args, model)
    points = read_points(args.points, model.input_dim)
    if not args.allow_outside:
        check_domain(points, model.domain, args.points)
    if softmax:
        return _run_enclosure(args, model, points)
    outputs = encode_points(model.evaluate_batch(points))
    if args.json:
        print(json.dumps({"outputs": outputs}))
    else:
        for x, y in zip(encode_points(points), outputs):
            print(f"{shorten(x)} -> {' '.join(y)}")
    return 0


def shorten(values: list[str], keep: int = 6) -> str:
    """A point for a line of text: all of it, or its first and last entries and how many there are."""
    if len(values) <= keep:
        return " ".join(values)
    return f"{' '.join(values[:keep - 2])} … {' '.join(values[-2:])} ({len(values)} inputs)"


def _run_enclosure(args, model, points) -> int:
    """Softmax attention has no exact rational value: print rigorous interval enclosures."""
    from ..geometry.enclosure import enclose
    enclosures = [enclose(model, p, args.digits) for p in points]
    if args.json:
        boxes = [[[format_rational(lo), format_rational(hi)] for lo, hi in e] for e in enclosures]
        print(json.dumps({"enclosures": boxes, "digits": args.digits}))
    else:
        print(f"# softmax(λ = {format_rational(model.attention)}): rigorous enclosures [lo, hi], not exact "
              f"values; computed at {args.digits} digits, shown rounded outward to {args.shown} (--json: exact)")
        for x, e in zip(encode_points(points), enclosures):
            print(f"{shorten(x)} -> " + " ".join("[{}, {}]".format(*outward_decimals(lo, hi, args.shown))
                                                 for lo, hi in e))
    return 0


def _run_torch(args, model) -> int:
    import torch

    from ..backends.torch import evaluate, exact_points_tensor, to_module
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("--device", "", f"{args.device} is not available on this machine")
    if args.device != "cpu" and not args.device.startswith("cuda"):
        raise InputError("--device", "", f"expected cpu or cuda, got {args.device!r}")
    points = read_points(args.points, model.input_dim)
    if not args.allow_outside:
        check_domain(points, model.domain, args.points)
    dtype = getattr(torch, args.dtype)
    outputs = evaluate(to_module(model, dtype, args.device), exact_points_tensor(points, dtype, args.device))
    rows = outputs.cpu().double().tolist()
    report = {"outputs": rows, "backend": "torch", "dtype": args.dtype}
    if args.compare:
        exact = model.evaluate_batch(points)
        errors = [max(abs(Fraction(f) - e) for f, e in zip(row, ref)) for row, ref in zip(rows, exact)]
        report["worst_error"] = format_rational(max(errors))
        report["worst_error_point"] = errors.index(max(errors))
    if args.margins:
        if not isinstance(model, Transformer) or not model.is_hardmax:
            raise InputError(args.model, "attention", "--margins takes a hardmax Transformer")
        from ..backends.differential import margin_check
        margins = margin_check(model, points, dtype, outputs.cpu())
        report["error_bound"], report["undecided_rows"] = margins.bound, margins.undecided
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"# {args.dtype} results from the torch backend on {args.device} (rounded, not exact)")
    for x, y in zip(encode_points(points), rows):
        print(f"{shorten(x)} -> {' '.join(repr(v) for v in y)}")
    if args.compare:
        print(f"# worst |float − exact| = {float(Fraction(report['worst_error'])):.3g} "
              f"(exactly {report['worst_error']}) at point {report['worst_error_point']}")
    if args.margins:
        undecided = sum(1 for u in report["undecided_rows"] if u)
        print(f"# rigorous bound on |float − exact|: at most {max(report['error_bound']):.3g} over these points; "
              f"{undecided} of {len(points)} points have a hardmax row that float rounding could have flipped")
    return 0
