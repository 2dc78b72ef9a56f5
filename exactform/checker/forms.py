"""The node table: models read as exact affine forms over a box (docs/spec.md §6.2, §8 "The leaf's rows";
docs/equiv.md "Forms and nodes"), standard library and the checker's reader and cost model only.

A *form* is a dict ``{variable: coefficient}`` with the constant under ``reader.ONE``.  Variables
0 … d − 1 are the inputs; every further variable is a *node* of the table, interned once:

- a max node ``max(p_1, …, p_k)`` (a Maxout unit, a ReLU ``max(v, 0)``);
- a hardmax node: one output row of one attention head at one query token, the average of the value
  rows of the tokens of maximal score.

A node is built only where an identity that holds at every point of the box does not already give a
form: pieces are deduplicated and scaled by their largest coefficient, a piece that dominates the
others on the box replaces its node, ``max(0, w) = max(0, −w) + w``.  E1 (``equiv``) and V1
(``verify_cert``) both build the table here; ``relax`` and ``cost`` read it."""

from __future__ import annotations

from fractions import Fraction

from .cost import block_work, layer_work, readout_work
from .reader import ONE, combine, interval, read_maxout, read_transformer


class Unsupported(ValueError):
    """A model outside the method: softmax attention, or a head whose scores are not affine."""


def key(form: dict) -> tuple:
    """A form as a hashable, canonical key: its ``(variable, coefficient)`` pairs, sorted."""
    return tuple(sorted(form.items()))


def ints(form_key: tuple) -> tuple:
    """A form's key with each coefficient as (numerator, denominator): equal exactly when the key
    is, and hashed as integers (hashing a Fraction costs a modular inverse)."""
    return tuple((k, a.numerator, a.denominator) for k, a in form_key)


def negated(form: dict) -> dict:
    """−form."""
    return {k: -x for k, x in form.items()}


def linear(weights: dict, xs: list, bias=Fraction(0)) -> dict:
    """Σ_k weights[k] · xs[k] + bias, a form over the forms ``xs``."""
    return combine([(a, xs[k]) for k, a in weights.items()], bias)


class Forms:
    """The node table over a box: ``bounds[v]`` is an exact interval of variable v over the box;
    ``nodes[v − d] = (kind, data)``; ``calls[i] = (pieces, form)``: the i-th max built, ``form = max(pieces)``
    on the box (the position that pairs a node of one model with its counterpart in another, ``relax.pairs``);
    ``work``: the entries its building touched, each step charged before it is taken and refused by
    ``budget`` (``cost.Budget``; docs/spec.md §6.1 "The node table")."""

    def __init__(self, cube: list, budget=None):
        self.d = len(cube)
        self.bounds = list(cube)
        self.nodes = []
        self.index = {}
        self.calls = []
        self.work = 0
        self.budget = budget

    def charge(self, entries: int, what: str):
        """Count the entries the next step of building touches, before it (refused beyond the budget)."""
        self.work += entries
        if self.budget is not None:
            self.budget(self.work, what)

    def interval(self, f: dict) -> tuple:
        """The exact interval of form f over the box (the nodes' bounds included)."""
        return interval(f, self.bounds)

    def node(self, kind: str, data: tuple, bounds: tuple, name: tuple) -> int:
        """The variable of node ``(kind, data)``, interned under ``name`` (its data as ``ints``)."""
        var = self.index.setdefault(name, len(self.bounds))
        if var == len(self.bounds):
            self.bounds.append(bounds)
            self.nodes.append((kind, data))
        return var

    def max(self, pieces: list) -> dict:
        """The form of max(pieces) on the box, recorded in ``calls``."""
        form = self._max(pieces)
        self.calls.append((list(pieces), form))
        return form

    def _max(self, pieces: list) -> dict:
        """max(pieces) by the identities of the module docstring, else a new or interned max node."""
        distinct = list({key(p): p for p in pieces}.values())
        scale = max((abs(a) for p in distinct for a in p.values()), default=Fraction(1))
        data = tuple(sorted(key({k: a / scale for k, a in p.items()}) for p in distinct))
        name = ("max",) + tuple(ints(piece) for piece in data)
        if name in self.index:  # interned: not fixed by the bounds
            return {self.index[name]: scale}
        mirror = self._mirror(data, name)
        if mirror is not None:  # max(0, w) = max(0, −w) + w
            return combine([(scale, {mirror: Fraction(1)}), (scale, dict(data[1]))])
        ivs = [self.interval(p) for p in distinct]
        for p, (lo, _) in zip(distinct, ivs):
            if self._dominates(p, lo, distinct, ivs):
                return p
        lower = max(lo for lo, _ in ivs) / scale
        upper = max(hi for _, hi in ivs) / scale
        return {self.node("max", data, (lower, upper), name): scale}

    def _mirror(self, data: tuple, name: tuple):
        """The node max(0, −w) when ``data`` is max(0, w) and that node is interned, else None."""
        if len(data) != 2 or data[0]:
            return None
        negated_name = ("max", (), tuple((k, -n, d) for k, n, d in name[2]))
        return self.index.get(negated_name)

    def _dominates(self, p: dict, lo, pieces: list, ivs: list) -> bool:
        """Whether p ≥ q on the box for every other piece q (p's lower bound ``lo``; q's intervals ``ivs``)."""
        for q, (_, hi) in zip(pieces, ivs):
            if q is p:
                continue
            if not q:
                least = lo
            elif not p:
                least = -hi
            else:
                least = self.interval(combine([(1, p), (-1, q)]))[0]
            if least < 0:
                return False
        return True

    def hardmax(self, pairs: list) -> dict:
        """One output row: the average of the values of the tokens of maximal score (``pairs``: (score, value))."""
        if self._scores_follow_values(pairs):
            return self.max([v for _, v in pairs])
        for top_score, _ in pairs:
            gaps = [(combine([(1, s), (-1, top_score)]), v) for s, v in pairs]
            if all(not g or self.interval(g)[1] < 0 for g, _ in gaps):
                top = [v for g, v in gaps if not g]
                return combine([(Fraction(1, len(top)), v) for v in top])
        ivs = [self.interval(v) for _, v in pairs]
        data = tuple(sorted((key(s), key(v)) for s, v in pairs))
        name = ("hardmax",) + tuple((ints(s), ints(v)) for s, v in data)
        bounds = (min(lo for lo, _ in ivs), max(hi for _, hi in ivs))
        return {self.node("hardmax", data, bounds, name): Fraction(1)}

    @staticmethod
    def _scores_follow_values(pairs: list) -> bool:
        """Whether the score differences are a positive constant c times the value differences (or the
        values are all equal): then the tokens of maximal score hold the maximal value."""
        score_gaps = [combine([(1, s), (-1, pairs[0][0])]) for s, _ in pairs]
        value_gaps = [combine([(1, v), (-1, pairs[0][1])]) for _, v in pairs]
        c = None
        for s, v in zip(score_gaps, value_gaps):
            if v:
                k, a = next(iter(v.items()))
                c = s.get(k, 0) / a
                break
        if c is None:
            return True
        if c <= 0:
            return False
        return all(s == {k: c * a for k, a in v.items()} for s, v in zip(score_gaps, value_gaps))


def outputs(F: Forms, model) -> list:
    """The model's outputs as forms over F (a Maxout net, or a hardmax Transformer of any blocks)."""
    if hasattr(model, "layers"):
        return _maxout_outputs(F, model)
    return _transformer_outputs(F, model)


def _maxout_outputs(F: Forms, model) -> list:
    """A Maxout net: each unit the max of its pieces over the previous layer's forms (docs/spec.md §6.2)."""
    h = [{i: Fraction(1)} for i in range(F.d)]
    for n, layer in enumerate(model.layers):
        F.charge(layer_work(layer, h), f"layer {n}")
        h = [F.max([linear(w, h, b) for w, b in unit]) for unit in layer]
    F.charge(readout_work(model.readout, h), "the read-out")
    return [linear(w, h, b) for w, b in model.readout]


def _transformer_outputs(F: Forms, model) -> list:
    """A hardmax Transformer: the embedding, then each block added to the state (residual), then the read-out."""
    if model.scale is not None:
        raise Unsupported("softmax attention has no exact rational value")
    X = [[combine([(1, e)], p[c]) for c, e in enumerate(model.embed)] for p in model.position]
    for b, block in enumerate(model.blocks):
        F.charge(block_work(block, X), f"block {b}")
        delta = [[[] for _ in x] for x in X]  # delta[t][c]: the terms the block adds to coordinate c of token t
        if block[0] == "feedforward":
            _feedforward(F, block, X, delta)
            bias = block[4]
        else:
            for i, head in enumerate(block[1]):
                _attention(F, f"block {b} head {i}", head, X, delta)
            bias = [0] * len(X[0])
        X = [_residual(x, dx, bias) for x, dx in zip(X, delta)]
    F.charge(readout_work(model.readout, X[model.token]), "the read-out")
    return [linear(w, X[model.token], b) for w, b in model.readout]


def _residual(x: list, terms: list, bias: list) -> list:
    """A token's new state: each coordinate plus the block's terms for it and the block's bias."""
    return [combine([(1, f)] + ts, bias[c]) for c, (f, ts) in enumerate(zip(x, terms))]


def _feedforward(F: Forms, block: tuple, X: list, delta: list):
    """A ReLU feed-forward block: per token, max(w·x + b1, 0) times w2's column, added to ``delta``."""
    _, w1, b1, columns, _ = block
    for t, x in enumerate(X):
        for w, bias, column in zip(w1, b1, columns):
            r = F.max([linear(w, x, bias), {}])
            for c, a in column.items():
                delta[t][c].append((a, r))


def _attention(F: Forms, where: str, head: tuple, X: list, delta: list):
    """A hardmax head: per query token, one hardmax node per value row, read out by the output rows."""
    q, k, v, o = head
    Q = [[linear(r, x) for r in q] for x in X]
    K = [[linear(r, x) for r in k] for x in X]
    V = [[linear(r, x) for r in v] for x in X]
    fixed_q = all(set(f) <= {ONE} for x in Q for f in x)
    fixed_k = all(set(f) <= {ONE} for x in K for f in x)
    if not (fixed_q or fixed_k):
        raise Unsupported(f"{where}: query and key both depend on the input, so the scores are not affine")
    for t in range(len(X)):
        scores = [_score(Q[t], K[j], fixed_q) for j in range(len(X))]
        ys = [F.hardmax([(s, V[j][r]) for j, s in enumerate(scores)]) for r in range(len(v))]
        for c, orow in enumerate(o):
            delta[t][c] += [(a, ys[r]) for r, a in orow.items()]


def _score(query: list, keys: list, fixed_query: bool) -> dict:
    """q · k as a form: the constant side's numbers times the other side's forms."""
    if fixed_query:
        return combine([(f.get(ONE, 0), g) for f, g in zip(query, keys)])
    return combine([(g.get(ONE, 0), f) for f, g in zip(query, keys)])


def read_model(v, where, tally=None):
    """A model of the certificate: a hardmax or softmax Transformer by its format, else a Maxout net (its entries
    charged to ``tally``, ``reader.Tally``; a new one when None)."""
    if isinstance(v, dict) and v.get("format") == "exactform/transformer@1":
        return read_transformer(v, where, tally)
    return read_maxout(v, where, tally)

