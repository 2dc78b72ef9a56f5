"""Hostile input: every reader — maxout, transformer, certificate, points, ONNX bytes,
.nnet text, CPWL expressions — fuzzed with hypothesis.  Whatever the input, a command ends with
exit 0/1 (a valid input) or exit 2 and ONE line naming the file (and the field path where there
is one), never a traceback or another exception, never a hang, and never an output file on
failure.  No input string reaches ``eval``/``exec``/``sympify``/``parse_expr``: they are patched
to raise around every reader call, and the package is grepped for them.

Size limits exercised here (documented): rationals ≤ ``numbers.MAX_DIGITS`` (4000) digits in
numerator and denominator; decimals (``.nnet``, ``--domain``) ≤ 4000 digits and |exponent| ≤ 4000;
JSON integers ≤ ``formats.MAX_INT_DIGITS`` (40) digits; expressions ≤ ``expression.MAX_LENGTH``
characters and ``MAX_DEPTH`` nesting.
"""
from __future__ import annotations

import builtins
import contextlib
import json
import random
import re
import sys
import tempfile
from fractions import Fraction as F
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import support

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

HOSTILE_STRINGS = ["nan", "inf", "-inf", "NaN", "Infinity", "1/0", "0/0", "-0", "1/1", "2/4", "0.5", "1e5",
                   " 1", "1 ", "+1", "0x10", "1_000", "١", "", "__import__('os').system('touch PWNED')",
                   "eval('1')", "lambda: 0", "Rational(1, 2)", "x", "sympy.S(1)", "9" * 4001, "1/" + "7" * 4001,
                   "-" + "9" * 4000, "1" * 3999 + "/7"]
HOSTILE_VALUES = HOSTILE_STRINGS + [None, True, False, 0, -1, 10**50, [], {}, [[]], {"a": 1}, ["1"], [["1"]]]


class Forbidden(AssertionError):
    """An input string reached a string evaluator."""


def _refuse(name, original):
    """Raise when exactform code (the direct caller) passes a string; the standard library's own
    uses (``dataclasses`` and ``namedtuple`` generate code with ``exec``) go through."""
    def guard(*args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if args and isinstance(args[0], (str, bytes)) and caller.split(".")[0] in ("exactform", "test_bad_input"):
            raise Forbidden(f"{name} called on a string: {str(args[0])[:60]!r}")
        return original(*args, **kwargs)
    return guard


@contextlib.contextmanager
def no_string_evaluation():
    """``eval``/``exec``/``compile``, ``sympify``, ``parse_expr``, ``literal_eval`` raise on strings."""
    import ast

    import sympy
    import sympy.parsing.sympy_parser as sympy_parser
    core_sympify = sys.modules["sympy.core.sympify"]
    targets = [(builtins, "eval"), (builtins, "exec"), (ast, "literal_eval"), (sympy, "sympify"),
               (core_sympify, "sympify"), (sympy_parser, "parse_expr")]
    with contextlib.ExitStack() as stack:
        for module, name in targets:
            original = getattr(module, name)
            stack.enter_context(mock.patch.object(module, name, _refuse(name, original)))
        yield


def cli(*argv) -> tuple[int, str, str]:
    """``main`` in process (support.cli), with string evaluation forbidden; any exception but SystemExit
    fails."""
    with no_string_evaluation():
        return support.cli(*argv)


def assert_rejected_cleanly(code, err, source, output: Path | None = None, path: str | None = None):
    """Exit 2, one line naming the file (and the field path), no traceback, nothing written."""
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("exactform: error: "), err
    assert "Traceback" not in err and str(source) in err, err
    if path:
        assert f": {path}:" in err, (path, err)
    if output is not None:
        assert not output.exists()
        assert not [p for p in output.parent.iterdir() if p.name.startswith(f".{output.name}.")]


# --- JSON documents ----------------------------------------------------------------------------

def leaves(doc, prefix=()):
    """Every (path, value) in a JSON document, containers included."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k in sorted(doc):
            yield from leaves(doc[k], prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from leaves(v, prefix + (i,))


def field_path(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def mutated(doc, rng: random.Random):
    """A copy of ``doc`` with one node replaced, deleted, or given an extra key; and the path."""
    doc = json.loads(json.dumps(doc))
    nodes = [p for p, _ in leaves(doc) if p]
    path = rng.choice(nodes)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    action = rng.random()
    if action < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif action < 0.25 and isinstance(parent, dict):
        parent["extra_" + str(rng.randint(0, 9))] = 1
    elif action < 0.3 and isinstance(parent, list):
        parent.append(parent[-1])
    elif action < 0.35 and isinstance(parent, list):
        parent.pop()
    else:
        parent[path[-1]] = rng.choice(HOSTILE_VALUES)
    return doc, path


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(HOSTILE_STRINGS) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["format", "input_dim", "domain", "layers", "readout", "weight", "bias", "lower",
                         "upper", "tokens", "width", "attention", "embed", "blocks", "kind", "claims", "x"]),
        children, max_size=5),
    max_leaves=20)


@pytest.fixture(scope="module")
def work():
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        code, _, err = cli("compile", EXAMPLES / "relu_net.json", "-o", d / "tf.json")
        assert code == 0, err
        code, _, err = cli("certify", EXAMPLES / "relu_net.json", d / "tf.json", "-o", d / "cert.json")
        assert code == 0, err
        yield d


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


READERS = {  # name -> (command building an argv for a given input file, valid template)
    "maxout": (lambda f, out, d: ("compile", f, "-o", out), lambda d: EXAMPLES / "relu_net.json"),
    "transformer": (lambda f, out, d: ("certify", EXAMPLES / "relu_net.json", f, "-o", out), lambda d: d / "tf.json"),
    "certificate": (lambda f, out, d: ("check", f), lambda d: d / "cert.json"),
    "points": (lambda f, out, d: ("eval", EXAMPLES / "relu_net.json", "--points", f), lambda d: EXAMPLES / "points_2d.json"),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@given(value=json_values)
@example(value={"format": None, "input_dim": None, "kind": []})     # an unhashable kind reached the binding table
@FUZZ
def test_arbitrary_json_is_rejected_cleanly(work, reader, value):
    argv, _ = READERS[reader]
    with tempfile.TemporaryDirectory(dir=work) as d:
        d = Path(d)
        f = _write(d, "in.json", json.dumps(value))
        out = d / "out.json"
        code, stdout, err = cli(*argv(f, out, work))
        if reader == "certificate":   # not a certificate: one line on stderr, nothing on stdout
            assert_rejected_cleanly(code, err, f)
            assert not stdout, stdout
        elif reader == "points" and code == 0:
            assert isinstance(value, list)    # arbitrary JSON can be a valid list of points
        else:
            assert_rejected_cleanly(code, err, f, out)


@pytest.mark.parametrize("reader", sorted(READERS))
@given(seed=st.integers(0, 2**32 - 1))
@FUZZ
def test_mutated_valid_files(work, reader, seed):
    """One node of a valid file replaced by a hostile value, deleted, or an extra key added:
    exit 0/1 (still valid), or 2 with one line naming the file and the mutated field's path."""
    argv, template = READERS[reader]
    rng = random.Random(seed)
    doc, path = mutated(json.loads(template(work).read_text()), rng)
    with tempfile.TemporaryDirectory(dir=work) as d:
        d = Path(d)
        f = _write(d, "in.json", json.dumps(doc))
        out = d / "out.json"
        code, stdout, err = cli(*argv(f, out, work))
        assert code in (0, 1, 2), err
        if code == 2:                         # for a certificate too: exactform: error: FILE: FIELD: message
            assert_rejected_cleanly(code, err, f, None if reader == "certificate" else out)
            assert reader != "certificate" or not stdout, stdout
            value = _get(doc, path)
            if isinstance(value, str) and value in HOSTILE_STRINGS and path and isinstance(path[-1], int):
                assert field_path(path) in err, (path, err)
        elif code == 1 and reader != "certificate":
            assert not out.exists()
        if reader == "certificate":
            assert code == 2 or not err, err
            if path[0] in ("claims", "hints") and doc != json.loads(template(work).read_text()):
                assert code in (1, 2), (path, stdout)   # a tampered statement, claim or hint never passes

def _get(doc, path):
    try:
        for p in path:
            doc = doc[p]
        return doc
    except (KeyError, IndexError, TypeError):
        return None


@pytest.mark.parametrize("text", ["", "{", '{"format": "exactform/maxout@1", "input_dim": 2, "domain"',
                                  "[" * 200000, "\ufeff{}", "null", '"x"', "1e999999", "9" * 5000,
                                  '{"input_dim": ' + "9" * 5000 + "}"])
def test_truncated_and_odd_json(work, text):
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = _write(Path(d), "bad.json", text)
        code, _, err = cli("compile", f, "-o", Path(d) / "out.json")
        assert_rejected_cleanly(code, err, f, Path(d) / "out.json")


def test_non_utf8_and_folder(work):
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = Path(d) / "bad.json"
        f.write_bytes(b'{"format": "\xff\xfe"}')
        assert_rejected_cleanly(*cli("compile", f, "-o", Path(d) / "o.json")[::2], f)
        assert_rejected_cleanly(*cli("compile", d, "-o", Path(d) / "o.json")[::2], d)


@pytest.mark.parametrize("digits,ok", [(3999, True), (4000, True), (4001, False), (100000, False)])
def test_numerator_size_limit(work, digits, ok):
    """Numerators up to MAX_DIGITS = 4000 digits are read (exactly); longer ones are refused by
    that documented limit, fast, with the field path."""
    from exactform.numbers import MAX_DIGITS
    assert MAX_DIGITS == 4000
    doc = json.loads((EXAMPLES / "relu_net.json").read_text())
    doc["readout"]["bias"][0] = "1" * digits
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = _write(Path(d), "big.json", json.dumps(doc))
        code, _, err = cli("compile", f, "-o", Path(d) / "o.json")
        if ok:
            assert code == 0, err
        else:
            assert_rejected_cleanly(code, err, f, Path(d) / "o.json", "readout.bias[0]")
            assert "4000 digits" in err


# --- .nnet text and ONNX bytes -----------------------------------------------------------------

NNET = """// a tiny network
2,2,1,2,
2,2,1,
0,
-1,-1,
1,1,
0,0,0,
1,1,1,
1,-1/2,
0.5,2,
0,
1e-1,
1,1,
0,
"""


def _valid_nnet() -> str:
    return NNET.replace("-1/2", "-0.5")


def test_valid_nnet_template_imports(work):
    """The template is y = (1, 1)·ReLU(W x + b) with W = ((1, −1/2), (1/2, 2)), b = (0, 1/10) and identity
    normalisation: its decimals are read as the rationals they name."""
    from exactform.models import load_model
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = _write(Path(d), "n.nnet", _valid_nnet())
        code, _, err = cli("import", f, "--domain", "-1:1", "-o", Path(d) / "o.json")
        assert code == 0, err
        net = load_model(Path(d) / "o.json")
    points = [[F(1, 2), F(-1, 4)], [F(0), F(1, 2)], [F(-1), F(-1)]]
    assert net.evaluate_batch(points) == [[F(5, 8)], [F(11, 10)], [F(0)]]


nnet_tokens = st.sampled_from(["0", "1", "-1", "2", "0.5", "1e-1", "1e5", "nan", "inf", "-", ".", "e",
                               "1/2", "x", "__import__('os')", ",", ",", "\n", "\n", "//", " ", "9" * 50])


@given(tokens=st.lists(nnet_tokens, max_size=60), seed=st.integers(0, 1000))
@FUZZ
def test_nnet_text_fuzz(work, tokens, seed):
    rng = random.Random(seed)
    lines = _valid_nnet().splitlines(keepends=True)
    cut = rng.randint(0, len(lines))
    text = "".join(lines[:cut]) + "".join(tokens) + ("".join(lines[cut + 1:]) if rng.random() < 0.5 else "")
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = _write(Path(d), "n.nnet", text)
        out = Path(d) / "o.json"
        code, _, err = cli("import", f, "--domain", "-1:1", "-o", out)
        if code != 0:
            assert_rejected_cleanly(code, err, f, out)


def test_nnet_huge_exponent_is_refused_not_hung(tmp_path):
    """A decimal such as 1e99999999 would take hours as a Fraction: the size limit refuses it."""
    text = _valid_nnet().replace("1e-1,", "1e99999999,")
    f = tmp_path / "huge.nnet"
    f.write_text(text)
    last = text.splitlines().index("1e99999999,")
    out = tmp_path / "o.json"
    code, _, err = cli("import", f, "--domain", "-1:1", "-o", out)
    assert code == 2 and "exponent" in err and f"line {last + 1}" in err
    assert_rejected_cleanly(code, err, f, out)


def _onnx_bytes() -> bytes:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.array([[1.0, -2.0], [0.5, 0.25]], dtype=np.float32), "W")
    b = numpy_helper.from_array(np.array([0.125, -1.0], dtype=np.float32), "B")
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["g"], name="dense", transB=1),
             helper.make_node("Relu", ["g"], ["h"], name="act"),
             helper.make_node("MatMul", ["h", "W"], ["y"], name="out")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


@given(data=st.binary(max_size=200) | st.builds(lambda s, n, v: (s, n, v), st.integers(0, 10**6),
                                                 st.integers(1, 8), st.binary(min_size=1, max_size=8)))
@FUZZ
def test_onnx_bytes_fuzz(work, data):
    pytest.importorskip("onnx")
    if isinstance(data, tuple):     # a valid model with a few bytes overwritten
        start, n, patch = data
        raw = bytearray(_onnx_bytes())
        start %= len(raw)
        raw[start:start + n] = patch
        data = bytes(raw)
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = Path(d) / "m.onnx"
        f.write_bytes(data)
        out = Path(d) / "o.json"
        code, _, err = cli("import", f, "--domain", "-1:1", "-o", out)
        if code != 0:
            assert_rejected_cleanly(code, err, f, out)


def test_onnx_with_nan_weight_names_the_initializer(work):
    pytest.importorskip("onnx")
    import numpy as np
    import onnx
    from onnx import numpy_helper
    model = onnx.load_from_string(_onnx_bytes())
    model.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.array([np.nan, 1.0], dtype=np.float32), "B"))
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = Path(d) / "m.onnx"
        onnx.save(model, f)
        code, _, err = cli("import", f, "--domain", "-1:1", "-o", Path(d) / "o.json")
        assert_rejected_cleanly(code, err, f, Path(d) / "o.json")
        assert "'B'" in err


@pytest.mark.parametrize("domain", ["0:1e99999999", "nan:1", "1/0:1", "-1:1,", "__import__('os'):1", "2:1"])
def test_bad_domain_option(work, domain):
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = _write(Path(d), "n.nnet", _valid_nnet())
        code, _, err = cli("import", f, "--domain", domain, "-o", Path(d) / "o.json")
        assert_rejected_cleanly(code, err, "--domain", Path(d) / "o.json")


# --- CPWL expressions --------------------------------------------------------------------------

expr_tokens = st.sampled_from(["x", "y", "Max", "Min", "Abs", "(", ")", ",", "+", "-", "*", "/", "**", "1",
                               "2", "0.5", " ", "1/0", "nan", "inf", "__import__", "'os'", ".system",
                               "lambda", ":", "[", "]", "eval", "exec", "sympify", "Rational", "E", "pi",
                               "oo", "zoo", "I", ";", "#", "\\", "\n", "_x", "λ"])


@given(tokens=st.lists(expr_tokens, max_size=20))
@FUZZ
def test_cpwl_expression_fuzz(work, tokens):
    text = "".join(tokens)
    with tempfile.TemporaryDirectory(dir=work) as d:
        out = Path(d) / "n.json"
        code, _, err = cli("cpwl", text, "--domain", "-1:1", "-o", out)
        if code != 0:
            assert_rejected_cleanly(code, err, "expression", out)


@pytest.mark.parametrize("text", [
    "__import__('os').system('touch PWNED')", "eval('x')", "x.__class__", "lambda x: x", "Max(x, y); exec('1')",
    "Max(*[x, y])", "x if x else y", "sympify('x')", "Abs(x) ** 0.5", "x*y", "1/x", "Max(x)" + ")" * 5,
    "(" * 5000 + "x" + ")" * 5000, "x" + "+x" * 6000, "Max(" * 150 + "x" + ")" * 150, "9" * 5000 + "*x"])
def test_cpwl_python_code_and_limits_are_refused(work, text):
    with tempfile.TemporaryDirectory(dir=work) as d:
        out = Path(d) / "n.json"
        code, _, err = cli("cpwl", text, "--domain", "-1:1", "-o", out)
        assert_rejected_cleanly(code, err, "expression", out)
    assert not Path("PWNED").exists()


# --- no string evaluators in the package -------------------------------------------------------

EVALUATORS = re.compile(r"(?<![\w.])(eval|exec|compile|__import__)\s*\(|\b(sympify|parse_expr|literal_eval|"
                        r"parse_latex|S)\s*\(")


def test_package_never_calls_string_evaluators():
    hits = []
    for path in sorted((ROOT / "exactform").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if EVALUATORS.search(code) and "``" not in code:
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_guard_catches_a_string_evaluator():
    import sympy
    with no_string_evaluation(), pytest.raises(Forbidden):
        sympy.sympify("x + 1")
    with no_string_evaluation(), pytest.raises(Forbidden):
        eval("1")


# --- resource bounds: --timeout, and --domain with a leading minus ---------------------------------

def test_timeout_stops_with_one_line_and_nothing_written(work):
    from exactform.proofs import nets
    net = nets.random_net(random.Random(3), [6, 10, 10], 3)      # ~10 s of regions in 6-D
    with tempfile.TemporaryDirectory(dir=work) as d:
        f = Path(d) / "big.json"
        f.write_text(json.dumps(net.to_json()))
        code, out, err = cli("--timeout", "0.5", "regions", f, "--json")
        assert code == 3 and err.strip().endswith("stopped after 0.5 s (--timeout): nothing written"), err
        assert err.count("\n") == 1 and "Traceback" not in err
        code, _, err = cli("regions", f, "--timeout", "0.5")        # after the command, too
        assert code == 3 and "(--timeout)" in err
        code, _, err = cli("compile", f, "-o", Path(d) / "tf.json", "--timeout", "60")   # not reached
        assert code == 0 and (Path(d) / "tf.json").exists()
        assert sorted(p.name for p in Path(d).iterdir()) == ["big.json", "tf.json"]


@pytest.mark.slow
def test_the_cpu_limit_stops_once_and_the_process_lives_on(work):
    """The kernel repeats ``SIGXCPU`` once per CPU second past the soft limit: the first stops the command
    (exit 3, one line), the rest must not kill the process while it reports or exits."""
    import subprocess

    from exactform.proofs import nets
    net = Path(work) / "big.json"
    net.write_text(json.dumps(nets.random_net(random.Random(3), [6, 10, 10], 3).to_json()))
    child = (f"import resource, sys, time\nresource.setrlimit(resource.RLIMIT_CPU, (2, 30))\n"
             f"resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
             f"from exactform.cli import main\ncode = main(['regions', {str(net)!r}])\n"
             f"t = time.process_time()\nwhile time.process_time() < t + 3: pass\nprint('alive', code)")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "alive 3", (done.returncode, done.stderr)
    assert done.stderr.strip() == "exactform: stopped at the CPU-time limit (SIGXCPU): nothing written"


def test_domain_with_a_leading_minus_for_every_command(work):
    from exactform.driver import normalise_argv
    assert normalise_argv(["cpwl", "x", "--domain", "-1:1", "-o", "n.json"]) == ["cpwl", "x", "--domain=-1:1", "-o", "n.json"]
    assert normalise_argv(["softmax", "n", "--eps", "-1/2"]) == ["softmax", "n", "--eps=-1/2"]
    assert normalise_argv(["x", "--", "--domain", "-1"]) == ["x", "--", "--domain", "-1"]
    with tempfile.TemporaryDirectory(dir=work) as d:
        code, _, err = cli("cpwl", "Max(x, -y)", "--domain", "-1:-1/2,-2:1", "-o", Path(d) / "n.json")
        assert code == 0, err
        f = _write(Path(d), "n.nnet", _valid_nnet())
        code, _, err = cli("import", f, "--domain", "-1/2:1/2", "-o", Path(d) / "o.json")
        assert code == 0, err


@pytest.mark.parametrize("encoding", ["dense", "sparse"])
def test_a_json_number_is_never_read_as_the_string_with_the_same_digits(encoding):
    """Parsed rationals are memoised by their text; a 46-digit JSON integer literal after the
    string of the same digits must still be refused (the cache is typed)."""
    from exactform.formats import InputError, parse_json
    big = "1" * 46
    row = f'["{big}", {big}]' if encoding == "dense" else f'{{"length": 8, "index": [0, 1], "value": ["{big}", {big}]}}'
    doc = parse_json(f'{{"v": {row}}}', "v.json")
    with pytest.raises(InputError, match=r"v\[1\]|value\[1\]"):
        doc.field("v").vector(2 if encoding == "dense" else 8, sparse=True)
    with pytest.raises(InputError, match=r"v\[1\]|value\[1\]"):
        doc.field("v").sparse_row(2 if encoding == "dense" else 8)
