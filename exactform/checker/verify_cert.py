"""Claim V1 — a network satisfies a VNN-LIB property (the property's violation is impossible) —
checked with ``fractions`` only (standard library, the checker's reader and the node table of its
``equiv``: the same semantics of the network as E1's).  Specified in docs/spec.md §8.

The property, as read, is a list of disjuncts: an input box and linear atoms ``a ≥ 0`` over the
inputs X and outputs Y.  For each disjunct the certificate gives a tree splitting the box at
coordinate hyperplanes, or at affine rows over the lifted variables (x, one variable per node), each
child adding its side of the row; on every leaf the checker writes the leaf's rows itself
(``LeafRows``: the leaf box, and per max node of the network its exact interval over the leaf box, the
pieces it dominates, and the chord of a two-piece max over its interval, a node whose gap an affine
row signs being one piece), and the witness shows, by Farkas' lemma, that no point of the lifted
space meets all rows together with the disjunct's atoms and the affine rows."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction

from .cost import MAX_WORK, ROW, WALK_WORK, Budget, LeafCost, beyond, bits, digits, named, weight
from .forms import Forms, outputs, read_model
from . import vnnlib
from .relax import LeafRows, gap_signs, infeasible, tightening
from .splits import coordinate, covering, halves, is_coordinate
from .reader import (
    FORMAT,
    ONE,
    Malformed,
    Refuted,
    Tally,
    box,
    combine,
    contents,
    fields,
    integer,
    items,
    load,
    rational,
    read_maxout,
    read_transformer,
    row,
)

KIND, CLAIM = "verification", "V1"
MAX_TREE = 10**6  # tree nodes over all disjuncts: bounds the work on a hostile certificate
IMPORTED = (".nnet", ".onnx", ".pt", ".pth", ".pt2")
"""Network files the prover imports (``importers.SUFFIXES``): ONNX and .nnet the checker reads itself
(``onnx_reader``, ``nnet_reader``), the others it refuses to bind (exit 2)."""


def atom_form(atom: dict, xs: int, ys: list) -> dict:
    """An atom ``{k: a}`` over X_0..X_{n-1} (k < n), Y_0.. (n ≤ k < n + m) and the constant (k = n + m)
    as an affine form over the node table's variables (Y_j replaced by the network's output j)."""
    n, m = xs, len(ys)
    return combine(
        [(a, {k: Fraction(1)} if k < n else ys[k - n] if k < n + m else {ONE: Fraction(1)}) for k, a in atom.items()]
    )


def sha256_file(path) -> str:
    """The SHA-256 of the file's bytes as stored (a *.gz file not decompressed)."""
    return hashlib.sha256(contents(path)).hexdigest()


def statement(sources: dict, disjuncts: int, eps: Fraction | None = None) -> str:
    """The claim, about what the certificate embeds.  Its recorded sources are named by the first 16 hex digits
    of their SHA-256 (``Malformed`` unless 64 lowercase hex digits), never by their recorded file names: those
    are data, which ``exactform check`` prints apart, quoted."""

    def digest(key):
        sha = sources[key]["sha256"]
        if not (isinstance(sha, str) and len(sha) == 64 and set(sha) <= set("0123456789abcdef")):
            raise Malformed(f"evidence.sources.{key}.sha256: expected 64 lowercase hex digits")
        return f"recorded source SHA-256 {sha[:16]}"

    net = "network" if eps is None else "softmax Transformer"
    margin = (
        ""
        if eps is None
        else (f" (its C5 bound |Tf - M| <= {eps} and M proved with every output constraint tightened by eps)")
    )
    return (
        f"no input x satisfies the VNN-LIB property embedded in the certificate ({disjuncts} disjuncts; "
        f"{digest('property')}) for the {net} embedded in it ({digest('net')}){margin}: the property holds (unsat)"
    )


def loosened(atom: dict, n: int, m: int, eps: Fraction) -> dict:
    """The atom a(x, y) ≥ 0 with ε·Σ_j |b_j| added (b: its Y coefficients): if |Y − Y'|∞ ≤ ε then
    a(x, Y) ≥ 0 implies the loosened atom at (x, Y'), so a proof that no x meets the loosened atoms
    with Y' = M(x) shows that none meets the atoms with Y = Tf(x)."""
    slack = eps * sum((abs(a) for k, a in atom.items() if n <= k < n + m), Fraction(0))
    return {k: a for k, a in (atom | {n + m: atom.get(n + m, Fraction(0)) + slack}).items() if a}


def read_property(v, n: int, m: int, tally: Tally | None = None) -> list:
    """``[(box, [atom])]``: each disjunct's input box and atoms, an atom a row over X, Y and 1 (the boxes' entries
    charged to ``tally``, a new one when None)."""
    tally = Tally() if tally is None else tally
    fields(v, "property", ("inputs", "outputs", "disjuncts"))
    if integer(v["inputs"], "property.inputs", 1) != n or integer(v["outputs"], "property.outputs", 1) != m:
        raise Malformed(f"property: {v['inputs']} inputs and {v['outputs']} outputs, the network has {n} and {m}")
    out = []
    for k, d in enumerate(items(v["disjuncts"], "property.disjuncts", nonempty=True)):
        at = f"property.disjuncts[{k}]"
        fields(d, at, ("box", "atoms"))
        atoms = [row(a, f"{at}.atoms[{i}]", n + m + 1) for i, a in enumerate(items(d["atoms"], f"{at}.atoms"))]
        out.append((box(d["box"], f"{at}.box", n, tally), atoms))
    return out


def _margin(v, model, disjuncts: list, name: str, tally: Tally, limit: int = MAX_WORK) -> Fraction:
    """ε of the embedded C5 certificate, once the walk (C5) accepts it, its Maxout net is the proof's
    network and every disjunct's box lies in its domain."""
    from .construction import verify

    fields(v, "evidence.margin", ("eps", "softmax"))
    eps = rational(v["eps"], "evidence.margin.eps")
    c5 = v["softmax"]
    walk_limit = WALK_WORK if limit == MAX_WORK else limit  # the walk's own default, unless the run set one
    result = verify(c5, "evidence.margin.softmax: ", limit=walk_limit)
    claims = [c for c in (c5.get("claims") if isinstance(c5, dict) else None) or [] if isinstance(c, dict)]
    if result.code != 0 or c5.get("kind") != "softmax" or [c.get("eps") for c in claims] != [v["eps"]]:
        raise Refuted(f"{name}: evidence.margin: not a checked C5 certificate with eps = {v['eps']}: {result.known}")
    if read_maxout(c5["maxout"], "evidence.margin.softmax.maxout", tally) != model:
        raise Refuted(f"{name}: evidence.margin: the C5 certificate is about another Maxout net than the proof's")
    if any(not lo <= a <= b <= hi for cube, _ in disjuncts for (a, b), (lo, hi) in zip(cube, model.box)):
        raise Refuted(f"{name}: evidence.margin: a disjunct's box leaves the domain where C5 holds")
    return eps


def _bound(ev: dict, model, embedded: tuple, name: str, net_file, property_file, tally: Tally) -> str:
    """Compare the given files with what the certificate embeds, each read by the checker: PROP by ``vnnlib``,
    equal to the embedded property (inputs, outputs, disjuncts in order, boxes, atoms); a JSON NET equal to the
    embedded network (the C5 certificate's Transformer under a margin); an ONNX or .nnet NET, read by
    ``onnx_reader`` / ``nnet_reader``, with the embedded Maxout net's input count, layers and read-out (a .nnet
    only where every disjunct's box lies in its clipping box, where clipping is the identity); any other NET
    (.pt, .pth, .pt2) is refused (``Malformed``).  What was compared, in words ('' when nothing is bound)."""
    from .nnet_reader import IMPORTED_JSON

    words = []
    if property_file is not None:
        prop = vnnlib.read_property(property_file)
        if (prop.inputs, prop.outputs, vnnlib.rows(prop)) != embedded:
            raise Refuted(f"{name}: the embedded property is not the one in {property_file}")
        words.append(f"the embedded property is the one read from {json.dumps(str(property_file))}")
    suffix = "" if net_file is None else "." + str(net_file).lower().rpartition(".")[2]
    if suffix in (".onnx", ".nnet"):
        from .nnet_reader import read_nnet
        from .onnx_reader import read_onnx

        network = read_onnx(net_file) if suffix == ".onnx" else read_nnet(net_file)
        if suffix == ".nnet" and any(
            not lo <= a <= b <= hi for cube, _ in embedded[2] for (a, b), (lo, hi) in zip(cube, network[3])
        ):
            raise Malformed(
                f"{net_file}: a disjunct's box leaves the .nnet input clipping box, which the checker "
                f"does not read; {IMPORTED_JSON}"
            )
        if (
            "margin" in ev
            or not hasattr(model, "layers")
            or network[:3] != (len(model.box), model.layers, model.readout)
        ):
            raise Refuted(f"{name}: the embedded network is not the one in {net_file}")
        words.append(
            f"the embedded network is the one read from {json.dumps(str(net_file))} ({len(model.layers)} "
            f"ReLU layers, compared exactly)"
        )
    elif suffix in IMPORTED:
        raise Malformed(f"{net_file}: the checker reads ONNX and .nnet networks, not {suffix}; {IMPORTED_JSON}")
    elif net_file is not None:
        doc = load(net_file)
        if "margin" in ev:
            same = read_transformer(doc, f"{net_file}: model", tally) == read_transformer(
                ev["margin"]["softmax"]["transformer"], "evidence.margin.softmax.transformer", tally
            )
        else:
            same = read_model(doc, f"{net_file}: model", tally) == model
        if not same:
            raise Refuted(f"{name}: the embedded network is not the one in {net_file}")
        words.append(f"the embedded network is the one read from {json.dumps(str(net_file))}")
    return "".join(f"; {w}" for w in words)


def _count(trees: list) -> list:
    """Per tree its leaves as ``(tighten variables, the rows its witness names, (splits, numbers) above it, its
    numbers' bits)``, from the shapes alone (no arithmetic; at most ``MAX_TREE`` nodes): a node with ``children``
    is a split of any kind, whose numbers (its other fields') every leaf below it inherits; any other node is a
    leaf ``witness``."""
    out, seen = [], 0
    for i, tree in enumerate(trees):
        leaves, stack = [], [(tree, f"trees[{i}]", (0, 0))]
        out.append(leaves)
        while stack:
            node, at, inherited = stack.pop()
            seen += 1
            if seen > MAX_TREE:
                raise Malformed(f"more than {MAX_TREE} tree nodes")
            if isinstance(node, dict) and "split" in node:
                fields(node, at, ("split", "children"), ("at",))
                items(node["children"], f"{at}.children", 2)
            if isinstance(node, dict) and "children" in node:
                own = len(_scalars([v for k, v in node.items() if k != "children"]))
                stack += [
                    (c, f"{at}.children[{j}]", (inherited[0] + 1, inherited[1] + own))
                    for j, c in enumerate(items(node["children"], f"{at}.children", nonempty=True))
                ]
                continue
            tight = fields(node, at, ("witness",), ("tighten",)).get("tighten", [])
            tight = [e[0] for e in tight if isinstance(e, list) and e] if isinstance(tight, list) else []
            leaves.append((tight, named(node["witness"]), inherited, digits(node["witness"])))
    return out


def _scalars(v) -> list:
    """The numbers and strings of a JSON value, in no order (an explicit stack: no recursion)."""
    out, stack = [], [v]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack += x.values()
        elif isinstance(x, list):
            stack += x
        else:
            out.append(x)
    return out


def work(model, disjuncts: list, trees: list, limit: int | None = None, built: list | None = None) -> int:
    """The check's work bound (spec §6.1, §8): ``tables``' figure."""
    return tables(model, disjuncts, trees, limit, built)[0]


def tables(model, disjuncts: list, trees: list, limit: int | None = None, built: list | None = None) -> tuple[int, list]:
    """``(work, [(F, ys)])``: the check's work bound (spec §6.1, §8), weighted by the numbers' size, refused beyond
    ``limit`` (if any) as soon as the count passes it, before the arithmetic it bounds; and per disjunct its node
    table ``F`` with the network's output forms ``ys``, built once here for the check to read.  Counted: per
    disjunct its node table, charged as it is built (``Forms.charge``: each layer or block from the sizes of the
    forms so far) at twice its building (a margin), its atoms at the sizes of the output forms they read, and each leaf by ``LeafCost``
    (bounds, back-substitutions, the rows its witness names) plus, per split above it, a row of its numbers and of
    the table's largest row (a split on a node reads the node's row).  ``built``: the same tables made already
    (``Forms(cube)`` and ``outputs``, no limit: the prover's), read instead of made again."""
    leaves, total, made = _count(trees), 0, []
    d, scale = len(model.box), weight(max([bits(model, disjuncts)] + [leaf[3] for tree in leaves for leaf in tree]))
    for (cube, atoms), tree in zip(disjuncts, leaves):
        if built is None:
            F = Forms(cube, None if limit is None else Budget(limit - total, 2 * scale, "models.net"))
            ys = outputs(F, model)
        else:
            F, ys = built[len(made)]
        made.append((F, ys))
        reads = sum(sum(len(ys[k - d]) if d <= k < d + len(ys) else 1 for k in a) for a in atoms)
        total += 2 * scale * (F.work + reads)
        if limit is not None and total > limit:
            raise beyond(total, "claims[0].evidence.property", "the node tables and the atoms' forms", limit)
        cost = LeafCost(F, (), [len(atom_form(a, d, ys)) + 1 for a in atoms])
        largest = max(cost.rows)
        total += scale * sum(
            cost.leaf(tight, [witness]) + ROW * (splits * largest + numbers)
            for tight, witness, (splits, numbers), _ in tree
        )
        if limit is not None and total > limit:
            raise beyond(
                total,
                "claims[0].evidence.trees",
                "node tables, leaves' bounds, back-substitutions and witnesses' rows",
                limit,
            )
    return total, made


def check(cert: dict, name: str, net_file=None, property_file=None, limit: int = MAX_WORK) -> str:
    """The statement of V1 if ``cert`` proves it (and, given, the files are those it names) within the work bound
    ``limit``; ``Refuted`` if not; ``Malformed`` (a ``ValueError``) if malformed or beyond the bound."""
    tally = Tally()
    fields(cert, name, ("format", "kind", "models", "claims"))
    if cert["format"] != FORMAT or cert["kind"] != KIND:
        raise Malformed(f"format, kind: expected {FORMAT!r}, {KIND!r}")
    model = read_model(fields(cert["models"], "models", ("net",))["net"], "models.net", tally)
    claim = fields(items(cert["claims"], "claims", 1)[0], "claims[0]", ("id", "statement", "evidence"))
    ev = fields(claim["evidence"], "claims[0].evidence", ("sources", "property", "trees"), ("margin",))
    if claim["id"] != CLAIM:
        raise Malformed(f"claims[0].id: expected {CLAIM!r}")
    sources = fields(ev["sources"], "evidence.sources", ("net", "property"))
    for key in ("net", "property"):
        s = fields(sources[key], f"evidence.sources.{key}", ("file", "sha256"))
        if not (
            isinstance(s["file"], str)
            and len(s["file"]) <= 255
            and isinstance(s["sha256"], str)
            and len(s["sha256"]) == 64
        ):
            raise Malformed(
                f"evidence.sources.{key}: expected a file name (at most 255 characters) and a SHA-256 digest"
            )
    for key, path in (("net", net_file), ("property", property_file)):
        if path is not None and sha256_file(path) != sources[key]["sha256"]:
            raise Refuted(f"{name}: the certificate is about another {key} file than {path} (SHA-256 differs)")
    d, m = len(model.box), len(model.readout)
    disjuncts = stated = read_property(ev["property"], d, m, tally)
    eps = None
    if "margin" in ev:  # the property is about a softmax Transformer with a C5 certificate
        eps = _margin(ev["margin"], model, disjuncts, name, tally, limit)
        disjuncts = [(cube, [loosened(a, d, m, eps) for a in atoms]) for cube, atoms in disjuncts]
    said = statement(sources, len(disjuncts), eps)
    if claim["statement"] != said:
        raise Refuted(f"{name}: the statement is not {said!r}")
    bound = _bound(ev, model, (d, m, stated), name, net_file, property_file, tally)
    trees = items(ev["trees"], "evidence.trees", len(disjuncts))
    total, built = tables(model, disjuncts, trees, limit)
    error = beyond(
        total, "claims[0].evidence.trees", "node tables, leaves' bounds, back-substitutions and witnesses' rows", limit
    )
    if error:
        raise error
    for k, ((cube, atoms), tree, (F, ys)) in enumerate(zip(disjuncts, trees, built)):
        forms = [atom_form(a, d, ys) for a in atoms]
        stack = [(tree, f"trees[{k}]", cube, [])]
        while stack:
            node, at, leaf_box, cuts = stack.pop()
            if is_coordinate(node):  # the box's halves
                i, c, children = coordinate(node, at, leaf_box, name)
                stack += [(child, where, half, cuts) for (child, where), half in zip(children, halves(leaf_box, i, c))]
                continue
            if "split" in node:  # at an affine row of the variables: its rows join the cell's
                fields(node, at, ("split", "children"))
                n = d + len(F.nodes)
                g = {ONE if v == n else v: q for v, q in row(node["split"], f"{at}.split", n + 1).items()}
                stack += [(child, where, leaf_box, cuts + [form]) for child, where, (form, _) in covering(g, node, at)]
                continue
            rows = LeafRows(F, leaf_box, forms + cuts, (), tightening(node, at, F, []), gap_signs(F, cuts))
            if not infeasible(rows, row(node["witness"], f"{at}.witness", len(rows))):
                raise Refuted(f"{name}: {at}: the witness does not show the leaf's rows infeasible")
    return said + bound
