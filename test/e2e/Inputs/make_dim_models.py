#!/usr/bin/env python3
"""Models with symbolic dimensions, as exporters write them.

    make_dim_models.py OUTDIR

dyn_mlp.onnx: x [batch, 16] -> MatMul -> Relu -> y [batch, 8], the output
named with the same dim_param. two_dims.onnx: x [batch, seq, 4] ->
ReduceSum over seq -> y [batch, 4]. Also writes, for dyn_mlp pinned to 5
and two_dims pinned to (3, 7), an input and ONNX Runtime's output on it
(ONNX Runtime runs the symbolic model as it is): OUTDIR/<name>_in.npy and
<name>_out.npy.

For ranges (--dim NAME=LO..HI, which stop after the graph passes for now):
dyn_cnn.onnx, x [batch, 3, 16, 16] -> Conv -> BatchNormalization (kept) ->
Relu -> MaxPool -> Concat with a 1x1 Conv branch -> GlobalAveragePool ->
Flatten -> Gemm -> Softmax -> y [batch, 10]; dyn_attn.onnx, x [batch, seq,
16] -> self-attention scores [batch, seq, seq] -> Softmax -> weighted sum
-> Reshape [0, -1, 8] -> y [batch, out_len, 8]; dyn_where.onnx, x [batch, 4]
through Where, an op that does not take symbolic sizes yet.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(4)
    f = TensorProto.FLOAT
    mlp = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
         helper.make_node("Relu", ["h"], ["y"], name="relu")], "dyn_mlp",
        [helper.make_tensor_value_info("x", f, ["batch", 16])],
        [helper.make_tensor_value_info("y", f, ["batch", 8])],
        [numpy_helper.from_array(rng.normal(size=(16, 8)).astype(np.float32), "w")])
    two = helper.make_graph(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0)], "two_dims",
        [helper.make_tensor_value_info("x", f, ["batch", "seq", 4])],
        [helper.make_tensor_value_info("y", f, ["batch", 4])],
        [numpy_helper.from_array(np.array([1], np.int64), "axes")])
    def w(name, *shape):
        return numpy_helper.from_array(rng.normal(size=shape).astype(np.float32), name)

    cnn = helper.make_graph(
        [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"], name="bn"),
         helper.make_node("Relu", ["n"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["p", "cw2"], ["q"], name="branch"),
         helper.make_node("Concat", ["p", "q"], ["cat"], name="cat", axis=1),
         helper.make_node("GlobalAveragePool", ["cat"], ["gap"], name="gap"),
         helper.make_node("Flatten", ["gap"], ["flat"], name="flat"),
         helper.make_node("Gemm", ["flat", "fw", "fb"], ["logits"], name="fc", transB=1),
         helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=1)], "dyn_cnn",
        [helper.make_tensor_value_info("x", f, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("y", f, ["batch", 10])],
        [w("cw", 8, 3, 3, 3), w("cb", 8), w("g", 8), w("b", 8), w("m", 8),
         numpy_helper.from_array(rng.uniform(0.5, 2, size=8).astype(np.float32), "v"),
         w("cw2", 4, 8, 1, 1), w("fw", 10, 12), w("fb", 10)])
    attn = helper.make_graph(
        [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
         helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
         helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
         helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
         helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale"),
         helper.make_node("Softmax", ["ss"], ["a"], name="softmax", axis=-1),
         helper.make_node("MatMul", ["a", "x"], ["o"], name="mix"),
         helper.make_node("Reshape", ["o", "shape"], ["y"], name="split")], "dyn_attn",
        [helper.make_tensor_value_info("x", f, ["batch", "seq", 16])],
        [helper.make_tensor_value_info("y", f, ["batch", "out_len", 8])],
        [w("wq", 16, 16), w("wk", 16, 16),
         numpy_helper.from_array(np.array(0.25, np.float32), "scale"),
         numpy_helper.from_array(np.array([0, -1, 8], np.int64), "shape")])
    where = helper.make_graph(
        [helper.make_node("Greater", ["x", "zero"], ["pos"], name="pos"),
         helper.make_node("Where", ["pos", "x", "zero"], ["y"], name="where")], "dyn_where",
        [helper.make_tensor_value_info("x", f, ["batch", 4])],
        [helper.make_tensor_value_info("y", f, ["batch", 4])],
        [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    for graph, shape in ((mlp, (5, 16)), (two, (3, 7, 4)), (cnn, (3, 3, 16, 16)),
                         (attn, (2, 5, 16)), (where, (3, 4))):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        path = os.path.join(out, graph.name + ".onnx")
        onnx.save(model, path)
        x = rng.normal(size=shape).astype(np.float32)
        (y,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        np.save(os.path.join(out, graph.name + "_in.npy"), x)
        np.save(os.path.join(out, graph.name + "_out.npy"), y)


if __name__ == "__main__":
    main()
