"""Claim C1 (attention-max): a hardmax head with constant positive query scale and key = value
returns the maximum of its values over the tokens, ties included.

Proved three ways: symbolically with SymPy for every weak ordering of T = 1..4 values (argmax set
decided by the signs of symbolic gaps, output simplified against ``Max``); over the reals with Z3
for T = 1..8 when ``exactform.provers.smt`` is installed (unsat queries); and per instance, for
every head of the Transformers compiled from the example and random nets (each is recognised as
a max head of its unit by ``provers.symbolic.analyse`` and by the checker's ``checker.construction.Walk``).

Run: ``python proofs/C1.py [--json] [--out DIR]``; exit 0 when proved, 1 otherwise.
"""
import sys
import time

from _common import arguments, finish, pairs, write_certificate

from exactform.checker import reader, construction
from exactform.provers.write import certify
from exactform.provers.symbolic import hardmax_max_identity


def main() -> int:
    args = arguments(__doc__)
    ok = True
    for T in range(1, 5):
        start = time.perf_counter()
        n = hardmax_max_identity(T)
        print(f"SymPy: T = {T}: hardmax output = Max(v) for all {n} weak orderings ({time.perf_counter() - start:.2f} s)")
    try:
        from exactform.provers.smt import c1_queries, solve
    except ImportError:
        print("Z3: exactform.provers.smt is not available; the real-arithmetic proof for T = 1..8 was not run")
    else:
        for q in c1_queries(8):
            answer = solve(q.smtlib)
            ok &= answer == "unsat"
            print(f"Z3: {q.name}: {answer}")
    heads = 0
    for name, net, tf in pairs():
        cert = certify(net, tf)
        problems = cert.problems["C1"]
        ok &= not problems
        doc = cert.document                                       # the checker's own walk counts the heads it verified
        try:
            checked = construction.Walk(reader.read_maxout(doc["maxout"], "maxout"),
                                reader.read_transformer(doc["transformer"], "transformer"), doc["hints"], "")
        except reader.Refuted as e:
            ok, count, problems = False, 0, problems or [str(e)]
        else:
            count = checked.heads
            ok &= count == sum(len(block) for block in doc["hints"]["pieces"])
        heads += count
        print(f"instance {name}: {count} heads are max heads" if not problems else f"instance {name}: {problems[0]}")
        write_certificate(args, "C1", name, cert)
    return finish(args, "C1", ok, f"hardmax with constant query and key = value is the max (SymPy T ≤ 4, "
                  f"Z3 T ≤ 8 when available, {heads} heads)", heads=heads)


if __name__ == "__main__":
    sys.exit(main())
