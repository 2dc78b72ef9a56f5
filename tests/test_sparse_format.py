"""The sparse vector encoding of the Maxout and Transformer formats: written exactly when
``length ≥ 8`` and ``2·nonzeros < length``, read with field-path errors; dense files still read; models round-trip."""
from __future__ import annotations

import json
from fractions import Fraction

import pytest

from exactform.construct.maxout_to_transformer import compile_maxout
from exactform.formats import InputError, canonical_json, encode_row, parse_json
from exactform.layout import Layout
from exactform.models import Box, MaxoutLayer, MaxoutNet, Transformer, load_model

F = Fraction


def _net() -> MaxoutNet:
    z = F(0)
    layer = MaxoutLayer([[[F(1), z, z, z], [z] * 4], [[z, F(-3, 7), z, F(2)], [z, z, F(1, 2), z]]],
                        [[z, z], [F(1), z]])
    return MaxoutNet(Box((F(0),) * 4, (F(1),) * 4), [layer], [[F(1), F(-1)]], [F(5)])


def test_encode_row_rule():
    assert encode_row([F(0), F(3), F(0)]) == ["0", "3", "0"]                       # shorter than 8: dense
    assert encode_row([F(0)] * 7 + [F(3)]) == {"length": 8, "index": [7], "value": ["3"]}
    assert encode_row([F(0), F(3), F(0), F(-1, 2)] * 2) == ["0", "3", "0", "-1/2"] * 2  # 2·4 = 8, not < 8
    assert encode_row([F(0)] * 8) == {"length": 8, "index": [], "value": []}
    assert encode_row([]) == []


def test_maxout_round_trip_and_dense_files_still_read(tmp_path):
    net = _net()
    doc = net.to_json()
    assert doc["layers"][0]["weight"][0][0] == ["1", "0", "0", "0"]               # 4 entries: dense
    assert doc["layers"][0]["weight"][1][0] == ["0", "-3/7", "0", "2"]
    doc["layers"][0]["weight"][0][0] = {"length": 4, "index": [0], "value": ["1"]}  # sparse is read too
    doc["domain"]["lower"] = {"length": 4, "index": [], "value": []}
    assert MaxoutNet.from_json(parse_json(canonical_json(doc))).digest() == net.digest()
    doc = net.to_json()
    back = MaxoutNet.from_json(parse_json(canonical_json(doc)))
    assert canonical_json(back.to_json()) == canonical_json(doc) and back.digest() == net.digest()
    x = [F(1, 3), F(1, 5), F(1, 2), F(1, 7)]
    assert back(x) == net(x)

    def dense(v):
        if isinstance(v, dict) and set(v) == {"length", "index", "value"}:
            out = ["0"] * v["length"]
            for i, q in zip(v["index"], v["value"]):
                out[i] = q
            return out
        if isinstance(v, dict):
            return {k: dense(w) for k, w in v.items()}
        return [dense(w) for w in v] if isinstance(v, list) else v
    (tmp_path / "dense.json").write_text(json.dumps(dense(doc)))
    assert load_model(tmp_path / "dense.json").digest() == net.digest()


def test_transformer_round_trip_with_sparse_rows():
    tf = compile_maxout(_net())
    doc = tf.to_json()
    assert '"index"' in canonical_json(doc)
    back = Transformer.from_json(parse_json(canonical_json(doc)))
    assert canonical_json(back.to_json()) == canonical_json(doc)
    x = [F(1, 3), F(1, 5), F(1, 2), F(1, 7)]
    assert back(x) == tf(x)


@pytest.mark.parametrize("row,message", [
    ({"length": 4, "index": [2, 1], "value": ["1", "2"]}, r"weight\[0\]\[0\]\.index\[1\]: expected an index"),
    ({"length": 4, "index": [4], "value": ["1"]}, r"\.index\[0\]: expected an index"),
    ({"length": 4, "index": [-1], "value": ["1"]}, r"\.index\[0\]: expected an integer >= 0"),
    ({"length": 4, "index": [True], "value": ["1"]}, r"\.index\[0\]: expected an integer"),
    ({"length": 4, "index": [1], "value": ["0"]}, r"\.value\[0\]: a listed entry must be non-zero"),
    ({"length": 4, "index": [1], "value": ["2/4"]}, r"\.value\[0\]: .*canonical"),
    ({"length": 4, "index": [1], "value": [0.5]}, r"\.value\[0\]"),
    ({"length": 4, "index": [1, 2], "value": ["1"]}, r"\.value: expected 2 entries"),
    ({"length": 3, "index": [1], "value": ["1"]}, r"\.length: expected 4"),
    ({"length": 4, "index": [1], "value": ["1"], "extra": 1}, r"weight\[0\]\[0\]: unknown field 'extra'"),
    ({"length": 4, "index": [1]}, r"missing field 'value'"),
])
def test_sparse_reader_errors_name_the_field(row, message):
    doc = _net().to_json()
    doc["layers"][0]["weight"][0][0] = row
    with pytest.raises(InputError, match=message):
        MaxoutNet.from_json(parse_json(canonical_json(doc), "net.json"))


def test_sparse_length_is_bounded_before_allocation():
    doc = _net().to_json()
    doc["input_dim"] = 10 ** 7
    doc["domain"] = {"lower": {"length": 10 ** 7, "index": [], "value": []}, "upper": ["1"]}
    with pytest.raises(InputError, match="domain.lower.length: .*size limit"):
        MaxoutNet.from_json(parse_json(canonical_json(doc), "net.json"))


def _wide_net() -> MaxoutNet:
    """Twelve inputs, so the construction's head outputs (width rows, one non-zero) are written as
    sparse lists of rows."""
    z, n = F(0), 12
    weight = [[[F(i + 1, 3) if c == i else z for c in range(n)], [z] * n] for i in range(3)]
    return MaxoutNet(Box((F(-1),) * n, (F(1),) * n), [MaxoutLayer(weight, [[F(1, 5), z]] * 3)],
                     [[F(1), F(-2), F(3)]], [F(0)])


def test_sparse_lists_of_rows_are_written_read_and_checked(tmp_path):
    from exactform.checker import command as checker
    from exactform.provers.write import certify
    from exactform.formats import encode_sparse_rows
    net = _wide_net()
    tf = compile_maxout(net)
    doc = tf.to_json()
    output = doc["blocks"][1]["heads"][0]["output"]
    out0 = Layout.from_json(tf.layout).out(0)
    assert output == {"length": tf.width, "index": [out0], "value": [["1"]]}                # out_0 only
    assert encode_sparse_rows([{}] * 7 + [{0: F(2)}], 1) == {"length": 8, "index": [7], "value": [["2"]]}
    assert encode_sparse_rows([{0: F(1)}, {}], 1) == [["1"], ["0"]]                          # < 8 rows: dense
    again = Transformer.from_json(parse_json(canonical_json(doc)))
    assert again.digest() == tf.digest() and again.to_json() == doc
    points = [[F(k - 6, 7)] * 12 for k in range(5)]
    assert again.evaluate_batch(points) == net.evaluate_batch(points)
    dense = json.loads(canonical_json(doc))                      # the same matrix written densely reads the same
    dense["blocks"][1]["heads"][0]["output"] = [["1"] if r == out0 else ["0"] for r in range(tf.width)]
    assert Transformer.from_json(parse_json(canonical_json(dense))).digest() == tf.digest()
    cert = certify(net, tf)
    assert cert.holds
    (tmp_path / "c.json").write_text(canonical_json(cert.document))
    assert checker.check_file(tmp_path / "c.json").code == 0


@pytest.mark.parametrize("output, message", [
    ({"length": 39, "index": [3], "value": [["0"]]}, "zero"),
    ({"length": 39, "index": [3], "value": [{"length": 1, "index": [], "value": []}]}, "zero"),
    ({"length": 39, "index": [39], "value": [["1"]]}, "index"),
    ({"length": 38, "index": [3], "value": [["1"]]}, "38"),
    ({"length": 39, "index": [5, 3], "value": [["1"], ["1"]]}, "increasing|index"),
    ({"length": 39, "index": [3], "value": [["1", "2"]]}, "2 entries|expected 1"),
])
def test_hostile_sparse_lists_of_rows_are_refused_by_both_readers(tmp_path, output, message):
    """The models' reader and the checker refuse the same malformed lists, naming the field."""
    from exactform.checker import command as checker
    from exactform.provers.write import certify
    net = _wide_net()
    tf = compile_maxout(net)
    assert tf.width == 39
    doc = tf.to_json()
    doc["blocks"][1]["heads"][0]["output"] = output
    with pytest.raises(InputError, match=message) as e:
        Transformer.from_json(parse_json(canonical_json(doc), "tf.json"))
    assert "blocks[1].heads[0].output" in str(e.value)
    cert = certify(net, tf).document
    cert["transformer"] = doc
    (tmp_path / "c.json").write_text(canonical_json(cert))
    result = checker.check_file(tmp_path / "c.json")
    assert result.code == 2 and "blocks[1].heads[0].output" in result.known, result.known
