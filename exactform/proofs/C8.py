"""Claim C8 (certificates): every pair's certificate is re-verified by the independent checker
(``exactform.certificate.check``: Fraction arithmetic, nothing of the prover), and the checker
rejects what it must: a changed Transformer weight, a changed Maxout bias, an edited bound, an
edited phase and a too-small shift R_ij each fail a named claim (exit 1); an unknown claim fails;
malformed files are not certificates (exit 2).

Run: ``python proofs/C8.py [--json] [--out DIR]``; exit 0 when all of that holds, 1 otherwise.
"""
import copy
import json
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

from _common import arguments, finish, pairs, write_certificate

from exactform.certificate.check import check_certificate
from exactform.certificate.write import certify
from exactform.construct.maxout_to_transformer import compile_maxout, shift_constants
from exactform.formats import write_json


def bump(doc: dict, path: list) -> None:
    """Add 1 to the rational string at ``path``."""
    *head, last = path
    for key in head:
        doc = doc[key]
    q = Fraction(doc[last]) + 1
    doc[last] = str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


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
    c3 = next(c for c in m["claims"] if c["id"] == "C3")
    bounds = c3["evidence"]["feedforward"][0]["bounds"][0]
    bump(next(b for b in bounds if b), [1])                 # the first fixed phase's upper bound
    out["bound edited"] = m
    m = copy.deepcopy(document)
    c3 = next(c for c in m["claims"] if c["id"] == "C3")
    phases = c3["evidence"]["feedforward"][0]["phases"][0]
    phases[0] = "on" if phases[0] != "on" else "off"
    out["phase edited"] = m
    small = [[[r / 4 for r in row] for row in layer] for layer in shift_constants(net)]
    m = copy.deepcopy(document)
    m["transformer"] = compile_maxout(net, small).to_json()
    out["shift R_ij too small"] = m
    m = copy.deepcopy(document)
    m["claims"].append({"id": "C9", "statement": "something", "evidence": {}})
    out["unknown claim"] = m
    assert claims
    return out


def main() -> int:
    args = arguments(__doc__)
    ok, checked, rejected = True, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cert.json"
        lines = []
        for name, net, tf in pairs():
            cert = certify(net, tf)
            write_json(path, cert.document)
            good = check_certificate(path, say=lines.append) == 0
            ok &= good
            checked += 1
            print(f"{name}: fresh certificate {'passes' if good else 'FAILS: ' + lines[-2]}")
            write_certificate(args, "C8", name, cert)
            if net.max_rank == 1:
                continue
            for what, bad in mutations(cert.document, net, tf).items():
                write_json(path, bad)
                lines.clear()
                code = check_certificate(path, say=lines.append)
                named = ", ".join(line.split()[0] for line in lines if " FAILS: " in line)
                ok &= code == 1 and bool(named)
                rejected += code == 1
                print(f"   {what}: exit {code}, {'fails ' + named if named else 'NOT rejected'}")
        for what, text in {"malformed JSON": "{", "wrong format": json.dumps({"format": "x"}),
                           "float literal": '{"format": "exactform/certificate@1", "claims": 1.5}'}.items():
            path.write_text(text)
            code = check_certificate(path, say=lambda s: None)
            ok &= code == 2
            print(f"{what}: exit {code} (not a certificate)")
    return finish(args, "C8", ok, f"{checked} certificates re-verified independently, {rejected} broken ones "
                  "rejected naming the claim, malformed files refused", certificates=checked, rejected=rejected)


if __name__ == "__main__":
    sys.exit(main())
