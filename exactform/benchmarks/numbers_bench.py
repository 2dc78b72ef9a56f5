"""Exact backends compared: matrix–vector and matrix–matrix products of sizes 8–256 and
the evaluation of a whole network, for QMatrix (flint fmpz_mat + common denominator, the chosen
hot path), flint fmpq_mat, SymPy DomainMatrix over QQ, Fraction lists and SymPy Matrix (the
naive reference).  Also: compile time at ACAS Xu size and Transformer vs source evaluation.

Run: ``.venv/bin/python -m benchmarks numbers``.  Prints ratios measured in this one run.
"""
import random
from fractions import Fraction

import flint
import sympy
from sympy.core.cache import clear_cache
from sympy.polys.matrices import DomainMatrix

from exactform.benchmarks.timing import best_time, table
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.models import Box, MaxoutLayer, MaxoutNet
from exactform.numbers import QMatrix

rng = random.Random(0)


def dyadic() -> Fraction:
    return Fraction(rng.randint(-2**12, 2**12), 2**rng.randint(0, 12))


def backends(rows: list[list[Fraction]]):
    return {
        "QMatrix (fmpz_mat)": QMatrix.from_rows(rows),
        "flint fmpq_mat": flint.fmpq_mat([[flint.fmpq(x.numerator, x.denominator) for x in r] for r in rows]),
        "DomainMatrix QQ": DomainMatrix([[sympy.QQ(x.numerator, x.denominator) for x in r] for r in rows],
                                        (len(rows), len(rows[0])), sympy.QQ).to_dense(),
        "Fraction lists": rows,
        "SymPy Matrix": sympy.Matrix([[sympy.Rational(x.numerator, x.denominator) for x in r] for r in rows]),
    }


def product(a, b):
    if isinstance(a, list):
        cols = list(zip(*b))
        return [[sum(x * y for x, y in zip(r, c)) for c in cols] for r in a]
    return a * b if not isinstance(a, QMatrix) else a @ b


def products() -> None:
    rows = []
    for n in (8, 32, 128, 256):
        a = [[dyadic() for _ in range(n)] for _ in range(n)]
        v = [[dyadic()] for _ in range(n)]
        A, V = backends(a), backends(v)
        for kind, b, B in (("mat-vec", v, V), ("mat-mat", a, A)):
            times = {}
            for name in A:
                if kind == "mat-mat" and name in ("Fraction lists", "SymPy Matrix") and n > 64:
                    continue
                times[name] = best_time(lambda: product(A[name], B[name]), budget=0.2, repeat_max=5)
            ref = times.get("SymPy Matrix")
            rows.append([f"{kind} {n}"] + [f"{times[k] * 1e6:.0f} µs" + (f" ({ref / times[k]:.3g}×)" if ref else "")
                                           if k in times else "skipped" for k in A])
    print(table(["product"] + list(backends([[Fraction(1)]])), rows))
    print("(×: speed-up over SymPy Matrix in the same run; slow backends skip mat-mat above 64)")


def maxout(widths: list[int], rank: int) -> MaxoutNet:
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers.append(MaxoutLayer([[[dyadic() for _ in range(a)] for _ in range(rank)] for _ in range(b)],
                                  [[dyadic() for _ in range(rank)] for _ in range(b)]))
    box = Box(tuple([Fraction(-1)] * widths[0]), tuple([Fraction(1)] * widths[0]))
    return MaxoutNet(box, layers, [[dyadic() for _ in range(widths[-1])]], [dyadic()])


def reference_eval(net: MaxoutNet, x: list[Fraction], matrix, stacked: list) -> Fraction:
    """Whole-network evaluation with a generic matrix type (one product per layer)."""
    h = matrix([[v] for v in x])
    for layer, weights in zip(net.layers, stacked):
        z = product(weights, matrix([[v] for v in _column(h)] + [[Fraction(1)]]))
        zs = _column(z)
        h = matrix([[max(zs[o:o + len(ws)])] for o, ws in zip(layer.offsets, layer.weight)])
    return h


def _column(m) -> list:
    if isinstance(m, list):
        return [r[0] for r in m]
    return [m[i, 0] for i in range(m.shape[0])]


def networks() -> None:
    net = maxout([64] * 7, 4)
    x = [dyadic() / 2**13 for _ in range(64)]
    sym = lambda rows: sympy.Matrix([[sympy.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else v
                                      for v in r] for r in rows])
    def stacked(matrix):
        return [matrix([w + [b] for ws, bs in zip(layer.weight, layer.bias) for w, b in zip(ws, bs)])
                for layer in net.layers]
    ident, frac_w, sym_w = (lambda r: r), stacked(lambda r: r), stacked(sym)
    t_q = best_time(lambda: net(x), budget=0.5)
    t_frac = best_time(lambda: reference_eval(net, x, ident, frac_w), budget=0.5, repeat_max=3)
    def sympy_eval():
        clear_cache()          # else repeats of the same point reuse SymPy's cached products
        return reference_eval(net, x, sym, sym_w)
    t_sym = best_time(sympy_eval, budget=0.5, repeat_max=3)
    print(table(["whole network (6 maxout layers, width 64, rank 4, 1 point)", "time", "vs SymPy Matrix"],
                [["exactform MaxoutNet (QMatrix)", f"{t_q * 1e3:.1f} ms", f"{t_sym / t_q:.0f}×"],
                 ["Fraction lists", f"{t_frac * 1e3:.1f} ms", f"{t_sym / t_frac:.1f}×"],
                 ["SymPy Matrix", f"{t_sym * 1e3:.1f} ms", "1×"]]))


def construction() -> None:
    net = maxout([5] + [50] * 6 + [5], 2)
    t_compile = best_time(lambda: compile_maxout(net), budget=1.0, repeat_max=3)
    tf = compile_maxout(net)
    pts = [[Fraction(rng.randint(-64, 64), 64) for _ in range(5)] for _ in range(20)]
    assert tf.evaluate_batch(pts) == net.evaluate_batch(pts)
    t_net1 = best_time(lambda: net(pts[0]))
    t_tf1 = best_time(lambda: tf(pts[0]))
    t_net = best_time(lambda: net.evaluate_batch(pts)) / len(pts)
    t_tf = best_time(lambda: tf.evaluate_batch(pts)) / len(pts)
    print(table(["5→6×50→5 rank-2 maxout (ACAS Xu size)", "figure"],
                [["compile: the token-shift construction", f"{t_compile:.2f} s"],
                 ["exact eval, 1 point: source / Transformer", f"{t_net1 * 1e3:.2f} ms / {t_tf1 * 1e3:.2f} ms "
                  f"({t_tf1 / t_net1:.0f}×)"],
                 ["exact eval, batch of 20, per point: source / Transformer",
                  f"{t_net * 1e3:.2f} ms / {t_tf * 1e3:.2f} ms ({t_tf / t_net:.0f}×)"]]))


if __name__ == "__main__":
    products()
    print()
    networks()
    print()
    construction()
