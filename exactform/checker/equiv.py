"""Claim E1 — models A and B agree on a box, exactly or within ε — checked with ``fractions`` only
(standard library and the checker's reader).  The models are read into one node table (``forms``) as
affine forms over the inputs and max / hardmax nodes; the certificate's tree splits the box, fixes nodes
on cells by Farkas witnesses and bounds A − B on every leaf.  Specified in docs/spec.md §3 (E1) and
docs/equiv.md "Certificate"."""

from __future__ import annotations

from fractions import Fraction

from .cost import MAX_WORK, Budget, LeafCost, beyond, bits, digits, named, node_count, weight
from .forms import Forms, key, negated, outputs, read_model
from .reader import (
    FORMAT,
    ONE,
    Malformed,
    Refuted,
    box,
    combine,
    domain,
    fields,
    integer,
    items,
    load,
    rational,
    row,
    Tally,
)
from .splits import cell_box, coordinate, coordinate_sides, covering, is_coordinate


def evaluate(F: Forms, f: dict, memo: dict, decide) -> dict:
    """``f`` as an affine map of x on a cell where ``decide(kind, content)`` fixes each node; the nodes it
    needs are valued bottom-up from an explicit stack (no recursion on the models' depth; docs/equiv.md
    "Certificate")."""
    stack = [k for k in f if k >= F.d]
    while stack:
        var = stack[-1]
        if var in memo:
            stack.pop()
            continue
        kind, data = F.nodes[var - F.d]
        needs = [k for k in _node_variables(kind, data) if k >= F.d and k not in memo]
        if needs:
            stack += needs
            continue
        memo[stack.pop()] = _node_value(F, kind, data, memo, decide)
    return _affine(F, f, memo)


def _node_variables(kind: str, data: tuple):
    """The variables a node's forms read: a max node's pieces, a hardmax node's scores and values."""
    if kind == "max":
        forms = data
    else:
        forms = [form for pair in data for form in pair]
    for form in forms:
        for k, _ in form:
            yield k


def _affine(F: Forms, f, memo: dict) -> dict:
    """The form f (a dict or a key) with each node replaced by its value in ``memo``."""
    return combine([(a, {k: Fraction(1)} if k < F.d else memo[k]) for k, a in dict(f).items()])


def _node_value(F: Forms, kind: str, data: tuple, memo: dict, decide) -> dict:
    """A node's value on the cell: the decided piece of a max, the average of the decided tokens' values."""
    if kind == "max":
        pieces = {}
        for p in data:
            e = _affine(F, p, memo)
            pieces[key(e)] = e
        if len(pieces) == 1:
            return next(iter(pieces.values()))
        return pieces[decide("max", tuple(sorted(pieces)))]
    keys = [key(_affine(F, s, memo)) for s, _ in data]
    distinct = tuple(sorted(set(keys)))
    if len(distinct) > 1:
        top = decide("hardmax", distinct)
    else:
        top = set(distinct)
    win = [_affine(F, v, memo) for s, (_, v) in zip(keys, data) if s in top]
    return combine([(Fraction(1, len(win)), w) for w in win])


def work(tree, models, d: int, F=None, read: int | None = None) -> int:
    """An upper bound on the entries the check touches, weighted by the numbers' size (before the arithmetic it
    bounds; docs/spec.md §6.1 "V1 and E1"): building the models' node table (``F.work``, charged as it is
    built); per tree node its witnesses over the cell's constraints (2·d + depth, each × (d + 2)) and the
    decisions it inherits; at a leaf, without the table, the models' nodes valued as maps of x; with the table
    ``F`` as built, ``cost.LeafCost``: a plain leaf values every node and its 2·m bound witnesses read the
    constraints; a relaxed leaf its rows' bounds (the pairs as ``relax.pairs`` forms them), a back-substitution
    per ``tighten`` entry and the rows its 2·m witnesses name (an atom row at most every variable).  ``read``:
    the models' numbers' bits (``cost.bits``)."""
    nodes = sum(map(node_count, models))
    m = len(models[0].readout)
    cost = None
    total = 0
    if F is not None:
        from .relax import pairs

        atom_rows = [d + len(F.nodes) + 1] * (2 * m)
        cost = LeafCost(F, pairs(F, len(F.calls) // 2), atom_rows)  # the true pairs or more
        total = F.work
    most = bits(models) if read is None else read
    stack = [(tree, 2 * d, 0)]
    while stack:
        node, cons, decided = stack.pop()
        is_object = isinstance(node, dict)
        entries = node.get("decide", []) if is_object else []
        if not isinstance(entries, list):  # the check refuses it, naming the field; nothing to charge
            entries = []
        decided += len(entries)
        total += decided + cons * (d + 2) * _decision_witnesses(entries)
        children = node.get("children") if is_object else None
        if isinstance(children, list) and children:
            stack += [(c, cons + 1, decided) for c in children]
        elif cost is None:
            total += nodes * (d + 1)
        elif is_object and "relaxed" in node:
            tighten = node.get("tighten")
            tight = tighten if isinstance(tighten, list) else []
            relaxed = node["relaxed"] if isinstance(node["relaxed"], list) else []
            witnesses = [named(w) for w in _leaf_witnesses(relaxed)]
            total += cost.leaf([e[0] if isinstance(e, list) and e else None for e in tight], witnesses)
            most = max([most] + [digits(w) for w in _leaf_witnesses(relaxed)])
        else:
            total += cost.plain() + 2 * m * cons * (d + 2)
    return total * weight(most)


def _decision_witnesses(entries) -> int:
    """The witnesses a node's decisions carry: one per piece or token, and one more, per decision."""
    count = 0
    for e in entries:
        if not isinstance(e, dict):
            continue
        pieces = e.get("max", e.get("hardmax"))
        count += len(pieces) + 1 if isinstance(pieces, list) else 1
    return count


def _leaf_witnesses(relaxed) -> list:
    """The witnesses of a relaxed leaf's pairs that are lists, before the check reads them."""
    out = []
    for pair in relaxed:
        if isinstance(pair, list):
            out += pair
    return out


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
    constraints = []
    for i, (lo, hi) in enumerate(cube):
        constraints.append(({i: Fraction(1), ONE: -lo}, "ge"))
        constraints.append(({i: Fraction(-1), ONE: hi}, "ge"))
    return constraints


def statement(cube: list, tolerance) -> str:
    """The statement of E1, written by the checker from the box and the tolerance (docs/spec.md §3)."""
    claim = "A(x) = B(x)" if tolerance is None else f"|A(x) - B(x)|_inf <= {tolerance}"
    return f"{claim} for every x in the box {domain(cube)}"


def check(cert: dict, name: str, bind_a=None, bind_b=None, limit: int = MAX_WORK) -> str:
    """The statement of E1 if ``cert`` proves it about its models (equal to those of the files ``bind_a`` and
    ``bind_b`` when given) within the work bound ``limit``; ``Refuted`` if not; ``Malformed`` (a ``ValueError``)
    if malformed or beyond the bound (docs/equiv.md "Certificate")."""
    tally = Tally()
    fields(cert, name, ("format", "kind", "models", "claims"))
    if cert["format"] != FORMAT or cert["kind"] != "equivalence":
        raise Malformed(f'format, kind: expected {FORMAT!r}, "equivalence"')
    models = fields(cert["models"], "models", ("a", "b"))
    a, b = (read_model(m, f"models.{k}", tally) for k, m in sorted(models.items()))
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
        _bind(name, role, path, model, cube, tally)
    read = bits((a, b))
    error = beyond(
        work(ev["tree"], (a, b), d, read=read),
        "claims[0].evidence.tree",
        "tree nodes × decisions × constraints, model sizes",
        limit,
    )
    if error:
        raise error
    F = Forms(cube, Budget(limit, weight(read), "models"))  # refused as it grows beyond the bound
    ya = outputs(F, a)
    mark = len(F.calls)
    diff = [combine([(1, p), (-1, q)]) for p, q in zip(ya, outputs(F, b))]  # charged with the read-outs
    error = beyond(
        work(ev["tree"], (a, b), d, F, read),
        "claims[0].evidence.tree",
        "the tree, the node table, leaves' bounds, tightenings, witnesses' rows",
        limit,
    )
    if error:
        raise error
    _Tree(name, F, mark, diff, cube, eps).walk(ev["tree"])
    return said


def _bind(name: str, role: str, path, model, cube: list, tally: Tally):
    """A bound file's model is the certificate's, and the box is its domain (not a box of the certificate's
    choice; docs/spec.md §7 binding)."""
    if path is None:
        return
    if read_model(load(path), f"{path}: model", tally) != model:
        raise Refuted(f"{name}: the certificate's model {role} is not the model in {path}")
    if cube != model.box:
        raise Refuted(f"{name}: the box {domain(cube)} is not the domain {domain(model.box)} of the model in {path}")


class _Tree:
    """The walk of E1's tree (docs/equiv.md "Certificate"): each node's decisions are shown on its cell by
    Farkas witnesses, a split covers the cell, an empty leaf is infeasible, a plain leaf bounds A − B as
    affine maps of x, a relaxed leaf by the leaf relaxation (``relax``, docs/spec.md §8)."""

    def __init__(self, name: str, F: Forms, mark: int, diff: list, cube: list, eps):
        self.name = name
        self.F = F
        self.mark = mark  # the calls of model A's table: ``relax.pairs`` pairs them with B's
        self.diff = diff
        self.cube = cube
        self.eps = eps
        self.d = len(cube)
        self.related = None  # the pairs, formed at the first relaxed leaf

    def walk(self, tree):
        """Every node of the tree, from an explicit stack: ``(node, where, cell constraints, decisions)``."""
        stack = [(tree, "tree", box_constraints(self.cube), {})]
        while stack:
            node, at, cons, decided = stack.pop()
            allowed = ("decide", "split", "children", "empty", "bound", "relaxed")
            if isinstance(node, dict) and "relaxed" in node:
                allowed += ("tighten",)
            if is_coordinate(node):
                allowed += ("at",)
            node = fields(node, at, (), allowed)
            decided = dict(decided)
            for n, entry in enumerate(items(node.get("decide", []), f"{at}.decide")):
                self.decide(entry, f"{at}.decide[{n}]", cons, decided)
            if is_coordinate(node):  # the cell's constraints gain c − x_i ≥ 0 (below), x_i − c ≥ 0 (above)
                i, c, children = coordinate(node, at, cell_box(self.cube, cons), self.name, ("decide",))
                for (child, where), side in zip(children, coordinate_sides(i, c)):
                    stack.append((child, where, cons + [(side, "ge")], decided))
            elif "split" in node:
                g = self.xform(node["split"], f"{at}.split")
                for child, where, part in covering(g, node, at):
                    stack.append((child, where, cons + [part], decided))
            elif "empty" in node:
                self.shows(cons, {}, True, node["empty"], f"{at}.empty")
            elif "relaxed" in node:
                self.relaxed_leaf(node, at, cons)
            else:
                self.plain_leaf(node, at, cons, decided)

    def xform(self, v, where: str) -> dict:
        """An affine map of x: d coefficients, then the constant."""
        return {ONE if k == self.d else k: q for k, q in row(v, where, self.d + 1).items()}

    def shows(self, cons: list, h: dict, strict: bool, w, where: str):
        """The witness w shows h ≥ 0 (strict: h > 0) on the cell ``cons`` (``implied``)."""
        if not implied(cons, h, strict, row(w, where, len(cons))):
            raise Refuted(f"{self.name}: {where}: the witness does not show {'>' if strict else '≥'} 0")

    def decide(self, e, where: str, cons: list, decided: dict):
        """A decision: the top piece of a max (or the top tokens of a hardmax) is shown ≥ every other piece
        (a hardmax's others > top), a tie shown both ways; recorded in ``decided`` by the node's content."""
        kind = "max" if isinstance(e, dict) and "max" in e else "hardmax"
        fields(e, where, (kind, "top", "witness"))
        fs = [self.xform(p, f"{where}.{kind}[{i}]") for i, p in enumerate(items(e[kind], f"{where}.{kind}"))]
        top = [integer(i, f"{where}.top", 0, len(fs) - 1) for i in items(e["top"], f"{where}.top")]
        if len(top) != 1 and (kind == "max" or not top):
            raise Malformed(f"{where}.top: expected {'one index' if kind == 'max' else 'indices'}")
        witnesses = items(e["witness"], f"{where}.witness", len(fs))
        for i, (f, w) in enumerate(zip(fs, witnesses)):
            g = combine([(1, fs[top[0]]), (-1, f)])
            at_w = f"{where}.witness[{i}]"
            if i in top[1:]:  # a tie: g ≥ 0 and −g ≥ 0
                first = items(w, at_w, 2)[0]
                self.shows(cons, g, False, first, at_w)
                self.shows(cons, negated(g), False, w[1], at_w)
            elif i != top[0]:
                self.shows(cons, g, kind == "hardmax", w, at_w)
        content = tuple(sorted(map(key, fs)))
        if kind == "max":
            decided[kind, content] = key(fs[top[0]])
        else:
            decided[kind, content] = {key(fs[i]) for i in top}

    def plain_leaf(self, node: dict, at: str, cons: list, decided: dict):
        """A − B valued as affine maps of x by the decisions on the path; each output's witnesses show
        ε − D_k ≥ 0 and ε + D_k ≥ 0 (ε = 0 for equality)."""
        memo = {}
        try:  # a KeyError can only be a node without a decision on this cell
            D = [evaluate(self.F, f, memo, lambda kind, content: decided[kind, content]) for f in self.diff]
        except KeyError:
            raise Refuted(f"{self.name}: {at}: a node this leaf needs has no decision") from None
        bounds = items(node.get("bound"), f"{at}.bound", len(self.diff))
        for k, (f, w) in enumerate(zip(D, bounds)):
            where = f"{at}.bound[{k}]"
            for i, sign in ((0, -1), (1, 1)):
                self.shows(cons, combine([(sign, f)], self.eps or 0), False, items(w, where, 2)[i], f"{where}[{i}]")

    def relaxed_leaf(self, node: dict, at: str, cons: list):
        """Each output's two witnesses show, over the leaf relaxation's rows, that ±(A − B)_k ≥ ε is
        infeasible on the leaf's box, naming no atom row but its own."""
        if not self.eps:
            raise Refuted(f"{self.name}: {at}: a relaxed leaf shows |A - B| < tolerance, and there is none")
        from .relax import LeafRows, infeasible, pairs, tightening

        F, eps = self.F, self.eps
        if self.related is None:
            self.related = pairs(F, self.mark)
        atoms = [combine([(sign, f)], -eps) for f in self.diff for sign in (1, -1)]
        rows = LeafRows(F, cell_box(self.cube, cons), atoms, self.related, tightening(node, at, F, self.related))
        atoms_at = len(rows) - len(atoms)
        for k, w in enumerate(items(node["relaxed"], f"{at}.relaxed", len(self.diff))):
            for i, wi in enumerate(items(w, f"{at}.relaxed[{k}]", 2)):
                where = f"{at}.relaxed[{k}][{i}]"
                multipliers = row(wi, where, len(rows))
                other_atom = any(j >= atoms_at and j != atoms_at + 2 * k + i for j in multipliers)
                if other_atom or not infeasible(rows, multipliers):
                    raise Refuted(
                        f"{self.name}: {where}: the witness does not show {'' if i else '-'}(A - B)_{k} < {eps} "
                        "on the leaf's box"
                    )
