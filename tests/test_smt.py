"""SMT queries (C1, C2, C3): unsat on fresh constructions, sat on wrong ones."""
import copy
import random
import re
from fractions import Fraction
from pathlib import Path

import pytest

from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.geometry.bounds import magnitude, maxout_bounds
from exactform.layout import padded_piece
from exactform.models import load_model
from exactform.provers.smt import (c1_queries, c2_queries, c3_queries, end_to_end_query, rational,
                                 run_queries, solve, solvers)
from exactform.proofs.nets import random_net, relu_net

EXAMPLES = Path(__file__).parent.parent / "examples"


def answers(queries):
    return {q.name: a for q, a, _ in run_queries(queries)}


def nets():
    rng = random.Random(3)
    return {"ragged": random_net(rng, [2, 3, 2], 3, outputs=2),
            "rank 1": random_net(rng, [2, 3], 1),
            "relu": relu_net(rng, [3, 4, 3]),
            "maxout_2d": load_model(EXAMPLES / "maxout_2d.json")}


def shifts_times(net, factor):
    """``R_ij = factor · max|a_ij|`` over the layer box (factor < 1 is too small)."""
    b = maxout_bounds(net)
    return [[[factor * magnitude(b.pieces[l][i][padded_piece(net.layers[l].ranks[i], j)]) for j in range(net.max_rank)]
             for i in range(layer.units)] for l, layer in enumerate(net.layers)]


def test_c1_hardmax_is_max():
    qs = c1_queries(8)
    assert [q.claim for q in qs] == ["C1"] * 8
    assert set(answers(qs).values()) == {"unsat"}


@pytest.mark.parametrize("name", list(nets()))
def test_c2_c3_hold_on_fresh_constructions(name):
    net = nets()[name]
    tf = compile_maxout(net)
    q2, q3 = c2_queries(net, tf), c3_queries(net, tf)
    assert len(q2) == sum(layer.units for layer in net.layers) * tf.tokens
    assert {q.claim for q in q2} == {"C2"} and {q.claim for q in q3} == {"C3"}
    assert set(answers(q2 + q3).values()) == {"unsat"}


def test_shift_at_least_the_bound_is_enough():
    net = nets()["ragged"]
    tf = compile_maxout(net, shifts=shifts_times(net, Fraction(1)))
    assert set(answers(c2_queries(net, tf) + c3_queries(net, tf)).values()) == {"unsat"}


def test_too_small_shift_is_refuted():
    net = nets()["ragged"]
    tf = compile_maxout(net, shifts=shifts_times(net, Fraction(1, 2)))
    assert "sat" in answers(c2_queries(net, tf)).values()
    assert "sat" in answers(c3_queries(net, tf)).values()


def test_end_to_end_holds_and_finds_counterexample():
    net = load_model(EXAMPLES / "abs.json")
    assert solve(end_to_end_query(net, compile_maxout(net)).smtlib) == "unsat"
    wrong = compile_maxout(net, shifts=shifts_times(net, Fraction(1, 2)))
    assert solve(end_to_end_query(net, wrong).smtlib) == "sat"
    relu = load_model(EXAMPLES / "relu_net.json")
    assert solve(end_to_end_query(relu, compile_maxout(relu)).smtlib, timeout_ms=60000) == "unsat"


def test_end_to_end_refuses_large_nets():
    net = relu_net(random.Random(0), [5, 50, 50])
    with pytest.raises(ValueError, match="tiny networks only"):
        end_to_end_query(net, compile_maxout(net))


def mutate_pieces(tf, lay):
    tf.blocks[0].w1[0][lay["h"][0]] += 1


def mutate_shift(tf, lay):
    tf.blocks[0].w1[2][lay["shift"][0] + 1] = Fraction(0)


def mutate_key(tf, lay):
    tf.blocks[1].heads[0].key[0][lay["h"][0]] = Fraction(1, 3)


def mutate_advance(tf, lay):
    tf.blocks[2].w2[lay["h"][0]][0] *= 2


def mutate_embedding(tf, lay):
    tf.embed_bias[1][lay["shift"][0]] = Fraction(1, 2)


def mutate_readout(tf, lay):
    tf.readout_weight[0][lay["h"][0]] += Fraction(1, 7)


@pytest.mark.parametrize("mutate", [mutate_pieces, mutate_shift, mutate_key, mutate_advance,
                                    mutate_embedding, mutate_readout])
def test_mutated_transformer_weight_is_refuted(mutate):
    net = nets()["ragged"]
    tf = copy.deepcopy(compile_maxout(net))
    mutate(tf, tf.layout)
    refuted = [name for name, a in answers(c3_queries(net, tf)).items() if a == "sat"]
    assert refuted, mutate.__name__


def test_smtlib_is_exact_text():
    net = nets()["ragged"]
    tf = compile_maxout(net)
    texts = [q.smtlib for q in c1_queries(3) + c2_queries(net, tf) + c3_queries(net, tf)]
    tiny = load_model(EXAMPLES / "abs.json")
    texts.append(end_to_end_query(tiny, compile_maxout(tiny)).smtlib)
    for text in texts:
        assert text.startswith("(set-logic ") and text.rstrip().endswith("(check-sat)")
        assert not re.search(r"\d\.\d|\d[eE][-+]?\d", text)
    assert [rational(Fraction(-3, 4)), rational(5), rational(-5), rational(0)] == ["(- (/ 3 4))", "5", "(- 5)", "0"]


def test_cvc5_agrees_when_installed():
    if "cvc5" not in solvers():
        pytest.skip("cvc5 not installed")
    net = load_model(EXAMPLES / "abs.json")
    good, bad = compile_maxout(net), compile_maxout(net, shifts=shifts_times(net, Fraction(1, 2)))
    for q in c1_queries(4) + c2_queries(net, good) + c3_queries(net, good):
        assert solve(q.smtlib, "cvc5") == "unsat", q.name
    assert "sat" in {solve(q.smtlib, "cvc5") for q in c2_queries(net, bad)}


def test_certify_writes_smtlib_files_a_solver_proves(tmp_path, capsys):
    """``certify --smt-out DIR``: every query as an SMT-LIB 2 file, each unsat when re-solved."""
    import z3

    from exactform.cli import main
    root = Path(__file__).parent.parent / "examples"
    tf = tmp_path / "tf.json"
    assert main(["compile", str(root / "relu_net.json"), "-o", str(tf)]) == 0
    out = tmp_path / "smt"
    assert main(["certify", str(root / "relu_net.json"), str(tf), "-o", str(tmp_path / "c.json"),
                 "--smt-out", str(out)]) == 0
    files = sorted(out.glob("*.smt2"))
    assert {f.name.split("-")[1] for f in files} == {"C1.smt2", "C2.smt2", "C3.smt2"}
    for f in files:
        s = z3.Solver()
        s.from_file(str(f))
        assert s.check() == z3.unsat, f.name
