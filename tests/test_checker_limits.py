"""The checker bounds its work before arithmetic: each hostile certificate here ends with exit 2 and one line under a 1 GiB address-space cap; E1 certificates are bound to the
user's files; ``--junit`` outputs are checked before any work; deep models check without recursion;
ln T bounds of 60 digits are read; ``--smt`` decides rank ≥ 9 under a deterministic resource limit."""
import copy
import gzip
import json
import random
import resource
import subprocess
import sys
from fractions import Fraction

import pytest
from exactform.proofs.nets import random_net
from support import NETS, good, maxout, softmax_certificate

from exactform.checker import reader
from exactform.checker import construction
from exactform.checker.command import check_file
from exactform.formats import write_json
from exactform.models import MaxoutNet
from exactform.search.equiv import certificate as e1_certificate, compare

CAP = 1 << 30


def check(*args, cwd=None):
    """``exactform check ARGS`` in a child process under a 1 GiB address-space cap (exit, stderr)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))
    done = subprocess.run([sys.executable, "-m", "exactform", "check", *map(str, args)], capture_output=True,
                          text=True, preexec_fn=limit, timeout=300, cwd=cwd)
    return done.returncode, done.stderr


def refused(path, *more, words=""):
    code, err = check(path, *more)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err and words in err, (code, err[-2000:])
    return err


def sparse(n, index=(), value=()):
    return {"length": n, "index": list(index), "value": list(value)}


@pytest.fixture(scope="module")
def base():
    return good(NETS["rank1"]())[2]


def test_width_of_ten_million_is_refused(tmp_path, base):
    doc = copy.deepcopy(base)
    doc["transformer"].update(width=10 ** 7, tokens=1)
    write_json(tmp_path / "c.cert.json", doc)
    refused(tmp_path / "c.cert.json", words="transformer.width")


def test_queries_of_ten_million_zero_rows_are_refused(tmp_path, base):
    doc = copy.deepcopy(base)
    w = doc["transformer"]["width"]
    for block in doc["transformer"]["blocks"]:
        for h in block.get("heads", []):
            h["query"] = sparse(10 ** 7, [0], [sparse(w, [0], ["1"])])
    write_json(tmp_path / "c.cert.json", doc)
    refused(tmp_path / "c.cert.json", words="query.length")


def test_units_of_ten_million_pieces_are_refused(tmp_path, base):
    doc = copy.deepcopy(base)
    layer = doc["maxout"]["layers"][0]
    layer["weight"] = [sparse(10 ** 7, [0], [["1"] * doc["maxout"]["input_dim"]])] * 20
    layer["bias"] = [sparse(10 ** 7)] * 20
    write_json(tmp_path / "c.cert.json", doc)
    refused(tmp_path / "c.cert.json", words="length")


def test_feedforward_blocks_of_ten_million_hidden_units_are_refused(tmp_path, base):
    doc = copy.deepcopy(base)
    w = doc["transformer"]["width"]
    block = {"kind": "feedforward", "w1": sparse(10 ** 7, [0], [sparse(w, [0], ["1"])]), "b1": sparse(10 ** 7),
             "w2": [sparse(10 ** 7)] * w, "b2": sparse(w)}
    doc["transformer"]["blocks"] = [block] * 20 + doc["transformer"]["blocks"]
    write_json(tmp_path / "c.cert.json", doc)
    refused(tmp_path / "c.cert.json", words="w1.length")


def test_a_hundred_thousand_tokens_through_fifty_blocks_is_refused_before_arithmetic(tmp_path, base):
    doc = copy.deepcopy(base)
    tf = doc["transformer"]
    w = tf["width"]
    tf["tokens"] = 10 ** 5
    tf["embed"]["bias"] = [sparse(w, [0], ["1"])] * 10 ** 5
    tf["blocks"] = (tf["blocks"] * 50)[:50]
    write_json(tmp_path / "c.cert.json.gz", doc)
    assert (tmp_path / "c.cert.json.gz").stat().st_size < 200_000
    refused(tmp_path / "c.cert.json.gz", words="beyond the checker's limit")


def test_three_hundred_layers_of_4000_digit_weights_are_refused(tmp_path):
    rng = random.Random(3)
    big = lambda: str(rng.randrange(10 ** 3999, 10 ** 4000))                           # noqa: E731
    net = {"format": "exactform/maxout@1", "input_dim": 1, "domain": {"lower": ["0"], "upper": ["1"]},
           "layers": [{"weight": [[[big()], [big()]]], "bias": [["0", "1"]]} for _ in range(300)],
           "readout": {"weight": [["1"]], "bias": ["0"]}}
    net_model = MaxoutNet.from_json(__import__("exactform.formats", fromlist=["Reader"]).Reader(net))
    from exactform.construct.maxout_to_transformer import compile_maxout
    tf = compile_maxout(random_net(random.Random(1), [1, 1], 2))                          # any Transformer
    doc = {"format": "exactform/certificate@2", "kind": "equality", "maxout": net_model.to_json(),
           "transformer": tf.to_json(), "hints": {"phases": [], "pieces": []},
           "claims": [{"id": c, "statement": ""} for c in ("C1", "C2", "C3", "C4")]}
    write_json(tmp_path / "c.cert.json", doc)
    code, err = check(tmp_path / "c.cert.json")
    assert code in (1, 2) and "Traceback" not in err, err                                   # refused or refuted, at once


def test_a_gzip_of_a_gigabyte_of_empty_lists_is_refused(tmp_path):
    path = tmp_path / "bomb.cert.json.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b"[" + b"[]," * (30 * 10 ** 6) + b"[]]")
    refused(path, words="larger than")


def test_a_gzip_of_whitespace_is_refused(tmp_path):
    path = tmp_path / "blank.cert.json.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        for _ in range(70):
            f.write(b" " * (1 << 20))
    refused(path, words="larger than")


def test_the_parse_is_bounded_by_its_estimated_memory(tmp_path):
    path = tmp_path / "lists.cert.json"
    path.write_bytes(b"[" + b"[]," * (10 * 10 ** 6) + b"[]]")                                # 30 MB: ~1 GB as lists
    refused(path, words="parsing would take")


def test_an_e1_tree_of_many_nodes_times_many_decisions_is_refused(tmp_path):
    net = random_net(random.Random(5), [1, 2], 2)
    a = net.to_json()
    outcome = compare(a, a, list(zip(net.domain.lower, net.domain.upper)), None)
    cert = json.loads(json.dumps(e1_certificate(a, a, list(zip(net.domain.lower, net.domain.upper)), None, outcome.tree)))
    decisions = [{"max": [["1", "0"], ["0", "0"]], "top": [0], "witness": [["0", "0"], ["0", "0"]]}] * 10 ** 4

    def tree(depth):
        return {"bound": []} if depth == 0 else {"split": ["1", "0"], "children": [tree(depth - 1), tree(depth - 1)]}
    cert["claims"][0]["evidence"]["tree"] = {"decide": decisions, "split": ["1", "0"], "children": [tree(16), tree(16)]}
    write_json(tmp_path / "e.cert.json", cert)
    refused(tmp_path / "e.cert.json", words="beyond the checker's limit")


def test_smt_at_a_thousand_tokens_is_refused_before_any_query(tmp_path, base):
    doc = copy.deepcopy(base)
    tf = doc["transformer"]
    tf["tokens"] = 1000
    tf["embed"]["bias"] = [sparse(tf["width"], [0], ["1"])] * 1000
    tf["blocks"] = tf["blocks"][:1]
    write_json(tmp_path / "c.cert.json", doc)
    refused(tmp_path / "c.cert.json", "--smt", words="--smt would pose")


# --- finding 2: a certificate proves something about the files the user names, whatever its kind ---

@pytest.fixture(scope="module")
def e1(tmp_path_factory):
    """|x| = relu(x) + relu(−x) proved as E1, with both model files."""
    folder = tmp_path_factory.mktemp("e1")
    A = maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1])
    B = maxout([[[([1], 0), ([0], 0)], [([-1], 0), ([0], 0)]]], [([1, 1], 0)], [-1], [1])
    box = list(zip(A.domain.lower, A.domain.upper))
    outcome = compare(A.to_json(), B.to_json(), box, None)
    write_json(folder / "e1.cert.json", e1_certificate(A.to_json(), B.to_json(), box, None, outcome.tree))
    write_json(folder / "a.json", A.to_json())
    write_json(folder / "b.json", B.to_json())
    return folder


def test_an_e1_certificate_in_place_of_an_equality_one_is_refused(e1):
    """The CI step binds with --maxout/--transformer: an E1 certificate there is exit 2, not exit 0."""
    done = subprocess.run([sys.executable, "-m", "exactform", "check", e1 / "e1.cert.json", "--maxout", e1 / "a.json",
                           "--transformer", e1 / "b.json"], capture_output=True, text=True)
    assert done.returncode == 1 and "binding: an equivalence certificate is bound with --a FILE --b FILE" in done.stdout, done
    assert check(e1 / "e1.cert.json", "--a", e1 / "a.json", "--b", e1 / "b.json")[0] == 0
    assert check(e1 / "e1.cert.json", "--a", e1 / "b.json", "--b", e1 / "a.json")[0] == 1       # swapped: refuted
    assert check(e1 / "e1.cert.json", "--a", e1 / "a.json", "--b", "/dev/null")[0] == 2         # unreadable: exit 2
    assert check(e1 / "e1.cert.json", "--a", e1 / "a.json")[0] == 2                              # half a binding


def test_the_api_binds_e1_certificates(e1):
    import exactform
    assert not exactform.check(e1 / "e1.cert.json", maxout=e1 / "a.json", transformer=e1 / "b.json")
    assert check_file(e1 / "e1.cert.json", a=e1 / "a.json", b=e1 / "b.json").code == 0


def test_an_unreadable_bound_model_is_exit_2(tmp_path, base):
    write_json(tmp_path / "c.cert.json", base)
    write_json(tmp_path / "tf.json", base["transformer"])
    refused(tmp_path / "c.cert.json", "--maxout", "/dev/null", "--transformer", tmp_path / "tf.json", words="/dev/null")


# --- finding 4: --junit is checked before any work ---

@pytest.mark.parametrize("target", ["missing/r.xml", ".", "/dev/null", "", "c.cert.json"])
def test_junit_outputs_are_refused_before_any_work(tmp_path, base, target):
    write_json(tmp_path / "c.cert.json", base)
    code, err = check("c.cert.json", "--junit", target, cwd=tmp_path)
    assert code == 2 and err.count("\n") == 1 and "refused before any work" in err, err
    assert "holds" not in err and (tmp_path / "c.cert.json").read_text().startswith("{")


# --- finding 5: deep models, 60-digit ln bounds, --smt at rank 9 ---

def chain(depth: int) -> MaxoutNet:
    """max(y, 1/2 − y) composed ``depth`` times on [0, 1]: no layer's max is fixed by the bounds."""
    return maxout([[[([1], 0), ([-1], Fraction(1, 2))]] for _ in range(depth)], [([1], 0)], [0], [1])


@pytest.mark.parametrize("depth", [300, 1000])
def test_the_e1_checker_values_deep_chains_without_recursion(depth):
    """E1's checker values the nodes from an explicit stack: no recursion on depth."""
    net = chain(depth)
    box = list(zip(net.domain.lower, net.domain.upper))
    from exactform.checker.equiv import evaluate
    from exactform.checker.forms import Forms, outputs
    F = Forms(box)
    out = outputs(F, reader.read_maxout(net.to_json(), "net"))
    assert len(F.nodes) == depth
    value = evaluate(F, out[0], {}, lambda kind, content: content[-1])      # the piece 1/2 − y in every layer
    assert set(value) <= {0, -1} and value


def test_ln_bounds_of_sixty_digits_are_read():
    T, U = 2, Fraction(10 ** 59 + 7, 10 ** 59)                       # 60 digits each (up to 2^199.3)
    assert construction.ln_bound(f"{U.numerator}/{U.denominator}", T, "U") == U
    with pytest.raises(reader.Malformed):
        construction.ln_bound(f"{10 ** 60 + 1}/{10 ** 60}", T, "U")


def test_smt_decides_the_lemma_at_rank_nine_and_more(tmp_path):
    """The lemma at T as T + 1 linear queries under z3's rlimit: rank 9 and 16 decided, whatever the load."""
    pytest.importorskip("z3")
    for rank in (9, 16):
        net = maxout([[[([k], -k * k) for k in range(rank)]]], [([1], 0)], [-1], [1])
        write_json(tmp_path / f"r{rank}.cert.json", good(net)[2])
        code, err = check(tmp_path / f"r{rank}.cert.json", "--smt")
        assert code == 0, err


def test_softmax_certificates_still_check(tmp_path):
    doc = softmax_certificate(maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1]))
    assert construction.verify(doc).code == 0


def test_a_model_given_as_a_certificate_or_the_wrong_model_kind_is_named(tmp_path, base):
    """A model given as a certificate: the error names what the file is (not "unknown field 'domain'")."""
    write_json(tmp_path / "net.json", base["maxout"])
    write_json(tmp_path / "tf.json", base["transformer"])
    write_json(tmp_path / "c.cert.json", base)
    refused(tmp_path / "net.json", words="a model (exactform/maxout@1), not a certificate")
    refused(tmp_path / "c.cert.json", "--maxout", tmp_path / "tf.json", "--transformer", tmp_path / "net.json",
            words="(a Maxout net), got 'exactform/transformer@1'")


@pytest.mark.parametrize("field, value, code, words", [
    ("decide", 5, 2, "tree.decide"), ("decide", "x", 2, "tree.decide"),
    ("relaxed", 5, 1, "a relaxed leaf shows |A - B| < tolerance, and there is none"),
    ("relaxed", {"a": 1}, 1, "a relaxed leaf shows |A - B| < tolerance, and there is none")])
def test_an_e1_tree_field_of_the_wrong_type_is_one_line(tmp_path, field, value, code, words):
    """A tree node's ``decide`` or ``relaxed`` that is not a list: one line, never a TypeError from the work
    bound that reads them first (exit 2 naming the field; a relaxed leaf in a certificate without a
    tolerance is refuted before its witnesses are read)."""
    A = maxout([[[([1], 0), ([-1], 0)]]], [([1], 0)], [-1], [1])
    box = list(zip(A.domain.lower, A.domain.upper))
    doc = e1_certificate(A.to_json(), A.to_json(), box, None, compare(A.to_json(), A.to_json(), box, None).tree)
    doc["claims"][0]["evidence"]["tree"][field] = value
    write_json(tmp_path / "e.cert.json", doc)
    result = check_file(str(tmp_path / "e.cert.json"))
    assert result.code == code and "\n" not in result.known and words in result.known, result.known


def test_combine_is_fraction_arithmetic():
    """``reader.combine`` sums in integers; it must give what Fraction arithmetic gives, zeros dropped, for
    dyadic and other denominators, coefficients given as ints or Fractions."""
    rng = random.Random(7)

    def number():
        return rng.choice([Fraction(rng.randint(-9, 9), rng.choice([1, 2, 3, 8, 10, 7 * 2**40])), rng.randint(-3, 3)])
    for _ in range(300):
        forms = [{k: Fraction(number()) for k in rng.sample([reader.ONE, 0, 1, 2, 3], rng.randint(0, 4))}
                 for _ in range(rng.randint(0, 4))]
        terms, constant = [(number(), f) for f in forms], number()
        expected: dict = {reader.ONE: Fraction(constant)} if constant else {}
        for a, f in terms:
            for k, x in f.items():
                expected[k] = expected.get(k, 0) + a * x
        got = reader.combine(terms, constant)
        assert got == {k: x for k, x in expected.items() if x}
        assert all(type(x) in (int, Fraction) and x for x in got.values())
    import flint                                    # the prover's bounds (``equiv_bound``) combine fmpq forms
    q = [flint.fmpq(n, 6) for n in range(-6, 7)]
    forms = [{0: q[1], 1: q[5]}, {0: q[11], reader.ONE: q[2]}, {1: -q[5]}]
    assert reader.combine([(q[8], forms[0]), (1, forms[1]), (q[8], forms[2])], q[9]) == {
        0: q[8] * q[1] + q[11], reader.ONE: q[2] + q[9]}


def test_combine_refuses_a_derived_number_beyond_max_bits():
    """A product, or a sum over coprime denominators, beyond ``MAX_BITS`` is refused, not carried on."""
    big = Fraction(1, 3 ** (reader.MAX_BITS // 2))                  # about 0.8·MAX_BITS bits
    with pytest.raises(reader.Malformed, match="exceeds"):
        reader.combine([(big, {0: big})])
    with pytest.raises(reader.Malformed, match="exceeds"):
        reader.combine([(1, {0: big}), (1, {0: Fraction(1, 5 ** (reader.MAX_BITS // 3))})])
    assert reader.combine([(1, {0: big}), (-1, {0: big})]) == {}
