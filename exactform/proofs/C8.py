"""Claim C8 (certificates): every pair's certificate is re-verified by the independent checker
(``exactform/checker/``: standard library, Fraction arithmetic, nothing of the prover), and the
checker rejects what it must: a changed Transformer weight, a changed Maxout bias, a wrong phase
hint, a head's wrong piece hint, a too-small shift R_ij, a forged statement, a dropped claim and
an unknown claim C9 each fail a named claim (exit 1); a float literal, malformed JSON, a wrong
format and a file that is not a certificate are refused with one line (exit 2).

Run: ``python proofs/C8.py [--json] [--out DIR]``; exit 0 when all of that holds, 1 otherwise.
"""
import copy
import json
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

from _common import arguments, finish, pairs, write_certificate

from exactform.checker.command import check_file
from exactform.provers.write import certify
from exactform.construct.maxout_to_transformer import compile_maxout, shift_constants
from exactform.formats import write_json


def bump(doc: dict, path: list) -> None:
    """Add 1 to the rational at ``path`` (a sparse vector on the way is written out dense first)."""
    *head, last = path
    for key in head:
        if isinstance(doc[key], dict) and set(doc[key]) == {"length", "index", "value"}:
            dense = ["0"] * doc[key]["length"]
            for i, x in zip(doc[key]["index"], doc[key]["value"]):
                dense[i] = x
            doc[key] = dense
        doc = doc[key]
    q = Fraction(doc[last]) + 1
    doc[last] = str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


MUST_FAIL = {"statement forged": "C3", "claim dropped": "C2", "unknown claim": "C9"}
"""The claim each mutation must fail (C3, Tf(x) = M(x), for the others)."""


def mutations(document: dict, net, tf) -> dict[str, dict]:
    """Named broken copies of a good certificate."""
    out = {}
    claims = {c["id"]: c for c in document["claims"]}
    m = copy.deepcopy(document)
    bump(m, ["transformer", "blocks", 0, "w1", 0, tf.layout["h"][0]])
    out["Transformer weight changed"] = m
    m = copy.deepcopy(document)
    bump(m, ["maxout", "layers", 0, "bias", 0, 0])
    out["Maxout bias changed"] = m
    m = copy.deepcopy(document)
    phases = m["hints"]["phases"][0][0]                      # token 0 of the first feed-forward block
    u = next(u for u, p in enumerate(phases) if p < 0)        # a fixed phase turned around
    phases[u] = -2 if phases[u] == -1 else -1
    out["phase hint edited"] = m
    m = copy.deepcopy(document)
    m["hints"]["pieces"][0][0][0] = (m["hints"]["pieces"][0][0][0] + 1) % len(net.layers[0].weight[0])
    out["piece hint edited"] = m
    small = [[[r / 4 for r in row] for row in layer] for layer in shift_constants(net)]
    m = copy.deepcopy(document)
    m["transformer"] = compile_maxout(net, small).to_json()
    out["shift R_ij too small"] = m
    m = copy.deepcopy(document)
    next(c for c in m["claims"] if c["id"] == "C3")["statement"] += " and for every x in R^n"
    out["statement forged"] = m
    m = copy.deepcopy(document)
    m["claims"] = [c for c in m["claims"] if c["id"] != "C2"]
    out["claim dropped"] = m
    m = copy.deepcopy(document)
    m["claims"].append({"id": "C9", "statement": "something"})
    out["unknown claim"] = m
    assert claims
    return out


def main() -> int:
    args = arguments(__doc__)
    ok, checked, rejected = True, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cert.json"
        for name, net, tf in pairs():
            cert = certify(net, tf)
            write_json(path, cert.document)
            r = check_file(path)
            good = r.code == 0
            ok &= good
            checked += 1
            print(f"{name}: fresh certificate {'passes' if good else 'FAILS: ' + r.known}")
            write_certificate(args, "C8", name, cert)
            if net.max_rank == 1:
                continue
            for what, bad in mutations(cert.document, net, tf).items():
                write_json(path, bad)
                r = check_file(path)
                named = ", ".join(c for c, holds, _ in r.claims if not holds)
                ok &= r.code == 1 and MUST_FAIL.get(what, "C3") in named
                rejected += r.code == 1
                print(f"   {what}: exit {r.code}, {'fails ' + named if named else 'NOT rejected'}")
        good = next(iter(pairs()))
        floats = copy.deepcopy(certify(good[1], good[2]).document)
        floats["maxout"]["readout"]["bias"][0] = 0.5
        for what, text in {"float literal": json.dumps(floats), "malformed JSON": "{",
                           "wrong format": json.dumps({"format": "x"}),
                           "not a certificate": json.dumps(good[1].to_json())}.items():
            path.write_text(text)
            r = check_file(path)
            ok &= r.code == 2 and r.known.count("\n") == 0
            print(f"{what}: exit {r.code} (not a certificate: {r.known.split(': ', 1)[1]})")
    return finish(args, "C8", ok, f"{checked} certificates re-verified independently, {rejected} broken ones "
                  "rejected naming the claim, malformed files refused", certificates=checked, rejected=rejected)


if __name__ == "__main__":
    sys.exit(main())
