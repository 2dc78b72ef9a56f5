"""A Transformer as an ONNX graph of standard operators (opset 17), dense and batched:
state (B, T, w); hardmax is an argmax mask ``Equal(S, ReduceMax(S))`` divided by its row sum
(ties share equally); softmax(λ) is ``Softmax(λ·S)``. Heads are stacked, padded with zero rows."""
from __future__ import annotations

from ..models import FeedForward, Transformer
from ..models.transformer import dense


def to_onnx(tf: Transformer, dtype: str = "float32"):
    """The ``onnx.ModelProto`` of ``tf``: input ``x`` (B, d), output ``y`` (B, o)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    np_dtype = np.float32 if dtype == "float32" else np.float64
    elem = TensorProto.FLOAT if dtype == "float32" else TensorProto.DOUBLE
    inits, nodes = [], []

    def const(name, rows):
        arr = np.array([[float(v) for v in r] for r in rows] if rows and isinstance(rows[0], list)
                       else [float(v) for v in rows], dtype=np.float64).astype(np_dtype)
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def ints(name, values):
        inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    T = tf.tokens
    w = tf.width

    def transpose(rows, cols):
        return [list(c) for c in zip(*dense(rows, cols))]
    x = node("Unsqueeze", ["x", ints("axis1", [1])], "x_tokens")
    X = node("Add", [node("MatMul", [x, const("embed_weight_t", transpose(tf.embed_weight, tf.input_dim))], "embedded"),
                     const("embed_bias", tf.embed_bias)], "X0")
    for n, block in enumerate(tf.blocks):
        p = f"b{n}_"
        if isinstance(block, FeedForward):
            h = node("Relu", [node("Add", [node("MatMul", [X, const(p + "w1_t", transpose(block.w1, w))], p + "z"),
                                           const(p + "b1", block.b1)], p + "pre")], p + "h")
            d = node("Add", [node("MatMul", [h, const(p + "w2_t", transpose(block.w2, block.hidden))], p + "w2h"),
                             const(p + "b2", block.b2)], p + "delta")
        else:
            H = len(block.heads)
            dk = max(len(hd.query) for hd in block.heads)
            dv = max(len(hd.value) for hd in block.heads)
            zero_row = {}

            def stacked(name, k):
                rows = [r for hd in block.heads for r in getattr(hd, name) + [zero_row] * (k - len(getattr(hd, name)))]
                m = node("MatMul", [X, const(p + name + "_t", transpose(rows, w))], p + name)
                shaped = node("Reshape", [m, ints(p + name + "_shape", [0, T, H, k])], p + name + "_heads")
                return node("Transpose", [shaped], p + name + "_bh", perm=[0, 2, 1, 3])    # (B, H, T, k)

            q, k, v = stacked("query", dk), stacked("key", dk), stacked("value", dv)
            s = node("MatMul", [q, node("Transpose", [k], p + "key_swapped", perm=[0, 1, 3, 2])], p + "scores")
            if tf.is_hardmax:
                top = node("ReduceMax", [s], p + "top", axes=[-1], keepdims=1)
                mask = node("Cast", [node("Equal", [s, top], p + "is_top")], p + "mask", to=elem)
                a = node("Div", [mask, node("ReduceSum", [mask, ints(p + "last", [-1])], p + "ties", keepdims=1)],
                         p + "weights")
            else:
                scale = const(p + "lambda", [tf.attention])
                a = node("Softmax", [node("Mul", [s, scale], p + "scaled")], p + "weights", axis=-1)
            mixed = node("Transpose", [node("MatMul", [a, v], p + "mixed_bh")], p + "mixed_t", perm=[0, 2, 1, 3])
            flat = node("Reshape", [mixed, ints(p + "flat_shape", [0, T, H * dv])], p + "mixed")
            out = [{k * dv + j: x for k, hd in enumerate(block.heads) for j, x in hd.output[r].items()}
                   for r in range(w)]
            d = node("MatMul", [flat, const(p + "output_t", transpose(out, H * dv))], p + "delta")
        X = node("Add", [X, d], f"X{n + 1}")
    picked = node("Gather", [X, ints("readout_token", tf.readout_token)], "picked", axis=1)
    node("Add", [node("MatMul", [picked, const("readout_weight_t", transpose(tf.readout_weight, w))], "read"),
                 const("readout_bias", tf.readout_bias)], "y")
    graph = helper.make_graph(nodes, "exactform_transformer",
                              [helper.make_tensor_value_info("x", elem, ["batch", tf.input_dim])],
                              [helper.make_tensor_value_info("y", elem, ["batch", tf.output_dim])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="exactform")
    onnx.checker.check_model(model)
    return model
