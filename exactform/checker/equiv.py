"""Claim E1 — models A and B agree on a box, exactly or within ε — checked with ``fractions`` only
(standard library and the checker's reader).  The models are read as affine
forms over the inputs and max / hardmax nodes; the certificate's tree splits the box, fixes nodes on
cells by Farkas witnesses and bounds A − B on every leaf.  Specified in docs/equiv.md."""
from __future__ import annotations

from fractions import Fraction

from .cost import MAX_WORK, Budget, LeafCost, beyond, bits, digits, named, node_count, weight
from .forms import Forms, covering, key, negated, outputs, read_model
from .reader import (FORMAT, ONE, Malformed, Refuted, box, combine, domain, fields, integer, items, load,
                     rational, row, Tally)


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


def box_constraints(cube: list) -> list:
    """The box as the cell constraints x_i − lower_i ≥ 0, upper_i − x_i ≥ 0 (indices 2i, 2i + 1)."""
    return [c for i, (lo, hi) in enumerate(cube)
            for c in (({i: Fraction(1), ONE: -lo}, "ge"), ({i: Fraction(-1), ONE: hi}, "ge"))]


def statement(cube: list, tolerance) -> str:
    claim = "A(x) = B(x)" if tolerance is None else f"|A(x) - B(x)|_inf <= {tolerance}"
    return f"{claim} for every x in the box {domain(cube)}"


def check(cert: dict, name: str, bind_a=None, bind_b=None, limit: int = MAX_WORK) -> str:
    """The statement of E1 if ``cert`` proves it about its models (equal to those of the files ``bind_a`` and
    ``bind_b`` when given) within the work bound ``limit``; ``Refuted`` if not; ``Malformed`` (a ``ValueError``)
    if malformed or beyond the bound."""
    tally = Tally()
    fields(cert, name, ("format", "kind", "models", "claims"))
    if cert["format"] != FORMAT or cert["kind"] != "equivalence":
        raise Malformed(f"format, kind: expected {FORMAT!r}, \"equivalence\"")
    a, b = (read_model(m, f"models.{k}", tally) for k, m in sorted(fields(cert["models"], "models", ("a", "b")).items()))
    claim = fields(items(cert["claims"], "claims", 1)[0], "claims[0]", ("id", "statement", "evidence"))
    ev = fields(claim["evidence"], "claims[0].evidence", ("box", "tolerance", "tree"))
    d = len(a.box)
    if claim["id"] != "E1" or len(b.box) != d or len(a.readout) != len(b.readout):
        raise Malformed("claims[0]: expected claim E1 about two models with the same input and output sizes")
    cube = box(ev["box"], "evidence.box", d, tally)
    eps = None if ev["tolerance"] is None else rational(ev["tolerance"], "evidence.tolerance")
    said = statement(cube, eps)
    if claim["statement"] != said:
        raise Refuted(f"{name}: the statement is not {said!r}")
    for role, path, model in (("a", bind_a, a), ("b", bind_b, b)):
        if path is not None and read_model(load(path), f"{path}: model", tally) != model:
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
