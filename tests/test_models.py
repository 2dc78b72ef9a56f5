"""JSON round trips, stable digests and hardmax tie semantics."""
import json
import random
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.formats import Reader, canonical_json
from exactform.models import Attention, Box, FeedForward, Head, MaxoutNet, Transformer
from exactform.proofs.nets import random_net


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32))
def test_round_trip_is_identity(seed):
    rng = random.Random(seed)
    net = random_net(rng, [rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 3)], 3, outputs=2)
    tf = compile_maxout(net)
    for model in (net, tf):
        doc = model.to_json()
        again = type(model).from_json(Reader(json.loads(canonical_json(doc)), "mem"))
        assert again.to_json() == doc and again.digest() == model.digest()


def test_digest_ignores_key_order():
    net = random_net(random.Random(1), [2, 2], 2)
    doc = net.to_json()
    shuffled = json.loads(json.dumps(dict(reversed(list(doc.items())))))
    assert MaxoutNet.from_json(Reader(shuffled, "mem")).digest() == net.digest()


def test_sympy_view_is_exact():
    net = random_net(random.Random(4), [2, 3], 3)
    import sympy
    W, b = net.sympy_layer(0)[0]
    assert all(isinstance(v, sympy.Rational) for v in W) and W.shape == (net.layers[0].ranks[0], 2)
    assert [Fraction(int(v.p), int(v.q)) for v in W] == [x for row in net.layers[0].weight[0] for x in row]


def test_sympy_views_of_readout_and_embedding():
    net = random_net(random.Random(6), [2, 3], 2, outputs=2)
    A, c = net.sympy_readout()
    assert A.shape == (2, 3) and c.shape == (2, 1)
    assert [Fraction(int(v.p), int(v.q)) for v in A] == [x for row in net.readout_weight for x in row]
    E, P = compile_maxout(net).sympy_embedding()
    tf = compile_maxout(net)
    assert E.shape == (tf.width, 2) and P.shape == (tf.tokens, tf.width)
    assert [Fraction(int(v.p), int(v.q)) for v in P] == [x for row in tf.embed_bias for x in row]


def one_head_transformer(tokens: int, shift: list[Fraction]) -> Transformer:
    """Width 2: coordinate 0 = 1, coordinate 1 = x + shift[t]; a head with query 1, key = value = x."""
    one, zero = Fraction(1), Fraction(0)
    head = Head(query=[[one, zero]], key=[[zero, one]], value=[[zero, one]], output=[[zero], [one]])
    return Transformer(Box((Fraction(-1),), (Fraction(1),)), tokens, 2, "hardmax", [[zero], [one]],
                       [[one, s] for s in shift], [Attention([head])], 0, [[zero, one]], [zero], {})


def test_hardmax_ties_share_equally():
    # token values x + (0, 0, -1): the two tied maxima average to x, added to the residual x
    tf = one_head_transformer(3, [Fraction(0), Fraction(0), Fraction(-1)])
    assert tf([Fraction(1, 3)]) == [Fraction(2, 3)]
    # a true average of different values would show a bug: scores tie but values differ
    one, zero = Fraction(1), Fraction(0)
    head = Head(query=[[one, zero, zero]], key=[[zero, zero, one]], value=[[zero, one, zero]],
                output=[[zero], [zero], [one]])
    tf = Transformer(Box((Fraction(-1),), (Fraction(1),)), 2, 3, "hardmax", [[zero], [one], [zero]],
                     [[one, Fraction(1), zero], [one, Fraction(2), zero]], [Attention([head])], 0,
                     [[zero, zero, one]], [zero], {})
    assert tf([Fraction(0)]) == [Fraction(3, 2)]     # scores 0, 0 tie: value (x+1 + x+2)/2 at x = 0


def test_feedforward_is_residual_relu():
    one, zero = Fraction(1), Fraction(0)
    ff = FeedForward(w1=[[zero, one], [zero, -one]], b1=[zero, zero], w2=[[zero, zero], [-one, zero]], b2=[zero, zero])
    tf = Transformer(Box((Fraction(-2),), (Fraction(2),)), 1, 2, "hardmax", [[zero], [one]], [[one, zero]],
                     [ff], 0, [[zero, one]], [zero], {})
    # x + (−ReLU(x)) = min(x, 0)
    assert [tf([Fraction(v)])[0] for v in (-2, -1, 0, 1, 2)] == [-2, -1, 0, 0, 0]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32))
def test_feedforward_with_identity_pairs_matches_the_definition(seed):
    """Evaluation folds identity pairs ReLU(v) − ReLU(−v) into an affine map; the result must equal
    the block's definition x + w2 ReLU(w1 x + b1) + b2 computed naively with Fractions."""
    rng = random.Random(seed)
    w, h = rng.randint(2, 4), rng.randint(1, 4)
    q = lambda: Fraction(rng.randint(-6, 6), rng.choice([1, 2, 3]))
    w1, b1, cols = [], [], []
    for _ in range(h):
        row, b, col = [q() for _ in range(w)], q(), [q() for _ in range(w)]
        w1.append(row), b1.append(b), cols.append(col)
        if rng.random() < 0.6:                      # its identity partner, sometimes twice
            for _ in range(rng.randint(1, 2)):
                w1.append([-a for a in row]), b1.append(-b), cols.append([-a for a in col])
    rng.shuffle(order := list(range(len(w1))))
    w1, b1, cols = [w1[i] for i in order], [b1[i] for i in order], [cols[i] for i in order]
    ff = FeedForward(w1, b1, [list(r) for r in zip(*cols)], [q() for _ in range(w)])
    one, zero = Fraction(1), Fraction(0)
    tf = Transformer(Box(tuple([Fraction(-2)] * w), tuple([Fraction(2)] * w)), 1, w, "hardmax",
                     [[one if r == c else zero for c in range(w)] for r in range(w)], [[zero] * w], [ff], 0,
                     [[one if r == c else zero for c in range(w)] for r in range(w)], [zero] * w, {})
    x = [Fraction(rng.randint(-8, 8), 4) for _ in range(w)]
    pre = [sum(a * v for a, v in zip(row, x)) + b for row, b in zip(w1, b1)]
    expected = [v + sum(c[r] * max(p, zero) for c, p in zip(cols, pre)) + ff.b2[r] for r, v in enumerate(x)]
    assert tf(x) == expected

