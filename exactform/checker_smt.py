"""``exactform check --smt``: a second, solver-based proof of the checker's obligations, with every
query built here (z3's Python API) from the embedded models as the checker walked them; nothing
of the certificate reaches the solver as text.

Per fixed phase and per token-shift sum, one query: the variables in their boxes (widened by the
softmax perturbation, if any) and the violation (off: pre > 0; on: pre < 0; a sum ≥ 0); it must be
unsat.  Plus the hardmax lemma at the Transformer's
T: with scores α·v_j + β (α > 0), the average of the values over the argmax set is the maximum.
Each query has a time limit, all of them together a cap; a solver that cannot answer fails.
"""
from __future__ import annotations

import time

QUERY_MS = 20_000
TOTAL_SECONDS = 600


def hardmax_lemma(z3, T: int):
    """The negation of the lemma at T tokens (unsat: the lemma holds)."""
    v, alpha, beta = [z3.Real(f"v{j}") for j in range(T)], z3.Real("alpha"), z3.Real("beta")
    s = [alpha * x + beta for x in v]
    top, best = z3.Real("top"), z3.Real("best")
    tied = [s_j == top for s_j in s]
    count = z3.Sum([z3.If(c, 1, 0) for c in tied])
    return [alpha > 0, *[top >= x for x in s], z3.Or([top == x for x in s]),
            *[best >= x for x in v], z3.Or([best == x for x in v]),
            z3.Sum([z3.If(c, x, 0) for c, x in zip(tied, v)]) != best * count]


def prove_obligations(walk) -> list:
    try:
        import z3
    except ImportError:
        return [("smt", False, "--smt needs z3 (pip install z3-solver)")]
    queries = [(f"block {b} token {t}", _phase_query(z3, walk, form, sign)) for b, t, form, sign in walk.obligations]
    queries.append((f"hardmax lemma at T = {walk.tf.tokens}", hardmax_lemma(z3, walk.tf.tokens)))
    start = time.monotonic()
    for name, facts in queries:
        if time.monotonic() - start > TOTAL_SECONDS:
            return [("smt", False, f"stopped at {name}: the {TOTAL_SECONDS} s cap on solver time was reached")]
        solver = z3.Solver()
        solver.set("timeout", QUERY_MS)
        solver.add(*facts)
        answer = solver.check()
        if answer != z3.unsat:
            return [("smt", False, f"{name}: z3 says {answer}, expected unsat")]
    return [("smt", True, f"{len(queries)} Z3 queries derived from the models are unsat: every fixed ReLU phase "
                          f"and token-shift sum, and the hardmax lemma at T = {walk.tf.tokens}")]


def _phase_query(z3, walk, form, sign):
    variables, facts = {}, []

    def term(form):
        out = []
        for k, a in form.items():
            if k == -1:
                out.append(z3.RealVal(f"{a.numerator}/{a.denominator}"))
                continue
            if k not in variables:
                x = variables[k] = z3.Real(f"x{k}")
                lo, hi = walk.box[k]
                e = walk.err[k]
                facts.extend([x >= z3.RealVal(str(lo - e)), x <= z3.RealVal(str(hi + e))])
            out.append(z3.RealVal(f"{a.numerator}/{a.denominator}") * variables[k])
        return z3.Sum(out) if out else z3.RealVal(0)

    pre = term(form)
    return facts + [pre > 0 if sign == -1 else pre < 0 if sign == -2 else pre >= 0]
