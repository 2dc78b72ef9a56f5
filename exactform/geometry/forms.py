"""Sparse exact linear forms ``{key: non-zero coefficient}`` — keys are variable names (the SMT
encoder), column indices (the importer's traced rows), or a constant marker — and the one
implementation of their linear combination."""
from __future__ import annotations


def combine(terms) -> dict:
    """``Σ c·form`` over ``terms = [(c, form)]``; zero factors are skipped and exact cancellations
    dropped, so equal forms are equal dicts."""
    out: dict = {}
    for c, form in terms:
        if c:
            for k, w in form.items():
                out[k] = out.get(k, 0) + c * w
    return {k: w for k, w in out.items() if w}
