"""Convexity on a box by disciplined-convex-programming composition rules (the rule set of cvxpy,
with argument signs and ranges taken from certified interval enclosures over the box).

Each sub-expression gets a curvature — constant, affine, convex, concave or unknown — by:

- constants (no variables) and variables: constant / affine;
- sums: convex if every term is convex, concave if every term is concave (affine if both);
- ``c·u``, ``u/c`` with c a constant certified non-zero: curvature of u, flipped when c < 0; ``−u`` flips;
- ``Max`` of convex arguments is convex, ``Min`` of concave arguments is concave;
- ``φ(u)`` for an atom φ that is convex (concave) on an interval I enclosing u's range: convex
  (concave) when u is affine, or φ is non-decreasing on I and u convex (concave), or φ is
  non-increasing on I and u concave (convex).  Atoms: ``exp`` (convex ↑), ``log`` (concave ↑, I > 0),
  ``Abs`` (convex; ↑ on I ≥ 0, ↓ on I ≤ 0), ``u^p``: even p ≥ 2 convex (↑ on I ≥ 0, ↓ on I ≤ 0),
  odd p ≥ 3 convex ↑ on I ≥ 0 and concave ↑ on I ≤ 0, integer p < 0 convex ↓ on I > 0 (on I < 0:
  convex ↑ for even p, concave ↓ for odd p), non-integer p on I ≥ 0: convex ↑ for p > 1, concave ↑
  for 0 < p < 1, convex ↓ for p < 0 (I > 0);
- norms: ``sqrt(c₀ + Σ wᵢ·uᵢ²)`` with affine uᵢ, constants wᵢ > 0 and c₀ ≥ 0 is convex;
- log-sum-exp: ``log(Σ cᵢ·exp(uᵢ) + c₀)`` with constants cᵢ > 0, c₀ ≥ 0 and convex uᵢ is convex.

Anything else — a product of two non-constant terms, a sum of a convex and a concave term, a
non-monotone atom of a non-affine argument — is *unknown*.  When the rules do not show the whole
expression convex, a second route tries a certified interval proof that the Hessian is positive
semi-definite on sub-boxes covering the box (``hessian_certificate``, smooth atoms only).
``prove_convex`` returns the derivation when either route succeeds and raises ``NotConvex`` naming
the innermost sub-expression that no rule covers (or the whole expression when it is concave), or
``DomainError`` when an atom's
argument may leave its domain on the box (``sqrt`` or a fractional power of a possibly negative
argument, ``log`` of a possibly non-positive one, a division by a possibly zero constant).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import flint

from ..analytic import Jet, Node, combine, evaluate, norm_terms, weighted
from .intervals import Iv

CONST, AFFINE, CONVEX, CONCAVE, UNKNOWN = "constant", "affine", "convex", "concave", "unknown"


class NotConvex(ValueError):
    def __init__(self, node: Node, reason: str):
        self.node, self.reason = node, reason
        super().__init__(f"{node} is not shown convex: {reason}")


class DomainError(ValueError):
    def __init__(self, node: Node, reason: str):
        self.node, self.reason = node, reason
        super().__init__(f"{node}: {reason}")


@dataclass(frozen=True)
class Step:
    expr: str
    curvature: str
    rule: str

    def to_json(self) -> dict:
        return {"expr": self.expr, "curvature": self.curvature, "rule": self.rule}


def convex(c: str) -> bool:
    return c in (CONST, AFFINE, CONVEX)


def concave(c: str) -> bool:
    return c in (CONST, AFFINE, CONCAVE)


def _flip(c: str) -> str:
    return {CONVEX: CONCAVE, CONCAVE: CONVEX}.get(c, c)


def prove_convex(root: Node, env: dict[str, Iv], names: list[str]) -> list[Step]:
    """The DCP derivation (one step per sub-expression, innermost first) that ``root`` is convex on
    the box ``env``; raises ``NotConvex`` or ``DomainError``."""
    steps: list[Step] = []
    unknown: list[tuple[Node, str]] = []

    def visit(n: Node) -> tuple[str, Iv]:
        kids = [visit(a) for a in n.args]
        _check_domain(n, [r for _, r in kids])
        rng = combine(n, [Jet(r) for _, r in kids], env, names, 0).v
        if n.is_constant():
            if not rng.is_finite():
                raise DomainError(n, "the constant could not be enclosed")
            curv, rule = CONST, "no variables"
        else:
            curv, rule = _rule(n, kids, env, names)
        if curv == UNKNOWN and not unknown:
            unknown.append((n, rule))
        steps.append(Step(str(n), curv, rule))
        return curv, rng

    curv, _ = visit(root)
    if convex(curv):
        return steps
    node, reason = unknown[0] if unknown else (root, f"it is {curv}, not convex")
    boxes = hessian_certificate(root, env, names)
    if boxes is None:
        raise NotConvex(node, reason + "; no Hessian certificate either")
    return steps + [Step(str(root), CONVEX, f"Hessian positive semi-definite on {boxes} sub-boxes covering "
                                            "the box (interval Gershgorin or Cholesky); no rule covers "
                                            f"{node}: {reason}")]


MAX_SUBBOXES = 256


def hessian_certificate(root: Node, env: dict[str, Iv], names: list[str]) -> int | None:
    """The second route: for an expression of smooth atoms only (no Abs/Max/Min), split the box
    (widest side first, at most ``MAX_SUBBOXES`` pieces) until on every piece the Hessian enclosure
    is certified positive semi-definite — every symmetric matrix in it diagonally dominant with a
    non-negative diagonal (Gershgorin), or positive definite by interval Cholesky.  f is then C² with
    a PSD Hessian on the box, hence convex.  Returns the number of pieces, or None."""
    if _has_kinks(root):
        return None
    boxes, done = [[(x.lower(), x.upper()) for x in (env[v] for v in names)]], 0
    while boxes:
        if done + len(boxes) > MAX_SUBBOXES:
            return None
        box = boxes.pop()
        h = evaluate(root, {v: Iv.of(lo, hi) for v, (lo, hi) in zip(names, box)}, names, 2).h
        if h is None or not all(x.is_finite() for row in h for x in row):
            return None
        if _diagonally_dominant(h) or _cholesky_positive(h):
            done += 1
            continue
        k = max(range(len(box)), key=lambda i: box[i][1] - box[i][0])
        lo, hi = box[k]
        mid = (lo + hi) / 2
        boxes += [box[:k] + [(lo, mid)] + box[k + 1:], box[:k] + [(mid, hi)] + box[k + 1:]]
    return done


def _has_kinks(n: Node) -> bool:
    return n.op in ("abs", "max", "min") or any(_has_kinks(a) for a in n.args)


def _diagonally_dominant(h) -> bool:
    d = len(h)
    for i in range(d):
        off = flint.arb(0)
        for j in range(d):
            if j != i:
                off += h[i][j].magnitude()
        if not bool(h[i][i].lo - off >= 0):
            return False
    return True


def _cholesky_positive(h) -> bool:
    """Interval Cholesky on the lower triangle: every pivot certified > 0 ⇒ every symmetric matrix in
    the enclosure is positive definite (each exact pivot lies in its interval)."""
    d = len(h)
    low = [[None] * d for _ in range(d)]
    for k in range(d):
        pivot = h[k][k]
        for j in range(k):
            pivot = pivot - low[k][j] * low[k][j]
        if not pivot.positive():
            return False
        root = Iv(pivot.lo.sqrt(), pivot.hi.sqrt())
        low[k][k] = root
        inv = root.power(Fraction(-1))
        for i in range(k + 1, d):
            s = h[i][k]
            for j in range(k):
                s = s - low[i][j] * low[k][j]
            low[i][k] = s * inv
    return True


def _check_domain(n: Node, ranges: list[Iv]) -> None:
    if n.op == "log" and not ranges[0].positive():
        raise DomainError(n, f"the argument may be ≤ 0 on the box (range ⊆ {_show(ranges[0])})")
    if n.op == "div" and not (ranges[1].positive() or ranges[1].negative()):
        raise DomainError(n, "the divisor may be 0 on the box")
    if n.op == "pow":
        x, p = ranges[0], n.p
        if p.denominator != 1 and not x.nonnegative():
            raise DomainError(n, f"the argument may be negative on the box (range ⊆ {_show(x)})")
        if p < 0 and not (x.positive() or (p.denominator == 1 and x.negative())):
            raise DomainError(n, f"the argument may be 0 on the box (range ⊆ {_show(x)})")


def _show(x: Iv) -> str:
    if not x.is_finite():
        return "(−∞, ∞)"
    return f"[{x.lo.lower().str(6, radius=False)}, {x.hi.upper().str(6, radius=False)}]"


def _sign(n: Node, env, names) -> int:
    """+1 / −1 when the constant ``n`` is certified positive / negative, 0 when exactly zero, None
    when its sign is not certified."""
    v = evaluate(n, env, names, 0).v
    if v.positive():
        return 1
    if v.negative():
        return -1
    return 0 if n.op == "const" and n.p == 0 else None


def _rule(n: Node, kids, env, names) -> tuple[str, str]:
    curvs = [c for c, _ in kids]
    op = n.op
    if op == "var":
        return AFFINE, "variable"
    if op == "add":
        if all(c in (CONST, AFFINE) for c in curvs):
            return AFFINE, "sum of affine terms"
        if all(convex(c) for c in curvs):
            return CONVEX, "sum of convex terms"
        if all(concave(c) for c in curvs):
            return CONCAVE, "sum of concave terms"
        return UNKNOWN, "a sum of a convex and a concave term"
    if op == "neg":
        return _flip(curvs[0]), "negation"
    if op in ("mul", "div"):
        a, b = n.args
        if op == "mul" and a.is_constant():
            c, u = a, 1
        elif b.is_constant():
            c, u = b, 0
        else:
            return UNKNOWN, ("a product" if op == "mul" else "a quotient") + " of two non-constant terms"
        s = _sign(c, env, names)
        if s == 0:
            return CONST, "zero multiple"
        if s is None:
            return (AFFINE, "constant multiple of an affine term") if curvs[u] == AFFINE else \
                (UNKNOWN, "the sign of the constant factor is not certified")
        return (curvs[u] if s > 0 else _flip(curvs[u])), \
            ("positive" if s > 0 else "negative") + " constant " + ("multiple" if op == "mul" else "divisor")
    if op == "max":
        if all(convex(c) for c in curvs):
            return CONVEX, "Max of convex arguments"
        return UNKNOWN, "Max of an argument not shown convex"
    if op == "min":
        if all(concave(c) for c in curvs):
            return CONCAVE, "Min of concave arguments"
        return UNKNOWN, "Min of an argument not shown concave"
    if op == "pow" and n.p == Fraction(1, 2):
        terms = norm_terms(n.args[0])
        if terms is not None and all(w is None or _sign(w, env, names) == 1 for w, _ in terms[0]) and \
                all(_sign(c, env, names) in (0, 1) for c in terms[1]):
            return CONVEX, "Euclidean norm of affine terms"
    if op == "log":
        lse = _log_sum_exp(n.args[0], env, names)
        if lse is not None:
            return lse
    return _composition(n, curvs[0], kids[0][1])


def _log_sum_exp(s: Node, env, names) -> tuple[str, str] | None:
    terms = s.args if s.op == "add" else (s,)
    exps = 0
    for t in terms:
        w, t = weighted(t)
        if t.is_constant() and w is None:
            if _sign(t, env, names) not in (0, 1):
                return None
            continue
        if t.op != "exp" or (w is not None and _sign(w, env, names) != 1):
            return None
        try:
            prove_convex(t.args[0], env, names)
        except (NotConvex, DomainError):
            return None
        exps += 1
    return (CONVEX, "log-sum-exp of convex arguments") if exps else None


def _atom(n: Node, x: Iv) -> tuple[str | None, int]:
    """(curvature of the atom on the interval x, monotonicity: +1 ↑, −1 ↓, 0 neither)."""
    up = 1 if x.nonnegative() else (-1 if x.nonpositive() else 0)
    if n.op == "exp":
        return CONVEX, 1
    if n.op == "log":
        return CONCAVE, 1
    if n.op == "abs":
        return CONVEX, up
    p = n.p
    if p == 0:
        return CONST, 0
    if p == 1:
        return AFFINE, 1
    if p.denominator == 1 and p > 0:
        if p % 2 == 0:
            return CONVEX, up
        return (CONVEX, 1) if x.nonnegative() else ((CONCAVE, 1) if x.nonpositive() else (None, 1))
    if p.denominator == 1:
        if x.positive():
            return CONVEX, -1
        return (CONVEX, 1) if p % 2 == 0 else (CONCAVE, -1)
    if p > 1:
        return CONVEX, 1
    if p > 0:
        return CONCAVE, 1
    return CONVEX, -1


def _composition(n: Node, u: str, x: Iv) -> tuple[str, str]:
    atom, mono = _atom(n, x)
    if atom == CONST:
        return CONST, "zeroth power"
    if atom == AFFINE:
        return u, "first power"
    if atom is None:
        return UNKNOWN, "an odd power of an argument that changes sign"
    trend = {1: "non-decreasing", -1: "non-increasing", 0: "non-monotone"}[mono]
    rule = f"{trend} {atom} atom of a{'n' if u in (AFFINE, UNKNOWN) else ''} {u} argument"
    follows, opposes = (convex, concave) if atom == CONVEX else (concave, convex)
    if u == AFFINE or (mono > 0 and follows(u)) or (mono < 0 and opposes(u)):
        return atom, rule
    return UNKNOWN, rule
