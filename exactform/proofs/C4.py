"""Claim C4 (complexity): the Transformer of a Maxout net with L layers of n_l units and max rank
T has 3L blocks, T tokens, n_l heads in layer l, width 1 + T + 3N (N = max n_l), and the
parameter, non-zero and bit counts of the closed formula (``construct.predicted_sizes``), read
off the built object and printed beside the Maxout net's own counts; and, independently, the
certificate checker's own closed formula (``checker.construction.sizes``, standard library only, on the
models embedded in the certificate) agrees with the built sizes and the certificate's C4
statement is the checker's.

Run: ``python proofs/C4.py [--json] [--out DIR]``; exit 0 when every formula matches, 1 otherwise.
"""
import sys

from _common import arguments, finish, pairs, write_certificate

from exactform.checker import reader, construction
from exactform.provers.write import certify
from exactform.construct.maxout_to_transformer import measured_sizes, predicted_sizes, shift_constants, source_sizes


def main() -> int:
    args = arguments(__doc__)
    ok, rows = True, []
    for name, net, tf in pairs():
        cert = certify(net, tf)
        f, m, s = predicted_sizes(net, shift_constants(net)), measured_sizes(tf), source_sizes(net)
        doc = cert.document
        formula, built = construction.sizes(reader.read_maxout(doc["maxout"], "maxout"),
                                       reader.read_transformer(doc["transformer"], "transformer"))
        verdict = dict((c, (holds, words)) for c, holds, words in construction.verify(doc).claims)["C4"]
        match = f == m and formula == built and all(f[k] == built[k] for k in built if k != "blocks") \
            and len(built["blocks"]) == f["blocks"] and verdict[0] and not cert.problems["C4"]
        ok &= match
        rows.append({"net": name, "maxout_parameters": s["parameters"], "transformer_parameters": m["parameters"],
                     "blocks": m["blocks"], "tokens": m["tokens"], "width": m["width"], "match": match})
        print(f"{name}: maxout {s['layers']} layers widths {s['widths']} rank ≤ {s['max_rank']}, "
              f"{s['parameters']} parameters | transformer {m['blocks']} blocks, {m['tokens']} tokens, "
              f"width {m['width']}, heads {m['heads']}, {m['parameters']} parameters "
              f"({m['nonzero_parameters']} non-zero) | formula {'matches' if match else 'DIFFERS'}")
        write_certificate(args, "C4", name, cert)
    return finish(args, "C4", ok, f"closed-form sizes match the built Transformer for {len(rows)} nets", rows=rows)


if __name__ == "__main__":
    sys.exit(main())
