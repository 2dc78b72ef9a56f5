"""SMT queries (claims C1, C2, C3) as SMT-LIB 2 text: each fact holds iff its query is unsat.

Queries are generated as text (z3 parses text far faster than it builds terms through its Python
API) with exact rationals written ``(/ 3 4)``, ``(- 5)``; no float literal ever appears.  What the
Transformer computes is read from the Transformer's own weights; the Maxout net supplies only the
target pieces and the layer boxes ``B_l`` (exact interval bounds of ``h^l`` over ``B0``).

The compositional chain for the token-shift construction (docs/spec.md §2): token t enters layer l in the
state ``σ_t(h) = [1, c_j = [t ≠ j], h, z = 0, out = 0]`` with ``h = h^l ∈ B_l``.  The C3 queries
check that the embedding produces ``σ_t(x)``; that the pieces block gives token t ``z_i = a_{i,t}(h)``
(pieces padded to T by repeating the last one) and writes nothing else; that every head has query 1
and key = value = ``z_i`` and writes its result to ``out_i`` only (so hardmax returns the max, by C1);
that the advance block maps ``[h, z, out = m]`` to ``σ_t(m)``; and that the read-out is the net's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

from ..geometry.bounds import Interval, maxout_bounds
from ..forms import CONSTANT, combine
from ..layout import CONSTRUCTION, SHAPES, Layout, padded_piece
from ..models import FeedForward, MaxoutNet, Transformer


Affine = dict[str, Fraction]
"""A linear form ``Σ coef·var + const`` as ``{var: coef, CONSTANT: const}`` (zero entries omitted)."""

State = dict[int, Affine]
"""A token column as one linear form per coordinate; coordinates absent are 0."""

E2E_MAX_PARAMETERS = 40
"""Largest Maxout parameter count ``end_to_end_query`` accepts: the whole-network query grows
exponentially hard with size (measured with z3 on 2 cores: 37 parameters, T = 2, 0.2–0.4 s; 38
parameters, T = 4, 2–4 s; a prototype at 54 parameters timed out after 120 s)."""


@dataclass(frozen=True)
class Query:
    """One SMT-LIB 2 script; the fact named ``name`` (part of ``claim``) holds iff it is unsat."""
    name: str
    claim: str
    smtlib: str


# --- SMT-LIB text ---------------------------------------------------------------------------------

def rational(q: Fraction | int) -> str:
    """An exact SMT-LIB real: ``3``, ``(- 5)``, ``(/ 3 4)``, ``(- (/ 3 4))``."""
    n, d = abs(q.numerator), q.denominator
    body = str(n) if d == 1 else f"(/ {n} {d})"
    return f"(- {body})" if q < 0 else body


def term(form: Affine) -> str:
    parts = []
    for var, coef in form.items():
        if var == CONSTANT:
            parts.append(rational(coef))
        elif coef == 1:
            parts.append(var)
        else:
            parts.append(f"(* {rational(coef)} {var})")
    if not parts:
        return "0"
    return parts[0] if len(parts) == 1 else f"(+ {' '.join(parts)})"


def constant(c: Fraction) -> Affine:
    return {CONSTANT: Fraction(c)} if c else {}


def row_times(row: dict[int, Fraction], state: State, bias: Fraction = Fraction(0)) -> Affine:
    """``row · state + bias`` for a sparse row (cost: the non-zeros both have)."""
    return combine([(Fraction(1), constant(bias)), *((a, state[c]) for c, a in row.items() if c in state)])


def script(logic: str, variables: list[str], facts: list[str]) -> str:
    lines = [f"(set-logic {logic})"]
    lines += [f"(declare-fun {v} () Real)" for v in variables]
    lines += [f"(assert {f})" for f in facts]
    lines.append("(check-sat)")
    return "\n".join(lines) + "\n"


def any_of(facts: list[str]) -> str:
    if not facts:
        return "false"
    return facts[0] if len(facts) == 1 else f"(or {' '.join(facts)})"


def in_box(names: list[str], box: list[Interval]) -> list[str]:
    return [f"(<= {rational(lo)} {v} {rational(hi)})" for v, (lo, hi) in zip(names, box)]


def relu(name: str, pre: Affine) -> str:
    """The fact ``name = max(pre, 0)``."""
    p = term(pre)
    return f"(= {name} (ite (> {p} 0) {p} 0))"


def is_max(name: str, terms: list[str]) -> str:
    """The fact ``name = max(terms)``."""
    return f"(and {' '.join(f'(>= {name} {x})' for x in terms)} {any_of([f'(= {name} {x})' for x in terms])})"


# --- C1: hardmax returns the max ------------------------------------------------------------------

def hardmax_fact(scores: list[str], values: list[str], out: str) -> str:
    """The fact making ``out`` the hardmax average of ``values`` under ``scores``:
    ``A_j = 1/|M|`` on ``M = argmax_j scores_j`` (ties share equally), written ``|M|·out = Σ_M v_j``."""
    T = len(scores)
    win = [f"(and {' '.join(f'(>= {scores[j]} {scores[k]})' for k in range(T))})" for j in range(T)]
    count = f"(+ 0 {' '.join(f'(ite {w} 1 0)' for w in win)})"
    total = f"(+ 0 {' '.join(f'(ite {w} {v} 0)' for w, v in zip(win, values))})"
    return any_of([f"(and (= {count} {c}) (= (* {c} {out}) {total}))" for c in range(1, T + 1)])


def c1_queries(max_tokens: int = 8) -> list[Query]:
    """C1: for T = 1..max_tokens and all real ``v``, a hardmax head with constant query 1 and
    key = value = ``v`` (scores ``s_j = 1·v_j``) returns ``max_j v_j``, ties included."""
    queries = []
    for T in range(1, max_tokens + 1):
        v = [f"v{j}" for j in range(T)]
        facts = [hardmax_fact([f"(* 1 {x})" for x in v], v, "out"), is_max("m", v), "(distinct out m)"]
        queries.append(Query(f"C1 hardmax max T={T}", "C1", script("QF_LRA", v + ["out", "m"], facts)))
    return queries


# --- reading the token-shift construction ---------------------------------------------------------

def layout_of(net: MaxoutNet, tf: Transformer) -> Layout:
    """The token-shift layout the Transformer declares, checked against its shape and the net's."""
    lay = Layout.from_json(tf.layout)
    if tf.width != lay.width or tf.tokens != lay.tokens:
        raise ValueError(f"the Transformer does not declare the {CONSTRUCTION} layout")
    T, n = lay.tokens, lay.n
    if T != net.max_rank or n < max(net.widths) or len(tf.blocks) != 3 * len(net.layers) \
            or not tf.is_hardmax or tf.domain != net.domain:
        raise ValueError("the Transformer is not a hardmax token-shift construction of this net "
                         "(tokens, width, block count or domain differ)")
    for l in range(len(net.layers)):
        if [b.kind for b in tf.blocks[3 * l:3 * l + 3]] != [s.kind for s in SHAPES]:
            raise ValueError(f"layer {l}: blocks {3 * l}..{3 * l + 2} are not FF, attention, FF")
    return lay


def canonical_state(lay: Layout, t: int, h: list[Affine]) -> State:
    """``σ_t(h)``: token t entering a layer with input ``h``."""
    state = {lay.const: constant(Fraction(1))}
    state.update((lay.shift(j), constant(Fraction(1))) for j in range(lay.tokens) if j != t)
    state.update((lay.h(i), form) for i, form in enumerate(h))
    return state


def variables(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def forms(names: list[str]) -> list[Affine]:
    return [{v: Fraction(1)} for v in names]


def vector(names: list[str]) -> State:
    """The variables ``names`` as a state (coordinate i holds ``names[i]``)."""
    return dict(enumerate(forms(names)))


def rename(form: Affine, old: list[str], new: list[str]) -> Affine:
    table = dict(zip(old, new))
    return {table.get(v, v): c for v, c in form.items()}


def embedded(tf: Transformer, t: int, x: list[str]) -> State:
    """Token t after the embedding, ``E x + P[t]``, read from the Transformer."""
    state = {r: combine([(Fraction(1), constant(tf.embed_bias[t][r])),
                        *((a, {x[c]: Fraction(1)}) for c, a in tf.embed_weight[r].items())]) for r in range(tf.width)}
    return {r: f for r, f in state.items() if f}


def written(block: FeedForward) -> list[int]:
    return [r for r in range(len(block.w2)) if any(block.w2[r].values()) or block.b2[r]]


# --- C2: token-shift regions ----------------------------------------------------------------------

def c2_queries(net: MaxoutNet, tf: Transformer) -> list[Query]:
    """C2: in every pieces block, for the ReLU pair ``(u, v)`` of unit i and piece j (hidden units
    ``2(iT+j)``, ``2(iT+j)+1``, owner token j): over ``h, h' ∈ B_l`` and every other token t, both
    ``u_t(h')`` and ``v_t(h')`` are ``≤ 0`` (off), and ``(u_t(h'), v_t(h')) ≠ (u_j(h), v_j(h))``
    (disjoint regions).  The shift of each token is read from the block's weights on ``σ_t``; the
    other tokens enter as the set of their distinct shift pairs, so the cost is at most linear in T
    (one disjunct per distinct shift, usually one)."""
    lay = layout_of(net, tf)
    bounds = maxout_bounds(net)
    T, queries = tf.tokens, []
    for l, layer in enumerate(net.layers):
        block = tf.blocks[3 * l]
        if block.hidden != 2 * layer.units * T:
            raise ValueError(f"layer {l}: the pieces block has {block.hidden} hidden units, "
                             f"expected 2·{layer.units}·{T}")
        n_in = net.widths[l]
        h, h2 = variables("h", n_in), variables("g", n_in)
        box = in_box(h, bounds.inputs[l]) + in_box(h2, bounds.inputs[l])
        states = [canonical_state(lay, t, forms(h)) for t in range(T)]
        for i in range(layer.units):
            for j in range(T):
                k = 2 * (i * T + j)
                u, v = ([row_times(block.w1[m], states[t], block.b1[m]) for t in range(T)] for m in (k, k + 1))
                shifts = {(u[t].get(CONSTANT, 0), v[t].get(CONSTANT, 0)) for t in range(T) if t != j}
                u_lin, v_lin = ({x: c for x, c in f[j].items() if x != CONSTANT} for f in (u, v))
                u_other, v_other = (term(rename(f, h, h2)) for f in (u_lin, v_lin))
                cases = []
                for su, sv in sorted(shifts):
                    uo = f"(+ {u_other} {rational(su)})"
                    vo = f"(+ {v_other} {rational(sv)})"
                    cases.append(f"(or (> {uo} 0) (> {vo} 0) (and (= {uo} {term(u[j])}) (= {vo} {term(v[j])})))")
                queries.append(Query(f"C2 layer {l + 1} unit {i} piece {j}", "C2",
                                     script("QF_LRA", h + h2, box + [any_of(cases)])))
    return queries


# --- C3: the blocks compose to the Maxout net -----------------------------------------------------

def feedforward_check(block: FeedForward, state: State, expected: dict[int, Affine]) -> tuple[list[str], list[str]]:
    """Variables and facts of ``∃ state: some coordinate r of the block's output ≠ expected[r]``
    (only the hidden units that coordinate reads get a ReLU variable)."""
    names, facts, wrong = [], [], []
    for r, want in expected.items():
        out = dict(state.get(r, {}))
        for k, a in sorted(block.w2[r].items()):
            if a:
                y = f"y{k}"
                if y not in names:
                    names.append(y)
                    facts.append(relu(y, row_times(block.w1[k], state, block.b1[k])))
                out = combine([(Fraction(1), out), (a, {y: Fraction(1)})])
        out = combine([(Fraction(1), out), (Fraction(1), constant(block.b2[r]))])
        wrong.append(f"(distinct {term(out)} {term(want)})")
    return names, facts + [any_of(wrong)]


def per_token(name: str, tokens: int, build) -> list[Query]:
    """C3 queries ``build(t)`` for every token, identical scripts merged (a block that never reads
    the shift coordinates gives one query for all tokens)."""
    merged: dict[str, list[int]] = {}
    for t in range(tokens):
        merged.setdefault(build(t), []).append(t)
    return [Query(f"{name} token{'s' if len(ts) > 1 else ''} {','.join(map(str, ts))}", "C3", text)
            for text, ts in merged.items()]


def c3_queries(net: MaxoutNet, tf: Transformer) -> list[Query]:
    """C3, compositionally: every block of ``tf`` maps the layer's state to the next one's for
    all h in the layer box (see the module docstring).  The pieces block gets one query per
    (layer, token, unit).  Hardmax returning the max is C1's, needed for ``T = tf.tokens``
    (``c1_queries(tf.tokens)``); the boxes ``B_l`` are sound by exact interval arithmetic."""
    lay, bounds, T = layout_of(net, tf), maxout_bounds(net), tf.tokens
    x = variables("h", net.input_dim)

    def embedding(t: int) -> str:
        state = embedded(tf, t, x)
        want = canonical_state(lay, t, forms(x))
        wrong = [f"(distinct {term(state.get(r, {}))} {term(want.get(r, {}))})"
                 for r in range(tf.width) if state.get(r, {}) != want.get(r, {})]
        return script("QF_LRA", x, in_box(x, bounds.inputs[0]) + [any_of(wrong)])

    queries = per_token("C3 embedding", T, embedding)
    for l, layer in enumerate(net.layers):
        pieces, heads, advance = tf.blocks[3 * l:3 * l + 3]
        h, m, z = variables("h", net.widths[l]), variables("m", layer.units), variables("z", layer.units)
        box = in_box(h, bounds.inputs[l])
        stray = [r for r in written(pieces) if r not in {lay.z(i) for i in range(layer.units)}]
        for i in list(range(layer.units)) + ([None] if stray else []):
            def piece(t: int, i=i) -> str:
                state = canonical_state(lay, t, forms(h))
                if i is None:
                    expected = {r: state.get(r, {}) for r in stray}
                else:
                    ws, b = layer.piece(i, padded_piece(layer.ranks[i], t))
                    expected = {lay.z(i): combine([(Fraction(1), constant(b)),
                                                  *((a, {v: Fraction(1)}) for a, v in zip(ws, h))])}
                names, facts = feedforward_check(pieces, state, expected)
                return script("QF_LRA", h + names, box + facts)
            what = f"unit {i}" if i is not None else "writes nothing else"
            queries += [Query(f"C3 layer {l + 1} token {t} pieces {what}", "C3", piece(t)) for t in range(T)]

        if len(heads.heads) != layer.units:
            raise ValueError(f"layer {l + 1}: {len(heads.heads)} heads for {layer.units} units")

        def head_form(t: int) -> str:
            state = canonical_state(lay, t, forms(h))
            for i, v in enumerate(z):
                state[lay.z(i)] = {v: Fraction(1)}
            wrong = []
            for i, head in enumerate(heads.heads):
                if len(head.query) != 1 or len(head.value) != 1:
                    wrong.append("true")
                    continue
                q, k, v = (row_times(mat[0], state) for mat in (head.query, head.key, head.value))
                wrong += [f"(distinct {term(q)} 1)", f"(distinct {term(k)} {z[i]})", f"(distinct {term(v)} {z[i]})"]
            out_unit = {lay.out(i): i for i in range(layer.units)}
            for r in range(tf.width):
                delta = combine([*((head.output[r].get(0, 0), {m[i]: Fraction(1)}) for i, head in enumerate(heads.heads)
                                  if len(head.value) == 1)])
                want = {m[out_unit[r]]: Fraction(1)} if r in out_unit else {}
                if delta != want:
                    wrong.append(f"(distinct {term(delta)} {term(want)})")
            return script("QF_LRA", h + z + m, box + [any_of(wrong)])

        queries += per_token(f"C3 layer {l + 1} attention: query 1, key = value = z_i, output out_i", T, head_form)

        groups: dict = {i: [lay.h(i), lay.z(i), lay.out(i)] for i in range(max(net.widths[l], layer.units))}
        grouped = {r for g in groups.values() for r in g}
        groups["others"] = [r for r in written(advance) if r not in grouped]
        for g, rows in groups.items():
            if not rows:
                continue

            def step(t: int, rows=rows) -> str:
                state = canonical_state(lay, t, forms(h))
                for i in range(layer.units):
                    state[lay.z(i)], state[lay.out(i)] = {z[i]: Fraction(1)}, {m[i]: Fraction(1)}
                want = canonical_state(lay, t, forms(m))
                names, facts = feedforward_check(advance, state, {r: want.get(r, {}) for r in rows})
                return script("QF_LRA", h + z + m + names,
                              box + in_box(m, bounds.inputs[l + 1]) + facts)
            queries += per_token(f"C3 layer {l + 1} advance {'unit ' if isinstance(g, int) else ''}{g}", T, step)

    h = variables("h", net.widths[-1])
    state = canonical_state(lay, tf.readout_token, forms(h))
    wrong = [f"(distinct {term(row_times(rt, state, ct))} {term(row_times(dict(enumerate(rm)), vector(h), cm))})"
             for rt, ct, rm, cm in zip(tf.readout_weight, tf.readout_bias, net.readout_weight, net.readout_bias)]
    if len(tf.readout_weight) != net.output_dim:
        wrong = ["true"]
    queries.append(Query("C3 read-out", "C3", script("QF_LRA", h, in_box(h, bounds.inputs[-1]) + [any_of(wrong)])))
    return queries


# --- C3 end to end (tiny networks) ----------------------------------------------------------------

def end_to_end_query(net: MaxoutNet, tf: Transformer, max_parameters: int = E2E_MAX_PARAMETERS) -> Query:
    """C3 as one query: ``∃x ∈ B0: Tf(x) ≠ M(x)``, with every block of ``tf`` encoded from its
    weights (ReLUs as ``ite``, hardmax by its argmax-average definition).  Refused beyond
    ``max_parameters`` Maxout parameters: the query's difficulty grows exponentially with size;
    use ``c2_queries`` and ``c3_queries`` there."""
    if net.parameter_count() > max_parameters:
        raise ValueError(f"end-to-end query is for tiny networks only: {net.parameter_count()} Maxout "
                         f"parameters > {max_parameters}; use the compositional C2/C3 queries instead")
    if not tf.is_hardmax:
        raise ValueError("end-to-end query needs a hardmax Transformer")
    T, names, facts, logic = tf.tokens, [], [], ["QF_LRA"]
    x = variables("x", net.input_dim)
    facts += in_box(x, list(zip(net.domain.lower, net.domain.upper)))

    def fresh(prefix: str, form: Affine) -> Affine:
        """A new variable equal to ``form`` (keeps terms short); constants stay constants."""
        if set(form) <= {CONSTANT}:
            return form
        name = f"{prefix}_{len(names)}"
        names.append(name)
        facts.append(f"(= {name} {term(form)})")
        return {name: Fraction(1)}

    def product(a: Affine, b: Affine) -> str:
        if set(a) <= {CONSTANT} or set(b) <= {CONSTANT}:
            c, f = (a.get(CONSTANT, 0), b) if set(a) <= {CONSTANT} else (b.get(CONSTANT, 0), a)
            return term(combine([(c, f)]))
        logic[0] = "QF_NRA"
        return f"(* {term(a)} {term(b)})"

    states = [embedded(tf, t, x) for t in range(T)]
    for b, block in enumerate(tf.blocks):
        if isinstance(block, FeedForward):
            rows = written(block)
            for t, state in enumerate(states):
                act = []
                for k in range(block.hidden):
                    pre = row_times(block.w1[k], state, block.b1[k])
                    if set(pre) <= {CONSTANT}:
                        act.append(constant(max(pre.get(CONSTANT, Fraction(0)), Fraction(0))))
                    else:
                        y = f"y{b}_{t}_{k}"
                        names.append(y)
                        facts.append(relu(y, pre))
                        act.append({y: Fraction(1)})
                for r in rows:
                    change = combine([(Fraction(1), constant(block.b2[r])),
                                     *((a, act[k]) for k, a in sorted(block.w2[r].items()) if a)])
                    state[r] = fresh(f"s{b}", combine([(Fraction(1), state.get(r, {})), (Fraction(1), change)]))
        else:
            delta: list[State] = [{} for _ in range(T)]
            for e, head in enumerate(block.heads):
                q = [[row_times(row, s) for row in head.query] for s in states]
                k = [[row_times(row, s) for row in head.key] for s in states]
                v = [[row_times(row, s) for row in head.value] for s in states]
                for i in range(T):
                    scores = [f"(+ 0 {' '.join(product(a, c) for a, c in zip(q[i], k[j]))})" for j in range(T)]
                    for c in range(len(head.value)):
                        o = f"o{b}_{e}_{i}_{c}"
                        names.append(o)
                        facts.append(hardmax_fact(scores, [term(v[j][c]) for j in range(T)], o))
                        for r in range(tf.width):
                            if head.output[r].get(c):
                                delta[i][r] = combine([(Fraction(1), delta[i].get(r, {})),
                                                      (head.output[r][c], {o: Fraction(1)})])
            for state, change in zip(states, delta):
                for r, form in change.items():
                    state[r] = fresh(f"s{b}", combine([(Fraction(1), state.get(r, {})), (Fraction(1), form)]))

    h = vector(x)
    for l, layer in enumerate(net.layers):
        units = []
        for i in range(layer.units):
            name = f"n{l}_{i}"
            names.append(name)
            facts.append(is_max(name, [term(row_times(dict(enumerate(w)), h, c)) for w, c in zip(layer.weight[i], layer.bias[i])]))
            units.append(name)
        h = vector(units)
    out = states[tf.readout_token]
    wrong = [f"(distinct {term(row_times(rt, out, ct))} {term(row_times(dict(enumerate(rm)), h, cm))})"
             for rt, ct, rm, cm in zip(tf.readout_weight, tf.readout_bias, net.readout_weight, net.readout_bias)]
    if len(tf.readout_weight) != net.output_dim:
        wrong = ["true"]
    return Query("C3 end to end: exists x in B0 with Tf(x) != M(x)", "C3-e2e",
                 script(logic[0], x + names, facts + [any_of(wrong)]))


# --- solving --------------------------------------------------------------------------------------

def solve(smtlib: str, solver: str = "z3", timeout_ms: int = 10000) -> str:
    """``"unsat"`` (the fact holds), ``"sat"`` (refuted) or ``"unknown"`` (timeout, gave up)."""
    if solver == "z3":
        import z3
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.from_string(smtlib)
        return str(s.check())
    if solver == "cvc5":
        if "cvc5" not in solvers():
            raise ValueError("solver 'cvc5' is not installed (optional: pip install cvc5)")
        import cvc5
        tm = cvc5.TermManager()
        s = cvc5.Solver(tm)
        s.setOption("tlimit-per", str(timeout_ms))
        parser = cvc5.InputParser(s)
        parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, smtlib, "query")
        symbols, answer = parser.getSymbolManager(), "unknown"
        while not (command := parser.nextCommand()).isNull():
            text = command.invoke(s, symbols).strip()
            if text in ("sat", "unsat", "unknown"):
                answer = text
        return answer
    raise ValueError(f"unknown solver {solver!r}: expected 'z3' or 'cvc5'")


def solvers() -> list[str]:
    """The solvers installed here: z3 always, cvc5 when its Python package imports."""
    try:
        import cvc5  # noqa: F401
        return ["z3", "cvc5"]
    except ImportError:
        return ["z3"]


def run_queries(queries: list[Query], solver: str = "z3", timeout_ms: int = 10000) -> list[tuple[Query, str, float]]:
    """Each query with its answer and solve time in seconds."""
    out = []
    for q in queries:
        start = time.perf_counter()
        answer = solve(q.smtlib, solver, timeout_ms)
        out.append((q, answer, time.perf_counter() - start))
    return out
