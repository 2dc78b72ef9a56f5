"""A sound upper bound of ``|A(x) − B(x)|∞`` over a box, by exact differential affine relaxation.

Claim: ``DiffBound.upper(box)`` ≥ ``|A(x) − B(x)|∞`` for every x in ``box`` (a list of exact
intervals, one per input).

Every node is evaluated to an affine form over x and *noise symbols*, each ranging over a known
exact interval, so that the form's range over the box (exact interval arithmetic, flint ``fmpq``
only; every relaxation number rounded outward to a short dyadic) contains the node's value:

- a node fixed by interval dominance over the box is its winning piece (exact); a hardmax node
  whose scores are all one form of x is the average of its values (every token ties);
- ``max(p, q)`` otherwise is ``q + λ·t + ε`` with ``t = p − q ∈ [l, u]``, ``λ ≈ u / (u − l)`` in
  [0, 1] and ``ε ∈ [0, max(−λl, (1 − λ)u)]`` (the triangle relaxation: ``relu(t) − λt`` is ≥ 0 and
  convex, so its maximum on [l, u] is at an end); more pieces: ``p_j + ε``, ``ε ∈ [0, U]`` with ``U``
  an upper bound of ``max_i p_i − p_j``;
- a hardmax node otherwise is the hull of its value rows;
- a node of B *paired* with one of A (the same position in the two models' node construction,
  the same number of pieces) is ``(A's value + η) / s`` with ``η ∈ [min_i lo(Q_i − P_i),
  max_i hi(Q_i − P_i)]``, since ``max Q − max P`` lies between ``min_i (Q_i − P_i)`` and
  ``max_i (Q_i − P_i)`` for any bijection of the pieces.  A's noise symbols then cancel in A − B,
  which is what makes the bound small for a quantised or perturbed copy (ReluDiff's idea).  A node
  of A that is not fixed, whose partner is, is written the other way, ``(B's value − η) / s``;
- a form with noise keeps ``BITS``-bit coefficients; the remainder (rounding, negligible terms)
  becomes one symbol of that node, of exact range, so the digits do not grow from layer to layer.

Soundness does not depend on the pairing being "right": any pairing gives a valid bound, a good one
gives a tight bound.
"""
from __future__ import annotations

from fractions import Fraction

import flint

from ..checker.forms import Forms, Unsupported, key, outputs, read_model
from ..checker.reader import ONE, combine
from ..geometry.cells import rational

Q = flint.fmpq
ZERO, UNIT = Q(0), Q(1)

BITS = 24                   # significant bits kept by ``outward``: relaxation numbers stay short
TERMS = 512                 # noise symbols kept per node's form (ACAS Xu's have at most ~300)


def outward(q: Q, up: bool) -> Q:
    """A dyadic rational of at most ``BITS`` significant bits, ≥ q (``up``) or ≤ q: widening an
    interval endpoint keeps the bound sound and stops the digits of λ, μ, η growing layer by layer."""
    if not q:
        return q
    n, d = int(q.p), int(q.q)
    shift = BITS - n.bit_length() + d.bit_length()
    up_scale, down_scale = 2 ** max(shift, 0), 2 ** max(-shift, 0)     # q ≈ scaled / 2^shift
    scaled = n * up_scale // (d * down_scale)
    exact = scaled * d * down_scale == n * up_scale
    return Q((scaled + (1 if up and not exact else 0)) * down_scale, up_scale)


def exact_form(f: dict) -> dict:
    """A form of ``Fraction`` coefficients with ``fmpq`` ones (the bound's arithmetic type)."""
    return {k: rational(a) for k, a in f.items()}


def pairing(F: Forms, calls_a: int, nodes_a: int) -> dict:
    """``{v: (other, P, Q, s, sign)}`` for the maxes built by the same call index in A and B, with as
    many pieces: ``form_a = max(P)``, ``form_b = max(Q)``.  A node b of B only (``form_b = s·b``) gets
    ``(form_a, P, Q, s, 1)``: ``s·b = form_a + η``; a node a of A (``form_a = s·a``) gets ``(form_b, P, Q,
    s, −1)``: ``s·a = form_b − η``, with ``η = max Q − max P``.  None when the call sequences differ in length."""
    a, b = F.calls[:calls_a], F.calls[calls_a:]
    if len(a) != len(b):
        return {}
    related = {}
    for (P, fa), (Q, fb) in zip(a, b):
        if len(P) != len(Q):
            continue
        for form, other, sign, own in ((fb, fa, 1, lambda v: v >= nodes_a), (fa, fb, -1, lambda v: F.d <= v < nodes_a)):
            if len(form) == 1:
                (var, s), = form.items()
                if own(var) and var not in related:
                    related[var] = (other, P, Q, s, sign)
    return related


class DiffBound:
    """Upper bounds of ``|A − B|∞`` over boxes for the difference forms ``diff`` over ``F``.

    ``DiffBound.between(a_json, b_json, box)`` builds it for two model documents (Maxout nets or
    hardmax Transformers); ``upper(sub)`` then bounds ``|A − B|∞`` over any box ``sub`` inside ``box``
    (the node table's identities hold on ``box``, hence on ``sub``)."""

    @classmethod
    def between(cls, a_json: dict, b_json: dict, box: list) -> "DiffBound":
        """The bound of A − B for two models read on ``box`` (``Unsupported``, naming A or B, for a
        model outside the method); ``F`` and ``diff`` are the node table and the difference forms."""
        F, forms, marks = Forms(box), [], []
        for name, doc in (("A", a_json), ("B", b_json)):
            try:
                forms.append(outputs(F, read_model(doc, name)))
            except Unsupported as e:
                raise Unsupported(f"{name}: {e}") from None
            marks.append((len(F.calls), len(F.bounds)))
        return cls(F, [combine([(1, p), (-1, q)]) for p, q in zip(*forms)], pairing(F, *marks[0]), marks[0][0])

    def __init__(self, F: Forms, diff: list, related: dict, mark: int = 0):
        self.F, self.diff, self.related, self.mark = F, diff, related, mark     # mark: A's calls in F.calls

    def upper(self, box: list) -> Fraction:
        """An upper bound of ``max_k |D_k(x)|`` over ``box``."""
        run = _Run(self, box)
        run.prepare([k for D in self.diff for k in D])
        top = max((max(-lo, hi) for lo, hi in (run.interval(run.form(D)) for D in self.diff)), default=ZERO)
        return Fraction(int(top.p), int(top.q))


def _exact(f: dict) -> bool:
    """An affine form of x only (no noise symbol)."""
    return not any(isinstance(k, tuple) for k in f)


class _Run:
    """One evaluation over one box: node values memoised, noise symbols with their intervals."""

    def __init__(self, bound: DiffBound, box: list):
        self.F, self.related = bound.F, bound.related
        self.ranges = {i: (outward(rational(lo), False), outward(rational(hi), True)) for i, (lo, hi) in enumerate(box)}
        self.memo = {}

    def interval(self, f: dict) -> tuple:
        """The exact range of the form over x's box and the noise symbols' ranges."""
        lo = hi = f.get(ONE, ZERO)
        for k, a in f.items():
            if k != ONE:
                low, high = self.ranges[k]
                lo, hi = (lo + a * low, hi + a * high) if a > 0 else (lo + a * high, hi + a * low)
        return lo, hi

    def form(self, f: dict) -> dict:
        """``f`` (over x and nodes) as a form over x and noise symbols."""
        d = self.F.d
        return combine([(rational(a), {k: UNIT} if k == ONE or k < d else self.value(k)) for k, a in f.items()])

    def prepare(self, variables: list) -> None:
        """Evaluate the nodes among ``variables`` and every node their values read, each after the
        nodes it reads (an explicit post-order stack), so that ``value`` never recurses on depth."""
        stack, entered = [(v, False) for v in variables if v != ONE and v >= self.F.d], set()
        while stack:
            var, ready = stack.pop()
            if var in self.memo or (var in entered and not ready):
                continue
            entered.add(var)
            if ready:
                self.value(var)
                continue
            stack.append((var, True))
            stack += [(k, False) for k in self.reads(var) if k not in self.memo]

    def reads(self, var: int) -> set:
        """The nodes ``value(var)`` may read: its pieces (scores and values), and for a paired node its
        partner's form, both piece lists and the partner's pieces (``_paired``)."""
        kind, data = self.F.nodes[var - self.F.d]
        forms = [dict(p) for p in data] if kind == "max" else [dict(f) for pair in data for f in pair]
        if var in self.related:
            other, P, Q, _, _ = self.related[var]
            forms += [other, *P, *Q]
            if len(other) == 1 and next(iter(other)) != ONE and next(iter(other)) >= self.F.d:
                kind, data = self.F.nodes[next(iter(other)) - self.F.d]
                forms += [dict(p) for p in data] if kind == "max" else []
        return {k for f in forms for k in f if k != ONE and k >= self.F.d and k != var}

    def noise(self, name: tuple, lo: Q, hi: Q) -> dict:
        """A fresh symbol ranging over (a dyadic widening of) [lo, hi]."""
        self.ranges[name] = (outward(lo, False), outward(hi, True))
        return {name: UNIT}

    def value(self, var: int) -> dict:
        if var not in self.memo:
            kind, data = self.F.nodes[var - self.F.d]
            if kind == "max":
                exact = self.exact(var)
                paired = self._paired(var, exact) if var in self.related else None
                value = paired if paired is not None else exact if exact is not None else self._relaxed(var)
            else:
                value = self._hardmax(var, data)
            self.memo[var] = value if _exact(value) else self.compressed(value, var)
        return self.memo[var]

    def compressed(self, f: dict, var: int) -> dict:
        """``f`` with short coefficients: each rounded to ``BITS`` bits, the terms below 2^−40 of the
        form's size dropped and of the noise terms only the ``TERMS`` largest kept (so the work per
        node does not grow with depth); what is removed, a function of x and the noise symbols that ranges
        over a known interval, becomes one symbol of this node (the same quantity wherever the node
        is used, so sharing the symbol is sound)."""
        one = (UNIT, UNIT)
        ranges = [(k, c, self.ranges.get(k, one)) for k, c in f.items()]
        weights = [abs(c) * max(-lo, hi) for _, c, (lo, hi) in ranges]
        size = sum(weights)
        noise = sorted((i for i, (k, _, _) in enumerate(ranges) if isinstance(k, tuple)), key=weights.__getitem__)
        folded = set(noise[:-TERMS])
        kept, low, high = {}, ZERO, ZERO
        for i, (k, c, (lo, hi)) in enumerate(ranges):
            short = ZERO if i in folded or weights[i] * 2 ** 40 <= size else outward(c, False)
            if short:
                kept[k] = short
            e = c - short
            low, high = low + min(e * lo, e * hi), high + max(e * lo, e * hi)
        return combine([(1, kept), (1, self.noise(("rest", var), low, high))]) if low or high else kept

    def exact(self, var: int) -> dict | None:
        """A max node's winning piece when interval dominance fixes it on the box."""
        if self.F.nodes[var - self.F.d][0] != "max":
            return None
        if ("exact", var) not in self.memo:
            ps = self.memo["pieces", var] = [self.form(dict(p)) for p in self.F.nodes[var - self.F.d][1]]
            gaps = self.memo["gaps", var] = [[self.interval(combine([(1, p), (-1, q)])) if p is not q else (0, 0)
                                              for q in ps] for p in ps]
            won = next((p for p, row in zip(ps, gaps) if all(lo >= 0 for lo, _ in row)), None)
            self.memo["exact", var] = None if won is None else dict(won)
        return self.memo["exact", var]

    def _paired(self, var: int, exact: dict | None) -> dict | None:
        """The node through its partner, ``(other + sign·η) / s``, when that is the better form: for a
        node of B, unless it is fixed and its fixed form is closer to the partner's than η is wide
        (both fixed, on different pieces: the two pieces differ by a form that is small on the cell
        but not on its bounding box); for a node of A, only when it is not fixed and B's partner is
        (so that the two never refer to each other)."""
        other, P, Q, s, sign = self.related[var]
        (partner, scale), = other.items() if len(other) == 1 else ((None, None),)
        fixed = self.exact(partner) if partner is not None and partner >= self.F.d else None
        if sign < 0 and (exact is not None or fixed is None):
            return None
        theirs = combine([(rational(scale), fixed)]) if sign < 0 else self.form(other)
        etas = [self.interval(self.form(combine([(1, q), (-1, p)]))) for p, q in zip(P, Q)]
        lo, hi = min(lo for lo, _ in etas), max(hi for _, hi in etas)
        if exact is not None:
            gap = self.interval(combine([(rational(s), exact), (-1, theirs)]))
            if gap[1] - gap[0] <= hi - lo:
                return None
        return combine([(UNIT / rational(s), theirs), (sign * UNIT / rational(s), self.noise(("eta", var), lo, hi))])

    def _relaxed(self, var: int) -> dict:
        """A max node the box does not fix, by the triangle relaxation (two pieces) or a bound above."""
        ps, gaps = self.memo["pieces", var], self.memo["gaps", var]
        if len(ps) == 2:
            p, q = ps
            lo, hi = gaps[0][1]                           # t = p − q, with lo < 0 < hi
            lam = min(max(outward(hi / (hi - lo), False), ZERO), UNIT)
            top = max(-lam * lo, (1 - lam) * hi)          # relu(t) − λt ∈ [0, top] for any λ in [0, 1]
            return combine([(1, q), (lam, combine([(1, p), (-1, q)])), (1, self.noise(("eps", var), ZERO, top))])
        j = max(range(len(ps)), key=lambda i: min(lo for lo, _ in gaps[i]))
        above = max(-lo for lo, _ in gaps[j])             # max_i p_i − p_j ≤ above
        return combine([(1, ps[j]), (1, self.noise(("eps", var), ZERO, above))])

    def _hardmax(self, var: int, data: tuple) -> dict:
        scores = [self.form(dict(s)) for s, _ in data]
        values = [self.form(dict(v)) for _, v in data]
        if all(map(_exact, scores)) and len({key(s) for s in scores}) == 1:     # every token ties
            return combine([(Q(1, len(values)), v) for v in values])
        ivs = [self.interval(v) for v in values]
        return self.noise(("hull", var), min(lo for lo, _ in ivs), max(hi for _, hi in ivs))
