"""``exactform softmax NET.json --eps 1/1000 -o TF_SOFT.json [--cert CERT.json]``: the token-shift
Transformer with softmax(λ) attention, λ chosen so that the proven bound (claim C5) meets ε."""
from __future__ import annotations

import json

from ..formats import InputError, output_file, write_json
from ..models import MaxoutNet, load_model
from ..numbers import RationalSyntaxError, format_rational, parse_number


def add_parser(sub):
    p = sub.add_parser("softmax", help="softmax(λ) Transformer of a Maxout net with a proven error ≤ eps")
    p.add_argument("net", help="exactform/maxout@1 JSON")
    p.add_argument("--eps", required=True, help="target error bound: 1/1000, 0.001 or 1e-3 (read exactly)")
    p.add_argument("-o", "--output", required=True, help="where to write the exactform/transformer@1 JSON")
    p.add_argument("--cert", help="also write a certificate with claim C5 (checked by `exactform check`)")
    p.add_argument("--lambda", dest="scale", help="use this λ instead of choosing one (exit 1 if it is not "
                   "proved to meet eps; nothing is written then)")
    p.add_argument("--points", help="also evaluate the softmax Transformer at these points (rigorous enclosures)")
    p.add_argument("--digits", type=int, default=40, help="decimal digits of the enclosures (default 40)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def _rational_arg(text: str, name: str):
    try:
        value = parse_number(text)
    except RationalSyntaxError as e:
        raise InputError(f"--{name}", "", str(e)) from None
    if value <= 0:
        raise InputError(f"--{name}", "", f"must be positive, got {text}")
    return value


def run(args) -> int:
    from ..construct.maxout_to_transformer import compile_maxout
    from ..geometry.enclosure import enclose
    from ..provers.softmax import depth_bound, log_lemma, scale_threshold, short_scale
    from ..points import check_domain, read_points

    output_file(args.output, "-o")
    if args.cert is not None:
        output_file(args.cert, "--cert")
    net = load_model(args.net)
    if not isinstance(net, MaxoutNet):
        raise InputError(args.net, "format", "softmax takes a Maxout network")
    eps = _rational_arg(args.eps, "eps")
    points = read_points(args.points, net.input_dim) if args.points else []
    check_domain(points, net.domain, args.points)
    threshold = scale_threshold(net, eps)
    lam = _rational_arg(args.scale, "lambda") if args.scale else None
    if lam is None:
        if threshold is None:
            print("NOT proved: a shift margin R_ij − B_ij is zero, so no λ absorbs the softmax perturbation")
            return 1
        lam = short_scale(threshold)
    result = depth_bound(net, lam)
    lemma = log_lemma(net.max_rank)
    proved = result.holds and result.bound <= eps and lemma.ok
    report = {"lambda": format_rational(lam), "eps": format_rational(eps), "proved": proved,
              "threshold": None if threshold is None else format_rational(threshold),
              "bound": format_rational(result.bound), "margins_hold": result.holds, "lemma_core_proved": lemma.ok}
    tf = compile_maxout(net).with_attention(lam)
    if proved:
        write_json(args.output, tf.to_json())
        if args.cert:
            from ..provers.write import certify_softmax
            cert = certify_softmax(net, tf, eps, result.log_tokens)
            if not cert.holds:
                print(f"NOT certified: {next(p for ps in cert.problems.values() for p in ps)}")
                return 1
            write_json(args.cert, cert.document)
    enclosures = [(x, net(x), enclose(tf, x, args.digits)) for x in points]
    report["enclosures"] = [{"point": [format_rational(a) for a in x], "maxout": [format_rational(a) for a in y],
                             "softmax_enclosure": [[format_rational(lo), format_rational(hi)] for lo, hi in e]}
                            for x, y, e in enclosures]
    if args.json:
        print(json.dumps(report, sort_keys=True))
        return 0 if proved else 1
    _say(args, net, lam, eps, threshold, result, lemma, proved)
    for x, y, e in enclosures:
        err = max(max(hi - b, b - lo) for b, (lo, hi) in zip(y, e))
        print(f"  enclosure at {' '.join(map(format_rational, x))}: Tf_λ ∈ "
              + ", ".join(f"[{float(lo):.12g}, {float(hi):.12g}]" for lo, hi in e)
              + f"; M = {', '.join(f'{float(b):.12g}' for b in y)}; |error| ≤ {float(err):.3g} (sampled point)")
    return 0 if proved else 1


def _say(args, net, lam, eps, threshold, result, lemma, proved) -> None:
    T = net.max_rank
    where = "least integer" if lam >= 1 else "least power of two"
    if threshold is not None and not args.scale:
        print(f"λ = {lam} ({where} ≥ the threshold {float(threshold):.6g} of the proven bound) for eps = {eps}")
    else:
        print(f"λ = {lam} (given) for eps = {eps}; threshold {'none' if threshold is None else f'{float(threshold):.6g}'}")
    print(f"bound: |Tf_λ(x) − M(x)|∞ ≤ ‖A‖∞·e_L = {float(result.bound):.6g} (exact {result.bound}) for every x "
          f"in the domain; per-layer errors e_l = {[f'{float(e):.3g}' for e in result.errors]}, "
          f"Lip_l = {[str(x) for x in result.lipschitz]}")
    print(f"lemma (a) ln(T)/λ at T = {T}: algebraic core {'proved' if lemma.ok else 'NOT proved'} by z3/sympy "
          f"({lemma.seconds:.2f} s); the whole lemma, exp/ln included, is the Coq theorem C5_lemma_a (proofs/coq/)")
    if not result.holds:
        print(f"NOT proved: {len(result.margin_violations)} shift margins do not absorb the perturbation, "
              f"first (layer, unit, slot) = {result.margin_violations[0]}")
    elif not proved:
        print(f"NOT proved: the bound {float(result.bound):.6g} exceeds eps = {eps} at λ = {lam}; nothing written")
    else:
        print(f"proved (C5); wrote {args.output}" + (f" and the certificate {args.cert}" if args.cert else ""))
