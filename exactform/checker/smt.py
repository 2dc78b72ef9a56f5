"""``exactform check --smt`` (docs/spec.md §6.6): a second, solver-based proof of the checker's obligations,
every query built here (z3's Python API) from the embedded models as the walk saw them; nothing of the
certificate reaches the solver as text.  Per fixed phase and per token-shift sum one query: the variables
in their boxes (widened by the softmax perturbation) and the violation; it must be unsat.  Plus the
hardmax lemma at the Transformer's T, split into T + 1 linear queries.  Each query runs under z3's
deterministic resource limit (``rlimit``), so an answer never depends on the machine's load; "unknown"
is reported as such and fails the check."""

from .reader import Malformed

RLIMIT = 50_000_000  # z3 resource units a query (a rank-64 lemma query takes ~0.5 M)
MAX_TOKENS = 64  # T of the lemma's queries
MAX_QUERIES = 30_000  # queries in all: fixed phases (hidden units × T) and the lemma's T + 1 (~1 ms each)


def smt_work(tf, where: str) -> None:
    """Refuse, before any work, more queries than MAX_QUERIES or a lemma beyond MAX_TOKENS tokens."""
    queries = sum(len(b[1]) for b in tf.blocks if b[0] == "feedforward") * tf.tokens + tf.tokens + 1
    if tf.tokens > MAX_TOKENS or queries > MAX_QUERIES:
        raise Malformed(
            f"{where}: --smt would pose {queries} queries, the lemma's over T = {tf.tokens} tokens: "
            f"beyond the limits {MAX_QUERIES} queries, T <= {MAX_TOKENS}"
        )


def hardmax_lemma(z3, T: int) -> list:
    """The lemma's negation as T + 1 linear queries (all unsat: it holds).  Query j: with top the largest
    score α·v_k + β (α > 0) and best the largest value, token j is tied at the top exactly when v_j = best.
    Last: then the tied values sum to best times their count, Σ_{tied} (v_j − best) = 0, so their average
    (the head's output) is best."""
    v, a, b, top, best = (
        [z3.Real(f"v{j}") for j in range(T)],
        z3.Real("alpha"),
        z3.Real("beta"),
        z3.Real("top"),
        z3.Real("best"),
    )
    s, tied = [a * x + b for x in v], [z3.Bool(f"tied{j}") for j in range(T)]
    maxima = [
        a > 0,
        *[top >= x for x in s],
        z3.Or([top == x for x in s]),
        *[best >= x for x in v],
        z3.Or([best == x for x in v]),
    ]
    return [[*maxima, (s[j] == top) != (v[j] == best)] for j in range(T)] + [
        [
            *[z3.Implies(tied[j], v[j] == best) for j in range(T)],
            z3.Or(tied),
            z3.Sum([z3.If(tied[j], v[j] - best, 0) for j in range(T)]) != 0,
        ]
    ]


def prove_obligations(walk) -> list:
    """``--smt``: the walk's obligations and the hardmax lemma as z3 queries, each required unsat
    (docs/spec.md §6.6)."""
    try:
        import z3
    except ImportError:
        return [("smt", False, "--smt needs z3 (pip install z3-solver)")]
    T = walk.tf.tokens
    queries = [(f"block {b} token {t}", _phase_query(z3, walk, form, sign)) for b, t, form, sign in walk.obligations]
    queries += [(f"hardmax lemma at T = {T}, query {j}", q) for j, q in enumerate(hardmax_lemma(z3, T))]
    for name, facts in queries:
        solver = z3.Solver()
        solver.set("rlimit", RLIMIT)
        solver.add(*facts)
        answer = solver.check()
        if answer != z3.unsat:
            why = f"unknown within z3's resource limit rlimit = {RLIMIT}" if answer == z3.unknown else f"{answer}"
            return [("smt", False, f"{name}: z3 says {why}, expected unsat")]
    return [
        (
            "smt",
            True,
            f"{len(queries)} Z3 queries derived from the models are unsat: every fixed ReLU phase "
            f"and token-shift sum, and the hardmax lemma at T = {T}",
        )
    ]


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
