"""Adversarial certificates for the checker: built by hand, not by
exactform's construction, that the checker must refuse, or must check within its stated work bound.

Every test states the false claim (or the broken bound) and the truth.  Truth is decided here, from
docs/spec.md §1, by an exact ``Fraction`` evaluation written in this file (not exactform's evaluator).
Hostile inputs run ``exactform check`` in a child process under caps on CPU seconds and address space;
the goal is every hostile input in ≤ 5 s and ≤ 500 MB with one line (the largest honest
check, the MNIST MLP of docs/performance.md, takes 7.7 CPU s and 313 MiB), so a cap of 8 CPU s and
1 GiB is generous: a test fails when the checker is killed by it, or ends with a traceback."""
import copy
import gzip
import json
import os
import random
import resource
import subprocess
import sys
from fractions import Fraction

import pytest
from support import good, maxout

from exactform.checker import construction

CPU = 8                      # CPU seconds a hostile input may take (goal 5 s; the largest honest check 7.7 s)
MEMORY = 1 << 30             # address space (goal 500 MB resident)


def q(x) -> str:
    x = Fraction(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def sparse(n, index=(), value=()) -> dict:
    return {"length": n, "index": list(index), "value": list(value)}


def write(path, doc):
    data = json.dumps(doc, separators=(",", ":")).encode()
    if str(path).endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


WORK = "12e7"
"""The work bound these attacks run under (``--max-work``, about 13 CPU s): the default, 2·10⁹, admits
honest checks of minutes, and a hostile file may use all of it; what is tested here is that the estimate
covers the real work, so that a file beyond the bound is refused before it."""


def check(*args, cpu=CPU, memory=MEMORY, cwd=None):
    """``exactform check ARGS --max-work WORK`` in a child under RLIMIT_CPU and RLIMIT_AS: (exit code,
    stderr, CPU seconds)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "exactform", "check", *map(str, args), "--max-work", WORK],
                          capture_output=True, text=True, preexec_fn=limit, timeout=20 * cpu, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done.returncode, done.stderr, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def bounded(path, *more):
    """The check ends by itself within the caps: a verdict (0, 1), or exit 2 with one line; no traceback."""
    code, err, seconds = check(path, *more)
    assert code in (0, 1, 2), f"killed by the cap (exit {code}) after {seconds:.1f} CPU s: {err[-300:]}"
    assert "Traceback" not in err and (code != 2 or err.count("\n") == 1), err[-1500:]
    return code, err


def equality(net: dict, tf: dict, phases, pieces, kind="equality") -> dict:
    return {"format": "exactform/certificate@2", "kind": kind, "maxout": net, "transformer": tf,
            "hints": {"phases": phases, "pieces": pieces},
            "claims": [{"id": c, "statement": ""} for c in ("C1", "C2", "C3", "C4")]}


def identity_net(layers=1) -> dict:
    """M(x) = x on [0, 1]: ``layers`` layers of one rank-1 unit."""
    return {"format": "exactform/maxout@1", "input_dim": 1, "domain": {"lower": ["0"], "upper": ["1"]},
            "layers": [{"weight": [[["1"]]], "bias": [["0"]]}] * layers, "readout": {"weight": [["1"]], "bias": ["0"]}}


def e1(a: dict, b: dict, tree=None, box=("0", "1"), tolerance=None) -> dict:
    """An E1 certificate of two one-input models on [box], with the checker's own statement."""
    lo, hi = box
    claim = "A(x) = B(x)" if tolerance is None else f"|A(x) - B(x)|_inf <= {tolerance}"
    return {"format": "exactform/certificate@2", "kind": "equivalence", "models": {"a": a, "b": b},
            "claims": [{"id": "E1", "statement": f"{claim} for every x in the box [{lo},{hi}]",
                        "evidence": {"box": {"lower": [lo], "upper": [hi]}, "tolerance": tolerance,
                                     "tree": tree or {"bound": [[["0", "0"], ["0", "0"]]]}}}]}


# --- independent exact semantics (docs/spec.md §1), from the JSON as written ---------------------------

def vec(v) -> list:
    if isinstance(v, dict):
        out = [Fraction(0)] * v["length"]
        for i, x in zip(v["index"], v["value"]):
            out[i] = Fraction(x)
        return out
    return [Fraction(x) for x in v]


def mat(m, cols) -> list:
    if isinstance(m, dict):
        rows = [[Fraction(0)] * cols for _ in range(m["length"])]
        for i, r in zip(m["index"], m["value"]):
            rows[i] = vec(r)
        return rows
    return [vec(r) for r in m]


def apply(M, v) -> list:
    return [sum((a * b for a, b in zip(r, v)), Fraction(0)) for r in M]


def maxout_value(net, x) -> list:
    h = [Fraction(a) for a in x]
    for layer in net["layers"]:
        h = [max(a + c for a, c in zip(apply(mat(ws, len(h)), h), vec(bs))) for ws, bs in zip(layer["weight"], layer["bias"])]
    R = net["readout"]
    return [y + c for y, c in zip(apply(mat(R["weight"], len(h)), h), vec(R["bias"]))]


def scores(tf, x, block, head) -> list:
    """The hardmax scores s[i][j] of one head at x (query token i, key token j), by §1."""
    w, X = tf["width"], tokens(tf, x, block)
    h = tf["blocks"][block]["heads"][head]
    Q, K = mat(h["query"], w), mat(h["key"], w)
    return [[sum((a * b for a, b in zip(apply(Q, Xi), apply(K, Xj))), Fraction(0)) for Xj in X] for Xi in X]


def tokens(tf, x, stop=None) -> list:
    """Every token's column after the blocks before ``stop`` (all blocks if None), hardmax, ties shared."""
    T, w = tf["tokens"], tf["width"]
    Ex = apply(mat(tf["embed"]["weight"], tf["input_dim"]), [Fraction(a) for a in x])
    X = [[a + b for a, b in zip(Ex, vec(p))] for p in tf["embed"]["bias"]]
    for block in tf["blocks"][:stop]:
        if block["kind"] == "feedforward":
            W1, b1 = mat(block["w1"], w), vec(block["b1"])
            W2, b2 = mat(block["w2"], len(W1)), vec(block["b2"])
            X = [[a + b + c for a, b, c in zip(Xt, apply(W2, [max(Fraction(0), p + c) for p, c in zip(apply(W1, Xt), b1)]), b2)]
                 for Xt in X]
            continue
        new = [list(Xt) for Xt in X]
        for h in block["heads"]:
            Q, K, V = (mat(h[k], w) for k in ("query", "key", "value"))
            O = mat(h["output"], len(V))
            keys, values = [apply(K, Xj) for Xj in X], [apply(V, Xj) for Xj in X]
            for i in range(T):
                qi = apply(Q, X[i])
                s = [sum((a * b for a, b in zip(qi, kj)), Fraction(0)) for kj in keys]
                top = [j for j in range(T) if s[j] == max(s)]
                mixed = [sum((values[j][r] for j in top), Fraction(0)) / len(top) for r in range(len(V))]
                for r, o in enumerate(apply(O, mixed)):
                    new[i][r] += o
        X = new
    return X


def transformer_value(tf, x) -> list:
    R, X = tf["readout"], tokens(tf, x)
    return [y + c for y, c in zip(apply(mat(R["weight"], tf["width"]), X[R["token"]]), vec(R["bias"]))]


# --- 1. statements the checker writes that are false --------------------------------------------------

def test_c1_states_a_constant_query_and_a_positive_scale_for_a_head_whose_values_coincide():
    """False claim accepted (exit 0): C1 says of every head "in each token its query is constant and its
    score is a positive multiple of its value plus a constant".  Truth: in M = (max(x, −x), x) on [−1, 1]
    (T = 2), the rank-1 unit's head here has query x (the input) and key c₀ (the shift), so its score in
    token 0 is x·[j ≠ 0]: it reads the input, its multiple of the value is not constant and is negative
    for x < 0.  The walk checks nothing when all of a head's values are the same form (spec §6.3), but
    the statement still asserts the form.  (The head does return x, so C3 is true: the statement is the
    false part; the fix is to check the form anyway, or to word C1 for such heads.)"""
    net = maxout([[[([1], 0), ([-1], 0)], [([1], 0)]]], [([1, 1], 0)], [-1], [1])
    doc = json.loads(json.dumps(good(net)[2]))
    tf = doc["transformer"]
    h0, shift0 = tf["layout"]["h"][0], tf["layout"]["shift"][0]
    head = tf["blocks"][1]["heads"][1]
    head["query"] = [sparse(tf["width"], [h0], ["1"])]                 # x
    head["key"] = [sparse(tf["width"], [shift0], ["1"])]               # c_0 = [token ≠ 0]
    s = scores(tf, [Fraction(-1)], 1, 1)
    assert s[0] != [s[0][0]] * 2 and s[0][1] - s[0][0] == -1            # not a common offset; scale −1 < 0
    for x in ([-1], [Fraction(-1, 3)], [0], [1]):
        assert transformer_value(tf, x) == maxout_value(doc["maxout"], x)   # C3 itself is true
    derived = construction.derive(copy.deepcopy(doc))[4]
    for c in doc["claims"]:
        c["statement"] = derived[c["id"]][1]
    result = construction.verify(doc)
    c1 = dict((c, (h, w)) for c, h, w in result.claims)["C1"]
    assert not (result.code == 0 and c1[0] and "in each token its query is constant" in c1[1]), \
        "exit 0 with a C1 statement that is false of block 1 head 1"


# --- 2. work not bounded before arithmetic (spec §6.1) -------------------------------------------------

def test_tokens_times_width_of_ten_million_states_is_bounded(tmp_path):
    """A 420-byte .json.gz: T = 98 tokens × width 10⁵, one block.  The reader admits tokens × width up to
    2·10⁷ entries and the walk's estimate is tiny, but the reader materialises T·w Fractions (the dense
    positions) and the walk T·w forms: measured 12 CPU s and 1.3 GB resident, exit 1 at the end.
    (T = 99 is refused at the limit, after 6.4 CPU s and 542 MB.)"""
    T, w = 98, 10 ** 5
    tf = {"format": "exactform/transformer@1", "input_dim": 1, "tokens": T, "width": w, "attention": "hardmax",
          "domain": {"lower": ["0"], "upper": ["1"]}, "embed": {"weight": sparse(w, [0], [["1"]]), "bias": [sparse(w)] * T},
          "blocks": [{"kind": "attention", "heads": [{"query": [sparse(w)], "key": [sparse(w)],
                                                      "value": [sparse(w, [0], ["1"])], "output": sparse(w, [1], [["1"]])}]}],
          "readout": {"token": 0, "weight": [sparse(w, [1], ["1"])], "bias": ["0"]}}
    path = write(tmp_path / "tw.cert.json.gz", equality(identity_net(), tf, [], [[[0] * T]]))
    assert path.stat().st_size < 1000
    bounded(path)


def attention_chain(T: int, w: int, L: int) -> dict:
    """M(x) = x through L rank-1 layers; Tf: L attention blocks of one head, head ℓ reads coordinate ℓ
    and writes ℓ + 1 (all values one form: nothing to check but the copy of every token's state)."""
    blocks = [{"kind": "attention", "heads": [{"query": [sparse(w)], "key": [sparse(w)], "value": [sparse(w, [l], ["1"])],
                                               "output": sparse(w, [l + 1], [["1"]])}]} for l in range(L)]
    tf = {"format": "exactform/transformer@1", "input_dim": 1, "tokens": T, "width": w, "attention": "hardmax",
          "domain": {"lower": ["0"], "upper": ["1"]}, "embed": {"weight": sparse(w, [0], [["1"]]), "bias": [sparse(w)] * T},
          "blocks": blocks, "readout": {"token": 0, "weight": [sparse(w, [L], ["1"])], "bias": ["0"]}}
    return equality(identity_net(L), tf, [], [[[0] * T]] * L)


def test_attention_blocks_are_charged_tokens_times_width(tmp_path):
    """A 1.3 KB certificate: T = 200, width 10⁴, 100 attention blocks of one head.  The work estimate
    (§6.1) is 8.2·10⁶ (15× under the limit 1.2·10⁸): a head is charged the entries its rows read, but
    every attention block rebuilds all T·w coordinates and the derived-number scan after it visits them
    all, 2·10⁶ a block.  Measured 20 CPU s, 289 MB."""
    path = write(tmp_path / "chain.cert.json.gz", attention_chain(200, 10 ** 4, 100))
    bounded(path)


def pair_everywhere(T: int, h: int) -> dict:
    """A pieces block whose h/2 identity pairs (x, −x) are pairs in every token (C2 fails, rightly)."""
    ff = {"kind": "feedforward", "w1": [["1", "0"] if u % 2 == 0 else ["-1", "0"] for u in range(h)], "b1": sparse(h),
          "w2": [sparse(h), sparse(h)], "b2": ["0", "0"]}
    att = {"kind": "attention", "heads": [{"query": [["0", "0"]], "key": [["0", "0"]], "value": [["1", "0"]],
                                           "output": [["0"], ["1"]]}]}
    tf = {"format": "exactform/transformer@1", "input_dim": 1, "tokens": T, "width": 2, "attention": "hardmax",
          "domain": {"lower": ["0"], "upper": ["1"]}, "embed": {"weight": [["1"], ["0"]], "bias": [["0", "0"]] * T},
          "blocks": [ff, att], "readout": {"token": 0, "weight": [["0", "1"]], "bias": ["0"]}}
    phase = [u + 1 if u % 2 == 0 else u - 1 for u in range(h)]
    return equality(identity_net(), tf, [[phase] * T], [[[0] * T]])


def test_the_token_shift_check_is_linear_in_tokens(tmp_path):
    """A 14 KB .json.gz: T = 10⁴ tokens, a pieces block of 100 hidden units, each pair an identity pair in
    every token.  C2 (construction.token_shift) tests ``t not in ts`` with ts a list of up to T tokens, for every
    token and pair: T²/2 per pair, 5·10⁹ in all, while the estimate is 1.1·10⁷.  Measured 20.7 CPU s."""
    bounded(write(tmp_path / "c2.cert.json.gz", pair_everywhere(10 ** 4, 100)))


def big_denominators(n: int, seed=1) -> dict:
    """One Maxout piece of n inputs whose weights are 1/d with distinct 4000-digit d, on [0, 1]^n."""
    rng = random.Random(seed)
    weights = [f"1/{rng.randrange(10 ** 3999, 10 ** 4000) | 1}" for _ in range(n)]
    net = {"format": "exactform/maxout@1", "input_dim": n, "domain": {"lower": ["0"] * n, "upper": ["1"] * n},
           "layers": [{"weight": [[weights]], "bias": [["0"]]}], "readout": {"weight": [["1"]], "bias": ["0"]}}
    tf = {"format": "exactform/transformer@1", "input_dim": n, "tokens": 1, "width": 1, "attention": "hardmax",
          "domain": net["domain"], "embed": {"weight": [sparse(n)], "bias": [["0"]]}, "blocks": [],
          "readout": {"token": 0, "weight": [["1"]], "bias": ["0"]}}
    return equality(net, tf, [], [[[0]]])


def test_derived_numbers_are_bounded_within_a_layer(tmp_path):
    """A 0.8 MB certificate: one unit of 200 inputs with weights 1/d, d distinct 4000-digit numbers.  The
    2^14-bit cap on derived numbers (§6.1) is checked after each layer, but one interval sums 200
    fractions over their common denominator (800,000 digits) first.  Measured: 100 inputs 5.3 CPU s,
    300 inputs 47 CPU s, then exit 2; the estimate at 100 inputs is 3.4·10⁴ weighted entries."""
    bounded(write(tmp_path / "big.cert.json", big_denominators(200)))


def test_float_literals_are_counted_in_the_parse_memory_estimate(tmp_path):
    """A 64 MB JSON list of 16·10⁶ float literals ``0.5`` (the estimate: 24 B each, 384 MB ≤ 450 MiB) is
    parsed into _Float markers of 116 B each: measured 2.5 GB resident and 14 CPU s before exit 2; under a
    1 GiB cap a MemoryError traceback, exit 1.  (NaN is the same.)"""
    path = tmp_path / "floats.cert.json.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b"[" + b"0.5," * (16 * 10 ** 6) + b"0.5]")
    bounded(path)


def test_smt_query_count_is_bounded_in_time(tmp_path):
    """A 1.2 KB certificate under the --smt limits (T = 256, 99,841 queries ≤ 10⁵): a feed-forward block of
    389 hidden units, each off (x − 2 on [0, 1]) in each of 256 tokens.  Each phase query is trivial, but
    one z3 query costs ~0.7 ms through the Python API and the lemma at T = 256 ~13 s in all: measured
    more than 81 CPU s (stopped at 300 s of wall time)."""
    pytest.importorskip("z3")
    T, h = 256, 389
    ff = {"kind": "feedforward", "w1": [["1", "0"]] * h, "b1": ["-2"] * h, "w2": [sparse(h), sparse(h)], "b2": ["0", "0"]}
    att = {"kind": "attention", "heads": [{"query": [["0", "0"]], "key": [["0", "0"]], "value": [["1", "0"]],
                                           "output": [["0"], ["1"]]}]}
    tf = {"format": "exactform/transformer@1", "input_dim": 1, "tokens": T, "width": 2, "attention": "hardmax",
          "domain": {"lower": ["0"], "upper": ["1"]}, "embed": {"weight": [["1"], ["0"]], "bias": [["0", "0"]] * T},
          "blocks": [ff, att], "readout": {"token": 0, "weight": [["0", "1"]], "bias": ["0"]}}
    bounded(write(tmp_path / "smt.cert.json.gz", equality(identity_net(), tf, [[[-1] * h] * T], [[[0] * T]])), "--smt")


# --- 3. E1: the work bound counts weights, not the forms the models build ------------------------------

def test_e1_hardmax_heads_are_charged_their_fallback(tmp_path):
    """A 3.9 KB E1 certificate: A is a hardmax Transformer of T = 200 tokens whose one head has constant
    scores j and values x + (j² mod 7), not proportional, so Forms.hardmax looks for a top token by
    computing all T gaps for each candidate: T² per query token, T³ = 8·10⁶ forms and intervals for the
    head, while work() charges T² per head.  Measured: T = 100 7.9 CPU s, T = 200 more than 59 CPU s."""
    T = 200
    a = {"format": "exactform/transformer@1", "input_dim": 1, "tokens": T, "width": 3, "attention": "hardmax",
         "domain": {"lower": ["0"], "upper": ["1"]},
         "embed": {"weight": [["0"], ["1"], ["1"]], "bias": [["1", q(j), q(j * j % 7)] for j in range(T)]},
         "blocks": [{"kind": "attention", "heads": [{"query": [["1", "0", "0"]], "key": [["0", "1", "0"]],
                                                     "value": [["0", "0", "1"]], "output": [["0"], ["0"], ["1"]]}]}],
         "readout": {"token": 0, "weight": [["0", "0", "1"]], "bias": ["0"]}}
    bounded(write(tmp_path / "e1t.cert.json", e1(a, identity_net())))


def test_e1_forms_are_charged_their_size_not_their_weights(tmp_path):
    """A 104 KB E1 certificate: A is a width-1 hardmax Transformer of 4 feed-forward blocks of 1000 ReLUs
    max(c − u/1000, 0), each added back into the one coordinate c.  Block k's pre-activations each have
    ~1000·k nodes, so building A's forms costs ~10⁷ entries (with the node names interned), while work()
    charges ~8·10³ (one per weight).  Measured 40 CPU s and 1.3 GB resident."""
    h, K = 1000, 4
    blocks = [{"kind": "feedforward", "w1": [["1"]] * h, "b1": [q(Fraction(-u, h)) for u in range(h)],
               "w2": [[q(Fraction(1, 2 * h))] * h], "b2": ["0"]} for _ in range(K)]
    a = {"format": "exactform/transformer@1", "input_dim": 1, "tokens": 1, "width": 1, "attention": "hardmax",
         "domain": {"lower": ["0"], "upper": ["1"]}, "embed": {"weight": [["1"]], "bias": [["0"]]}, "blocks": blocks,
         "readout": {"token": 0, "weight": [["1"]], "bias": ["0"]}}
    bounded(write(tmp_path / "e1h.cert.json", e1(a, identity_net())))


def test_e1_derived_numbers_are_bounded(tmp_path):
    """A 0.8 MB E1 certificate: A is a chain of 100 layers max(a·y, −b·y + 1) with 4000-digit a, b.  The
    walk caps derived numbers at 2^14 bits (§6.1) but E1 has no cap: the nodes' interval bounds grow by
    4000 digits a layer.  Measured: 30 layers 12 CPU s, 100 layers more than 30 CPU s."""
    rng = random.Random(3)
    big = lambda: str(rng.randrange(10 ** 3999, 10 ** 4000))                                # noqa: E731
    a = {"format": "exactform/maxout@1", "input_dim": 1, "domain": {"lower": ["0"], "upper": ["1"]},
         "layers": [{"weight": [[[big()], ["-" + big()]]], "bias": [["0", "1"]]} for _ in range(100)],
         "readout": {"weight": [["1"]], "bias": ["0"]}}
    bounded(write(tmp_path / "e1big.cert.json", e1(a, identity_net())))


def test_e1_witnesses_are_charged_constraints_times_inputs(tmp_path):
    """A 1.3 MB E1 certificate (A = B = 0 on [0, 1]^300): a chain of 400 splits on ±(Σx − 150), each node
    deciding a max node by a valid witness that multiplies every split constraint above it (their sum is
    0).  Checking a witness costs its non-zeros × the constraints' entries, k·(d + 1) at depth k, 2.4·10⁷
    in all; work() charges (constraints + d)·(pieces + 1) a decision, a sum instead of a product:
    ~2.5·10⁶.  Measured more than 36 CPU s (stopped at 200 s of wall time)."""
    d, depth = 300, 400
    box = {"lower": ["0"] * d, "upper": ["1"] * d}
    a = {"format": "exactform/maxout@1", "input_dim": d, "domain": box,
         "layers": [{"weight": [[sparse(d)]], "bias": [["0"]]}], "readout": {"weight": [["1"]], "bias": ["0"]}}
    g, ng = ["1"] * d + [q(Fraction(-d, 2))], ["-1"] * d + [q(Fraction(d, 2))]
    node = {"bound": [[sparse(2 * d + depth), sparse(2 * d + depth)]]}
    for k in reversed(range(depth)):                    # 2d + k constraints here, k of them ±g, in pairs summing to 0
        m = k - k % 2
        witness = sparse(2 * d + k, range(2 * d, 2 * d + m), ["1"] * m)
        entry = {"max": [sparse(d + 1, [d], ["1"]), sparse(d + 1)], "top": [0], "witness": [sparse(2 * d + k), witness]}
        node = {"decide": [entry], "split": g if k % 2 == 0 else ng, "children": [{"empty": sparse(2 * d + k + 1)}, node]}
    doc = {"format": "exactform/certificate@2", "kind": "equivalence", "models": {"a": a, "b": a},
           "claims": [{"id": "E1", "statement": f"A(x) = B(x) for every x in the box [0,1]^{d}",
                       "evidence": {"box": box, "tolerance": None, "tree": node}}]}
    bounded(write(tmp_path / "e1tree.cert.json", doc))


def test_error_lines_are_short(tmp_path):
    """An unknown field of 2·10⁷ characters: the one-line error repeats the name in full, a 20 MB line on
    stderr (and in a JUnit report or a pytest failure).  fields() and the duplicate-key message do not
    truncate what they quote, as the other messages do (``[:40]``)."""
    path = tmp_path / "long.cert.json"
    path.write_text(json.dumps({"format": "exactform/certificate@2", "kind": "equality", "x" * (2 * 10 ** 7): 1}))
    code, err, _ = check(path)
    assert code == 2 and err.count("\n") == 1 and len(err) < 2000, (code, len(err))


# --- 4. outputs and binding ---------------------------------------------------------------------------

def test_a_junit_report_in_an_unwritable_folder_is_refused_before_any_work(tmp_path):
    """``--junit /proc/r.xml``: the folder exists, so writable() accepts it; the whole check runs, then
    mkstemp fails: a FileNotFoundError traceback and exit 1 (the README and spec §6.6: outputs are
    refused before any work, exit 2).  (Likewise /sys: PermissionError; a read-only mount.)"""
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs Linux /proc")
    net = maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1])
    write(tmp_path / "c.cert.json", good(net)[2])
    code, err, _ = check(tmp_path / "c.cert.json", "--junit", "/proc/r.xml")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (code, err[-600:])


def test_a_bound_e1_certificate_pins_the_models_domain(tmp_path):
    """Binding gap: with ``--a A --b B`` an E1 certificate may still choose its own box.  A(x) = x and
    B(x) = 0 on their declared domain [−1, 1] differ everywhere but at 0; a certificate of "A(x) = B(x)
    for every x in the box [0,0]" bound to the two files passes, exit 0, in place of a golden E1
    certificate (the CI step and the pytest plugin see only the exit code).  The line printed is true
    of [0,0]; what the binding promises (a certificate proves something about the user's files, §6.6)
    is not pinned: the box and the tolerance are the certificate's choice.  (The same holds for C5's
    eps, which a bound softmax certificate may set to 10^100.)"""
    a = maxout([[[([1], 0)]]], [([1], 0)], [-1], [1]).to_json()
    b = maxout([[[([0], 0)]]], [([1], 0)], [-1], [1]).to_json()
    assert maxout_value(a, [1]) != maxout_value(b, [1])
    tree = {"bound": [[sparse(2, [1], ["1"]), sparse(2, [0], ["1"])]]}          # 0 − D ≥ 0, 0 + D ≥ 0 on x = 0
    write(tmp_path / "e1.cert.json", e1(a, b, tree, box=("0", "0")))
    write(tmp_path / "a.json", a)
    write(tmp_path / "b.json", b)
    code, err, _ = check(tmp_path / "e1.cert.json", "--a", tmp_path / "a.json", "--b", tmp_path / "b.json")
    assert code != 0, "a bound E1 certificate over a point of the models' domain passes"


# --- 5. valid certificates refused --------------------------------------------------------------------

def test_a_domain_of_3951_digit_bounds_is_checked():
    """Completeness: spec §4 allows 4000 digits in a numerator, but reader.text() refuses any number of
    more than 13000 bits (3914 digits) as "a derived number has more than 4000 digits", and the statements
    print the domain (and λ, ε, U) with it: M(x) = x on [−10^3950, 10^3950], a certificate whose numbers
    are all legal, fails with "certificate FAILS" (exit 1).  (exactform certify of the same net ends in a
    Refuted traceback from the same line.)"""
    net = maxout([[[([1], 0)]]], [([1], 0)], [-1], [1])
    doc = json.loads(json.dumps(good(net)[2]))
    B = str(10 ** 3950)
    for model in (doc["maxout"], doc["transformer"]):
        model["domain"] = {"lower": ["-" + B], "upper": [B]}
    derived = construction.derive(copy.deepcopy(doc))[4]
    for c in doc["claims"]:
        c["statement"] = derived[c["id"]][1]
    assert construction.verify(doc).code == 0
