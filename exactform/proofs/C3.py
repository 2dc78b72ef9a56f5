"""Claim C3 (exact equality): ``Tf(x) = M(x)`` for every x in the domain, for the Transformers
compiled from the example and random nets.

The proof (``exactform.provers.symbolic.analyse``): per block and token every ReLU has a phase fixed
by exact interval bounds over the Maxout boxes or is half of an identity pair; the composed affine
maps give each token a piece of each unit, shown here as a SymPy identity ``values = pieces``;
every head returns its unit's maximum (C1); the read-out is the Maxout read-out.  Cross-checks:
exact evaluation of both models at the box corners, at random points and at exact tie points
where two pieces are equal (outputs agree digit for digit); and a Transformer built with a too
small shift R_ij, which must be refuted.

Run: ``python proofs/C3.py [--json] [--out DIR]``; exit 0 when proved, 1 otherwise.
"""
import random
import sys
from itertools import islice

import sympy
from _common import arguments, finish, nets, write_certificate
from nets import random_points, tie_points

from exactform.provers.write import certify
from exactform.construct.maxout_to_transformer import compile_maxout, shift_constants
from exactform.provers.symbolic import analyse


def sympy_identity(net, analysis, l: int) -> bool:
    """Every token's head values equal, as SymPy matrices, the Maxout pieces they were matched to."""
    pieces = net.sympy_layer(l)
    heads = [h for h in analysis.heads if h.block == 3 * l + 1]
    for t, values in enumerate(analysis.values[l]):
        expected = sympy.Matrix.vstack(*[pieces[i][0].row(h.pieces[t]).row_join(pieces[i][1].row(h.pieces[t]))
                                         for i, h in enumerate(heads)])
        if not (values.to_sympy() - expected).is_zero_matrix:
            return False
    return True


def main() -> int:
    args = arguments(__doc__)
    ok, points_checked = True, 0
    for name, net in nets().items():
        tf = compile_maxout(net)
        cert = certify(net, tf)
        a = analyse(net, tf)
        identities = all(sympy_identity(net, a, l) for l in range(len(net.layers))) if a.holds else False
        rng = random.Random(0)
        points = [list(c) for c in islice(net.domain.corners(), 64)] + random_points(rng, net.domain, 50) + \
            tie_points(rng, net, 20)
        agree = net.evaluate_batch(points) == tf.evaluate_batch(points)
        points_checked += len(points)
        small = [[[r / 4 for r in row] for row in layer] for layer in shift_constants(net)]
        refuted = net.max_rank == 1 or not analyse(net, compile_maxout(net, small)).holds
        good = a.holds and identities and agree and refuted and not cert.problems["C3"]
        ok &= good
        print(f"{name}: {'proved' if a.holds else 'NOT proved: ' + a.defects[0]}; SymPy identities "
              f"{'hold' if identities else 'FAIL'}; {len(points)} exact points {'agree' if agree else 'DISAGREE'}; "
              f"R/4 construction {'refuted' if refuted else 'NOT refuted'}")
        write_certificate(args, "C3", name, cert)
    return finish(args, "C3", ok, f"Tf(x) = M(x) on the domain for {len(nets())} nets "
                  f"({points_checked} exact evaluation points agree)", points=points_checked)


if __name__ == "__main__":
    sys.exit(main())
