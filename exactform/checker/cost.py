"""The checker's work bound (docs/spec.md §6.1), computed from sizes before the arithmetic it bounds: the
affine-form entries the checker reads or writes, weighted by the size of the numbers read (valid under the
reader's cap on derived numbers, ``MAX_BITS``).

One model serves V1 and E1, which share the node table (``forms.Forms``) and the leaf rows
(``relax.LeafRows``): building the table is charged layer by layer (block by block) from the sizes of the
forms built so far (``layer_work``, ``block_work``), each step before it is taken, and ``LeafCost`` bounds a
leaf's rows, stated back-substitutions and witnesses from the table as built."""

from fractions import Fraction

from .reader import RATIONAL, Malformed

MAX_WORK = 2 * 10**9  # V1, E1: weighted entries, about 9e6 a CPU second (ACAS Xu 1_1 vs float16 on φ1, 44 leaves: 4.2e8)
WALK_WORK = 12 * 10**7  # the walk (C1–C5): the MNIST CNN of docs/performance.md needs 7.8e7 (11 s)
REFINE = 4  # refinements of a back-substitution's common denominator (relax.LeafRows.backsubstituted)
FRACTION = 40  # per entry of a piece built into the node table: Fraction products, its bounds, its key
ADD = 10  # per entry of a Fraction sum or copy while building the table (a column's, a state's)
FORWARD = 5  # per piece entry and input of a leaf's bounds: the piece's two sides, g's, the rounding (integers)
ROW = 20  # per entry of a row a leaf's witnesses name, once a leaf: built and made integral
SUM = 2  # per entry of a named row, per witness: its integer multiple summed
BACK = 4  # entries of the rows a back-substitution adds, per weighted entry: integers, inert nodes skipped
VISIT = 20  # per node a back-substitution passes, in entries: its coefficient read, a row's multiple chosen


def beyond(total: int, where: str, what: str, limit: int = MAX_WORK) -> Malformed | None:
    """The error for work ``total`` over the run's bound ``limit`` (None within it)."""
    if total <= limit:
        return None
    return Malformed(
        f"{where}: checking it would touch about {total:.2e} weighted entries ({what}), beyond the "
        f"checker's limit {limit:.3g} (check --max-work N raises it: about 9e6 a CPU second)"
    )


def weight(bits: int) -> int:
    """The cost of one Fraction operation on numbers of ``bits`` bits, relative to small ones."""
    return 1 + (bits >> 10) ** 2


def bits(*things) -> int:
    """The most bits of a number in ``things`` (models as read: nested lists, tuples and dicts' values): a
    Fraction's numerator or denominator, a rational string's at 3.33 bits a digit; no arithmetic beyond
    ``bit_length``."""
    most, stack = 1, list(things)
    while stack:
        v = stack.pop()
        if isinstance(v, Fraction):
            most = max(most, v.numerator.bit_length(), v.denominator.bit_length())
        elif isinstance(v, str):
            number = RATIONAL.fullmatch(v)
            if number:
                most = max(most, int(3.33 * max(len(number[2]), len(number[3] or ""))) + 1)
        elif isinstance(v, dict):
            stack += v.values()
        elif isinstance(v, (list, tuple)):
            stack += v
    return most


def walk_work(net, tf, bits: int, where: str, limit: int = WALK_WORK) -> int:
    """An upper bound on the form entries the walk reads or writes: each coordinate's form has at most
    ``size`` entries (never more than M's variables + 1), propagated block by block; × T tokens."""
    V = len(net.box) + sum(map(len, net.layers)) + 1
    work, size = (
        2 * sum(len(w) + 1 for layer in net.layers for unit in layer for w, _ in unit),
        [min(V, len(e) + 1) for e in tf.embed],
    )
    for block in tf.blocks:
        if block[0] == "feedforward":
            pre = [min(V, 1 + sum(size[c] for c in r)) for r in block[1]]
            work += tf.tokens * (
                sum(size[c] for r in block[1] for c in r)
                + 3 * sum(pre)
                + len(size)
                + sum(p * len(col) for p, col in zip(pre, block[3]))
            )
            for p, col in zip(pre, block[3]):
                for r in col:
                    size[r] = min(V, size[r] + p)
        else:
            work += tf.tokens * len(size)  # the new state
            for q, k, v, o in block[1]:
                work += tf.tokens * (sum(size[c] for m in (q, k, v) for r in m for c in r) + V * (len(k) + 3))
                for r in (r for r, e in enumerate(o) if e):
                    size[r] = min(V, size[r] + 1)
    total = work * weight(bits)
    error = beyond(total, where, f"the walk: tokens × blocks × form sizes, numbers of {bits} bits", limit)
    if error:
        raise error
    return total


def node_count(m) -> int:
    """At most how many nodes the node table of model ``m`` makes (``forms.outputs``), from its shapes: a
    Maxout unit, a Transformer's ReLU per token, a head's value row per token."""
    if hasattr(m, "layers"):
        return sum(map(len, m.layers))
    return m.tokens * sum(len(b[1]) if b[0] == "feedforward" else sum(len(h[2]) for h in b[1]) for b in m.blocks)


def layer_work(layer: list, h: list) -> int:
    """The work of a Maxout layer on the forms ``h`` it reads (the node table's build, ``forms.outputs``): each
    piece reads its inputs' forms; a unit's k pieces are bounded and compared pairwise."""
    return FRACTION * sum(sum(1 + sum(len(h[k]) for k in w) for w, _ in unit) * (2 + len(unit)) for unit in layer)


def readout_work(readout: list, h: list) -> int:
    """The work of the read-out's rows on the forms ``h`` (Fraction products and sums, as a piece's), twice: the
    outputs, then what reads them whole (E1's differences A − B; V1's atoms are charged by their own reads)."""
    return 2 * FRACTION * sum(1 + sum(len(h[k]) for k in w) for w, _ in readout)


def block_work(block: tuple, X: list) -> int:
    """The work of a Transformer block on the token states ``X`` (forms per token and coordinate): a
    feed-forward block's pre-activations are built as two-piece units (as ``layer_work``), their columns'
    writes summed; a head sums its query, key and value rows and T² scores, and per token and value row
    takes a hardmax of T candidates (s + vs entries each: a score's and a value's form): their gaps, the
    pairwise comparisons of a fallback, the max of the values (2·T + 5 such reads); every block its new state."""
    T = len(X)
    work = ADD * sum(len(f) for x in X for f in x)
    if block[0] == "feedforward":
        for x in X:
            pre = [1 + sum(len(x[c]) for c in r) for r in block[1]]
            work += FRACTION * 4 * sum(pre) + ADD * sum(p * len(col) for p, col in zip(pre, block[3]))
        return work
    for q, k, v, o in block[1]:
        s = 1 + max(sum(len(x[c]) for r in q + k for c in r) for x in X)
        vs = 1 + max(sum(len(x[c]) for r in v for c in r) for x in X)
        work += ADD * (
            T * (s + vs) + T * T * s + len(v) * T * T * (s + vs) * (2 * T + 5) + T * T * sum(map(len, o)) * vs
        )
    return work


class Budget:
    """What is left of the bound for building node tables (``forms.Forms.charge``): ``limit`` weighted entries,
    ``scale`` per entry, refused with the field ``where`` named."""

    def __init__(self, limit: int, scale: int, where: str):
        self.limit, self.scale, self.where = limit, scale, where

    def __call__(self, entries: int, what: str):
        error = beyond(entries * self.scale, self.where, f"building the node table: {what}", self.limit)
        if error:
            raise error


def digits(v) -> int:
    """The most bits of a witness's entries (strings, 3.33 bits a character; the reader refuses any other)."""
    values = v.get("value") if isinstance(v, dict) else v
    if not isinstance(values, list):
        return 1
    return int(3.33 * max((len(x) for x in values if type(x) is str), default=0)) + 1


def named(v) -> list:
    """The row indices a witness names, from its shape alone (no arithmetic): a sparse vector's ``index``,
    a dense one's positions whose entry is not "0"; [] for anything else (the reader refuses it later)."""
    if isinstance(v, dict) and isinstance(v.get("index"), list):
        return [i for i in v["index"] if type(i) is int]
    if isinstance(v, list):
        return [i for i, x in enumerate(v) if x != "0"]
    return []


class LeafCost:
    """What one leaf over the node table ``F`` costs (``relax.LeafRows`` with ``pairs`` and atom rows of ``atoms``
    entries each; a plain E1 leaf values the same nodes): ``forward`` its bounds, every node's pieces' entries
    × (d + 2); ``rows[i]`` the entries of row i; ``below[k]`` the entries a back-substitution may read under node k
    (per node before it, its visit and largest row, and its pair's row over the variables)."""

    def __init__(self, F, pairs=(), atoms=()):
        d, n = F.d, len(F.nodes)
        self.d, self.variables = d, d + n + 1
        self.rows, entries, largest = [2] * (2 * d), 0, []
        for kind, data in F.nodes:
            pieces = [len(p) + 1 for p in (data if kind == "max" else (v for _, v in data))]
            rows = [2, 2] + (pieces + [sum(pieces)] * (len(pieces) == 2) if kind == "max" else [])
            self.rows += rows
            entries += sum(pieces) * (2 if len(pieces) == 2 else 1)
            largest.append(max(rows))
        pair_rows = []
        for a, s, b, t, P, Q in pairs:
            e = 2 + sum(len(p) + 1 for p in P + Q)  # a row over the variables: z_a, z_b, δ_1 and h
            entries += e  # δ_0, δ_1 and h's functions: their pieces' entries
            largest[b - d] += e
            pair_rows.append(e)
        self.rows += [d + 3] * (2 * len(pairs)) + [r for r in pair_rows for _ in range(2)] + list(atoms)
        self.forward = FORWARD * entries * (d + 2) + 4 * self.variables
        self.below = [0]
        for r in largest:
            self.below.append(self.below[-1] + VISIT + r)

    def leaf(self, tighten, witnesses) -> int:
        """A leaf's work: its bounds, per ``tighten`` entry (its variable z, or None) a back-substitution below z
        (its T and ``REFINE`` refinements over every variable), the rows its witnesses name (the indices of each),
        built once, and per witness their sum and its maximum over every variable's bounds."""
        total, n = self.forward, len(self.below) - 1
        for z in tighten:
            k = min(max(z - self.d, 0), n) if type(z) is int else n
            total += (REFINE + 2) * self.variables + self.below[k] // BACK
        valid = [[i for i in w if 0 <= i < len(self.rows)] for w in witnesses]
        total += ROW * sum(self.rows[i] for i in set().union(*valid))
        for w in valid:
            total += 10 * self.variables + SUM * sum(self.rows[i] for i in w)
        return total

    def plain(self) -> int:
        """A plain E1 leaf: every node valued as an affine map of x (its pieces' entries × (d + 1))."""
        return self.forward
