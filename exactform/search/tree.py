"""A search's certificate as it is written (docs/spec.md §8, docs/equiv.md): the document around one claim
(V1 or E1), and its proof tree's entries: sparse vectors of rationals, affine forms of x, a leaf's stated
back-substitutions."""
from __future__ import annotations

from fractions import Fraction

from ..checker.reader import FORMAT, ONE
from ..numbers import format_rational


def document(kind: str, models: dict, claim: str, statement: str, evidence: dict) -> dict:
    """The ``exactform/certificate`` document of one claim: its kind, the models it is about (by name), the
    claim's id, the statement the checker prints when it accepts, and the evidence it checks."""
    return {"format": FORMAT, "kind": kind, "models": models,
            "claims": [{"id": claim, "statement": statement, "evidence": evidence}]}


def sparse_text(w: dict, n: int) -> dict:
    """A vector of n rationals with the entries ``w`` (the rest 0) as a certificate writes it."""
    return {"length": n, "index": sorted(w), "value": [format_rational(w[i]) for i in sorted(w)]}


def affine_text(f: dict, d: int) -> list:
    """An affine form of x as the certificate writes it: d coefficients, then the constant."""
    return [format_rational(f.get(i, Fraction(0))) for i in range(d)] + [format_rational(f.get(ONE, Fraction(0)))]


def tighten_text(p, tight: dict) -> dict:
    """A leaf's ``tighten`` field (spec §8: ``[z, side]`` per back-substitution ``LeafRows`` meets: a node's
    gap, sides 0/1, or a pair's h at its second node, sides 2/3), or nothing when there is none; ``p``: the
    ``relaxation.Relaxation`` whose bounds stated them (``tight``)."""
    entries = [[p.d + k, side] if isinstance(k, int) else [p.pairs[k[1]][2], side + 2] for k, sides in tight.items() for side in sides]
    entries.sort(key=lambda e: e[0])        # by node (stable: a node's gap sides before its pair's)
    return {"tighten": entries} if entries else {}
