"""Claim E1 — two models agree on a box (exactly, or within a tolerance ε) — checked with
``fractions`` only; standard library and ``exactform.checker``'s strict reader, nothing else.

Semantics.  Both models are read as exact affine forms ``{variable: coefficient}`` over the inputs
x_0..x_{d-1} and interned *nodes*, ONE the constant: a max node ``max(p_1, …, p_k)`` (Maxout units,
ReLUs as ``max(v, 0)``, max heads) and a hardmax node (one output row of a head at one token: the
average of the values of the tokens whose score is maximal).  Every rewrite below is an identity
for every x in the box: pieces deduplicated and scaled by a positive s (``max(s·p) = s·max(p)``);
a piece that dominates every other by the exact interval bounds over the box replaces the node;
``max(0, v) − max(0, −v) = v`` (identity pairs); a head whose score differences are a positive
constant times its value differences returns the max of the values (ties hold equal values); a
head whose tokens tie as forms averages them.  A head whose query and key both vary is refused.

Certificate.  ``evidence.tree`` splits the box: ``{"split": g, "kind": "closed"}`` has children on
g ≥ 0 and −g ≥ 0; ``"strict"`` on g > 0, g = 0, −g > 0, so the leaves cover the box by
construction.  A tree node's ``decide`` entries fix nodes on its whole subtree: a max whose pieces
evaluate to the listed affine maps takes piece ``win``, a hardmax whose distinct scores are the
listed maps takes the average over ``top``; each inequality carries a Farkas witness (multipliers
of the cell's constraints: ≥ 0 on inequalities, any sign on equalities).  A leaf is ``{"empty":
witness}`` (its constraints imply 0 > 0) or ``{"bound": …}``: with every node of A − B evaluated
by the decisions, witnesses of ε − (A − B)_k ≥ 0 and ε + (A − B)_k ≥ 0 per output k.
"""
from __future__ import annotations

from fractions import Fraction

from .checker import FORMAT, Malformed, box, fields, integer, items, rational, read_maxout, read_transformer, row

ONE = -1
MAX_TREE = 10 ** 6          # tree nodes and decisions: bounds the work on a hostile certificate


class Refuted(Exception):
    """The certificate does not prove E1 (exit 1)."""


class Unsupported(ValueError):
    """A model outside the method: softmax attention, or a head whose scores are not affine."""


def key(f: dict) -> tuple:
    return tuple(sorted(f.items()))


def combine(terms, constant=Fraction(0)) -> dict:
    """``Σ a·f + constant`` over ``terms = [(a, f)]``, zero coefficients dropped."""
    out = {ONE: Fraction(constant)} if constant else {}
    for a, f in terms:
        if a:
            sign = 1 if a == 1 else -1 if a == -1 else 0
            for k, v in f.items():
                x = v if sign == 1 else -v if sign else a * v
                old = out.get(k)
                out[k] = x if old is None else old + x
    return {k: v for k, v in out.items() if v}


class Forms:
    """The node table over a box: ``bounds[v]`` is an exact interval of variable v over the box."""

    def __init__(self, domain: list):
        self.d, self.bounds, self.nodes, self.index = len(domain), list(domain), [], {}

    def interval(self, f: dict) -> tuple:
        lo = hi = f.get(ONE, Fraction(0))
        for k, a in f.items():
            if k != ONE:
                l, h = self.bounds[k] if a > 0 else self.bounds[k][::-1]
                lo, hi = lo + a * l if l else lo, hi + a * h if h else hi
        return lo, hi

    def node(self, kind: str, data: tuple, bounds: tuple) -> int:
        var = self.index.get((kind, data))
        if var is None:
            var = self.index[kind, data] = len(self.bounds)
            self.bounds.append(bounds)
            self.nodes.append((kind, data))
        return var

    def max(self, pieces: list) -> dict:
        ps = list({key(p): p for p in pieces}.values())
        if len(ps) == 1:
            return ps[0]
        s = max(abs(a) for p in ps for a in p.values())
        data = tuple(sorted(key({k: a / s for k, a in p.items()}) for p in ps))
        if ("max", data) in self.index:                       # interned: not fixed by the bounds
            return {self.index["max", data]: s}
        mirror = len(data) == 2 and not data[0] and self.index.get(("max", ((), tuple((k, -a) for k, a in data[1]))))
        if mirror:                                            # max(0, w) = max(0, −w) + w
            return combine([(s, {mirror: Fraction(1)}), (s, dict(data[1]))])
        ivs = [self.interval(p) for p in ps]
        for p, (lo, _) in zip(ps, ivs):
            if all((lo if not q else -hi if not p else self.interval(combine([(1, p), (-1, q)]))[0]) >= 0
                   for q, (_, hi) in zip(ps, ivs) if q is not p):
                return p
        return {self.node("max", data, (max(l for l, _ in ivs) / s, max(h for _, h in ivs) / s)): s}

    def hardmax(self, pairs: list) -> dict:
        """One output row: the average of the values of the tokens of maximal score."""
        ds = [combine([(1, s), (-1, pairs[0][0])]) for s, _ in pairs]
        dv = [combine([(1, v), (-1, pairs[0][1])]) for _, v in pairs]
        c = next((s.get(k, 0) / a for s, v in zip(ds, dv) for k, a in v.items()), None)
        if c is None:
            return pairs[0][1]
        if c > 0 and all(s == {k: c * a for k, a in v.items()} for s, v in zip(ds, dv)):
            return self.max([v for _, v in pairs])
        for sm, _ in pairs:
            gaps = [(combine([(1, s), (-1, sm)]), v) for s, v in pairs]
            if all(not g or self.interval(g)[1] < 0 for g, _ in gaps):
                top = [v for g, v in gaps if not g]
                return combine([(Fraction(1, len(top)), v) for v in top])
        ivs = [self.interval(v) for _, v in pairs]
        data = tuple(sorted((key(s), key(v)) for s, v in pairs))
        return {self.node("hard", data, (min(l for l, _ in ivs), max(h for _, h in ivs))): Fraction(1)}


def linear(weights: dict, xs: list, bias=Fraction(0)) -> dict:
    return combine([(a, xs[k]) for k, a in weights.items()], bias)


def outputs(F: Forms, model) -> list:
    """The model's outputs as forms over F (a Maxout net, or a hardmax Transformer of any blocks)."""
    if hasattr(model, "layers"):
        h = [{i: Fraction(1)} for i in range(F.d)]
        for layer in model.layers:
            h = [F.max([linear(w, h, b) for w, b in unit]) for unit in layer]
        return [(linear(w, h, b)) for w, b in model.readout]
    if model.scale is not None:
        raise Unsupported("softmax attention has no exact rational value")
    X = [[combine([(1, e)], p[c]) for c, e in enumerate(model.embed)] for p in model.position]
    for b, block in enumerate(model.blocks):
        delta = [[[] for _ in x] for x in X]
        if block[0] == "feedforward":
            _, w1, b1, w2, _ = block
            for t, x in enumerate(X):
                for w, bias, column in zip(w1, b1, w2):
                    r = F.max([linear(w, x, bias), {}])
                    for c, a in column.items():
                        delta[t][c].append((a, r))
        for i, (q, k, v, o) in enumerate(block[1] if block[0] == "attention" else []):
            Q, K, V = ([[linear(r, x) for r in m] for x in X] for m in (q, k, v))
            for t, x in enumerate(X):
                scores = [_score(Q[t], K[j], b, i) for j in range(len(X))]
                ys = [F.hardmax([(s, V[j][r]) for j, s in enumerate(scores)]) for r in range(len(v))]
                for c, orow in enumerate(o):
                    delta[t][c] += [(a, ys[r]) for r, a in orow.items()]
        b2 = block[4] if block[0] == "feedforward" else [0] * len(X[0])
        X = [[(combine([(1, f)] + ds, b2[c])) for c, (f, ds) in enumerate(zip(x, dx))] for x, dx in zip(X, delta)]
    return [(linear(w, X[model.token], b)) for w, b in model.readout]


def _score(q: list, k: list, block: int, head: int) -> dict:
    if all(set(f) <= {ONE} for f in q):
        return combine([(f.get(ONE, 0), g) for f, g in zip(q, k)])
    if all(set(g) <= {ONE} for g in k):
        return combine([(g.get(ONE, 0), f) for f, g in zip(q, k)])
    raise Unsupported(f"block {block} head {head}: query and key both depend on the input, "
                      "so the scores are not affine")


def evaluate(F: Forms, f: dict, memo: dict, decide) -> dict:
    """``f`` as an affine map of x on a cell where ``decide(kind, content)`` fixes each node."""
    terms = []
    for k, a in f.items():
        terms.append((a, {ONE: Fraction(1)} if k == ONE else {k: Fraction(1)} if k < F.d else
                      memo[k] if k in memo else _node_value(F, k, memo, decide)))
    return combine(terms)


def _node_value(F: Forms, var: int, memo: dict, decide) -> dict:
    kind, data = F.nodes[var - F.d]
    if kind == "max":
        ps = {key(e): e for e in (evaluate(F, dict(p), memo, decide) for p in data)}
        value = ps[decide("max", tuple(sorted(ps)))] if len(ps) > 1 else next(iter(ps.values()))
    else:
        keys = [key(evaluate(F, dict(s), memo, decide)) for s, _ in data]
        distinct = tuple(sorted(set(keys)))
        top = decide("hard", distinct) if len(distinct) > 1 else set(distinct)
        win = [evaluate(F, dict(v), memo, decide) for s, (_, v) in zip(keys, data) if s in top]
        value = combine([(Fraction(1, len(win)), w) for w in win])
    memo[var] = value
    return value


def implied(cons: list, h: dict, strict: bool, w: dict) -> bool:
    """Do the multipliers ``w`` of the constraints ``cons`` (``(g, "ge"|"gt"|"eq")``) show h ≥ 0
    (h > 0 when ``strict``) on the cell?  h − Σ w_i g_i must be a constant c ≥ 0 (c > 0, or c = 0
    with a positive multiplier of a strict constraint, when ``strict``)."""
    r, positive = dict(h), False
    for i, q in w.items():
        g, kind = cons[i]
        if kind != "eq" and q < 0:
            return False
        positive |= kind == "gt" and q > 0
        for k, a in g.items():
            r[k] = r.get(k, 0) - q * a
    c = r.pop(ONE, 0)
    return not any(r.values()) and (c > 0 or (c == 0 and (not strict or positive)))


def statement(domain: list, tolerance) -> str:
    where = " × ".join(f"[{lo}, {hi}]" for lo, hi in domain)
    return (f"A(x) = B(x) for every x in the box {where}" if tolerance is None else
            f"|A(x) − B(x)|∞ ≤ {tolerance} for every x in the box {where}")


def read_model(v, where):
    if isinstance(v, dict) and v.get("format") == "exactform/transformer@1":
        return read_transformer(v, where)
    return read_maxout(v, where)


def check(cert: dict, name: str) -> str:
    """Verify claim E1 of ``cert``; returns its statement; ``Refuted`` when it is not proved,
    ``ValueError`` for a malformed certificate or a model outside the method."""
    try:
        return _check(cert, name)
    except Malformed as e:
        raise ValueError(f"{name}: {e}") from None
    except RecursionError:
        raise ValueError(f"{name}: nesting too deep") from None


def _check(cert: dict, name: str) -> str:
    fields(cert, name, ("format", "models", "claims"))
    if cert["format"] != FORMAT:
        raise Malformed(f"format: expected {FORMAT!r}")
    models = fields(cert["models"], "models", ("a", "b"))
    a, b = read_model(models["a"], "models.a"), read_model(models["b"], "models.b")
    claim = items(cert["claims"], "claims", 1)[0]
    fields(claim, "claims[0]", ("id", "statement", "evidence"))
    ev = fields(claim["evidence"], "claims[0].evidence", ("box", "tolerance", "tree"))
    d = len(a.box)
    if claim["id"] != "E1" or len(b.box) != d or len(a.readout) != len(b.readout):
        raise Malformed("claims[0]: expected claim E1 about two models with the same input and output sizes")
    domain = box(ev["box"], "evidence.box", d)
    eps = None if ev["tolerance"] is None else rational(ev["tolerance"], "evidence.tolerance")
    said = statement(domain, eps)
    if claim["statement"] != said:
        raise Refuted(f"{name}: the statement is not {said!r}")
    F = Forms(domain)
    diff = [(combine([(1, p), (-1, q)])) for p, q in zip(outputs(F, a), outputs(F, b))]

    def xform(v, where):
        r = row(v, where, d + 1)
        return {ONE if k == d else k: q for k, q in r.items()}
    cons = [c for i, (lo, hi) in enumerate(domain) for c in (({i: Fraction(1), ONE: -lo}, "ge"),
                                                            ({i: Fraction(-1), ONE: hi}, "ge"))]
    stack, seen = [(ev["tree"], "tree", cons, {})], 0
    while stack:
        node, at, cons, decided = stack.pop()
        seen += 1 + len(node.get("decide", [])) if isinstance(node, dict) and isinstance(node.get("decide", []), list) else 1
        if seen > MAX_TREE:
            raise Malformed(f"more than {MAX_TREE} tree nodes and decisions")
        node = fields(node, at, (), ("decide", "split", "kind", "children", "empty", "bound"))
        decided = dict(decided)
        witness = lambda v, where: row(v, where, len(cons))  # noqa: E731
        for n, e in enumerate(items(node.get("decide", []), f"{at}.decide")):
            where = f"{at}.decide[{n}]"
            if isinstance(e, dict) and "max" in e:
                fields(e, where, ("max", "win", "witness"))
                ps = [xform(p, f"{where}.max[{i}]") for i, p in enumerate(items(e["max"], f"{where}.max"))]
                j, ws = integer(e["win"], f"{where}.win", 0, len(ps) - 1), items(e["witness"], f"{where}.witness", len(ps))
                if not all(i == j or implied(cons, combine([(1, ps[j]), (-1, p)]), False, witness(w, f"{where}.witness[{i}]"))
                           for i, (p, w) in enumerate(zip(ps, ws))):
                    raise Refuted(f"{name}: {where}: a witness does not show piece {j} maximal")
                decided["max", tuple(sorted(map(key, ps)))] = key(ps[j])
                continue
            fields(e, where, ("scores", "top", "witness"))
            ss = [xform(s, f"{where}.scores[{i}]") for i, s in enumerate(items(e["scores"], f"{where}.scores"))]
            top = [integer(i, f"{where}.top", 0, len(ss) - 1) for i in items(e["top"], f"{where}.top")]
            ws = items(e["witness"], f"{where}.witness", len(ss))
            if not top:
                raise Malformed(f"{where}.top: empty")
            for i, (s, w) in enumerate(zip(ss, ws)):
                g, at_w = combine([(1, ss[top[0]]), (-1, s)]), f"{where}.witness[{i}]"
                ok = (i == top[0] or (implied(cons, g, False, witness(items(w, at_w, 2)[0], at_w)) and
                                      implied(cons, combine([(-1, g)]), False, witness(w[1], at_w))) if i in top
                      else implied(cons, g, True, witness(w, at_w)))
                if not ok:
                    raise Refuted(f"{name}: {where}: a witness does not fix the argmax of score {i}")
            decided["hard", tuple(sorted(map(key, ss)))] = {key(ss[i]) for i in top}
        if "split" in node:
            g = xform(node["split"], f"{at}.split")
            neg = {k: -q for k, q in g.items()}
            kinds = {"closed": [(g, "ge"), (neg, "ge")], "strict": [(g, "gt"), (g, "eq"), (neg, "gt")]}
            if node.get("kind") not in kinds:
                raise Malformed(f"{at}.kind: expected \"closed\" or \"strict\"")
            parts = kinds[node["kind"]]
            children = items(node.get("children"), f"{at}.children", len(parts))
            stack += [(c, f"{at}.children[{i}]", cons + [p], decided) for i, (c, p) in enumerate(zip(children, parts))]
        elif "empty" in node:
            if not implied(cons, {}, True, witness(node["empty"], f"{at}.empty")):
                raise Refuted(f"{name}: {at}: the witness does not show the cell empty")
        else:
            def decide(kind, content):
                if (kind, content) not in decided:
                    raise Refuted(f"{name}: {at}: no decision for a {kind} node on this cell")
                return decided[kind, content]
            memo, bounds = {}, items(node.get("bound"), f"{at}.bound", len(diff))
            for k, (f, w) in enumerate(zip(diff, bounds)):
                D, w = evaluate(F, f, memo, decide), items(w, f"{at}.bound[{k}]", 2)
                if not all(implied(cons, combine([(s, D)], eps or 0), False, witness(w[i], f"{at}.bound[{k}][{i}]"))
                           for i, s in ((0, -1), (1, 1))):
                    raise Refuted(f"{name}: {at}: output {k} is not shown within {eps or 0} on this cell")
    return said
