"""The checker's work bound (docs/spec.md §6.1), computed from the sizes read before any arithmetic: the
affine-form entries the walk of §6.3 touches, weighted by the size of the numbers read (valid under the
reader's cap on derived numbers, ``MAX_BITS``)."""
from .reader import Malformed

MAX_WORK = 12 * 10 ** 7      # weighted form entries: the MNIST CNN of docs/performance.md needs 7.8e7 (11 s)
REFINE = 4                   # refinements of a back-substitution's common denominator (relax.LeafRows.backsubstituted)
LIMIT = [MAX_WORK]           # this run's bound: ``check --max-work`` raises it knowingly (about 9e6 a CPU second)


def beyond(total: int, where: str, what: str) -> Malformed | None:
    """The error for work ``total`` over this run's bound (None within it)."""
    if total <= LIMIT[0]:
        return None
    return Malformed(f"{where}: checking it would touch about {total:.2e} weighted entries ({what}), beyond the "
                     f"checker's limit {LIMIT[0]:.3g} (check --max-work N raises it: about 9e6 a CPU second)")

def weight(bits: int) -> int:
    """The cost of one Fraction operation on numbers of ``bits`` bits, relative to small ones."""
    return 1 + (bits >> 10) ** 2

def walk_work(net, tf, bits: int, where: str) -> int:
    """An upper bound on the form entries the walk reads or writes: each coordinate's form has at most
    ``size`` entries (never more than M's variables + 1), propagated block by block; × T tokens."""
    V = len(net.box) + sum(map(len, net.layers)) + 1
    work, size = 2 * sum(len(w) + 1 for layer in net.layers for unit in layer for w, _ in unit), [min(V, len(e) + 1) for e in tf.embed]
    for block in tf.blocks:
        if block[0] == "feedforward":
            pre = [min(V, 1 + sum(size[c] for c in r)) for r in block[1]]
            work += tf.tokens * (sum(size[c] for r in block[1] for c in r) + 3 * sum(pre) + len(size)
                                 + sum(p * len(col) for p, col in zip(pre, block[3])))
            for p, col in zip(pre, block[3]):
                for r in col:
                    size[r] = min(V, size[r] + p)
        else:
            work += tf.tokens * len(size)                              # the new state
            for q, k, v, o in block[1]:
                work += tf.tokens * (sum(size[c] for m in (q, k, v) for r in m for c in r) + V * (len(k) + 3))
                for r in (r for r, e in enumerate(o) if e):
                    size[r] = min(V, size[r] + 1)
    if error := beyond(total := work * weight(bits), where, f"the walk: tokens × blocks × form sizes, numbers of {bits} bits"):
        raise error
    return total
