"""C1–C5 (docs/spec.md §6.3–§6.6): the walk of a certificate's Transformer against its Maxout net with
exact affine forms, C4's closed formula, the statements and the verdict (standard library only)."""

from fractions import Fraction
from itertools import chain

from .cost import WALK_WORK, bits, walk_work
from .reader import (
    FORMAT,
    ONE,
    Maxout,
    Refuted,
    Result,
    Transformer,
    _fail,
    bounded,
    combine,
    domain,
    fields,
    integer,
    interval,
    items,
    load,
    rational,
    read_maxout,
    read_transformer,
    slack,
    Tally,
    text,
)

CLAIMS = {"equality": ("C1", "C2", "C3", "C4"), "softmax": ("C5",)}
MAX_LN_DIGITS = 60  # digits of the ln T bound, so its series check stays small


def form_of(weights: dict, bias, start: int) -> dict:
    """The affine form ``Σ a_c·x_{start+c} + bias`` of a row over the variables from ``start`` on."""
    return combine([(1, {start + c: a for c, a in weights.items()})], bias)


def _negated(form: dict) -> dict:
    """−form."""
    return {k: -x for k, x in form.items()}


class Walk:
    """C1–C3 and C5 (§6.3): each token's state is an exact affine form in M's variables (inputs, then each
    layer's units, in interval boxes); under softmax ``err`` bounds their perturbation.  Refuted: a failed step."""

    def __init__(self, net: Maxout, tf: Transformer, hints: dict, at: str, ln_tokens=None, record=False):
        self.net, self.tf, self.hints, self.at, self.ln_tokens = net, tf, hints, at, ln_tokens
        self.heads, self.pairs, self.c2 = 0, 0, None  # c2: the first token-shift defect, if any
        self.obligations = [] if record else None  # (block, token, form, sign ≥ 0 or ≤ 0) for --smt
        self.box, self.starts, self.pieces = list(net.box), [0], []
        for layer in net.layers:
            start = self.starts[-1]
            forms = [[form_of(w, b, start) for w, b in unit] for unit in layer]
            self.pieces.append(forms)
            self.starts.append(len(self.box))
            self.box += [
                (max(lo for lo, _ in ivs), max(hi for _, hi in ivs))
                for ivs in ([interval(f, self.box) for f in unit] for unit in forms)
            ]
            bounded(chain(*self.box[start:]), f"{at}maxout.layers[{len(self.pieces) - 1}]: interval bounds")
        self.err = [Fraction(0)] * len(self.box)
        if tf.box != net.box or len(tf.readout) != len(net.readout):
            raise Refuted("Tf's domain or output size is not M's")
        self.bound = self.run()

    def run(self) -> Fraction:
        """Walk every block of Tf (docs/spec.md §6.3, §6.5); the bound on |Tf − M| (0 under hardmax)."""
        tf, net, at = self.tf, self.net, self.at
        kinds = [b[0] for b in tf.blocks]
        phases = items(self.hints["phases"], f"{at}hints.phases", kinds.count("feedforward"))
        pieces = items(self.hints["pieces"], f"{at}hints.pieces", len(net.layers))
        if kinds.count("attention") != len(net.layers):
            raise Refuted(f"Tf has {kinds.count('attention')} attention blocks, M has {len(net.layers)} layers")
        X = [[combine([(1, e)], p[r]) for r, e in enumerate(tf.embed)] for p in tf.position]
        for b, block in enumerate(tf.blocks):
            k = kinds[:b].count(block[0])  # the block's number among blocks of its kind
            if block[0] == "feedforward":
                X = self.feedforward(
                    b, block, X, phases[k], f"{at}hints.phases[{k}]", kinds[b + 1 : b + 2] == ["attention"]
                )
            else:
                X = self.attention(b, block[1], X, k, pieces[k], f"{at}hints.pieces[{k}]")
            bounded(self.err, f"{at}transformer.blocks[{b}]")  # the forms' numbers: combine checks each one
        forms = [combine(((a, X[tf.token][r]) for r, a in w.items()), c) for w, c in tf.readout]
        for o, (form, (w, c)) in enumerate(zip(forms, net.readout)):
            if form != form_of(w, c, self.starts[-1]):
                raise Refuted(f"output {o} of Tf (token {tf.token}) is not M's output {o} as an affine map")
        return max((slack(f, self.err) for f in forms), default=Fraction(0))

    def feedforward(self, b, block, X, hint, where, pieces_block):
        """A feed-forward block under its phase hints: identity pairs and fixed ReLU phases (docs/spec.md §6.3)."""
        _, w1, b1, columns, b2 = block
        out, pres_by_token, phases = [], [], []
        for t, Xt in enumerate(X):
            phase = [
                integer(p, f"{where}[{t}][{u}]", -2, len(w1) - 1)
                for u, p in enumerate(items(items(hint, where, len(X))[t], f"{where}[{t}]", len(w1)))
            ]
            pres = [combine(((a, Xt[c]) for c, a in r.items()), b1[u]) for u, r in enumerate(w1)]
            terms = [[(1, f)] for f in Xt]
            for u, p in enumerate(phase):
                if p >= 0:  # an identity pair with hidden unit p: ReLU(v) − ReLU(−v) = v
                    paired = phase[p] == u and pres[p] == _negated(pres[u]) and columns[p] == _negated(columns[u])
                    if p == u or not paired:
                        raise Refuted(f"block {b} token {t}: hidden units {u} and {p} are not an identity pair")
                else:  # -1 off (pre ≤ 0), -2 on (pre ≥ 0) over the box, perturbation included
                    lo, hi = interval(pres[u], self.box, self.err)
                    if (p == -1 and hi > 0) or (p == -2 and lo < 0):
                        raise Refuted(
                            f"block {b} token {t} hidden unit {u}: the phase {'off' if p == -1 else 'on'} does not "
                            f"hold, the pre-activation reaches {text(hi if p == -1 else lo)} on the domain"
                        )
                    if self.obligations is not None:
                        self.obligations.append((b, t, pres[u], p))
                if p == -2 or u < p:  # "on", or the first half of an identity pair: adds column·pre
                    for r, a in columns[u].items():
                        terms[r].append((a, pres[u]))
            out.append([ts[0][1] if len(ts) == 1 and not c else combine(ts, c) for ts, c in zip(terms, b2)])
            pres_by_token.append(pres)
            phases.append(phase)
        if pieces_block:
            self.token_shift(b, pres_by_token, phases)
        return out

    def token_shift(self, b, pres, phases):
        """C2: an identity pair of a pieces block is one in exactly one token (its owner); in each
        other token both ReLUs are off and their pre-activations sum to less than 0 on the box."""
        for u, p in dict.fromkeys((u, p) for phase in phases for u, p in enumerate(phase) if u < p):
            ts = [t for t, phase in enumerate(phases) if phase[u] == p]
            owners = set(ts)
            self.pairs += 1
            if len(ts) > 1 and self.c2 is None:
                self.c2 = f"block {b}: hidden units {u}, {p} form an identity pair in tokens {ts}"
            for t in (t for t in range(len(phases)) if t not in owners):
                both = combine([(1, pres[t][u]), (1, pres[t][p])])
                if self.c2 is None and (
                    phases[t][u] != -1 or phases[t][p] != -1 or interval(both, self.box, self.err)[1] >= 0
                ):
                    self.c2 = (
                        f"block {b}: the pair of hidden units {u}, {p} (owner token {ts[0]}) in token {t} is "
                        "not both off with a negative sum on the domain"
                    )
                elif self.obligations is not None:
                    self.obligations.append((b, t, both, -3))

    def attention(self, b, heads, X, layer, hint, where):
        """An attention block: one head per unit of M's layer, each token's value the hinted piece
        (docs/spec.md §6.3)."""
        units, start = self.pieces[layer], self.starts[layer + 1]
        if len(heads) != len(units):
            raise Refuted(f"block {b}: {len(heads)} heads for the {len(units)} units of M's layer {layer}")
        added = {}
        for i, (query, key, value, output) in enumerate(heads):
            at = f"block {b} head {i}"
            if len(value) != 1:
                raise Refuted(f"{at}: the value is not one-dimensional")
            v = [combine((a, Xt[c]) for c, a in value[0].items()) for Xt in X]
            chosen = [
                integer(j, f"{where}[{i}][{t}]", 0, len(units[i]) - 1)
                for t, j in enumerate(items(items(hint, where, len(heads))[i], f"{where}[{i}]", len(X)))
            ]
            for t, j in enumerate(chosen):
                if v[t] != units[i][j]:
                    raise Refuted(f"{at} token {t}: the value is not piece {j} of unit {i} of M's layer {layer}")
            seen = {frozenset(units[i][j].items()) for j in chosen}
            missing = [j for j, f in enumerate(units[i]) if frozenset(f.items()) not in seen]
            if missing:
                raise Refuted(f"{at}: piece {missing[0]} of unit {i} of M's layer {layer} is no token's value")
            self.err[start + i] = max(slack(f, self.err) for f in v) + (self.max_head(at, query, key, v, X) or 0)
            for r, o in ((r, o) for r, o in enumerate(output) if o):
                added.setdefault(r, {})[start + i] = o[0]
            self.heads += 1
        return [[combine([(1, f), (1, added[r])]) if r in added else f for r, f in enumerate(Xt)] for Xt in X]

    def max_head(self, at, query, key, v, X):
        """C1 for one head (§6.3): key row r scores token j as c_r·v_j + β_r(X_j), one c_r and one form β_r for all
        tokens; token t's query is a constant q_t with α_t = Σ_r q_tr·c_r > 0.  Under softmax the offset moves by
        D_t = Σ_r |q_tr|·slack(β_r) between tokens; returns max_t (U/λ + 2·D_t)/α_t (§6.5).  When all values are
        one form, the key rows' forms must be common to all tokens (so is the score) and None is returned."""
        j = next((j for j, f in enumerate(v) if f != v[0]), None)  # None: one value, any α > 0 will do
        k, a = next(iter(combine([(1, v[j]), (-1, v[0])]).items())) if j is not None else (ONE, 1)
        rows = []
        for r, kr in enumerate(key):
            g = [combine((b, Xm[c]) for c, b in kr.items()) for Xm in X]
            c = combine([(1, g[j]), (-1, g[0])]).get(k, 0) / a if j is not None else Fraction(0)
            beta = combine([(1, g[0]), (-c, v[0])])
            if any(combine([(1, g[m]), (-c, v[m])]) != beta for m in range(len(X))):
                raise Refuted(
                    f"{at} key row {r}: the score is not a multiple of the value plus a form common to all tokens"
                )
            rows.append((c, slack(beta, self.err)))
        worst = Fraction(0)
        for t, Xt in enumerate(X):
            q = [combine((b, Xt[c]) for c, b in r.items()) for r in query]
            if any(k != ONE for f in q for k in f):
                raise Refuted(f"{at} token {t}: the query depends on the input")
            q = [f.get(ONE, 0) for f in q]
            if j is None:  # the scores are one number in every token (the key's forms are common): α = 1
                continue
            alpha = sum((qr * c for qr, (c, _) in zip(q, rows)), Fraction(0))
            if alpha <= 0:
                raise Refuted(f"{at} token {t}: the score scale alpha = {text(alpha)} is not positive")
            if self.tf.scale:
                D = sum((abs(qr) * d for qr, (_, d) in zip(q, rows)), Fraction(0))
                worst = max(worst, (self.ln_tokens / self.tf.scale + 2 * D) / alpha)
        return worst if j is not None else None


def sizes(net: Maxout, tf: Transformer) -> tuple[dict, dict]:
    """C4: Tf's sizes as the token-shift construction's closed formula gives them from M, and as built."""
    n = [len(net.box)] + [len(layer) for layer in net.layers]
    L, T, o = len(net.layers), max(len(u) for layer in net.layers for u in layer), len(net.readout)
    w, hidden = 1 + T + 3 * max(n), [h for k in range(1, L + 1) for h in (2 * n[k] * T, 2 * (n[k - 1] + 2 * n[k]))]
    formula = {
        "blocks": ["feedforward", "attention", "feedforward"] * L,
        "tokens": T,
        "width": w,
        "heads": n[1:],
        "hidden": hidden,
        "parameters": w * n[0] + T * w + sum(2 * h * w + h + w for h in hidden) + 4 * w * sum(n[1:]) + o * (w + 1),
    }
    ff, att = [b[1] for b in tf.blocks if b[0] == "feedforward"], [b[1] for b in tf.blocks if b[0] == "attention"]
    built = {
        "blocks": [b[0] for b in tf.blocks],
        "tokens": tf.tokens,
        "width": tf.width,
        "heads": [len(h) for h in att],
        "hidden": [len(w1) for w1 in ff],
        "parameters": tf.width * (len(tf.box) + tf.tokens + len(tf.readout))
        + len(tf.readout)
        + sum(len(w1) * (2 * tf.width + 1) + tf.width for w1 in ff)
        + sum((len(q) + len(k) + 2 * len(v)) * tf.width for heads in att for q, k, v, _ in heads),
    }
    return formula, built


def ln_bound(v, T: int, where: str) -> Fraction:
    """U ≥ ln T, shown by a partial sum Σ_{k ≤ K} U^k/k! ≥ T of e^U (all terms are ≥ 0 for U ≥ 0)."""
    U = rational(v, where)
    if U < 0 or max(len(str(U.numerator)), len(str(U.denominator))) > MAX_LN_DIGITS:
        _fail(where, f"expected a rational ≥ 0 of at most {MAX_LN_DIGITS} digits")
    term = total = Fraction(1)
    for k in range(1, 400):
        if total >= T:
            return U
        term = term * U / k
        total += term
    raise Refuted(f"ln_tokens_upper = {U} is not shown to be at least ln {T} (400 terms of the exponential series)")


def statement(claim: str, walk: Walk, net=None, tf=None, eps=None, formula=None) -> str:
    """The checker's own wording of each claim, filled in with what it recomputed."""
    if claim == "C1":
        return (
            f"every attention head of Tf ({walk.heads} heads, T = {walk.tf.tokens} tokens) is a max head: in each "
            "token its query is constant and its score is a positive multiple of its value plus a constant, so by "
            "the hardmax lemma (proofs/C1.py) it returns the maximum of the values over the tokens, ties included"
        )
    if claim == "C2":
        return (
            f"in each pieces block (a feed-forward block followed by an attention block) each of the {walk.pairs} "
            "identity pairs ReLU(v) - ReLU(-v) = v is one in exactly one token, its owner; in every other token "
            "both ReLUs are off and their pre-activations sum to less than 0, on the whole domain"
        )
    if claim == "C3":
        return (
            f"Tf(x) = M(x) for every x in {domain(walk.net.box)}: in every block and token each "
            "ReLU has a fixed phase on the domain or is half of an identity pair, so each block is affine per "
            "token; the values of each head over the tokens are exactly the pieces of its unit (C1), and the "
            f"read-out of token {walk.tf.token} equals M's read-out"
        )
    if claim == "C4":
        f, n = formula, [len(net.box)] + [len(layer) for layer in net.layers]
        source = sum(len(u) * (n[k] + 1) for k, layer in enumerate(net.layers) for u in layer) + len(net.readout) * (
            n[-1] + 1
        )
        return (
            f"Tf has {len(f['blocks'])} blocks (feed-forward, attention, feed-forward per layer of M), "
            f"T = {f['tokens']} tokens (the largest rank), heads {f['heads']} (the layer widths), width {f['width']} "
            f"= 1 + T + 3N, hidden widths {f['hidden']} and {f['parameters']} parameters, as the closed formula "
            f"of the token-shift construction gives them from M ({len(net.layers)} layers, {source} parameters)"
        )
    return (
        f"|Tf(x) - M(x)| <= {text(walk.bound)} <= eps = {text(eps)} (max norm) for every x in "
        f"{domain(net.box)}, with softmax attention at lambda = {text(tf.scale)}: the argument of C1-C3 holds with "
        f"every fixed ReLU phase kept under the perturbation, and each head adds at most (ln T/lambda + 2 D)/alpha "
        f"<= ({text(walk.ln_tokens)}/lambda + 2 D)/alpha (lemma (a) with perturbed score offsets, docs/spec.md §6.5; "
        "alpha the head's score scale, D the spread of its score offset between tokens)"
    )


def derive(doc, at: str = "", smt: bool = False, limit: int = WALK_WORK, tally: Tally | None = None):
    """Every claim of the certificate's kind re-derived from its models and hints (``derived``: {claim:
    (holds, statement or reason)}), with the kind, models, given claims and walk (None if it stopped); the
    models' entries charged to ``tally`` (a new one when None)."""
    tally = Tally() if tally is None else tally
    fields(doc, at.rstrip(": ") or "certificate", ("format", "kind", "maxout", "transformer", "claims", "hints"))
    if doc["format"] != FORMAT:
        _fail(f"{at}format", f"expected {FORMAT!r} (certify again to update an older certificate)")
    if not isinstance(doc["kind"], str) or doc["kind"] not in CLAIMS:
        _fail(f"{at}kind", f"expected one of {sorted(CLAIMS)}")
    kind, net, tf = (
        doc["kind"],
        read_maxout(doc["maxout"], f"{at}maxout", tally),
        read_transformer(doc["transformer"], f"{at}transformer", tally),
    )
    hints, given = (
        fields(doc["hints"], f"{at}hints", ("phases", "pieces"), ("ln_tokens_upper",) if kind == "softmax" else ()),
        {},
    )
    for i, c in enumerate(items(doc["claims"], f"{at}claims")):
        fields(
            c, f"{at}claims[{i}]", ("id", "statement"), ("eps",) if isinstance(c, dict) and c.get("id") == "C5" else ()
        )
        if not isinstance(c["id"], str) or not isinstance(c["statement"], str) or c["id"] in given:
            _fail(f"{at}claims[{i}]", "expected a distinct string id and a string statement")
        given[c["id"]] = c
    derived, walk = {}, None
    try:
        if (tf.scale is None) != (kind == "equality"):
            raise Refuted(f"an {kind} certificate needs {'hardmax' if kind == 'equality' else 'softmax'} attention")
        U = ln_bound(hints.get("ln_tokens_upper"), tf.tokens, f"{at}hints.ln_tokens_upper") if tf.scale else None
        name = at.rstrip(": ") or "certificate"
        walk_work(net, tf, bits(doc["maxout"], doc["transformer"]), name, limit)
        if smt:
            from .smt import smt_work

            smt_work(tf, name)
        walk = Walk(net, tf, hints, at, U, record=smt)
    except Refuted as e:
        reason = str(e)
    for claim in CLAIMS[kind]:
        if claim == "C4":
            formula, built = sizes(net, tf)
            diff = next((k for k in formula if formula[k] != built[k]), None)
            derived[claim] = (
                diff is None,
                statement(claim, walk, net, tf, formula=formula)
                if diff is None
                else f"Tf's {diff} {built[diff]} differ from the closed formula's {formula[diff]}",
            )
        elif walk is None:
            derived[claim] = (False, reason)
        elif claim == "C2" and walk.c2:
            derived[claim] = (False, walk.c2)
        elif claim == "C5":
            eps = rational(given.get("C5", {}).get("eps"), f"{at}claims (C5).eps")
            derived[claim] = (
                walk.bound <= eps,
                statement(claim, walk, net, tf, eps)
                if walk.bound <= eps
                else f"the recomputed bound {text(walk.bound)} exceeds eps = {text(eps)}",
            )
        else:
            derived[claim] = (True, statement(claim, walk, net, tf))
    return kind, net, tf, given, derived, walk


def _verdict(claim: str, holds: bool, words: str, kind: str, given: dict) -> tuple:
    """``(claim, holds, words)`` of a derived claim against the certificate's: missing, a statement other than
    the checker's, or the derived verdict (docs/spec.md §6.6)."""
    if claim not in given:
        return (claim, False, f"missing: a {kind} certificate must contain {', '.join(CLAIMS[kind])}")
    if holds and given[claim]["statement"] != words:
        return (claim, False, f"the certificate's statement is not the checker's, which is: {words}")
    return (claim, holds, words)


def verify(doc, at: str = "", maxout=None, transformer=None, smt: bool = False, limit: int = WALK_WORK) -> Result:
    """Check a parsed certificate (and bind it to the model files given); never raises Refuted."""
    tally = Tally()
    kind, net, tf, given, derived, walk = derive(doc, at, smt, limit, tally)
    models = []
    for path, role, read in ((maxout, "maxout", read_maxout), (transformer, "transformer", read_transformer)):
        if path:
            models.append((path, role, read(load(path), f"{path}: model", tally)))
    claims = [_verdict(c, holds, words, kind, given) for c, (holds, words) in derived.items()]
    claims += [(c, False, f"not a claim of a {kind} certificate") for c in given if c not in derived]
    for path, role, model in models:
        if model != (net if role == "maxout" else tf):
            claims.append(("binding", False, f"the certificate's {role} is not the model in {path}"))
    if smt and walk is not None:
        from .smt import prove_obligations

        claims += prove_obligations(walk)
    box = domain(net.box)
    if any(not holds for _, holds, _ in claims):
        return Result(1, claims, f"nothing is known: {sum(not h for _, h, _ in claims)} of {len(claims)} checks fail")
    return Result(
        0,
        claims,
        f"Tf(x) = M(x) for every x in {box} (C1-C4)"
        if kind == "equality"
        else f"|Tf(x) - M(x)| <= {given['C5']['eps']} for every x in {box}, softmax lambda = {text(tf.scale)} (C5)",
    )
