"""Writing certificates (docs/spec.md, "Certificates"), LRAT style: the prover does the search
(``provers.symbolic.analyse``: the phase of every ReLU or its identity partner, the piece each head
sees in each token) and the certificate carries it as hints, with both models embedded whole.  The
statements are the checker's own (``exactform.checker.construction.derive`` on the finished document), so a
certificate states exactly what ``exactform check`` re-derives.  The file is canonical and holds no
time, host or path: certifying the same pair twice gives byte-identical files.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from ..checker import reader, construction
from ..models import MaxoutNet, Transformer
from .symbolic import Analysis, analyse

PHASE_CODES = {"off": -1, "on": -2, "?": -1}
"""Hint codes of fixed phases (an undecided phase, "?", is written as off, which the checker refutes);
an identity pair is written as the partner's index."""


@dataclass
class Certificate:
    """The certificate document and, per claim, what fails it (empty: it holds), as the prover
    and the checker's derivation see it; ``smt``: query name -> solver answer (``--smt``)."""
    document: dict
    problems: dict[str, list[str]] = field(default_factory=dict)
    smt: dict[str, str] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        return not any(self.problems.values())


def hints(tf: Transformer, a: Analysis) -> dict:
    """The prover's search as hints; blocks it did not reach get placeholders the checker refutes."""
    found = {f.block: [[PHASE_CODES.get(p, p) for p in token] for token in f.phases] for f in a.feedforward}
    heads = {}
    for h in a.heads:
        heads.setdefault(h.block, {})[h.head] = h.pieces
    phases, pieces = [], []
    for b, block in enumerate(tf.blocks):
        if block.kind == "feedforward":
            phases.append(found.get(b, [[-1] * block.hidden for _ in range(tf.tokens)]))
        else:
            pieces.append([heads.get(b, {}).get(i, [0] * tf.tokens) for i in range(len(block.heads))])
    return {"phases": phases, "pieces": pieces}


def document(kind: str, net_json: dict, tf_json: dict, hint: dict, extra: dict[str, dict]) -> tuple[dict, dict]:
    """The certificate of ``kind`` with the checker's statements, and the checker's verdicts
    ``{claim: (holds, statement or reason)}``; a claim that fails is stated as ``NOT PROVED: reason``."""
    doc = {"format": reader.FORMAT, "kind": kind, "maxout": net_json, "transformer": tf_json, "hints": hint,
           "claims": [{"id": c, "statement": "", **extra.get(c, {})} for c in construction.CLAIMS[kind]]}
    try:
        derived = construction.derive(doc)[4]
    except reader.Malformed as e:            # hints the checker cannot read: the Transformer is not of the construction's shape
        derived = {c: (False, f"the checker cannot follow the Transformer: {e}") for c in construction.CLAIMS[kind]}
    for claim in doc["claims"]:
        holds, words = derived[claim["id"]]
        claim["statement"] = words if holds else f"NOT PROVED: {words}"
    return doc, derived


def certify(net: MaxoutNet, tf: Transformer, smt: bool = False, net_json: dict | None = None,
            tf_json: dict | None = None, timeout_ms: int = 60_000, executor=None) -> Certificate:
    """Prove C1–C4 for the pair and build the certificate.  ``net_json``/``tf_json``: the parsed
    files, embedded as read.  ``smt``: also run the prover's Z3 queries (``provers.smt``), one task
    each on ``executor``; they are reported, not embedded (``check --smt`` derives its own)."""
    a = analyse(net, tf)
    doc, derived = document("equality", net_json or net.to_json(), tf_json or tf.to_json(), hints(tf, a), {})
    cert = Certificate(doc, {c: ([] if holds else [words]) for c, (holds, words) in derived.items()})
    for claim in ("C1", "C2", "C3"):
        cert.problems[claim] += [d for d in a.defects[:1] if d not in cert.problems[claim]]
    if smt:
        _run_smt(net, tf, cert, timeout_ms, executor)
    return cert


def smt_queries(net: MaxoutNet, tf: Transformer, construction_holds: bool = True) -> dict[str, list]:
    """The prover's SMT-LIB queries per claim: C1 for T = 1…tokens, and, for a pair whose
    construction the symbolic pass accepted, C2 per ReLU pair and C3 per (layer, token, unit)."""
    from .smt import c1_queries, c2_queries, c3_queries
    groups = {"C1": c1_queries(max(tf.tokens, 1))}
    if construction_holds:
        groups |= {"C2": c2_queries(net, tf), "C3": c3_queries(net, tf)}
    return groups


def _run_smt(net, tf, cert: Certificate, timeout_ms: int, executor=None) -> None:
    from .smt import solve
    groups = smt_queries(net, tf, not cert.problems["C3"])
    queries = [(claim, q) for claim, qs in groups.items() for q in qs]
    answers = (executor.map if executor else map)(partial(solve, timeout_ms=timeout_ms), [q.smtlib for _, q in queries])
    for (claim, q), answer in zip(queries, answers):
        cert.smt[q.name] = answer
        if answer != "unsat":
            cert.problems[claim].append(f"SMT query {q.name}: {answer}, expected unsat")


def certify_softmax(net: MaxoutNet, tf: Transformer, eps, ln_tokens) -> Certificate:
    """The C5 certificate of a softmax Transformer: the hints of its hardmax twin (same weights),
    the proven ``ln_tokens ≥ ln T`` and the target ``eps``; the bound is the checker's."""
    from ..numbers import format_rational
    hard = tf.with_attention("hardmax")
    hint = hints(hard, analyse(net, hard)) | {"ln_tokens_upper": format_rational(ln_tokens)}
    doc, derived = document("softmax", net.to_json(), tf.to_json(), hint, {"C5": {"eps": format_rational(eps)}})
    return Certificate(doc, {c: ([] if holds else [words]) for c, (holds, words) in derived.items()})
