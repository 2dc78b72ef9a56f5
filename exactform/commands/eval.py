"""``exactform eval MODEL --points P.json [--json]``: exact outputs as rational strings."""
from __future__ import annotations

import json

from ..formats import InputError
from ..models import Transformer, load_model
from ..points import check_domain, encode_points, read_points


def add_parser(sub):
    p = sub.add_parser("eval", help="evaluate a model on points")
    p.add_argument("model", help="exactform/maxout@1 or exactform/transformer@1 JSON")
    p.add_argument("--points", required=True, help='JSON list of points, e.g. [["1/2", "-3"]]')
    p.add_argument("--json", action="store_true", help='print {"outputs": [[...], ...]}')
    p.add_argument("--allow-outside", action="store_true",
                   help="evaluate points outside the model's domain (no claim holds there)")
    p.add_argument("--backend", choices=("exact",), default="exact")
    return p


def run(args) -> int:
    model = load_model(args.model)
    if isinstance(model, Transformer) and not model.is_hardmax:
        raise InputError(args.model, "attention", "softmax attention has no exact rational value; "
                         "exact evaluation takes hardmax models")
    points = read_points(args.points, model.input_dim)
    if not args.allow_outside:
        check_domain(points, model.domain, args.points)
    outputs = encode_points(model.evaluate_batch(points))
    if args.json:
        print(json.dumps({"outputs": outputs}))
    else:
        for x, y in zip(encode_points(points), outputs):
            print(f"{' '.join(x)} -> {' '.join(y)}")
    return 0
