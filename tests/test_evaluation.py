"""Exact Transformer evaluation (``models.stream``) against the definition of docs/spec.md §1,
evaluated naively here in Fractions: any Transformer the format admits (several heads, ties in
hardmax, token-dependent queries, any block order, units that are dead, alive or both on a batch),
compiled Maxout networks on points inside and outside their domain, and a changed weight changes
the output."""
import random
from dataclasses import replace
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.models import Attention, Box, FeedForward, Head, Transformer
from exactform.models.transformer import dense
from exactform.proofs.nets import random_net, random_points

ZERO, ONE = Fraction(0), Fraction(1)


def matvec(rows, ncols, x):
    return [sum((a * v for a, v in zip(row, x)), ZERO) for row in dense(rows, ncols)]


def reference(tf: Transformer, x: list[Fraction]) -> list[Fraction]:
    """docs/spec.md §1, one token column at a time, hardmax ties sharing equally."""
    w = tf.width
    X = [[e + p for e, p in zip(matvec(tf.embed_weight, tf.input_dim, x), tf.embed_bias[t])] for t in range(tf.tokens)]
    for block in tf.blocks:
        if isinstance(block, FeedForward):
            for col in X:
                act = [max(v + b, ZERO) for v, b in zip(matvec(block.w1, w, col), block.b1)]
                delta = [d + b for d, b in zip(matvec(block.w2, block.hidden, act), block.b2)]
                col[:] = [v + d for v, d in zip(col, delta)]
        else:
            new = [list(col) for col in X]
            for h in block.heads:
                q = [matvec(h.query, w, col) for col in X]
                k = [matvec(h.key, w, col) for col in X]
                v = [matvec(h.value, w, col) for col in X]
                for i in range(tf.tokens):
                    s = [sum((a * b for a, b in zip(q[i], kj)), ZERO) for kj in k]
                    win = [j for j in range(tf.tokens) if s[j] == max(s)]
                    mixed = [sum((v[j][r] for j in win), ZERO) / len(win) for r in range(len(h.value))]
                    new[i] = [a + o for a, o in zip(new[i], matvec(h.output, len(h.value), mixed))]
            X = new
    return [y + c for y, c in zip(matvec(tf.readout_weight, w, X[tf.readout_token]), tf.readout_bias)]


def random_transformer(rng: random.Random) -> Transformer:
    """Small weights from a few values, so that scores tie and units are dead, alive or both."""
    T, w, d = rng.randint(1, 4), rng.randint(2, 5), rng.randint(1, 3)
    q = lambda: rng.choice([ZERO, ZERO, ONE, -ONE, Fraction(1, 2), Fraction(-3, 2)])
    rows = lambda n, m, p=0.5: [{c: v for c in range(m) if rng.random() < p and (v := q())} for _ in range(n)]
    embed_weight = rows(w, d)
    shared = [q() for _ in range(w)]            # some coordinates equal in every token, some not
    embed_bias = [[s if rng.random() < 0.5 else q() for s in shared] for _ in range(T)]
    blocks = []
    for _ in range(rng.randint(0, 4)):
        if rng.random() < 0.5:
            heads = []
            for _ in range(rng.randint(1, 3)):
                n, m = rng.randint(1, 2), rng.randint(1, 2)
                heads.append(Head(rows(n, w), rows(n, w), rows(m, w), rows(w, m)))
            blocks.append(Attention(heads))
        else:
            h = rng.randint(1, 4)
            w1, b1, w2 = rows(h, w), [q() for _ in range(h)], rows(w, h)
            if rng.random() < 0.5:                  # an identity pair ReLU(v) − ReLU(−v)
                u = rng.randrange(h)
                w1.append({c: -a for c, a in w1[u].items()})
                b1.append(-b1[u])
                for row in w2:
                    if u in row:
                        row[h] = -row[u]
            blocks.append(FeedForward(w1, b1, w2, [q() for _ in range(w)]))
    box = Box((Fraction(-1),) * d, (ONE,) * d)
    readout = rows(rng.randint(1, 2), w)
    return Transformer(box, T, w, "hardmax", embed_weight, embed_bias, blocks, rng.randrange(T),
                       readout, [q() for _ in readout], {})


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32))
def test_any_hardmax_transformer_matches_the_definition(seed):
    rng = random.Random(seed)
    tf = random_transformer(rng)
    grid = [Fraction(k, 2) for k in range(-2, 3)]          # coarse points: ties between tokens
    points = [[rng.choice(grid) if rng.random() < 0.6 else Fraction(rng.randint(-9, 9), rng.randint(1, 7))
               for _ in range(tf.input_dim)] for _ in range(rng.randint(1, 6))]
    assert tf.evaluate_batch(points) == [reference(tf, p) for p in points]


def test_compiled_networks_match_their_source_inside_the_domain_and_the_definition_outside():
    rng = random.Random(11)
    for dims, rank, outputs in (([3, 5, 4], 3, 2), ([2, 4, 4, 3], 4, 1), ([4, 6], 2, 3)):
        net = random_net(rng, dims, rank, outputs)
        tf = compile_maxout(net)
        inside = random_points(rng, net.domain, 25)
        outside = [[v * 5 for v in p] for p in inside[:4]]     # the shift constants may be too small there:
        got = tf.evaluate_batch(inside + outside)               # the Transformer's own value, not the net's
        assert got[:25] == net.evaluate_batch(inside)
        assert got[25:] == [reference(tf, p) for p in outside]


def test_a_changed_weight_changes_the_exact_output():
    rng = random.Random(12)
    net = random_net(rng, [3, 4, 3], 3, 2)
    tf = compile_maxout(net)
    points = random_points(rng, net.domain, 20)
    assert tf.evaluate_batch(points) == net.evaluate_batch(points)
    pieces = tf.blocks[3]                              # the second layer's pieces block
    w1 = [dict(row) for row in pieces.w1]
    c = next(iter(w1[0]))
    w1[0][c] += Fraction(1, 7)
    blocks = list(tf.blocks)
    blocks[3] = FeedForward(w1, pieces.b1, pieces.w2, pieces.b2)
    changed = replace(tf, blocks=blocks)
    got = changed.evaluate_batch(points)
    assert got != net.evaluate_batch(points)
    assert got == [reference(changed, p) for p in points]


def test_a_value_that_is_the_score_in_one_token_only_is_mixed_by_the_winners():
    """Coordinates 1 and 2 are the same vector x in token 0 but x + 1 and x + 5 in token 1: with
    query 1, key = coordinate 1, value = coordinate 2, token 1 wins and the value is x + 5 (the
    maximum score x + 1 would be wrong)."""
    head = Head(query=[{0: ONE}], key=[{1: ONE}], value=[{2: ONE}], output=[{}, {}, {}, {0: ONE}])
    tf = Transformer(Box((Fraction(-1),), (ONE,)), 2, 4, "hardmax", [{}, {0: ONE}, {0: ONE}, {}],
                     [[ONE, ZERO, ZERO, ZERO], [ONE, ONE, Fraction(5), ZERO]], [Attention([head])], 0,
                     [{3: ONE}], [ZERO], {})
    points = [[Fraction(k, 3)] for k in range(-3, 4)]
    assert tf.evaluate_batch(points) == [[p[0] + 5] for p in points] == [reference(tf, p) for p in points]


def test_hardmax_mixes_the_argmax_set_of_every_point():
    """``stream.hardmax`` on scores and values given as constants, vectors and vectors that are the
    score itself, against the argmax sets computed point by point, ties included."""
    from exactform.models.stream import Vector, fractions, hardmax
    rng = random.Random(3)
    for tokens, points in ((1, 3), (2, 5), (3, 6), (5, 4)):
        for _ in range(20):
            def value():
                if rng.random() < 0.3:
                    return Fraction(rng.randint(-2, 2), rng.randint(1, 2))
                den = rng.choice([1, 2, 6])
                return Vector([rng.randint(-2, 2) * den // rng.choice([1, den]) for _ in range(points)], den)
            scores = [value() for _ in range(tokens)]
            values = [[value(), s, value()] for s in scores]
            got = [fractions(v, points) for v in hardmax(scores, values, points)]
            s = [fractions(v, points) for v in scores]
            for p in range(points):
                top = max(s[j][p] for j in range(tokens))
                win = [j for j in range(tokens) if s[j][p] == top]
                for r in range(3):
                    assert got[r][p] == sum(fractions(values[j][r], points)[p] for j in win) / len(win)
