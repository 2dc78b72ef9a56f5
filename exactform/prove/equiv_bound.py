"""A sound upper bound of ``|A(x) − B(x)|∞`` over a cell, by exact differential affine relaxation.

Claim: ``DiffBound.upper(box, decided)`` ≥ ``|A(x) − B(x)|∞`` for every x of a cell contained in
``box`` (a list of exact intervals, one per input) on which every decision in ``decided`` holds
(the decisions of ``prove.equiv``: a max node's winning piece, a hardmax node's top scores).

Every node is evaluated to an affine form over x and *noise symbols*, each ranging over a known
exact interval, so that the form's range over the box (exact interval arithmetic, ``Fraction``
only; every relaxation number rounded outward to a short dyadic) contains the node's value:

- a node fixed by ``decided`` or by interval dominance over the box is its winning piece (exact);
- ``max(p, q)`` otherwise is ``q + λ·t + ε`` with ``t = p − q ∈ [l, u]``, ``λ ≈ u / (u − l)`` in
  [0, 1] and ``ε ∈ [0, max(−λl, (1 − λ)u)]`` (the triangle relaxation: ``relu(t) − λt`` is ≥ 0 and
  convex, so its maximum on [l, u] is at an end); more pieces: ``p_j + ε``, ``ε ∈ [0, U]`` with ``U``
  an upper bound of ``max_i p_i − p_j``;
- a hardmax node otherwise is the hull of its value rows;
- a node of B *paired* with one of A (the same position in the two models' node construction,
  the same number of pieces) is ``(A's value + η) / s`` with ``η ∈ [min_i lo(Q_i − P_i),
  max_i hi(Q_i − P_i)]``, since ``max Q − max P`` lies between ``min_i (Q_i − P_i)`` and
  ``max_i (Q_i − P_i)`` for any bijection of the pieces.  A's noise symbols then cancel in A − B,
  which is what makes the bound small for a quantised or perturbed copy (ReluDiff's idea).

Soundness does not depend on the pairing being "right": any pairing gives a valid bound, a good one
gives a tight bound.
"""
from __future__ import annotations

from fractions import Fraction

from ..check_equiv import ONE, Forms, combine, interval, key

BITS = 24                   # significant bits kept by ``outward``: relaxation numbers stay short


def outward(q: Fraction, up: bool) -> Fraction:
    """A dyadic rational of at most ``BITS`` significant bits, ≥ q (``up``) or ≤ q: widening an
    interval endpoint keeps the bound sound and stops the digits of λ, μ, η growing layer by layer."""
    if not q:
        return q
    shift = BITS - q.numerator.bit_length() + q.denominator.bit_length()
    scaled = q.numerator * 2 ** max(shift, 0) // (q.denominator * 2 ** max(-shift, 0))
    exact = Fraction(scaled) * Fraction(2) ** -shift == q
    return Fraction(scaled + (1 if up and not exact else 0)) * Fraction(2) ** -shift


class Recording(Forms):
    """``Forms`` that records each max it builds: ``calls[i] = (pieces, form)``, ``form = max(pieces)``
    on the box (``Forms.max`` applies only identities that hold on the box)."""

    def __init__(self, cube: list):
        super().__init__(cube)
        self.calls = []

    def max(self, pieces: list) -> dict:
        form = super().max(pieces)
        self.calls.append((list(pieces), form))
        return form


def pairing(F: Recording, calls_a: int, nodes_a: int) -> dict:
    """``{b: (form_a, P, Q, s)}``: node b of B only, built by the same call index as A's ``form_a =
    max(P)``, with ``s·b = max(Q)`` and as many pieces; none when the two call sequences differ in length."""
    a, b = F.calls[:calls_a], F.calls[calls_a:]
    if len(a) != len(b):
        return {}
    related = {}
    for (P, fa), (Q, fb) in zip(a, b):
        if len(P) == len(Q) and len(fb) == 1:
            (var, s), = fb.items()
            if var >= nodes_a and var not in related:
                related[var] = (fa, P, Q, s)
    return related


class DiffBound:
    """Upper bounds of ``|A − B|∞`` over cells for the difference forms ``diff`` over ``F``."""

    def __init__(self, F: Forms, diff: list, related: dict):
        self.F, self.diff, self.related = F, diff, related

    def upper(self, box: list, decided: dict) -> Fraction:
        """An upper bound of ``max_k |D_k(x)|`` over every cell in ``box`` where ``decided`` holds."""
        run = _Run(self, box, decided)
        return max((max(-lo, hi) for lo, hi in (run.interval(run.form(D)) for D in self.diff)), default=Fraction(0))


class _Run:
    """One evaluation over one box: node values memoised, noise symbols with their intervals."""

    def __init__(self, bound: DiffBound, box: list, decided: dict):
        self.F, self.related, self.decided = bound.F, bound.related, decided
        self.ranges = {i: (outward(lo, False), outward(hi, True)) for i, (lo, hi) in enumerate(box)}
        self.memo = {}

    def interval(self, f: dict) -> tuple:
        return interval(f, self.ranges)

    def form(self, f: dict) -> dict:
        """``f`` (over x and nodes) as a form over x and noise symbols."""
        d = self.F.d
        return combine([(a, {k: Fraction(1)} if k == ONE or k < d else self.value(k)) for k, a in f.items()])

    def noise(self, name: tuple, lo: Fraction, hi: Fraction) -> dict:
        """A fresh symbol ranging over (a dyadic widening of) [lo, hi]."""
        self.ranges[name] = (outward(lo, False), outward(hi, True))
        return {name: Fraction(1)}

    def value(self, var: int) -> dict:
        if var not in self.memo:
            kind, data = self.F.nodes[var - self.F.d]
            self.memo[var] = (self._max if kind == "max" else self._hardmax)(var, data)
        return self.memo[var]

    def _fixed(self, kind: str, pieces: list):
        """The decision on the cell when every piece is exact (a form over x only) and decided."""
        if any(isinstance(k, tuple) for p in pieces for k in p):
            return None
        keys = tuple(sorted({key(p) for p in pieces}))
        if len(keys) == 1:
            return keys[0] if kind == "max" else set(keys)
        return self.decided.get((kind, keys))

    def _max(self, var: int, data: tuple) -> dict:
        ps = [self.form(dict(p)) for p in data]
        won = self._fixed("max", ps)
        if won is not None:
            return dict(won)
        gaps = [[self.interval(combine([(1, p), (-1, q)])) for q in ps] for p in ps]
        for p, row in zip(ps, gaps):
            if all(lo >= 0 for lo, _ in row):
                return p
        if var in self.related:
            fa, P, Q, s = self.related[var]
            etas = [self.interval(self.form(combine([(1, q), (-1, p)]))) for p, q in zip(P, Q)]
            eta = self.noise(("eta", var), min(lo for lo, _ in etas), max(hi for _, hi in etas))
            return combine([(1 / s, self.form(fa)), (1 / s, eta)])
        if len(ps) == 2:
            p, q = ps
            lo, hi = gaps[0][1]                           # t = p − q, with lo < 0 < hi
            lam = min(max(outward(hi / (hi - lo), False), Fraction(0)), Fraction(1))
            top = max(-lam * lo, (1 - lam) * hi)          # relu(t) − λt ∈ [0, top] for any λ in [0, 1]
            return combine([(1, q), (lam, combine([(1, p), (-1, q)])), (1, self.noise(("eps", var), Fraction(0), top))])
        j = max(range(len(ps)), key=lambda i: min(lo for lo, _ in gaps[i]))
        above = max(-lo for lo, _ in gaps[j])             # max_i p_i − p_j ≤ above
        return combine([(1, ps[j]), (1, self.noise(("eps", var), Fraction(0), above))])

    def _hardmax(self, var: int, data: tuple) -> dict:
        scores = [self.form(dict(s)) for s, _ in data]
        values = [self.form(dict(v)) for _, v in data]
        top = self._fixed("hardmax", scores)
        if top is not None:
            win = [v for s, v in zip(scores, values) if key(s) in top]
            return combine([(Fraction(1, len(win)), v) for v in win])
        ivs = [self.interval(v) for v in values]
        return self.noise(("hull", var), min(lo for lo, _ in ivs), max(hi for _, hi in ivs))
