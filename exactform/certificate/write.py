"""Writing certificates: ``{"format": "exactform/certificate@1", "maxout", "transformer", "claims"}``.

The evidence of C1–C4 is what ``check.py`` recomputes and compares entry for entry (the exact
formats are the ``Facts.c1 … c4`` methods there): heads and their score scales (C1), token-shift
pairs with their upper bounds in the other tokens (C2), Maxout boxes, per-block phase tables with
the pre-activation bounds of every fixed phase (null for identity pairs, which need none) and the
piece each token holds (C3), sizes (C4).  With ``smt=True`` each
claim also carries its SMT-LIB queries (``exactform.prove.smt``), run here and again by
``check --smt``.  The file is canonical and contains no time, host or path: certifying the same
pair twice gives byte-identical files.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from ..construct.maxout_to_transformer import measured_sizes, predicted_sizes, shift_constants, source_sizes
from ..models import MaxoutNet, Transformer
from ..numbers import format_rational
from ..prove.symbolic import Analysis, analyse
from .check import FORMAT, STATEMENTS

CLAIMS = ("C1", "C2", "C3", "C4")


@dataclass
class Certificate:
    """The certificate object and, per claim, the problems the prover found (empty: it holds)."""
    document: dict
    problems: dict[str, list[str]] = field(default_factory=dict)
    smt: dict[str, str] = field(default_factory=dict)           # query name -> solver answer

    @property
    def holds(self) -> bool:
        return not any(self.problems.values())


def _interval(iv) -> list[str]:
    return [format_rational(iv[0]), format_rational(iv[1])]


def evidence(net: MaxoutNet, tf: Transformer, a: Analysis) -> dict[str, dict]:
    """The evidence of C1–C4 from the prover's analysis."""
    pieces = {}
    for h in a.heads:
        per_token = pieces.setdefault(h.block, [[] for _ in h.pieces])
        for t, j in enumerate(h.pieces):
            per_token[t].append(j)
    predicted = predicted_sizes(net, shift_constants(net))
    return {
        "C1": {"tokens": tf.tokens,
               "heads": [{"block": h.block, "head": h.head, "scales": [format_rational(c) for c in h.scales]}
                         for h in a.heads]},
        "C2": {"pairs": [{"block": p.block, "owner": p.owner, "units": list(p.units),
                          "others": [[t] + [format_rational(x) for x in rest] for t, *rest in p.others]}
                         for p in a.pairs]},
        "C3": {"boxes": [[_interval(iv) for iv in box] for box in a.boxes],
               "feedforward": [{"block": f.block, "phases": f.phases,
                                "bounds": [[None if isinstance(p, int) else _interval(iv) for p, iv in zip(ph, ivs)]
                                           for ph, ivs in zip(f.phases, f.pre)]}
                               for f in a.feedforward],
               "pieces": [{"block": b, "pieces": p} for b, p in pieces.items()],
               "readout": {"token": tf.readout_token}},
        "C4": {"formula": predicted, "transformer": measured_sizes(tf), "maxout": source_sizes(net)},
    }


def problems_of(net: MaxoutNet, tf: Transformer, a: Analysis, ev: dict) -> dict[str, list[str]]:
    """What fails each claim, as the prover sees it (the checker decides independently)."""
    c2 = [f"block {p.block} pair {p.units} (owner token {p.owner}) token {t}: upper bounds {u}, {v}, sum {s}"
          for p in a.pairs for t, u, v, s in p.others if u > 0 or v > 0 or s >= 0]
    sizes = ev["C4"]
    return {"C1": a.defects[:1] if len(a.heads) < sum(net.widths[1:]) else [],
            "C2": a.defects[:1] + c2,
            "C3": a.defects,
            "C4": [] if sizes["formula"] == sizes["transformer"] else
            [f"{k}: formula {sizes['formula'][k]}, built {sizes['transformer'][k]}"
             for k in sizes["formula"] if sizes["formula"][k] != sizes["transformer"][k]]}


def certify(net: MaxoutNet, tf: Transformer, smt: bool = False, net_json: dict | None = None,
            tf_json: dict | None = None, timeout_ms: int = 60_000, executor=None) -> Certificate:
    """Prove C1–C4 for the pair and build the certificate.  ``net_json``/``tf_json``: the parsed
    files, embedded as read (they are canonical already), saving a re-encoding.  ``executor``
    (``exactform.executor``) runs the SMT queries, one task each; the document does not depend on it."""
    a = analyse(net, tf)
    ev = evidence(net, tf, a)
    cert = Certificate({}, problems_of(net, tf, a, ev))
    if smt:
        _add_smt(net, tf, ev, cert, timeout_ms, executor)
    cert.document = {"format": FORMAT, "maxout": net_json or net.to_json(), "transformer": tf_json or tf.to_json(),
                     "claims": [{"id": c, "statement": STATEMENTS[c], "evidence": ev[c]} for c in CLAIMS]}
    return cert


def smt_queries(net: MaxoutNet, tf: Transformer, construction_holds: bool = True) -> dict[str, list]:
    """The SMT-LIB queries per claim: C1 for T = 1…tokens, and, for a pair whose construction the
    symbolic pass accepted, C2 per ReLU pair and C3 per (layer, token, unit); each holds iff unsat."""
    from ..prove.smt import c1_queries, c2_queries, c3_queries
    groups = {"C1": c1_queries(max(tf.tokens, 1))}
    if construction_holds:
        groups |= {"C2": c2_queries(net, tf), "C3": c3_queries(net, tf)}
    return groups


def _add_smt(net, tf, ev, cert: Certificate, timeout_ms: int, executor=None) -> None:
    from ..prove.smt import solve
    groups = smt_queries(net, tf, not cert.problems["C3"])
    queries = [(claim, q) for claim, qs in groups.items() for q in qs]
    run = executor.map if executor else map
    answers = run(partial(solve, timeout_ms=timeout_ms), [q.smtlib for _, q in queries])
    for claim, qs in groups.items():
        ev[claim]["smt"] = [{"name": q.name, "claim": q.claim, "smtlib": q.smtlib} for q in qs]
    for (claim, q), answer in zip(queries, answers):
        cert.smt[q.name] = answer
        if answer != "unsat":
            cert.problems[claim].append(f"SMT query {q.name}: {answer}, expected unsat")
