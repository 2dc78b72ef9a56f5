"""Claim E1 — models A and B agree on a box, exactly or within ε — checked with ``fractions`` only
(standard library and the checker's reader).  The models are read as affine
forms over the inputs and max / hardmax nodes; the certificate's tree splits the box, fixes nodes on
cells by Farkas witnesses and bounds A − B on every leaf.  Specified in docs/equiv.md."""
from __future__ import annotations

from fractions import Fraction

from .cost import (MAX_WORK, Budget, LeafCost, beyond, bits, block_work, digits, layer_work, named, node_count,
                   readout_work, weight)
from .reader import (FORMAT, ONE, Malformed, Refuted, box, combine, domain, fields, integer, interval, items, load,
                     rational, read_maxout, read_transformer, row, spent)


class Unsupported(ValueError):
    """A model outside the method: softmax attention, or a head whose scores are not affine."""


def key(f: dict) -> tuple:
    return tuple(sorted(f.items()))


def ints(form_key: tuple) -> tuple:
    """A form's key with each coefficient as (numerator, denominator): equal exactly when the key
    is, and hashed as integers (hashing a Fraction costs a modular inverse)."""
    return tuple((k, a.numerator, a.denominator) for k, a in form_key)


def negated(form: dict) -> dict:
    return {k: -x for k, x in form.items()}


class Forms:
    """The node table over a box: ``bounds[v]`` is an exact interval of variable v over the box;
    ``calls[i] = (pieces, form)``: the i-th max built, ``form = max(pieces)`` on the box (the position
    that pairs a node of one model with its counterpart in another, ``relax.pairs``); ``work``: the entries
    its building touched, each step charged before it is taken and refused by ``budget`` (``cost.Budget``)."""

    def __init__(self, cube: list, budget=None):
        self.d, self.bounds, self.nodes, self.index, self.calls = len(cube), list(cube), [], {}, []
        self.work, self.budget = 0, budget

    def charge(self, entries: int, what: str):
        """Count the entries the next step of building touches, before it (refused beyond the budget)."""
        self.work += entries
        if self.budget is not None:
            self.budget(self.work, what)

    def interval(self, f: dict) -> tuple:
        return interval(f, self.bounds)

    def node(self, kind: str, data: tuple, bounds: tuple, name: tuple) -> int:
        """The variable of node ``(kind, data)``, interned under ``name`` (its data as ``ints``)."""
        var = self.index.setdefault(name, len(self.bounds))
        if var == len(self.bounds):
            self.bounds.append(bounds)
            self.nodes.append((kind, data))
        return var

    def max(self, pieces: list) -> dict:
        form = self._max(pieces)
        self.calls.append((list(pieces), form))
        return form

    def _max(self, pieces: list) -> dict:
        ps = list({key(p): p for p in pieces}.values())
        s = max((abs(a) for p in ps for a in p.values()), default=Fraction(1))
        data = tuple(sorted(key({k: a / s for k, a in p.items()}) for p in ps))
        name = ("max",) + tuple(map(ints, data))
        if name in self.index:                                # interned: not fixed by the bounds
            return {self.index[name]: s}
        mirror = len(data) == 2 and not data[0] and self.index.get(("max", (), tuple((k, -n, d) for k, n, d in name[2])))
        if mirror:                                            # max(0, w) = max(0, −w) + w
            return combine([(s, {mirror: Fraction(1)}), (s, dict(data[1]))])
        ivs = [self.interval(p) for p in ps]
        for p, (lo, _) in zip(ps, ivs):
            if all((lo if not q else -hi if not p else self.interval(combine([(1, p), (-1, q)]))[0]) >= 0
                   for q, (_, hi) in zip(ps, ivs) if q is not p):
                return p
        return {self.node("max", data, (max(l for l, _ in ivs) / s, max(h for _, h in ivs) / s), name): s}

    def hardmax(self, pairs: list) -> dict:
        """One output row: the average of the values of the tokens of maximal score."""
        ds = [combine([(1, s), (-1, pairs[0][0])]) for s, _ in pairs]
        dv = [combine([(1, v), (-1, pairs[0][1])]) for _, v in pairs]
        c = next((s.get(k, 0) / a for s, v in zip(ds, dv) for k, a in v.items()), None)
        if c is None or c > 0 and all(s == {k: c * a for k, a in v.items()} for s, v in zip(ds, dv)):
            return self.max([v for _, v in pairs])
        for sm, _ in pairs:
            gaps = [(combine([(1, s), (-1, sm)]), v) for s, v in pairs]
            if all(not g or self.interval(g)[1] < 0 for g, _ in gaps):
                top = [v for g, v in gaps if not g]
                return combine([(Fraction(1, len(top)), v) for v in top])
        ivs, data = [self.interval(v) for _, v in pairs], tuple(sorted((key(s), key(v)) for s, v in pairs))
        name = ("hardmax",) + tuple((ints(s), ints(v)) for s, v in data)
        return {self.node("hardmax", data, (min(l for l, _ in ivs), max(h for _, h in ivs)), name): Fraction(1)}


def linear(weights: dict, xs: list, bias=Fraction(0)) -> dict:
    return combine([(a, xs[k]) for k, a in weights.items()], bias)


def outputs(F: Forms, model) -> list:
    """The model's outputs as forms over F (a Maxout net, or a hardmax Transformer of any blocks)."""
    if hasattr(model, "layers"):
        h = [{i: Fraction(1)} for i in range(F.d)]
        for n, layer in enumerate(model.layers):
            F.charge(layer_work(layer, h), f"layer {n}")
            h = [F.max([linear(w, h, b) for w, b in unit]) for unit in layer]
        F.charge(readout_work(model.readout, h), "the read-out")
        return [(linear(w, h, b)) for w, b in model.readout]
    if model.scale is not None:
        raise Unsupported("softmax attention has no exact rational value")
    X = [[combine([(1, e)], p[c]) for c, e in enumerate(model.embed)] for p in model.position]
    for b, block in enumerate(model.blocks):
        F.charge(block_work(block, X), f"block {b}")
        delta = [[[] for _ in x] for x in X]
        if block[0] == "feedforward":
            for t, x in enumerate(X):
                for w, bias, column in zip(*block[1:4]):
                    r = F.max([linear(w, x, bias), {}])
                    for c, a in column.items():
                        delta[t][c].append((a, r))
        for i, (q, k, v, o) in enumerate(block[1] if block[0] == "attention" else []):
            Q, K, V = ([[linear(r, x) for r in m] for x in X] for m in (q, k, v))
            fixed_q, fixed_k = (all(set(f) <= {ONE} for x in m for f in x) for m in (Q, K))
            if not (fixed_q or fixed_k):
                raise Unsupported(f"block {b} head {i}: query and key both depend on the input, so the scores "
                                  "are not affine")
            for t, x in enumerate(X):
                scores = [combine([(f.get(ONE, 0), g) if fixed_q else (g.get(ONE, 0), f) for f, g in zip(Q[t], K[j])])
                          for j in range(len(X))]
                ys = [F.hardmax([(s, V[j][r]) for j, s in enumerate(scores)]) for r in range(len(v))]
                for c, orow in enumerate(o):
                    delta[t][c] += [(a, ys[r]) for r, a in orow.items()]
        b2 = block[4] if block[0] == "feedforward" else [0] * len(X[0])
        X = [[(combine([(1, f)] + ds, b2[c])) for c, (f, ds) in enumerate(zip(x, dx))] for x, dx in zip(X, delta)]
    F.charge(readout_work(model.readout, X[model.token]), "the read-out")
    return [(linear(w, X[model.token], b)) for w, b in model.readout]


def evaluate(F: Forms, f: dict, memo: dict, decide) -> dict:
    """``f`` as an affine map of x on a cell where ``decide(kind, content)`` fixes each node; the nodes it
    needs are valued bottom-up from an explicit stack (no recursion on the models' depth)."""
    stack = [k for k in f if k >= F.d]
    while stack:
        if (var := stack[-1]) in memo:
            stack.pop()
            continue
        kind, data = F.nodes[var - F.d]
        if needs := [k for form in (data if kind == "max" else (f for pair in data for f in pair)) for k, _ in form
                     if k >= F.d and k not in memo]:
            stack += needs
            continue
        memo[stack.pop()] = _node_value(F, kind, data, memo, decide)
    return _affine(F, f, memo)


def _affine(F: Forms, f, memo: dict) -> dict:
    return combine([(a, {k: Fraction(1)} if k < F.d else memo[k]) for k, a in dict(f).items()])


def _node_value(F: Forms, kind: str, data: tuple, memo: dict, decide) -> dict:
    if kind == "max":
        ps = {key(e): e for e in (_affine(F, p, memo) for p in data)}
        return ps[decide("max", tuple(sorted(ps)))] if len(ps) > 1 else next(iter(ps.values()))
    keys = [key(_affine(F, s, memo)) for s, _ in data]
    distinct = tuple(sorted(set(keys)))
    top = decide("hardmax", distinct) if len(distinct) > 1 else set(distinct)
    win = [_affine(F, v, memo) for s, (_, v) in zip(keys, data) if s in top]
    return combine([(Fraction(1, len(win)), w) for w in win])


def work(tree, models, d: int, F=None, read: int | None = None) -> int:
    """An upper bound on the entries the check touches, weighted by the numbers' size (before the arithmetic it
    bounds): building the models' node table (``F.work``, charged as it is built); per tree node its
    witnesses over the cell's constraints (2·d + depth, each × (d + 2)) and the decisions it inherits; at a leaf,
    without the table, the models' nodes valued as maps of x; with the table ``F`` as built, ``cost.LeafCost``:
    a plain leaf values every node and its 2·m bound witnesses read the constraints; a relaxed leaf its rows'
    bounds (the pairs as ``relax.pairs`` forms them), a back-substitution per ``tighten`` entry and the rows its
    2·m witnesses name (an atom row at most every variable).  ``read``: the models' numbers' bits (``cost.bits``)."""
    nodes, m, cost, total = sum(map(node_count, models)), len(models[0].readout), None, 0
    if F is not None:
        from .relax import pairs
        cost = LeafCost(F, pairs(F, len(F.calls) // 2), [d + len(F.nodes) + 1] * (2 * m))   # the true pairs or more
        total = F.work
    stack, most = [(tree, 2 * d, 0)], bits(models) if read is None else read
    while stack:
        node, cons, decided = stack.pop()
        entries = node.get("decide", []) if isinstance(node, dict) else []
        decided += len(entries) if isinstance(entries, list) else 0
        total += decided + cons * (d + 2) * sum(len(p) + 1 if isinstance(p := e.get("max", e.get("hardmax")), list) else 1
                                                for e in entries if isinstance(e, dict))
        children = node.get("children") if isinstance(node, dict) else None
        if isinstance(children, list) and children:
            stack += [(c, cons + 1, decided) for c in children]
        elif cost is None:
            total += nodes * (d + 1)
        elif isinstance(node, dict) and "relaxed" in node:
            tight = node.get("tighten") if isinstance(node.get("tighten"), list) else []
            witnesses = [named(w) for pair in (node["relaxed"] if isinstance(node["relaxed"], list) else [])
                         if isinstance(pair, list) for w in pair]
            total += cost.leaf([e[0] if isinstance(e, list) and e else None for e in tight], witnesses)
            most = max([most] + [digits(w) for pair in node["relaxed"] if isinstance(pair, list) for w in pair])
        else:
            total += cost.plain() + 2 * m * cons * (d + 2)
    return total * weight(most)


def implied(cons: list, h: dict, strict: bool, w: dict) -> bool:
    """Farkas: with multipliers w of ``cons`` (``(g, "ge"|"gt"|"eq")``), is h − Σ w_i g_i a constant
    c ≥ 0 (strict: c > 0, or c = 0 with a positive multiplier of a "gt" constraint)?"""
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


def covering(g: dict, node: dict, at: str) -> list:
    """``[(child, where, (form, kind))]`` of a split at g (E1, V1): g ≥ 0, g ≤ 0 or g > 0, g = 0, g < 0, the cell covered."""
    children, neg = items(node.get("children"), f"{at}.children"), negated(g)
    parts = {2: [(g, "ge"), (neg, "ge")], 3: [(g, "gt"), (g, "eq"), (neg, "gt")]}.get(len(children))
    if parts is None:
        raise Malformed(f"{at}.children: expected 2 (g ≥ 0, g ≤ 0) or 3 (g > 0, g = 0, g < 0)")
    return [(c, f"{at}.children[{i}]", p) for i, (c, p) in enumerate(zip(children, parts))]


def box_constraints(cube: list) -> list:
    """The box as the cell constraints x_i − lower_i ≥ 0, upper_i − x_i ≥ 0 (indices 2i, 2i + 1)."""
    return [c for i, (lo, hi) in enumerate(cube)
            for c in (({i: Fraction(1), ONE: -lo}, "ge"), ({i: Fraction(-1), ONE: hi}, "ge"))]


def statement(cube: list, tolerance) -> str:
    claim = "A(x) = B(x)" if tolerance is None else f"|A(x) - B(x)|_inf <= {tolerance}"
    return f"{claim} for every x in the box {domain(cube)}"


def read_model(v, where):
    transformer = isinstance(v, dict) and v.get("format") == "exactform/transformer@1"
    return (read_transformer if transformer else read_maxout)(v, where)


def check(cert: dict, name: str, bind_a=None, bind_b=None, limit: int = MAX_WORK) -> str:
    """The statement of E1 if ``cert`` proves it about its models (equal to those of the files ``bind_a`` and
    ``bind_b`` when given) within the work bound ``limit``; ``Refuted`` if not; ``Malformed`` (a ``ValueError``)
    if malformed or beyond the bound."""
    spent[:] = [0, 0]
    fields(cert, name, ("format", "kind", "models", "claims"))
    if cert["format"] != FORMAT or cert["kind"] != "equivalence":
        raise Malformed(f"format, kind: expected {FORMAT!r}, \"equivalence\"")
    a, b = (read_model(m, f"models.{k}") for k, m in sorted(fields(cert["models"], "models", ("a", "b")).items()))
    claim = fields(items(cert["claims"], "claims", 1)[0], "claims[0]", ("id", "statement", "evidence"))
    ev = fields(claim["evidence"], "claims[0].evidence", ("box", "tolerance", "tree"))
    d = len(a.box)
    if claim["id"] != "E1" or len(b.box) != d or len(a.readout) != len(b.readout):
        raise Malformed("claims[0]: expected claim E1 about two models with the same input and output sizes")
    cube = box(ev["box"], "evidence.box", d)
    eps = None if ev["tolerance"] is None else rational(ev["tolerance"], "evidence.tolerance")
    said = statement(cube, eps)
    if claim["statement"] != said:
        raise Refuted(f"{name}: the statement is not {said!r}")
    for role, path, model in (("a", bind_a, a), ("b", bind_b, b)):
        if path is not None and read_model(load(path), f"{path}: model") != model:
            raise Refuted(f"{name}: the certificate's model {role} is not the model in {path}")
        if path is not None and cube != model.box:          # bound: about the files' own domain, not a box of its choice
            raise Refuted(f"{name}: the box {domain(cube)} is not the domain {domain(model.box)} of the model in {path}")
    read = bits((a, b))
    if error := beyond(work(ev["tree"], (a, b), d, read=read), "claims[0].evidence.tree",
                       "tree nodes × decisions × constraints, model sizes", limit):
        raise error
    F = Forms(cube, Budget(limit, weight(read), "models"))          # refused as it grows beyond the bound
    ya = outputs(F, a)
    mark = len(F.calls)
    diff = [(combine([(1, p), (-1, q)])) for p, q in zip(ya, outputs(F, b))]       # charged with the read-outs
    if error := beyond(work(ev["tree"], (a, b), d, F, read), "claims[0].evidence.tree",
                       "the tree, the node table, leaves' bounds, tightenings, witnesses' rows", limit):
        raise error
    related = None

    def xform(v, where):                   # an affine map of x: d coefficients, then the constant
        return {ONE if k == d else k: q for k, q in row(v, where, d + 1).items()}
    stack = [(ev["tree"], "tree", box_constraints(cube), {})]
    while stack:
        node, at, cons, decided = stack.pop()
        allowed = ("decide", "split", "children", "empty", "bound", "relaxed") + ("tighten",) * (isinstance(node, dict) and "relaxed" in node)
        node, decided = fields(node, at, (), allowed), dict(decided)
        entries = items(node.get("decide", []), f"{at}.decide")
        def shows(h, strict, w, where):
            if not implied(cons, h, strict, row(w, where, len(cons))):
                raise Refuted(f"{name}: {where}: the witness does not show {'>' if strict else '≥'} 0")
        for n, e in enumerate(entries):
            where = f"{at}.decide[{n}]"
            kind = "max" if isinstance(e, dict) and "max" in e else "hardmax"
            fields(e, where, (kind, "top", "witness"))
            fs = [xform(p, f"{where}.{kind}[{i}]") for i, p in enumerate(items(e[kind], f"{where}.{kind}"))]
            top = [integer(i, f"{where}.top", 0, len(fs) - 1) for i in items(e["top"], f"{where}.top")]
            if len(top) != 1 and (kind == "max" or not top):
                raise Malformed(f"{where}.top: expected {'one index' if kind == 'max' else 'indices'}")
            for i, (f, w) in enumerate(zip(fs, items(e["witness"], f"{where}.witness", len(fs)))):
                g, at_w, tie = combine([(1, fs[top[0]]), (-1, f)]), f"{where}.witness[{i}]", i in top[1:]
                for h, wi in [(g, items(w, at_w, 2)[0]), (negated(g), w[1])] if tie else \
                        [(g, w)] if i != top[0] else []:
                    shows(h, kind == "hardmax" and not tie, wi, at_w)
            decided[kind, tuple(sorted(map(key, fs)))] = key(fs[top[0]]) if kind == "max" else {key(fs[i]) for i in top}
        if "split" in node:
            stack += [(c, where, cons + [p], decided) for c, where, p in covering(xform(node["split"], f"{at}.split"), node, at)]
        elif "empty" in node:
            shows({}, True, node["empty"], f"{at}.empty")
        elif "relaxed" in node:
            if not eps:
                raise Refuted(f"{name}: {at}: a relaxed leaf shows |A - B| < tolerance, and there is none")
            from .relax import LeafRows, cell_box, infeasible, pairs, tightening      # relaxed leaves only
            related = pairs(F, mark) if related is None else related
            atoms = [combine([(sign, f)], -eps) for f in diff for sign in (1, -1)]
            rows = LeafRows(F, cell_box(cube, cons), atoms, related, tightening(node, at, F, related))
            atoms_at = len(rows) - len(atoms)
            for k, w in enumerate(items(node["relaxed"], f"{at}.relaxed", len(diff))):
                for i, wi in enumerate(items(w, f"{at}.relaxed[{k}]", 2)):
                    where = f"{at}.relaxed[{k}][{i}]"
                    wi = row(wi, where, len(rows))
                    if any(j >= atoms_at and j != atoms_at + 2 * k + i for j in wi) or not infeasible(rows, wi):
                        raise Refuted(f"{name}: {where}: the witness does not show {'' if i else '-'}(A - B)_{k} < {eps} "
                                      "on the leaf's box")
        else:
            try:            # a KeyError can only be a node without a decision on this cell
                D = [evaluate(F, f, memo, lambda *kind_content: decided[kind_content]) for memo in [{}] for f in diff]
            except KeyError:
                raise Refuted(f"{name}: {at}: a node this leaf needs has no decision") from None
            for k, (f, w) in enumerate(zip(D, items(node.get("bound"), f"{at}.bound", len(diff)))):
                for i, sign in ((0, -1), (1, 1)):
                    where = f"{at}.bound[{k}]"
                    shows(combine([(sign, f)], eps or 0), False, items(w, where, 2)[i], f"{where}[{i}]")
    return said
