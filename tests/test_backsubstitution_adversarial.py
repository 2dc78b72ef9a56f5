"""An adversarial review of the checker's stated tightenings (docs/spec.md §8, "Stated tightenings"):
``LeafRows.backsubstituted`` meets a two-piece node's gap or a pair's h with a bound of its own, so every
bound it meets must hold at every point of the leaf's box, for any entries the format admits
(duplicates, any order, every node, both sides), on ReLU and 3-piece Maxout nets, non-dyadic weights,
a net against its quantised copy (pairs), hardmax Transformers, and degenerate boxes; hostile entries
are refused in one line; the work charge per entry bounds the rows a back-substitution reads."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest
from exactform.proofs.nets import random_net, relu_net
from support import node_values, quantised, sign_transformer

from exactform.checker.cost import REFINE
from exactform.checker.forms import Forms, outputs, read_model
from exactform.checker.reader import Malformed
from exactform.checker.relax import LeafRows, node_bounds, pairs, tightening
from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.models import Box, MaxoutLayer, MaxoutNet

F = Fraction


def odd_net(rng: random.Random, dims: list, rank: int, outputs: int = 1) -> MaxoutNet:
    """A Maxout net of units of exactly ``rank`` pieces, weights with denominators 3, 7, 9, 11 (never dyadic)."""
    q = lambda: F(rng.randint(-12, 12), rng.choice([3, 7, 9, 11]))  # noqa: E731
    layers = [MaxoutLayer([[[q() for _ in range(a)] for _ in range(rank)] for _ in range(b)],
                          [[q() for _ in range(rank)] for _ in range(b)]) for a, b in zip(dims, dims[1:])]
    box = Box(tuple([F(-1)] * dims[0]), tuple([F(1)] * dims[0]))
    return MaxoutNet(box, layers, [[q() for _ in range(dims[-1])] for _ in range(outputs)], [q() for _ in range(outputs)])


def table(a, b=None, box=None) -> tuple[Forms, list]:
    """The node table of model a (and b after it) over ``box`` (a's domain), and the pairs found."""
    box = box or [(F(lo), F(hi)) for lo, hi in zip(a.domain.lower, a.domain.upper)]
    Fm = Forms(box)
    outputs(Fm, read_model(a.to_json(), "a"))
    mark = len(Fm.calls)
    if b is not None:
        outputs(Fm, read_model(b.to_json(), "b"))
    return Fm, pairs(Fm, mark) if b is not None else []


def every(Fm: Forms, related: list, sides=(0, 1)) -> dict:
    """Every key a ``tighten`` entry may name, each with ``sides`` (duplicates allowed)."""
    return {k: list(sides) for k, (kind, data) in enumerate(Fm.nodes) if kind == "max" and len(data) == 2} | \
        {("h", n): list(sides) for n in range(len(related))}


def points(rng: random.Random, cube: list, count: int) -> list:
    """The box's two extreme corners, its centre and random exact points (non-dyadic fractions too)."""
    out = [[lo for lo, _ in cube], [hi for _, hi in cube], [(lo + hi) / 2 for lo, hi in cube]]
    return out + [[lo + (hi - lo) * F(rng.randint(0, m), m) for lo, hi in cube]
                  for m in (rng.choice([99, 7, 3, 64]) for _ in range(count))]


def assert_sound(Fm: Forms, cube: list, related: list, tight: dict, rng: random.Random, count: int = 8) -> LeafRows:
    """Every row of the leaf holds, every tightened gap and h contains the value, at exact points of ``cube``."""
    rows = LeafRows(Fm, cube, [], related, tight)
    for x in points(rng, cube, count):
        v = node_values(Fm, x)
        for i in range(len(rows)):
            assert sum((c * v[k] for k, c in rows[i][0].items()), F(0)) >= 0, (i, rows.slots[i], x)
        for z in range(Fm.d + len(Fm.nodes)):
            lo, hi = rows.bounds[z]
            assert lo <= v[z] <= hi, (z, x)
        for k, (gl, gu) in rows.gaps.items():
            P, Q = (sum((c * v[j] for j, c in dict(f).items()), F(0)) for f in Fm.nodes[k][1])
            assert gl <= P - Q <= gu, (k, x)
        for n, state in rows.hinges.items():
            h = sum((c * v[j] for j, c in rows.hinge(n).items()), F(0))
            assert len(state) == 1 or state[0] <= h <= state[1], (n, x)
    return rows


def sub_box(rng: random.Random, box: list) -> list:
    lo = [F(rng.randint(-9, 5), 9) for _ in box]
    return [(a, min(a + F(rng.randint(1, 9), 7), F(1))) for a in lo]


@pytest.mark.parametrize("seed", range(3))
def test_relu_against_its_non_dyadic_quantised_copy(seed):
    rng = random.Random(seed)
    a = relu_net(rng, [2, 6, 6, 4], outputs=2)
    Fm, related = table(a, quantised(a, F(1, 7)))
    assert related, "the copy pairs its units"
    box = Fm.bounds[:Fm.d]
    tightened = 0
    for cube in (box, sub_box(rng, box), sub_box(rng, box)):
        for tight in (every(Fm, related), every(Fm, related, (1, 1, 0)), every(Fm, related, (0,))):
            rows = assert_sound(Fm, cube, related, tight, rng, 4)
            plain = node_bounds(Fm, cube, related)
            tightened += sum(rows.gaps[k] != plain[1][k] for k in rows.gaps)
            tightened += sum(rows.hinges[n] != plain[3][n] for n in rows.hinges)
    assert tightened, "some stated bound is narrower than forward propagation's"


@pytest.mark.parametrize("seed", range(3))
def test_three_piece_maxout_with_odd_weights_against_a_copy(seed):
    """Units of 3 pieces (no gap to tighten) between two-piece ones; weights of denominators 3, 7, 9, 11."""
    rng = random.Random(10 + seed)
    a = odd_net(rng, [2, 4, 4], 3) if seed != 1 else random_net(rng, [2, 5, 4, 3], max_rank=3, outputs=2)
    b = odd_net(rng, [2, 5, 3], 2)
    Fm, _ = table(a)
    assert any(len(data) == 3 for _, data in Fm.nodes)
    assert_sound(Fm, Fm.bounds[:Fm.d], [], every(Fm, []), rng)
    Fm, related = table(b, quantised(b, F(1, 3)))
    for cube in (Fm.bounds[:Fm.d], sub_box(rng, Fm.bounds[:Fm.d])):
        assert_sound(Fm, cube, related, every(Fm, related, (1, 0, 1)), rng)


def test_degenerate_boxes():
    """A box of one point, a box of zero width in one coordinate, a box 2^-70 wide, and a box with
    non-dyadic ends 1/3 ± 10^-30: the leaf box is rounded outward, every bound still holds."""
    rng = random.Random(7)
    a = relu_net(rng, [2, 5, 5, 3], outputs=1)
    Fm, related = table(a, quantised(a, F(1, 3)))
    tiny = F(1, 2 ** 70)
    for cube in ([(F(1, 3), F(1, 3)), (F(-2, 7), F(-2, 7))], [(F(0), F(0)), (F(-1), F(1))],
                 [(F(1, 5), F(1, 5) + tiny), (F(-1, 9), F(-1, 9) + tiny)],
                 [(F(1, 3) - F(1, 10 ** 30), F(1, 3) + F(1, 10 ** 30)), (F(-1), F(-1))]):
        assert_sound(Fm, cube, related, every(Fm, related, (0, 1, 1)), rng, 3)


def test_hardmax_transformers():
    """A hardmax Transformer's table (hardmax nodes between the feed-forward maxes), alone and against the
    Transformer compiled from its Maxout net's quantised copy."""
    rng = random.Random(3)
    tf = sign_transformer(3)
    Fm, _ = table(tf)
    assert any(kind == "hardmax" for kind, _ in Fm.nodes)
    for cube in ([(F(-1), F(1))], [(F(-1, 3), F(2, 7))], [(F(0), F(0))]):
        assert_sound(Fm, cube, [], every(Fm, []), rng)
    net = relu_net(rng, [2, 4, 3], outputs=1)
    Fm, related = table(compile_maxout(net), compile_maxout(quantised(net, F(1, 3))))
    for cube in (Fm.bounds[:Fm.d], sub_box(rng, Fm.bounds[:Fm.d])):
        assert_sound(Fm, cube, related, every(Fm, related), rng, 4)


def test_entries_in_any_order_with_duplicates_read_by_the_certificate_reader():
    """``tightening`` as the checker reads a leaf: every admissible [z, side], shuffled, each twice; the result
    is the same whatever the order, and sound."""
    rng = random.Random(5)
    a = relu_net(rng, [2, 5, 4], outputs=1)
    Fm, related = table(a, quantised(a, F(2, 7)))
    seconds = {p[2] for p in related}
    entries = [[Fm.d + k, s] for k, (kind, data) in enumerate(Fm.nodes) if kind == "max" and len(data) == 2
               for s in (0, 1)] + [[b, s] for b in seconds for s in (2, 3)]
    entries *= 2
    results = []
    for _ in range(2):
        rng.shuffle(entries)
        tight = tightening({"tighten": entries}, "leaf", Fm, related)
        rows = assert_sound(Fm, sub_box(rng, Fm.bounds[:Fm.d]) if not results else results[0][0], related, tight, rng, 3)
        results.append((rows.cube, rows.gaps, rows.hinges))
    assert results[0][1:] == results[1][1:]


def test_hostile_entries_are_refused_in_one_line():
    rng = random.Random(2)
    a = MaxoutNet(odd_net(rng, [2, 3], 3).domain, odd_net(rng, [2, 3], 3).layers + relu_net(rng, [3, 3]).layers,
                  [[F(1), F(2), F(3)]], [F(0)])
    Fm, related = table(a, quantised(a, F(1, 3)))
    three = next(Fm.d + k for k, (kind, data) in enumerate(Fm.nodes) if len(data) != 2)
    firsts = {p[0] for p in related} - {p[2] for p in related}
    bad = [[[0, 1]], [[three, 0]], [[Fm.d + len(Fm.nodes), 1]], [[Fm.d, 4]], [[Fm.d, -1]], [[True, 1]],
           [[Fm.d, 1, 0]], [[Fm.d]], [Fm.d], [[F(1), 0]], [["5", 1]], [[Fm.d, 1.0]], [[2 ** 80, 1]], {"z": 1}]
    bad += [[[z, 2]] for z in firsts]
    tf = sign_transformer(3)
    Ft, _ = table(tf)
    hard = [[[Ft.d + k, s]] for k, (kind, _) in enumerate(Ft.nodes) if kind == "hardmax" for s in (0, 1, 2, 3)]
    for entries, T, rel in [(e, Fm, related) for e in bad] + [(e, Ft, []) for e in hard]:
        with pytest.raises(Malformed) as error:
            tightening({"tighten": entries}, "leaf", T, rel)
        assert "\n" not in str(error.value) and str(error.value).startswith("leaf.tighten")


def test_a_v1_network_has_no_pair_sides():
    rng = random.Random(4)
    Fm, _ = table(relu_net(rng, [2, 3, 3], outputs=1))
    with pytest.raises(Malformed):
        tightening({"tighten": [[Fm.d + len(Fm.nodes) - 1, 3]]}, "leaf", Fm, [])


class Counting(dict):
    """The rows a back-substitution fetches, counted by their entries."""
    touched = 0

    def __getitem__(self, i):
        value = super().__getitem__(i)
        Counting.touched += len(value[1])
        return value


class Counted(LeafRows):
    """A leaf whose back-substitutions record (key, entries of the rows they fetch)."""
    integers = property(lambda self: self._integers, lambda self, v: setattr(self, "_integers", Counting(v)))

    def _tightened(self, key, lo, hi, state):
        before = Counting.touched
        out = super()._tightened(key, lo, hi, state)
        self.log.append((key, len(self.tight.get(key, ())), Counting.touched - before))
        return out


def charge(Fm: Forms, z: int) -> int:
    """equiv.work's charge for one ``tighten`` entry on variable z (before the numbers' weight; spec §6.1)."""
    width = 3 + max((len(p) for k, data in Fm.nodes if k == "max" for p in data), default=0)
    n = len(Fm.nodes)
    return (REFINE + 2) * (Fm.d + n + 1) + (6 * width + 1) * min(max(z - Fm.d, 0), n)


@pytest.mark.parametrize("seed", range(2))
def test_the_charge_per_entry_bounds_the_rows_read(seed):
    """Each back-substitution fetches rows of at most the entries equiv.work charges its ``tighten`` entry
    (rows fetched counted whole, even where μ = 0: an upper bound of the entries it adds), plus the
    refinements and the maximum over the bounds; and the check's whole charge covers them."""
    rng = random.Random(seed)
    a = relu_net(rng, [3, 6, 6, 5], outputs=2) if seed == 0 else odd_net(rng, [3, 5, 5, 4], 2, outputs=2)
    Fm, related = table(a, quantised(a, F(1, 3)))
    second = {n: p[2] for n, p in enumerate(related)}
    rows = Counted.__new__(Counted)
    rows.log = []
    Counted.__init__(rows, Fm, Fm.bounds[:Fm.d], [], related, every(Fm, related, (0, 1)))
    assert rows.log
    for key, sides, touched in rows.log:
        z = second[key[1]] if isinstance(key, tuple) else Fm.d + key
        assert touched + sides * (REFINE + 2) * (Fm.d + len(Fm.nodes) + 1) <= sides * charge(Fm, z), (key, touched)


def test_mutations_are_caught(monkeypatch):
    """The soundness check above fails on a back-substitution bound 2^-20 below the true one (as a row
    subtracted instead of added gives): the test can fail.  (Subtracting rows in ``cancel`` itself, and
    dropping the refinement's rescale of T, were checked by editing relax.py: 8 and 5 tests here fail.)"""
    import exactform.checker.relax as relax

    rng = random.Random(1)
    a = relu_net(rng, [2, 6, 6, 4], outputs=2)
    Fm, related = table(a, quantised(a, F(1, 7)))
    original = relax.LeafRows.backsubstituted

    def wrong_sign(self, f, sign):
        return original(self, f, sign) - F(1, 2 ** 20)          # a bound a hair too tight, as a sign error gives

    caught = 0
    for wrong in (wrong_sign,):
        monkeypatch.setattr(relax.LeafRows, "backsubstituted", wrong)
        try:
            for cube in (Fm.bounds[:Fm.d], sub_box(rng, Fm.bounds[:Fm.d])):
                assert_sound(Fm, cube, related, every(Fm, related), rng, 30)
        except AssertionError:
            caught += 1
    assert caught == 1


def plain_backsubstitution(rows: LeafRows, f: tuple, sign: int) -> Fraction:
    """docs/spec.md §8's back-substitution entry by entry of the form f = (D, {variable: integer}): every row
    built from its rational form (``rows[i]``), every entry of it added, the pair's row first, then the node's
    top row or z − p."""
    from exactform.checker.reader import MAX_BITS, ONE
    from exactform.checker.relax import BITS, _integral, _maximum

    D, form = f
    T, D, refined = [0] * (rows.F.d + len(rows.F.nodes) + 1), D << 3 * BITS, 0
    for k, c in form.items():
        T[k] = sign * c << 3 * BITS

    def cancel(v: int, i: int) -> None:
        nonlocal D, T, refined
        den, R = _integral(rows[i][0])
        if (D >> BITS) < den and refined < REFINE and den.bit_length() + 2 * BITS <= MAX_BITS:
            s, refined = den.bit_length() + 2 * BITS - D.bit_length(), refined + 1
            D, T = D << s, [c << s for c in T]
        r = R.get(v)
        if r and (r > 0) != (T[v] > 0):
            mu = abs(T[v]) // abs(r)
            for k, c in R.items():
                T[k] += mu * c

    for v in range(max(form, default=ONE), rows.F.d - 1, -1):
        n = rows.second.get(v)
        if n is not None and T[rows.pairs[n][0]]:
            a = rows.pairs[n][0]
            cancel(a, rows.chords_at + 2 * n + ((T[a] > 0) == (rows.pairs[n][1] > 0)))
        k = v - rows.F.d
        if T[v] and k in rows.gaps:
            gl, gu = rows.gaps[k]
            cancel(v, rows.starts[k] + 4 if T[v] > 0 else rows.starts[k] + 2 + (gl < 0 and (gu <= 0 or gu < -gl)))
    return _maximum(rows.bounds, D, T)


@pytest.mark.parametrize("seed", range(3))
def test_back_substitution_is_the_plain_rule(seed, monkeypatch):
    """``backsubstituted``'s integer paths (rows built in integers, inert nodes' entries skipped, rows cached per
    node) give the plain rule's bound exactly, call by call, on a ReLU net against its quantised copy (pairs), on
    Maxout nets of odd weights, and on each net alone (V1: no pairs)."""
    rng = random.Random(20 + seed)
    a = relu_net(rng, [2, 8, 8, 6], outputs=2)
    b = odd_net(rng, [2, 5, 4], 2) if seed else random_net(rng, [2, 5, 4, 3], max_rank=3, outputs=2)
    original, calls = LeafRows.backsubstituted, []

    def compared(self, f, sign):
        out = original(self, f, sign)
        assert out == plain_backsubstitution(self, f, sign), (f, sign)
        calls.append(out)
        return out

    monkeypatch.setattr(LeafRows, "backsubstituted", compared)
    for Fm, related in (table(a, quantised(a, F(1, 5 + seed))), table(b, quantised(b, F(1, 3))), table(a), table(b)):
        box = Fm.bounds[:Fm.d]
        for cube in (box, sub_box(rng, box), sub_box(rng, box)):
            LeafRows(Fm, cube, [], related, every(Fm, related))
    assert len(calls) > 100


@pytest.mark.parametrize("seed", range(4))
def test_dyadic_functions_are_the_rounding_they_state(seed):
    """``relax._dyadic`` (integers only) against its statement in Fractions: each coefficient a rounded to
    ``BITS`` significant bits toward ``up``, the residue taken at the end of x_i it points to and added to the
    constant, which is then rounded outward; so the result is above (below) f at every corner of the box."""
    from itertools import product

    from exactform.checker.relax import _dyadic, outward
    rng = random.Random(seed)
    for _ in range(200):
        d = rng.randint(1, 4)
        den = rng.choice([1, 3, 2**50, 7 * 2**61, 10**30 + 7])
        nums = [rng.choice([0, rng.randint(-10**40, 10**40)]) for _ in range(d + 1)]
        cube = [tuple(sorted(Fraction(rng.randint(-2**20, 2**20), 2 ** rng.randint(0, 30)) for _ in range(2)))
                for _ in range(d)]
        up = rng.random() < 0.5
        residue, coefficients = Fraction(0), []
        for i, n in enumerate(nums[:d]):
            a = Fraction(n, den)
            q = outward(a, up)
            coefficients.append(q)
            residue += (a - q) * cube[i][(a > q) == up]
        constant = outward(Fraction(nums[d], den) + residue, up)
        D, got = _dyadic((den, nums), cube, up)
        assert [Fraction(v, D) for v in got] == coefficients + [constant]
        assert all(q.denominator & (q.denominator - 1) == 0 for q in coefficients + [constant])
        for corner in product(*cube):
            f = Fraction(nums[d], den) + sum(Fraction(n, den) * x for n, x in zip(nums, corner))
            g = constant + sum(q * x for q, x in zip(coefficients, corner))
            assert (g >= f) if up else (g <= f)
