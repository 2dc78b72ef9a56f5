"""Claim C2 (token-shift regions), with C1 (hardmax max) that the construction also rests on.

For the Maxout nets in ``examples/*.json`` and a seeded random ReLU net, compile the hardmax
Transformer and prove with Z3 (unsat queries) that in every pieces block, for every ReLU pair, the
owner token's pre-activations and the other tokens' lie in disjoint regions and both ReLUs are
off in the other tokens over the whole layer box; and that hardmax with constant query and
key = value returns the max, ties included, for T = 1..8.

Run: ``.venv/bin/python proofs/C2.py [--solver z3|cvc5]``.  Exit 0 when every query is unsat,
1 when one is sat (refuted) or unknown.
"""
import argparse
import json
import random
import sys
import time
from fractions import Fraction

from _common import example_nets

from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.models import Box, MaxoutLayer, MaxoutNet
from exactform.provers.smt import c1_queries, c2_queries, run_queries


def random_relu_net(seed: int, dims: list[int]) -> MaxoutNet:
    """A ReLU net ``max(w·h + b, 0)`` with small random rational weights on ``[-1, 1]^n0``."""
    rng = random.Random(seed)

    def q() -> Fraction:
        return Fraction(rng.randint(-20, 20), rng.choice([1, 2, 3, 4, 5, 8]))

    layers = [MaxoutLayer([[[q() for _ in range(a)], [Fraction(0)] * a] for _ in range(b)],
                          [[q(), Fraction(0)] for _ in range(b)]) for a, b in zip(dims, dims[1:])]
    box = Box(tuple([Fraction(-1)] * dims[0]), tuple([Fraction(1)] * dims[0]))
    return MaxoutNet(box, layers, [[q() for _ in range(dims[-1])]], [q()])


def examples() -> dict[str, MaxoutNet]:
    nets = {path.name: net for path, net in example_nets().items()}
    nets["random ReLU 5→50→50 (seed 0)"] = random_relu_net(0, [5, 50, 50])
    return nets


def report(label: str, results) -> bool:
    failed = [(q.name, a) for q, a, _ in results if a != "unsat"]
    total = sum(t for _, _, t in results)
    status = "proved" if not failed else "FAILED"
    print(f"  {status}: {label}: {len(results) - len(failed)}/{len(results)} unsat, solve {total:.3f} s")
    for name, answer in failed[:10]:
        print(f"    {answer}: {name}")
    return not failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", choices=["z3", "cvc5"], default="z3")
    parser.add_argument("--json", action="store_true", help='print {"claim": "C2", "ok": ...} as the last line')
    parser.add_argument("--out", help="accepted for a uniform interface; C2 writes no certificate")
    args = parser.parse_args()
    ok = True
    print("C1 hardmax with constant query and key = value returns the max (ties included), over the reals")
    ok &= report("T = 1..8", run_queries(c1_queries(8), args.solver))
    print("C2 token-shift regions: owner token and other tokens disjoint, other tokens off on the box")
    for name, net in examples().items():
        tf = compile_maxout(net)
        start = time.perf_counter()
        queries = c2_queries(net, tf)
        built = time.perf_counter() - start
        print(f"  {name}: {len(net.layers)} layers, widths {net.widths}, T = {tf.tokens}, "
              f"{len(queries)} ReLU pairs, queries built in {built:.3f} s")
        ok &= report(name, run_queries(queries, args.solver))
    print("C2 PROVED: C1 and C2 by Z3, every query unsat" if ok else "C2 FAILED: a query is not unsat")
    if args.json:
        print(json.dumps({"claim": "C2", "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
