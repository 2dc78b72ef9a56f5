"""``exactform check V1CERT --net NET --property PROP`` binds a verification certificate to the user's files
by content: the checker reads an ONNX or ``.nnet`` network itself (``checker/onnx_reader.py``,
``checker/nnet_reader.py``, standard library) and compares it exactly with the embedded network; a SHA-256
alone never binds, and an unbound verdict says so first, the recorded file names printed apart as data."""
import json
import shutil
import struct
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactform.checker.command import check_file
from exactform.checker.onnx_reader import read_onnx
from exactform.checker.reader import Malformed, read_maxout
from support import cli

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
ACAS = ROOT / "data" / "acasxu"
ONNX_1_1 = ACAS / "ACASXU_run2a_1_1_batch_2000.onnx"
NNET_1_1 = ACAS / "ACASXU_run2a_1_1_batch_2000.nnet"
PROPS = ROOT / "exactform" / "benchmarks" / "data" / "acasxu_vnnlib"
DECLARE = "".join(f"(declare-const X_{i} Real)\n" for i in range(5)) + "".join(f"(declare-const Y_{j} Real)\n" for j in range(5))
Y0_LEAST = "".join(f"(assert (<= Y_0 Y_{j}))\n" for j in range(1, 5))     # property 3's violation: COC is least


def vnnlib(path: Path, box) -> Path:
    """Property 3's violation on the input ``box``."""
    path.write_text(DECLARE + "".join(f"(assert (>= X_{i} {lo}))\n(assert (<= X_{i} {hi}))\n" for i, (lo, hi) in enumerate(box))
                    + Y0_LEAST)
    return path


NORMALISED = [("-0.303531156", "-0.298552812"), ("-0.009549297", "0.009549297"), ("0.493380324", "0.5"), ("0.3", "0.31"),
              ("0.3", "0.31")]
"""A corner of ACAS Xu property 3's box (normalised inputs, the ONNX files'); network 1_1 proves it in 3 leaves."""
RAW = [("1500", "1800"), ("-0.06", "0.06"), ("3.1", "3.14159"), ("980", "991"), ("960", "972")]
"""The same box in the .nnet file's raw units (inside its clipping box)."""


def constant_net(inputs: int, outputs: list) -> dict:
    """A network whose outputs are the constants ``outputs`` (one dead unit)."""
    return {"format": "exactform/maxout@1", "input_dim": inputs,
            "domain": {"lower": ["-100000"] * inputs, "upper": ["100000"] * inputs},
            "layers": [{"weight": [[["0"] * inputs]], "bias": [["0"]]}],
            "readout": {"weight": [["0"] for _ in outputs], "bias": [str(y) for y in outputs]}}


def forged(tmp, net_file: Path, prop_file: Path, recorded: str | None = None) -> Path:
    """A valid V1 certificate about a constant network (Y_0 never the least output), its sources and statement
    rewritten to record ``net_file`` (named ``recorded``, default its name) and ``prop_file`` with their SHA-256."""
    from exactform.checker.verify_cert import sha256_file, statement
    fake = tmp / "constant.json"
    fake.write_text(json.dumps(constant_net(5, [1, 0, 0, 0, 0])))
    r = cli("verify", fake, prop_file, "--cert", tmp / "forged.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp / "forged.json").read_text())
    claim = doc["claims"][0]
    sources = {"net": {"file": recorded or net_file.name, "sha256": sha256_file(net_file)},
               "property": {"file": prop_file.name, "sha256": sha256_file(prop_file)}}
    claim["evidence"]["sources"] = sources
    claim["statement"] = statement(sources, len(claim["evidence"]["property"]["disjuncts"]))
    (tmp / "forged.json").write_text(json.dumps(doc))
    return tmp / "forged.json"


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """``{suffix: (network, property, certificate)}``: ``exactform verify --cert`` on network 1_1, ONNX and .nnet."""
    tmp = tmp_path_factory.mktemp("honest")
    out = {}
    for net, box in ((ONNX_1_1, NORMALISED), (NNET_1_1, RAW)):
        prop, cert = vnnlib(tmp / f"p{net.suffix}.vnnlib", box), tmp / f"c{net.suffix}.json"
        r = cli("verify", net, prop, "--cert", cert)
        assert r.returncode == 0 and r.stdout.startswith("unsat"), r.stdout + r.stderr
        out[net.suffix] = net, prop, cert
    return out


# --- the finding: a hash is not a binding ----------------------------------------------------------------------

def test_constant_network_with_the_onnx_files_hash_is_not_about_that_file(tmp_path):
    """A proof about a constant network that records the ONNX file's SHA-256 is still a proof about the
    constant network: bound to the ONNX file, the checker reads it, compares, and refuses (exit 1)."""
    prop = PROPS / "prop_3.vnnlib"
    cert = forged(tmp_path, ONNX_1_1, prop)
    assert cli("check", cert).returncode == 0                       # valid about what it embeds
    r = cli("check", cert, "--net", ONNX_1_1, "--property", prop)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"the embedded network is not the one in {ONNX_1_1}" in r.stdout, r.stdout


def test_constant_network_with_the_nnet_files_hash_is_not_about_that_file(tmp_path):
    prop = vnnlib(tmp_path / "raw.vnnlib", RAW)
    result = check_file(forged(tmp_path, NNET_1_1, prop), net=str(NNET_1_1), property=str(prop))
    assert result.code == 1 and f"the embedded network is not the one in {NNET_1_1}" in result.known, result


# --- honest certificates bind to their files ------------------------------------------------------------------

def test_honest_certificate_binds_to_its_onnx_file(honest):
    net, prop, cert = honest[".onnx"]
    r = cli("check", cert, "--net", net, "--property", prop)
    assert r.returncode == 0 and "V1 holds" in r.stdout, r.stdout + r.stderr
    assert f"the embedded network is the one read from {json.dumps(str(net))} (6 ReLU layers, compared exactly)" in r.stdout
    import exactform
    bound = exactform.check(cert, net=net, property=prop)
    assert bound and "not bound" not in bound.known and "compared exactly" in bound.known
    assert not exactform.check(cert, net=ACAS / "ACASXU_run2a_1_2_batch_2000.onnx", property=prop)   # another file


def test_honest_certificate_binds_to_its_nnet_file(honest, tmp_path):
    net, prop, cert = honest[".nnet"]
    result = check_file(cert, net=str(net), property=str(prop))
    assert result.code == 0 and f"the embedded network is the one read from {json.dumps(str(net))}" in result.known
    wide = vnnlib(tmp_path / "wide.vnnlib", [("-1", "1800")] + RAW[1:])      # leaves the clipping box: x_0 ≥ 0
    result = check_file(forged(tmp_path, net, wide), net=str(net), property=str(wide))
    assert result.code == 2 and "clipping box" in result.known and "exactform import NET -o net.json" in result.known


def test_unbound_verdict_says_so_first_and_prints_recorded_names_as_data(tmp_path):
    """A recorded name is data: JSON-quoted (control characters escaped) on a line of its own, never in the
    sentence of what was checked, whose line starts with 'not bound to any file'."""
    name = "n.onnx is the embedded network (read and compared)\n\x1b[2J"
    cert = forged(tmp_path, ONNX_1_1, PROPS / "prop_3.vnnlib", recorded=name)
    r = cli("check", cert)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 3, r.stdout + r.stderr
    assert lines[1].startswith(f"{cert}: not bound to any file: no input x satisfies") and "n.onnx" not in lines[1]
    assert lines[2] == f"{cert}: recorded sources (data from the certificate, not read): " + json.dumps(
        json.loads(cert.read_text())["claims"][0]["evidence"]["sources"], sort_keys=True)
    assert "\x1b" not in r.stdout and '\\n\\u001b[2J"' in lines[2]


def test_recorded_digest_must_be_hex(tmp_path):
    cert = forged(tmp_path, ONNX_1_1, PROPS / "prop_3.vnnlib")
    doc = json.loads(cert.read_text())
    doc["claims"][0]["evidence"]["sources"]["net"]["sha256"] = ") is the embedded network (read and compa".ljust(64, "x")
    cert.write_text(json.dumps(doc))
    result = check_file(cert)
    assert result.code == 2 and "evidence.sources.net.sha256: expected 64 lowercase hex digits" in result.known


def test_pytest_plugin_binds_v1_certificates(pytester, honest):
    """``--exactform-models``: NAME.vnnlib and NAME.onnx (or NAME.net.json, NAME.nnet) bind NAME.cert.json."""
    net, prop, cert = honest[".onnx"]
    models = pytester.path / "models"
    models.mkdir()
    shutil.copy(cert, pytester.path / "acas.cert.json")
    shutil.copy(prop, models / "acas.vnnlib")
    result = pytester.runpytest_inprocess("-p", "exactform", "--exactform-certs", "--exactform-models", str(models))
    result.assert_outcomes(failed=1)
    assert "no acas.net.json or acas.onnx or acas.nnet in the --exactform-models folders" in result.stdout.str()
    shutil.copy(net, models / "acas.onnx")
    result = pytester.runpytest_inprocess("-p", "exactform", "--exactform-certs", "--exactform-models", str(models))
    result.assert_outcomes(passed=1)
    shutil.copy(forged(pytester.path, net, prop), pytester.path / "acas.cert.json")
    result = pytester.runpytest_inprocess("-p", "exactform", "--exactform-certs", "--exactform-models", str(models))
    result.assert_outcomes(failed=1)
    assert "acas.cert.json::V1" in result.stdout.str() and "the embedded network is not the one in" in result.stdout.str()


# --- the ONNX reader against onnx's own parser and exactform's importer ----------------------------------------

@pytest.mark.slow
def test_reader_decodes_every_shipped_acasxu_network_as_onnx_does():
    """Every initializer of the 45 ACAS Xu networks, decoded by the checker's wire reader, is exactly onnx's
    (``numpy_helper.to_array``), and every network reads as 6 ReLU layers of 50 units over 5 inputs."""
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    from exactform.checker.onnx_reader import MAX_BYTES, Wire
    from exactform.checker.reader import contents
    files = sorted(ACAS.glob("*.onnx"))
    assert len(files) == 45
    for path in files:
        wire = Wire(path)
        graph = wire.message(wire.one(wire.message(memoryview(contents(path, MAX_BYTES)), "model", {7: "graph"}), 7, 2, "graph"), "graph", {5: "i"})
        ours = [wire.tensor(data, "initializer") for data in wire.many(graph, 5, "initializer")]
        theirs = [numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer]
        assert [(c.shape, c.values) for c in ours] == [(a.shape, [Fraction(float(x)) for x in a.ravel()]) for a in theirs]
        inputs, layers, readout = read_onnx(path)
        assert (inputs, [len(layer) for layer in layers], len(readout)) == (5, [50] * 6, 5), path


@pytest.mark.parametrize("name", ["1_1", "3_3", "5_9"])
def test_reader_equals_the_importer_on_acasxu(name):
    pytest.importorskip("onnx")
    from exactform.importers import import_network
    path = ACAS / f"ACASXU_run2a_{name}_batch_2000.onnx"
    model = read_maxout(import_network(str(path), [(-1, 1)] * 5).to_json(), "net")
    assert read_onnx(path) == (5, model.layers, model.readout)


def small_model(path: Path, dtype=None):
    """A fully connected ReLU network through every operator the checker reads: Sub, Flatten, Gemm (alpha,
    beta, transB; transA on a reshaped column), Constant, Reshape, Relu, MatMul, Add, Identity; weights in
    raw_data, in float_data/double_data and in Constant nodes."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    t = TensorProto.FLOAT if dtype is None else dtype

    def tensor(name, dims, values, raw=True):
        return helper.make_tensor(name, t, dims, struct.pack(f"<{len(values)}{'f' if t == TensorProto.FLOAT else 'd'}",
                                                             *values) if raw else values, raw=raw)
    inits = [tensor("mean", [1, 3], [0.5, -0.25, 0.1]), tensor("W1", [4, 3], [0.3, -1.5, 2.0, 0.7, 0.1, -0.2, 1e-3, 5.0,
                                                                               -0.75, 0.0, 0.25, 1.0 / 3], raw=False),
             tensor("b1", [4], [0.1, -0.2, 0.3, -0.4]), tensor("W2", [4, 2], [1, -1, 0.5, 2, -3, 0.125, 0.2, 0.6]),
             tensor("b2", [2], [0.01, -0.02], raw=False),
             helper.make_tensor("col", TensorProto.INT64, [2], [-1, 1])]
    nodes = [helper.make_node("Sub", ["x", "mean"], ["centred"]),
             helper.make_node("Flatten", ["centred"], ["flat"], axis=1),
             helper.make_node("Gemm", ["flat", "W1", "b1"], ["h1"], alpha=0.5, beta=2.0, transB=1),
             helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("Reshape", ["r1", "col"], ["column"]),
             helper.make_node("Gemm", ["column", "W2", "b2"], ["h2"], transA=1),
             helper.make_node("Relu", ["h2"], ["r2"]),
             helper.make_node("Constant", [], ["W3"], value=tensor("W3value", [2, 2], [2, -1, 0.5, 4])),
             helper.make_node("MatMul", ["r2", "W3"], ["m3"]),
             helper.make_node("Constant", [], ["b3"], value=tensor("b3value", [2], [-1, 1], raw=False)),
             helper.make_node("Add", ["m3", "b3"], ["a3"]),
             helper.make_node("Identity", ["a3"], ["y"])]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", t, ["batch", 3])],
                              [helper.make_tensor_value_info("y", t, [1, 2])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.mark.parametrize("dtype", ["float", "double"])
def test_reader_equals_the_importer_on_every_operator(tmp_path, dtype):
    from onnx import TensorProto

    from exactform.importers import import_network
    path = small_model(tmp_path / "small.onnx", None if dtype == "float" else TensorProto.DOUBLE)
    model = read_maxout(import_network(str(path), [(-1, 1)] * 3).to_json(), "net")
    assert read_onnx(path) == (3, model.layers, model.readout)


def graph_of(tmp_path, nodes, inits, inputs=(("x", [1, 2]),), output="y"):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "g.onnx"))
    return tmp_path / "g.onnx"


def refused(path, *words):
    with pytest.raises(Malformed) as e:
        read_onnx(path)
    message = str(e.value)
    assert message.startswith(f"{path}: ") and "\n" not in message and all(w in message for w in words), message


def test_networks_beyond_the_subset_are_refused_naming_the_imported_json(tmp_path):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    w = helper.make_tensor("W", TensorProto.FLOAT, [2, 2], [1, 2, 3, 4])
    relu = helper.make_node("Relu", ["h"], ["r"])
    refused(graph_of(tmp_path, [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Sigmoid", ["h"], ["y"])], [w]),
            "graph.node[1] (Sigmoid)", "exactform import NET -o net.json")
    refused(graph_of(tmp_path, [helper.make_node("MatMul", ["x", "W"], ["h"]), relu, helper.make_node("Add", ["r", "x"], ["y"])],
                     [w]), "graph.node[2] (Add)", "skip connection")
    refused(graph_of(tmp_path, [helper.make_node("MatMul", ["x", "W"], ["y"])], [w]), "at least one Relu")
    refused(graph_of(tmp_path, [helper.make_node("MatMul", ["W", "x"], ["h"]), relu], [w], inputs=(("x", [2, 1]),)),
            "graph.node[0] (MatMul)", "exactform import NET -o net.json")
    refused(graph_of(tmp_path, [helper.make_node("Flatten", ["x"], ["h"], axis=1, extra=2), relu], []), "attribute 'extra'")
    half = helper.make_tensor("W", TensorProto.FLOAT16, [2, 2], [1, 2, 3, 4])
    refused(graph_of(tmp_path, [helper.make_node("MatMul", ["x", "W"], ["h"]), relu], [half]), "float (1)")
    nan = helper.make_tensor("W", TensorProto.FLOAT, [2, 2], [1, float("nan"), 3, 4])
    refused(graph_of(tmp_path, [helper.make_node("MatMul", ["x", "W"], ["h"]), relu], [nan]), "initializer 'W'[1]: nan")


def test_derived_numbers_are_bounded(tmp_path):
    """A chain of MatMuls by the least float32 (2^-149) builds denominators past 2^14 bits: refused, naming the node."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    tiny = helper.make_tensor("W", TensorProto.FLOAT, [2, 2], [1e-45, 0, 0, 1e-45])
    chain = [helper.make_node("MatMul", ["x" if k == 0 else f"h{k}", "W"], [f"h{k + 1}"]) for k in range(120)]
    refused(graph_of(tmp_path, chain + [helper.make_node("Relu", ["h120"], ["y"])], [tiny]), "graph.node[", "16384 bits")


def hostile_tensor(dims, data_type=1, raw=b"\0" * 4, **fields) -> bytes:
    """A model whose graph holds one initializer ``W`` (read when a node uses it) and a MatMul reading it."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    t = TensorProto(name="W", data_type=data_type, raw_data=raw)
    t.dims.extend(dims)
    for k, v in fields.items():
        if isinstance(v, list):
            getattr(t, k).extend(v)
        else:
            setattr(t, k, v)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [t])
    return helper.make_model(graph).SerializeToString()


def varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def deep(levels: int) -> bytes:
    """A model with ``levels`` messages nested in field 100, which the reader skips unread."""
    data = b""
    for _ in range(levels):
        data = b"\x0a" + varint(len(data)) + data
    return varint(100 << 3 | 2) + varint(len(data)) + data


@pytest.mark.parametrize("data, words", [
    (b"\x3a", "model: a varint runs past the end"),                              # field 7, its length missing
    (b"\x3a\x05ab", "model.graph: a length of 5 bytes runs past the end"),
    (b"\x3a" + b"\xff" * 10 + b"\x01", "a varint longer than 10 bytes"),
    (b"\x3b", "wire type 3"),                                                      # a group
    (b"\x38\x01", "model.graph: wire type 0, expected 2"),
    (b"\x3a\x00\x3a\x00", "a singular field given more than once"),
    (deep(2 * 10 ** 4), "model: no graph"),                                     # nested messages in a field not read
    (b"", "model: no graph"),
], ids=["length-missing", "length-past-end", "long-varint", "group", "wire-type", "repeated", "nested", "empty"])
def test_hostile_wire_format_is_malformed(tmp_path, data, words):
    path = tmp_path / "bad.onnx"
    path.write_bytes(data)
    refused(path, words)


@pytest.mark.parametrize("kwargs, words", [
    ({"dims": [10 ** 8]}, "declare 100000000 entries, its data holds 1"),
    ({"dims": [10 ** 6] * 3}, "declare 1000000000000000000 entries"),
    ({"dims": [1, 1], "data_type": 6}, "data_type: 6"),
    ({"dims": [1, 1], "raw": b"\0" * 5}, "its data holds 1"),
    ({"dims": [1, 1], "data_location": 1}, "external or segmented data"),
    ({"dims": [-1, 1]}, "a negative dimension"),
    ({"dims": [1, 1], "raw": b"", "int32_data": [1]}, "data in fields [5, 9]"),
])
def test_hostile_tensors_are_malformed(tmp_path, kwargs, words):
    path = tmp_path / "bad.onnx"
    path.write_bytes(hostile_tensor(**kwargs))
    refused(path, "initializer 'W'", words)


@pytest.mark.parametrize("old, new, words", [
    ("7,5,5,50,", "7,5,5,", "line 4: expected 4 numbers"),
    ("5,50,50,50,50,50,50,5,", "5,100000,100000,50,50,50,50,5,", "more than 2000000 weights"),
    ("5.40062e-02", "5.4e-99999", "line 11 field 0: more than 4000 digits or an exponent beyond"),
    ("5.40062e-02", "nan", "line 11 field 0: 'nan' is not a decimal number"),
    ("60261.0,", "0,", "ranges[0]: a normalisation range is zero"),
    (None, "\n1,2,3\n", "more lines than the header's 7 layers"),
    (None, "," * (4 * 10 ** 6 + 1), "more than 4000000 commas"),
], ids=["header", "sizes", "exponent", "nan", "range", "extra-line", "commas"])
def test_hostile_nnet_is_malformed(tmp_path, old, new, words):
    from exactform.checker.nnet_reader import read_nnet
    text = NNET_1_1.read_text()
    path = tmp_path / "bad.nnet"
    path.write_text(text + new if old is None else text.replace(old, new, 1))
    with pytest.raises(Malformed) as e:
        read_nnet(path)
    assert str(e.value).startswith(f"{path}: ") and words in str(e.value), str(e.value)
    path.write_text(text[:len(text) // 2])
    with pytest.raises(Malformed, match="end of file|expected"):
        read_nnet(path)


def test_sizes_are_bounded_before_work(tmp_path, monkeypatch):
    from exactform.checker import onnx_reader
    path = small_model(tmp_path / "small.onnx")
    monkeypatch.setattr(onnx_reader, "MAX_FIELDS", 20)
    refused(path, "more than 20 fields")
    monkeypatch.setattr(onnx_reader, "MAX_BYTES", 100)
    refused(path, "larger than 100 bytes")


@pytest.mark.parametrize("data", [None, b"\x08\x01" * (1 << 23)], ids=["huge-tensor", "16-MiB-of-fields"])
def test_hostile_network_file_is_one_line_exit_2(tmp_path, data):
    """Bound to a hostile ONNX file, ``check`` ends with one line, exit 2, within 1 GiB and a few CPU seconds."""
    import resource
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(hostile_tensor([10 ** 8]) if data is None else data)
    cert = forged(tmp_path, bad, PROPS / "prop_3.vnnlib")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([sys.executable, "-m", "exactform", "check", cert, "--net", bad, "--property", PROPS / "prop_3.vnnlib"],
                       capture_output=True, text=True, timeout=300,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert r.returncode == 2 and not r.stdout and len(r.stderr.splitlines()) == 1, r.stdout + r.stderr
    assert str(bad) in r.stderr and "Traceback" not in r.stderr
    assert after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime < 20


def test_bound_check_runs_on_the_standard_library_and_trust_names_its_files(honest):
    """``check --net NET.onnx --property PROP`` with onnx, numpy, torch, z3… unimportable: exit 0, and every
    file of exactform it loads is named in TRUST.md, whose line counts of the two readers are the files'."""
    from support import BLOCKER
    net, prop, cert = honest[".onnx"]
    done = subprocess.run([sys.executable, "-c", BLOCKER, "check", cert, "--net", net, "--property", prop],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    files = done.stdout.split("LINES ")[1].split()[1:]
    trust = (ROOT / "TRUST.md").read_text()
    assert all(str(Path(f).relative_to(ROOT / "exactform")) in trust for f in files), files
    for reader in ("onnx_reader", "nnet_reader"):
        assert str(ROOT / "exactform" / "checker" / f"{reader}.py") in files
        lines = len((ROOT / "exactform" / "checker" / f"{reader}.py").read_text().splitlines())
        assert f"`checker/{reader}.py` ({lines} lines" in trust
