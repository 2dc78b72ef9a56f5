"""compile / eval from the command line, and every bad-input case of docs/spec.md §7: exit 2, one line."""
import json
import shutil
from pathlib import Path

import pytest

from support import EXAMPLES, cli


def test_compile_and_eval_agree(tmp_path):
    tf = tmp_path / "tf.json"
    code, out, _ = cli("compile", EXAMPLES / "relu_net.json", "-o", tf)
    assert code == 0 and "C4 sizes match" in out
    pts = EXAMPLES / "points_2d.json"
    code, net_text, _ = cli("eval", EXAMPLES / "relu_net.json", "--points", pts, "--json")
    assert code == 0
    net_out = json.loads(net_text)
    code, tf_out, _ = cli("eval", tf, "--points", pts, "--json")
    assert code == 0 and json.loads(tf_out) == net_out
    assert all(isinstance(v, str) for row in net_out["outputs"] for v in row)


def test_compiled_file_is_canonical_and_stable(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    cli("compile", EXAMPLES / "maxout_2d.json", "-o", a)
    cli("compile", EXAMPLES / "maxout_2d.json", "-o", b)
    assert a.read_bytes() == b.read_bytes()
    from exactform.formats import canonical_json
    assert canonical_json(json.loads(a.read_text())) == a.read_text()


def test_eval_refuses_points_outside_domain(tmp_path):
    pts = tmp_path / "p.json"
    pts.write_text('[["1/2"], ["3"]]')
    code, out, err = cli("eval", EXAMPLES / "abs.json", "--points", pts)
    assert code == 2 and "[1][0]" in err and "outside the domain" in err and err.count("\n") == 1
    code, out, _ = cli("eval", EXAMPLES / "abs.json", "--points", pts, "--allow-outside")
    assert code == 0 and out.splitlines()[1] == "3 -> 3"


def mutate(doc: dict, path: list, value):
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


DELETE = object()
BAD_NETS = {
    "float literal": (["layers", 0, "bias", 0, 0], 0.5, "layers[0].bias[0][0]", "float literal"),
    "nan string": (["layers", 0, "weight", 0, 1, 0], "nan", "layers[0].weight[0][1][0]", "not a rational"),
    "inf string": (["readout", "bias", 0], "inf", "readout.bias[0]", "not a rational"),
    "division by zero": (["domain", "lower", 0], "1/0", "domain.lower[0]", "not a rational"),
    "python code": (["domain", "upper", 0], "__import__('os').system('true')", "domain.upper[0]", "not a rational"),
    "wrong shape": (["layers", 0, "weight", 0, 0], ["1", "2"], "layers[0].weight[0][0]", "expected 1 entries"),
    "missing field": (["readout"], DELETE, "", "missing field 'readout'"),
    "empty network": (["layers"], [], "layers", "non-empty"),
    "wrong type": (["input_dim"], "1", "input_dim", "expected an integer"),
    "empty box": (["domain", "lower", 0], "2", "domain.lower[0]", "exceeds upper"),
    "unknown field": (["extra"], 1, "", "unknown field 'extra'"),
    "wrong format": (["format"], "exactform/maxout@2", "format", "expected 'exactform/maxout@1'"),
}


@pytest.mark.parametrize("case", sorted(BAD_NETS))
def test_bad_networks_exit_2_with_one_line(case, tmp_path):
    path, value, field, message = BAD_NETS[case]
    doc = mutate(json.loads((EXAMPLES / "abs.json").read_text()), path, value)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    out = tmp_path / "tf.json"
    code, _, err = cli("compile", bad, "-o", out)
    assert code == 2, err
    assert err.count("\n") == 1 and str(bad) in err and field in err and message in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("text,message", [("{", "malformed JSON"), ('{"format": NaN}', "format: expected"),
                                          ('[1e400]', "expected an object"), ("", "malformed JSON"),
                                          ("[" * 100000, "nested too deeply")])
def test_malformed_json(text, message, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    code, _, err = cli("compile", bad, "-o", tmp_path / "tf.json")
    assert code == 2 and message in err and err.count("\n") == 1


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "0.5"])
def test_non_finite_and_float_literals_name_their_field(literal, tmp_path):
    text = (EXAMPLES / "abs.json").read_text().replace('"readout":{"bias":["0"]', f'"readout":{{"bias":[{literal}]')
    assert literal in text
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    code, _, err = cli("compile", bad, "-o", tmp_path / "tf.json")
    assert code == 2 and f"readout.bias[0]: float literal {literal}" in err


def test_missing_file(tmp_path):
    code, _, err = cli("eval", tmp_path / "nope.json", "--points", tmp_path / "p.json")
    assert code == 2 and "cannot read" in err


def test_bad_points(tmp_path):
    for text, field in [('[["1", "2"]]', "[0]"), ('[["0.5x"]]', "[0][0]"), ('[[NaN]]', "[0][0]"), ('[[true]]', "[0][0]"),
                        ("[]", "")]:
        pts = tmp_path / "p.json"
        pts.write_text(text)
        code, _, err = cli("eval", EXAMPLES / "abs.json", "--points", pts)
        assert code == 2 and field in err and err.count("\n") == 1, (text, err)


def test_bad_transformer_is_rejected(tmp_path):
    tf = tmp_path / "tf.json"
    cli("compile", EXAMPLES / "abs.json", "-o", tf)
    doc = json.loads(tf.read_text())
    doc["blocks"][1]["heads"][0]["key"] = [["1"]]
    tf.write_text(json.dumps(doc))
    code, _, err = cli("eval", tf, "--points", EXAMPLES / "points_1d.json")
    assert code == 2 and "blocks[1].heads[0].key[0]" in err


def test_no_partial_output_on_failure(tmp_path):
    out = tmp_path / "tf.json"
    shutil.copy(EXAMPLES / "abs.json", tmp_path / "net.json")
    (tmp_path / "net.json").write_text((tmp_path / "net.json").read_text()[:-20])
    assert cli("compile", tmp_path / "net.json", "-o", out)[0] == 2
    assert list(tmp_path.iterdir()) == [tmp_path / "net.json"]


def test_an_alarm_inside_the_timeout_exit_leaves_no_guard(tmp_path, monkeypatch):
    """The one-shot alarm can fire as the command ends, inside ``Timeout.__exit__``: the guard
    process must still be ended (a surviving guard would SIGKILL this process seconds later)."""
    from exactform import driver
    real = driver.signal.setitimer

    def setitimer(which, seconds):
        if seconds == 0:                       # the alarm arrives just as __exit__ starts
            real(which, 0)
            raise driver.Stopped()
        return real(which, seconds)
    monkeypatch.setattr(driver.signal, "setitimer", setitimer)
    code = driver.run_command(["--timeout", "30", "compile", str(Path(__file__).parents[1] / "examples" / "abs.json"),
                               "-o", str(tmp_path / "tf.json")])
    assert code == 3 and driver.Timeout.guard is None
