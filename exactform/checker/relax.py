"""The linear relaxation of a node table on a box — the rows a leaf of claims V1 and E1 is proved
infeasible against — written with ``fractions`` only (docs/spec.md §8, docs/equiv.md).

``LeafRows(F, cube, atoms, pairs)``: over the lifted variables (x, one per node of ``F``), rows
``g ≥ 0`` that hold at (x, the nodes' values) for every x in ``cube``: the box, every node's bounds,
its pieces, the chord of a two-piece max, and for each *pair* of nodes (a max of model A and the max
built at the same position in model B) affine functions of x below and above their difference
(ReluDiff's differential bounds, so that a network and its quantised copy cancel); then the atoms.
``infeasible(rows, w)``: Farkas' lemma with the bound rows left implicit."""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from .cost import REFINE
from .reader import MAX_BITS, ONE, Malformed, combine, integer, items

BITS = 40  # significant bits of the dyadic numbers the bound propagation rounds to


def outward(q: Fraction, up: bool) -> Fraction:
    """q rounded up (``up``) or down to a dyadic rational of ``BITS`` significant bits, so that bounds
    stay bounds and their sizes stay small."""
    if not q:
        return q
    k = BITS - (abs(q.numerator).bit_length() - q.denominator.bit_length())
    num, den = (q.numerator << k, q.denominator) if k >= 0 else (q.numerator, q.denominator << -k)
    n = -(-num // den) if up else num // den
    return Fraction(n, 1 << k) if k >= 0 else Fraction(n << -k)


def _linear(terms: list, d: int) -> tuple:
    """Σ a·f over ``terms = [(a, f)]`` for affine functions f = (denominator, [d + 1 numerators]) of x
    (the last numerator the constant), summed over one common denominator."""
    dens = [a.denominator * f[0] for a, f in terms]
    D = max(dens, default=1) if all(n & (n - 1) == 0 for n in dens) else math.lcm(*set(dens))  # dyadic: the largest
    ms = [a.numerator * (D // n) for (a, _), n in zip(terms, dens)]
    nums = [sum(map(operator.mul, ms, column)) for column in zip(*(f[1] for _, f in terms))] if terms else [0] * (d + 1)
    g = math.gcd(D, *nums)
    return D // g, [v // g for v in nums]


def _extreme(f: tuple, box: tuple, up: bool) -> Fraction:
    """max (``up``) or min of the affine function f over the box ``(D, [(D·lower, D·upper)])`` (``_scaled``)."""
    den, nums = f
    D, ends = box
    return Fraction(sum(v * ends[j][(v > 0) == up] for j, v in enumerate(nums[:-1]) if v) + nums[-1] * D, den * D)


def _scaled(cube: list) -> tuple:
    """The box over one common denominator D: ``(D, [(D·lower, D·upper)])``, integers."""
    D = math.lcm(*(e.denominator for ends in cube for e in ends))
    return D, [(lo.numerator * (D // lo.denominator), hi.numerator * (D // hi.denominator)) for lo, hi in cube]


def _dyadic(f: tuple, cube: list, up: bool) -> tuple:
    """An affine function of ``BITS``-bit dyadic coefficients above (``up``) or below f on the box: each
    coefficient rounded (``outward``, in integers: m / 2^k), the constant moved by the residue's extreme over
    the box, so that the digits of the functions do not grow from node to node."""
    den, nums = f
    d = len(cube)
    rounded, rn, rd = [], 0, 1  # the residue rn / rd, summed in integers
    for i, n in enumerate(nums[:d]):
        if not n:
            rounded.append((0, 0))
            continue
        g = math.gcd(n, den)
        a, b = n // g, den // g
        k = BITS - (abs(a).bit_length() - b.bit_length())
        num, div = (a << k, b) if k >= 0 else (a, b << -k)
        m = -(-num // div) if up else num // div
        rounded.append((m, k) if k >= 0 else (m << -k, 0))
        if m * div != num:  # the coefficient's residue (num − m·div) / (div·2^k) at the end of x_i it points to
            e = cube[i][(num > m * div) == up]
            tn, td = (num - m * div) * e.numerator, (div << k if k >= 0 else div >> -k) * e.denominator
            if rd % td == 0:
                rn += tn * (rd // td)
            else:
                L = math.lcm(rd, td)
                rn, rd = rn * (L // rd) + tn * (L // td), L
    c = outward(Fraction(nums[d] * rd + rn * den, den * rd), up)
    K = max(c.denominator.bit_length() - 1, *(k for _, k in rounded))
    out = [m << K - k for m, k in rounded] + [c.numerator << K - c.denominator.bit_length() + 1]
    g = math.gcd(1 << K, *out)
    return (1 << K) // g, [v // g for v in out]


def _constant(q: Fraction, d: int) -> tuple:
    return q.denominator, [0] * d + [q.numerator]


def pairs(F, mark: int) -> list:
    """``[(a, s, b, t, P, Q)]``: the maxes of two pieces built by the same call (``Forms.calls``) of model A
    (the calls before ``mark``) and of model B, each a node of its own, ``s·z_a = max(P)``, ``t·z_b =
    max(Q)``, a before b.  Any such pairing gives valid rows; the position makes it a tight one."""
    A, B = F.calls[:mark], F.calls[mark:]
    out, seen = [], set()
    for (P, fa), (Q, fb) in zip(A, B) if len(A) == len(B) else ():
        if len(P) == len(Q) == 2 and len(fa) == len(fb) == 1 and ONE not in fa and ONE not in fb:
            (a, s), (b, t) = next(iter(fa.items())), next(iter(fb.items()))
            if a < b and b not in seen and len(F.nodes[a - F.d][1]) == len(F.nodes[b - F.d][1]) == 2:
                seen.add(b)
                out.append((a, s, b, t, P, Q))
    return out


def through(form: dict, known: dict) -> tuple[dict, list]:
    """The form as ``rest + Σ c_j·Δ_j`` for the pairs ``known`` (``{b: (j, a, s, t)}``, Δ_j = s·z_a − t·z_b)
    whose two nodes it reads: ``c_a·z_a + c_b·z_b = (c_a/s)·Δ_j + (c_a·t/s + c_b)·z_b``, so that a pair's
    difference is bounded as one (an identity: any pairing is exact)."""
    rest, terms = dict(form), []
    for b in [k for k in rest if k in known]:
        j, a, s, t = known[b]
        if a in rest:
            c = rest.pop(a) / s
            terms.append((j, c))
            r = c * t + rest[b]
            if r:
                rest[b] = r
            else:
                del rest[b]
    return rest, terms


def _prepared(form: dict, known: dict | None = None) -> tuple:
    """A form ready for ``_side``: ``([(variable, a, a > 0)], constant, [(pair, c, c > 0)], integral)``, read
    through the pairs ``known`` when given; ``integral``: ``(D, [(variable, D·a, a > 0)], D·constant, [(pair,
    D·c, c > 0)])`` over the least common denominator D of its coefficients."""
    rest, terms = through(form, known) if known else (form, [])
    variables = [(k, a, a > 0) for k, a in rest.items() if k != ONE]
    constant, pairs = rest.get(ONE, Fraction(0)), [(j, c, c > 0) for j, c in terms]
    D = math.lcm(constant.denominator, *(a.denominator for _, a, _ in variables + pairs))
    return (
        variables,
        constant,
        pairs,
        (
            D,
            [(k, a.numerator * (D // a.denominator), positive) for k, a, positive in variables],
            constant.numerator * (D // constant.denominator),
            [(j, c.numerator * (D // c.denominator), positive) for j, c, positive in pairs],
        ),
    )


def _side(form: tuple, fns: list, d: int, up: bool, dfns: dict | None = None) -> tuple:
    """An affine function of x below (above, ``up``) the ``_prepared`` form on the box, from the
    variables' functions (and its pairs' differences', ``dfns[j]``): Σ (a/D)·f over one common denominator,
    in integers."""
    D, terms, constant, pairs = form[3]
    fs = [fns[k][positive == up] for k, _, positive in terms]
    ms = [a for _, a, _ in terms]
    if pairs:
        fs += [dfns[j][positive == up] for j, _, positive in pairs]
        ms += [c for _, c, _ in pairs]
    dens = [f[0] for f in fs]
    E = math.lcm(*dens)
    ws = [m * (E // n) for m, n in zip(ms, dens)]
    nums = [sum(map(operator.mul, ws, column)) for column in zip(*(f[1] for f in fs))] if fs else [0] * (d + 1)
    nums[d] += constant * E
    D *= E
    g = math.gcd(D, *nums)
    return D // g, [v // g for v in nums]


def _zero(form: tuple) -> bool:
    """Whether the ``_prepared`` form is 0."""
    return not form[0] and not form[1] and not form[2]


def _hinge(h: tuple, hl: Fraction, hu: Fraction, d: int) -> tuple:
    """Affine functions of x below min(h, 0) and above max(h, 0), for h between the functions ``h`` on
    the box with h in [hl, hu]: the chords through the ends, slopes rounded up."""
    if hl >= 0:
        return (1, [0] * (d + 1)), h[1]
    if hu <= 0:
        return h[0], (1, [0] * (d + 1))
    s, r = outward(hu / (hu - hl), True), outward(-hl / (hu - hl), True)
    return (
        _linear([(r, h[0]), (-r * hu, (1, [0] * d + [1]))], d),
        _linear([(s, h[1]), (-s * hl, (1, [0] * d + [1]))], d),
    )


def relaxation_plan(F, pairs: list) -> list:
    """Per node of ``F``, what ``node_bounds`` reads of it on any box, computed once per table and
    pairing: its pieces (for a hardmax node its values) ``_prepared``, g = p − q for two pieces, and for the
    node b of a pair ``(n, a, [δ_0, δ_1], δ_0 − δ_1, order, raw)``, the δ_i = P_i − Q_i read through the
    earlier pairs, ``order[m][i]``: the index in P (Q) of node a's (b's) i-th piece, and ``raw``: the δ_i as
    forms over the variables."""
    cache = F.__dict__.setdefault("relaxation_plans", {})
    name = tuple((p[0], p[2]) for p in pairs)
    if name in cache:
        return cache[name]
    known, of_b, plan = {}, {p[2]: n for n, p in enumerate(pairs)}, []
    for k, (kind, data) in enumerate(F.nodes):
        pieces = [dict(p if kind == "max" else p[1]) for p in data]
        g = _prepared(combine([(1, pieces[0]), (-1, pieces[1])])) if kind == "max" and len(pieces) == 2 else None
        paired = None
        z = F.d + k
        if z in of_b:
            n = of_b[z]
            a, s, b, t, P, Q = pairs[n]
            delta = [combine([(1, p), (-1, q)]) for p, q in zip(P, Q)]
            order = [[_index(F.nodes[v - F.d][1][i], r, R) for i in range(2)] for v, r, R in ((a, s, P), (b, t, Q))]
            paired = (
                n,
                a,
                [_prepared(f, known) for f in delta],
                _prepared(combine([(1, delta[0]), (-1, delta[1])]), known),
                order,
                delta,
            )
            known[z] = (n, a, s, t)
        plan.append(([_prepared(p) for p in pieces], g, paired))
    cache[name] = plan
    return plan


def _index(piece, s: Fraction, P: list) -> int | None:
    """The index in P (``s·z = max(P)``) of the node's piece ``piece`` (its data: P_i / s)."""
    piece = dict(piece)
    return next((i for i, p in enumerate(P) if {v: a / s for v, a in p.items()} == piece), None)


def node_bounds(F, cube: list, pairs: list = (), tighten=None) -> tuple[list, dict, dict, dict]:
    """Bounds of every variable of ``F`` over the box ``cube`` (inputs first, then nodes in order), per
    two-piece max node the bounds [gl, gu] of g = p − q, and per pair (``pairs``, by index) affine
    functions of x below and above ``s·z_a − t·z_b``, by forward symbolic propagation: each variable has
    an affine function of x below it and one above it on the box (an input is its own).
    A form's functions take each variable's lower or upper function by the sign of its coefficient; a
    node's bounds are those functions' min and max over the box, meet the interval of its pieces'
    bounds, rounded outward to ``BITS`` bits.  Max node z of pieces p_i: below, the p_j of largest
    l_j + u_j; above, with two pieces: p's function if gl ≥ 0, q's if gu ≤ 0, else, writing z = b + max(h, 0)
    with b the piece of narrower range (h = q − p for b = p, h = g for b = q; [hl, hu] its bounds),
    b's upper function plus s·(h's upper function) + t, with s = hu / (hu − hl) rounded up (at most 1)
    and t = max(−s·hl, hu − s·hu) rounded up (a line over max(h, 0) on [hl, hu]); with more pieces,
    the constant max u_i.
    A hardmax node (an average of values) has constant functions at the least lower and the largest
    upper bound of its values.
    A pair with two pieces, δ_i = P_i − Q_i (each δ written through the earlier pairs' differences):
    ``max P − max Q`` lies between min_i δ_i and max_i δ_i, and ``max(δ_0, δ_1) = δ_1 + max(h, 0)``,
    ``min(δ_0, δ_1) = δ_1 + min(h, 0)`` with h = δ_0 − δ_1 bounded by ``_hinge``; when both nodes are
    fixed on the box to the same piece j, the difference is δ_j.  ``hinges[n]``: ``(j,)`` for such a pair,
    else the bounds [hl, hu] of its h.
    ``tighten(key, lo, hi, state)``: the gap of node k (key k) or the bounds of pair n's h (key ``("h", n)``)
    met with bounds shown otherwise (``LeafRows``' stated witnesses) before anything reads them, ``state``
    the tables so far; a two-piece node's upper bound also meets ``max(u_q + max(gu, 0), u_p + max(−gl, 0))``
    (z = q + max(g, 0) = p + max(−g, 0))."""
    d, plan, box = len(cube), relaxation_plan(F, pairs), _scaled(cube)
    unit = [(1, [0] * j + [1] + [0] * (d - j)) for j in range(d)]
    fns = [(u, u) for u in unit]
    bounds, gaps, dfns, hinges = list(cube), {}, {}, {}
    state = (bounds, gaps, dfns, hinges)
    for k, ((kind, data), (pieces, g, paired)) in enumerate(zip(F.nodes, plan)):
        sides = [(_side(p, fns, d, False), _side(p, fns, d, True)) for p in pieces]
        ivs = [(_extreme(lo, box, False), _extreme(hi, box, True)) for lo, hi in sides]
        if kind != "max":
            lo, hi = outward(min(a for a, _ in ivs), False), outward(max(b for _, b in ivs), True)
            bounds.append((lo, hi))
            fns.append((_constant(lo, d), _constant(hi, d)))
            continue
        j = max(range(len(pieces)), key=lambda i: ivs[i][0] + ivs[i][1])
        below, above = sides[j][0], None
        if g is not None:
            if _zero(pieces[1]):  # g = p, or −q for p = 0 (a ReLU): its sides are p's, or q's negated
                gside = sides[0]
            elif _zero(pieces[0]):
                gside = tuple((den, [-v for v in nums]) for den, nums in sides[1][::-1])
            else:
                gside = (_side(g, fns, d, False), _side(g, fns, d, True))
            gl, gu = (
                outward(max(_extreme(gside[0], box, False), ivs[0][0] - ivs[1][1]), False),
                outward(min(_extreme(gside[1], box, True), ivs[0][1] - ivs[1][0]), True),
            )
            if tighten is not None:
                gl, gu = tighten(k, gl, gu, state)
            gaps[k] = (gl, gu)
            if gl >= 0 or gu <= 0:
                below, above = sides[0 if gl >= 0 else 1]
            else:  # z = b + max(h, 0), b the piece of narrower range, h = ±g
                b = 0 if ivs[0][1] - ivs[0][0] <= ivs[1][1] - ivs[1][0] else 1
                hl, hu, h = (-gu, -gl, (-1, gside[0])) if b == 0 else (gl, gu, (1, gside[1]))
                s = min(outward(hu / (hu - hl), True), Fraction(1))
                t = outward(max(-s * hl, hu - s * hu), True)
                above = _linear([(Fraction(1), sides[b][1]), (h[0] * s, h[1]), (t, (1, [0] * d + [1]))], d)
        lo = max(max(a for a, _ in ivs), _extreme(below, box, False))
        hi = max(b for _, b in ivs) if above is None else min(max(b for _, b in ivs), _extreme(above, box, True))
        if g is not None:
            hi = min(hi, max(ivs[1][1] + max(gu, 0), ivs[0][1] + max(-gl, 0)))
        lo, hi = outward(lo, False), outward(hi, True)
        bounds.append((lo, hi))
        fns.append((_dyadic(below, cube, False), _constant(hi, d) if above is None else _dyadic(above, cube, True)))
        if paired is not None:
            n, a, delta, h, order, _ = paired
            fixed = [
                o[0 if gl >= 0 else 1] if gl >= 0 or gu <= 0 else None
                for o, (gl, gu) in zip(order, (gaps[a - d], gaps[k]))
            ]
            if fixed[0] is not None and fixed[0] == fixed[1]:
                hinges[n] = (fixed[0],)
                fn = tuple(_side(delta[fixed[0]], fns, d, up, dfns) for up in (False, True))
            else:
                base = [_side(delta[1], fns, d, up, dfns) for up in (False, True)]
                if _zero(delta[0]):  # h = −δ_1 (two ReLUs): its sides are δ_1's negated
                    hf = tuple((den, [-v for v in nums]) for den, nums in base[::-1])
                else:
                    hf = (_side(h, fns, d, False, dfns), _side(h, fns, d, True, dfns))
                hl, hu = outward(_extreme(hf[0], box, False), False), outward(_extreme(hf[1], box, True), True)
                if tighten is not None:
                    hl, hu = tighten(("h", n), hl, hu, state)
                hinges[n] = (hl, hu)
                low, high = _hinge(hf, hl, hu, d)
                fn = (
                    _linear([(Fraction(1), base[0]), (Fraction(1), low)], d),
                    _linear([(Fraction(1), base[1]), (Fraction(1), high)], d),
                )
            dfns[n] = (_dyadic(fn[0], cube, False), _dyadic(fn[1], cube, True))
    return bounds, gaps, dfns, hinges


def tightening(node: dict, at: str, F, related: list) -> dict:
    """A relaxed leaf's ``tighten`` entries ``[z, side]`` as ``{key: [side]}`` for ``LeafRows``: z a two-piece
    max node's variable and side 0 or 1 (its gap's lower or upper bound), or z the second node of a pair
    and side 2 or 3 (that pair's h, key ``("h", n)``)."""
    second = {p[2]: n for n, p in enumerate(related)}
    out: dict = {}
    for n, e in enumerate(items(node.get("tighten", []), f"{at}.tighten")):
        where = f"{at}.tighten[{n}]"
        z, side = items(e, where, 2)
        z, side = integer(z, f"{where}[0]", F.d, F.d + len(F.nodes) - 1), integer(side, f"{where}[1]", 0, 3)
        kind, data = F.nodes[z - F.d]
        if side < 2 and (kind != "max" or len(data) != 2) or side >= 2 and z not in second:
            raise Malformed(
                f"{where}[0]: variable {z} is not {'a max of two pieces' if side < 2 else 'the second node of a pair'}"
            )
        out.setdefault(z - F.d if side < 2 else ("h", second[z]), []).append(side % 2)
    return out


def _normal(form: dict) -> tuple:
    """``(key, c)``: the form divided by c, the coefficient of its last variable (``key``: its entries
    sorted), so that forms with equal keys are multiples of each other, form = c·key."""
    c = form[max(k for k in form if k != ONE)]
    return tuple(sorted((k, a / c) for k, a in form.items())), c


def gap_signs(F, rows: list) -> dict:
    """``{k: [side]}``: the two-piece max nodes k whose gap g = p − q is a multiple of one of ``rows``
    (forms r with r ≥ 0 on a leaf), r = μ·g: g ≥ 0 there if μ > 0 (side 0), g ≤ 0 if μ < 0 (side 1)."""
    if not rows:
        return {}
    normals = F.__dict__.get("gap_normals")
    if normals is None:  # once per table: each gap's key
        normals = F.gap_normals = {}
        for k, (kind, data) in enumerate(F.nodes):
            g = combine([(1, dict(data[0])), (-1, dict(data[1]))]) if kind == "max" and len(data) == 2 else {}
            if any(v != ONE for v in g):
                key, c = _normal(g)
                normals.setdefault(key, []).append((k, c))
    out: dict = {}
    for r in rows:
        if all(v == ONE for v in r):
            continue
        key, mu = _normal(r)
        for k, c in normals.get(key, ()):
            out.setdefault(k, []).append(0 if (mu > 0) == (c > 0) else 1)
    return out


def layout(F, pairs: int, atoms: int) -> tuple[list, list]:
    """The leaf's rows as ``(node, slot in its group)`` (node None: the box, −2: pairs' rows over x, −3:
    pairs' rows over the variables, −1: atoms), and per node the index of its first row."""
    slots, starts = [(None, j) for j in range(2 * F.d)], []
    for k, (kind, data) in enumerate(F.nodes):
        starts.append(len(slots))
        slots += [(k, j) for j in range(2 + (len(data) + (len(data) == 2) if kind == "max" else 0))]
    return slots + [(-2, j) for j in range(2 * pairs)] + [(-3, j) for j in range(2 * pairs)] + [
        (-1, j) for j in range(atoms)
    ], starts


class LeafRows:
    """The rows ``(g, "ge")`` of a leaf, in the order of docs/spec.md §8, each built when first read: the
    box (x_i − l_i, u_i − x_i), then per node z_k: z_k − L_k, U_k − z_k, and for a max node z_k − p for
    each piece p and, with two pieces p, q (g = p − q in [gl, gu]), p − z_k if gl ≥ 0, else q − z_k if
    gu ≤ 0, else the chord q + λ (g − gl) − z_k, λ = gu / (gu − gl) rounded up to ``BITS`` bits; then per pair
    (a, s, b, t) of two-piece nodes, ``Δ − lo(x)`` and ``hi(x) − Δ`` for Δ = s·z_a − t·z_b; then per pair the
    same over the variables:
    ``Δ − δ_1 − c(h)`` and ``δ_1 + C(h) − Δ``, c and C the chords below min(h, 0) and above max(h, 0) on
    [hl, hu] (``hinges``), slopes rounded up (δ_j both ways for a pair fixed to piece j); then the atoms.

    ``tight``: ``{key: [side]}``: node k's gap g = p − q (key k) or pair n's h (key ``("h", n)``) to meet,
    below (side 0) or above (1), with its back-substitution bound (``backsubstituted``) before any use.
    ``signs``: ``{k: [side]}`` (``gap_signs``): node k's gap met with 0 below (side 0: g ≥ 0 on the leaf) or
    above (side 1), where the rows of the leaf's affine splits (among ``atoms``) say so."""

    def __init__(
        self, F, cube: list, atoms: list, pairs: list = (), tight: dict | None = None, signs: dict | None = None
    ):
        cube = [(outward(lo, False), outward(hi, True)) for lo, hi in cube]  # a dyadic box around the leaf's
        self.F, self.cube, self.atoms, self.pairs, self.tight = F, cube, atoms, pairs, tight or {}
        self.signs = signs or {}
        self.slots, self.starts = layout(F, len(pairs), len(atoms))
        self.chords_at, self.second, self.lows = (
            len(self.slots) - len(atoms) - 2 * len(pairs),
            {p[2]: n for n, p in enumerate(pairs)},
            {},
        )
        self.pivots, self.inerts, self.leans, self.firsts = {}, {}, {}, {p[0] for p in pairs}
        self.built, self.integers, self.plan = {}, {}, relaxation_plan(F, pairs)
        self.shared = F.__dict__.setdefault("relaxation_rows", {}).setdefault(tuple((p[0], p[2]) for p in pairs), {})
        tighten = self._tightened if self.tight or self.signs else None
        self.bounds, self.gaps, self.diffs, self.hinges = node_bounds(F, cube, pairs, tighten)

    def _tightened(self, key, lo: Fraction, hi: Fraction, state: tuple) -> tuple:
        """[lo, hi] of ``key`` met with its back-substitution bounds on the sides ``tight`` names, then with
        0 on the sides ``signs`` names (a gap of one sign on the leaf's region)."""
        self.bounds, self.gaps, self.diffs, self.hinges = state
        for side in self.tight.get(key, ()):
            if ("integral", key) not in self.shared:  # the form over one denominator, once per table
                f = self.hinge(key[1]) if isinstance(key, tuple) else self.gap(key)
                self.shared["integral", key] = _integral(f)
            top = self.backsubstituted(self.shared["integral", key], 1 if side else -1)
            lo, hi = (lo, min(hi, outward(top, True))) if side else (max(lo, outward(-top, False)), hi)
        for side in self.signs.get(key, ()):
            lo, hi = (lo, min(hi, Fraction(0))) if side else (max(lo, Fraction(0)), hi)
        return lo, hi

    def backsubstituted(self, f: tuple, sign: int) -> Fraction:
        """An upper bound of sign·f, f = (D, {variable: integer}) a form over one denominator (``_integral``)
        reading only variables before its node: sign·f plus nonnegative multiples
        of earlier rows, from the last variable down (DeepPoly's back-substitution): a pair's first node by the
        pair's row over the variables, a two-piece node by its top row (positive coefficient c) or z − p (p the
        piece its gap favours), then the maximum over the variables' bounds.  Over one denominator D, a row R
        enters as μ·R, μ = ⌊|c| / |R_v|⌋ ≥ 0 (exact; c's residue stays at v's bounds), D refined ``REFINE``
        times at most when a row's denominator comes within 2^BITS of it."""
        D, form = f
        T, D, leans, refined = (
            [0] * (self.F.d + len(self.F.nodes) + 1),
            D << 3 * BITS,
            self.leans,
            0,
        )  # ONE = −1: last
        for k, c in form.items():
            T[k] = sign * c << 3 * BITS

        def cancel(v: int, i: int):
            nonlocal D, T, refined
            den, R = leans[i] if i in leans else self.lean(i)
            if (D >> BITS) < den and refined < REFINE and den.bit_length() + 2 * BITS <= MAX_BITS:
                s, refined = den.bit_length() + 2 * BITS - D.bit_length(), refined + 1
                D, T = D << s, [c << s for c in T]
            r = R.get(v)
            if not r or (r > 0) == (T[v] > 0):
                return
            mu = abs(T[v]) // abs(r)
            if mu:
                for k, c in R.items():
                    T[k] += mu * c

        d, gaps, second, pivots = self.F.d, self.gaps, self.second, self.pivots
        for v in range(max(form, default=ONE), d - 1, -1):
            if second and v in second:  # Δ's rows: +s·z_a, −s·z_a
                n = second[v]
                a = self.pairs[n][0]
                if T[a]:
                    cancel(a, self.chords_at + 2 * n + ((T[a] > 0) == (self.pairs[n][1] > 0)))
            c, k = T[v], v - d
            if c and k in gaps:  # cancel(v, its top row if c > 0, else z − p), inline
                den, R, r = (pivots[k] if k in pivots else self.pivot(k))[c > 0]
                if (D >> BITS) < den and refined < REFINE and den.bit_length() + 2 * BITS <= MAX_BITS:
                    s, refined = den.bit_length() + 2 * BITS - D.bit_length(), refined + 1
                    D, T, c = D << s, [e << s for e in T], c << s
                if r and (r > 0) != (c > 0):
                    mu = abs(c) // abs(r)
                    if mu:
                        for j, e in R.items():
                            T[j] += mu * e
        return _maximum(self.bounds, D, T)

    def pivot(self, k: int) -> tuple:
        """Two-piece node k's rows for ``backsubstituted``, ``(D, R, R's coefficient of z_k)`` each: z − p or z − q
        (p the piece its gap favours), then its top row (``lean``); once its gap is final."""
        z, (gl, gu) = self.F.d + k, self.gaps[k]
        rows = []
        for i in (self.starts[k] + 2 + (gl < 0 and (gu <= 0 or gu < -gl)), self.starts[k] + 4):
            den, R = self.lean(i)
            rows.append((den, R, R.get(z)))
        self.pivots[k] = tuple(rows)
        return self.pivots[k]

    def lean(self, i: int) -> tuple[int, dict]:
        """Row i for ``backsubstituted``: ``integral`` without the entries of ``inert`` variables (a back-substitution
        ends with their coefficients 0 whatever they were; an inert node's own rows, of one entry, kept); built once
        its variables' gaps are final."""
        if i not in self.leans:
            den, R = self.integral(i)
            self.leans[i] = den, {v: a for v, a in R.items() if len(R) == 1 or not self.inert(v)}
        return self.leans[i]

    def inert(self, v: int) -> bool:
        """Whether variable v is a two-piece node whose rows are z − p = z and p − z = −z (p = 0 on the leaf), not a
        pair's first (whose coefficient a pair's row reads before v's turn): ``backsubstituted`` reads its
        coefficient c only at v's turn and cancels it to 0 (μ = |c|, D unrefined), whatever the rows above added."""
        if v not in self.inerts:
            k = v - self.F.d
            if k < 0 or k not in self.gaps or v in self.firsts:
                self.inerts[v] = False
            else:
                gl, gu = self.gaps[k]
                low, top = self.starts[k] + 2 + (gl < 0 and (gu <= 0 or gu < -gl)), self.starts[k] + 4
                self.inerts[v] = self.integral(low) == (1, {v: 1}) and self.integral(top) == (1, {v: -1})
        return self.inerts[v]

    def deltas(self, n: int) -> list:
        """Pair n's δ_0, δ_1 over the variables (``relaxation_plan``)."""
        return self.plan[self.pairs[n][2] - self.F.d][2][5]

    def gap(self, k: int) -> dict:
        """Two-piece node k's g = p − q over the variables, built once."""
        if ("g", k) not in self.shared:
            p, q = (dict(piece) for piece in self.F.nodes[k][1])
            self.shared["g", k] = combine([(1, p), (-1, q)])
        return self.shared["g", k]

    def hinge(self, n: int) -> dict:
        """Pair n's h = δ_0 − δ_1 over the variables, built once."""
        if ("h", n) not in self.shared:
            d0, d1 = self.deltas(n)
            self.shared["h", n] = combine([(1, d0), (-1, d1)])
        return self.shared["h", n]

    def __len__(self) -> int:
        return len(self.slots)

    def __getitem__(self, i: int) -> tuple:
        if i not in self.built:
            self.built[i] = (self._row(*self.slots[i]), "ge")
        return self.built[i]

    def integral(self, i: int) -> tuple[int, dict]:
        """Row i as ``(D, {variable: integer})`` (``farkas_sum``), built once: a row z − p, and a stable node's
        top row p − z or q − z, once per table (the same on every box); a chord and a pair's row over the variables in
        integers (``_chord``, ``_pair_row``)."""
        if i not in self.integers:
            k, j = self.slots[i]
            two = k is not None and k >= 0 and len(self.F.nodes[k][1]) == 2
            if two and j == 4 and self.gaps[k][0] < 0 < self.gaps[k][1]:
                self.integers[i] = self._chord(k, *self.gaps[k])
            elif k is not None and k >= 0 and 2 <= j < 2 + len(self.F.nodes[k][1]) + two:
                key = i if j < 4 or not two else ("top", i, self.gaps[k][0] >= 0)
                self.integers[i] = (
                    self.shared[key] if key in self.shared else self.shared.setdefault(key, _integral(self[i][0]))
                )
            elif k == -3:
                self.integers[i] = self._pair_row(j)
            else:
                self.integers[i] = _integral(self[i][0])
        return self.integers[i]

    def _chord(self, k: int, gl: Fraction, gu: Fraction) -> tuple[int, dict]:
        """Node k's chord row q + λ·(g − gl) − z (``_row``) in integers from q's and g's integral forms (built once
        per table)."""
        if ("q", k) not in self.shared:
            self.shared["q", k] = _integral(dict(self.F.nodes[k][1][1])), _integral(self.gap(k))
        q, g = self.shared["q", k]
        slope = outward(gu / (gu - gl), True)
        return _combination([(Fraction(1), q), (slope, g), (Fraction(-1), (1, {self.F.d + k: 1}))], -slope * gl)

    def _pair_row(self, j: int) -> tuple[int, dict]:
        """Pair row j over the variables (``_row``'s k = −3) in integers from the integral forms of Δ, δ_0, δ_1
        and h (built once per table)."""
        n = j // 2
        if ("pair", n) not in self.shared:
            a, s, b, t = self.pairs[n][:4]
            self.shared["pair", n] = [_integral(f) for f in (*self.deltas(n), self.hinge(n), {a: s, b: -t})]
        d0, d1, h, delta = self.shared["pair", n]
        state, lower, sign = self.hinges[n], j % 2 == 0, Fraction(1 if j % 2 == 0 else -1)
        if len(state) == 1:
            return _combination([(sign, delta), (-sign, (d0, d1)[state[0]])])
        if state[0] >= 0 or state[1] <= 0:
            return _combination([(sign, delta), (-sign, d1 if (state[0] >= 0) == lower else d0)])
        hl, hu = state
        r = outward((-hl if lower else hu) / (hu - hl), True)
        return _combination([(sign, delta), (-sign, d1), (-sign * r, h)], sign * r * (hu if lower else hl))

    def _row(self, k, j) -> dict:
        d = self.F.d
        if k is None:
            (lo, hi), x = self.cube[j // 2], j // 2
            return {x: Fraction(1), ONE: -lo} if j % 2 == 0 else {x: Fraction(-1), ONE: hi}
        if k == -1:
            return self.atoms[j]
        if k == -3:  # Δ − (δ_1 + min(h, 0)'s chord) and (δ_1 + max(h, 0)'s chord) − Δ
            a, s, b, t = self.pairs[j // 2][:4]
            d0, d1 = self.deltas(j // 2)
            state, h = self.hinges[j // 2], self.hinge(j // 2)
            lower, sign = j % 2 == 0, 1 if j % 2 == 0 else -1
            if len(state) == 1:
                f = (d0, d1)[state[0]]
            elif state[0] >= 0 or state[1] <= 0:  # h's sign fixed: δ_1 + min(h, 0) or + max(h, 0)
                f = d1 if (state[0] >= 0) == lower else d0
            else:
                hl, hu = state[0], state[1]
                r = outward((-hl if lower else hu) / (hu - hl), True)
                f = combine([(1, d1), (r, h)], -r * (hu if lower else hl))
            return combine([(sign, {a: s, b: -t}), (-sign, f)])
        if k == -2:  # every pair has its functions (node_bounds), in the pairs' order
            a, s, b, t = self.pairs[j // 2][:4]
            den, nums = self.diffs[j // 2][j % 2]
            fn = {i: Fraction(v, den) for i, v in enumerate(nums[:-1]) if v} | {ONE: Fraction(nums[-1], den)}
            sign = 1 if j % 2 == 0 else -1
            return combine([(sign, {a: s, b: -t}), (-sign, fn)])
        F, z = self.F, d + k
        lo, hi = self.bounds[z]
        if j < 2:
            return {z: Fraction(1), ONE: -lo} if j == 0 else {z: Fraction(-1), ONE: hi}
        pieces = [dict(p) for p in F.nodes[k][1]]
        if j - 2 < len(pieces):
            return combine([(1, {z: Fraction(1)}), (-1, pieces[j - 2])])
        p, q = pieces
        g = self.gap(k)
        gl, gu = self.gaps[k]
        slope = outward(gu / (gu - gl), True) if gl < 0 < gu else None  # dyadic, rounded up: still above max(p, q)
        top = p if gl >= 0 else q if gu <= 0 else combine([(1, q), (slope, g)], -slope * gl)
        return combine([(1, top), (-1, {z: Fraction(1)})])


def farkas_sum(rows, w: dict) -> tuple[int, list]:
    """Σ w_i g_i over the rows named in ``w``, exactly, as ``(D, numerators)``: every row over its own
    integer denominator (``LeafRows.integral``), summed in integers over one common denominator D; the
    numerators per variable, the constant last."""
    parts = [(q, rows.integral(i)) for i, q in w.items()]
    D = 1
    for q, (den, _) in parts:
        n = q.denominator * den
        if D % n == 0:
            continue
        D = math.lcm(D, n)
        if D.bit_length() > MAX_BITS:
            raise Malformed(
                f"a witness: a derived denominator exceeds {MAX_BITS} bits, beyond the checker's work limit"
            )
    total = [0] * (rows.F.d + len(rows.F.nodes) + 1)  # ONE = −1: the constant is the last entry
    for q, (den, nums) in parts:
        m = q.numerator * (D // (q.denominator * den))
        for k, v in nums.items():
            total[k] += m * v
    return D, total


def _combination(parts: list, constant: Fraction = Fraction(0)) -> tuple[int, dict]:
    """Σ q·R/D + constant over ``parts = [(q, (D, R))]`` (integral forms) as ``(D, {variable: integer})`` over its
    least common denominator, zero entries dropped: ``_integral`` of the same sum, in integers."""
    L = math.lcm(constant.denominator, *(q.denominator * D for q, (D, _) in parts))
    out: dict = {}
    for q, (D, R) in parts:
        m = q.numerator * (L // (q.denominator * D))
        for v, a in R.items():
            out[v] = out.get(v, 0) + m * a
    if constant:
        out[ONE] = out.get(ONE, 0) + constant.numerator * (L // constant.denominator)
    out = {v: a for v, a in out.items() if a}
    g = math.gcd(L, *out.values())
    return L // g, {v: a // g for v, a in out.items()}


def _integral(form: dict) -> tuple[int, dict]:
    """A form as ``(D, {variable: integer})`` over its least common denominator."""
    D = math.lcm(*(a.denominator for a in form.values()))
    return D, {k: a.numerator * (D // a.denominator) for k, a in form.items()}


def _maximum(bounds: list, D: int, total: list) -> Fraction:
    """The maximum of the form ``total``/D (integers per variable, the constant last) over the variables'
    ``bounds``: each coefficient at the end of its variable's interval that its sign points to."""
    ends = [(bounds[k][a > 0], a) for k, a in enumerate(total[:-1]) if a]
    E = math.lcm(*(e.denominator for e, _ in ends))
    return Fraction(total[-1] * E + sum(e.numerator * (E // e.denominator) * a for e, a in ends), D * E)


def infeasible(rows: "LeafRows", w: dict) -> bool:
    """Farkas: no point meets every row when w ≥ 0 and Σ w_i g_i is negative at every point of the
    variables' bounds (its maximum there: the rows x − l, u − x, z − L, U − z taken implicitly)."""
    return all(q >= 0 for q in w.values()) and _maximum(rows.bounds, *farkas_sum(rows, w)) < 0
