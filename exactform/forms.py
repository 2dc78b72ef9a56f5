"""Sparse exact affine forms on the prover's side: ``{key: non-zero coefficient}``, whose keys are the
variables (names in the SMT encoder, column indices elsewhere) and ``CONSTANT`` for the constant term,
and the one implementation of their linear combination.  (The checker keeps its own, ``checker.reader``.)"""
from __future__ import annotations

CONSTANT = -1
"""The key of a form's constant term (never a variable: variables are names or indices from 0)."""


def combine(terms) -> dict:
    """``Σ c·form`` over ``terms = [(c, form)]``; zero factors are skipped and exact cancellations
    dropped, so equal forms are equal dicts."""
    out: dict = {}
    for c, form in terms:
        if c:
            for k, w in form.items():
                out[k] = out.get(k, 0) + c * w
    return {k: w for k, w in out.items() if w}
