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
-> Reshape [0, -1, 8] -> y [batch, out_len, 8]; dyn_tile.onnx, x [batch, 4]
through Tile, an op that does not take symbolic sizes yet; dyn_chain.onnx,
x [batch, seq, 16] through the shape arithmetic exporters write: Shape ->
Gather -> Range for positions, a position table gathered and one sliced to
the sequence length, token types sliced and picked by GatherElements, Concat of sizes -> Reshape, Expand to computed sizes,
Where(Equal(...)) over sizes, and the length used as data (positions over
the length) -> y [batch, n, 4]; dyn_shape.onnx returns Shape(x) beside
Relu(x); dyn_tail.onnx slices a table from row 2 to the sequence length,
which needs seq >= 2.
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
    tile = helper.make_graph(
        [helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile")], "dyn_tile",
        [helper.make_tensor_value_info("x", f, ["batch", 4])],
        [helper.make_tensor_value_info("y", f, ["batch", 8])],
        [numpy_helper.from_array(np.array([1, 2], np.int64), "repeats")])
    i64 = TensorProto.INT64

    def ints(name, values):
        return numpy_helper.from_array(np.array(values, np.int64), name)

    N = helper.make_node
    chain = helper.make_graph(
        [N("Shape", ["x"], ["s"], name="shape"),
         N("Gather", ["s", "zero"], ["b"], name="batch", axis=0),
         N("Gather", ["s", "one"], ["t"], name="length", axis=0),
         N("Range", ["zero", "t", "one"], ["pos"], name="range"),
         N("Unsqueeze", ["pos", "axis0"], ["pos2"], name="pos2"),
         N("Gather", ["table", "pos2"], ["emb"], name="embed", axis=0),
         N("Add", ["x", "emb"], ["h0"], name="add_pos"),
         N("Unsqueeze", ["t", "axis0"], ["t1a"], name="t1a"),
         N("Slice", ["types", "zero1", "t1a", "one1"], ["types_t"], name="types_t"),
         N("GatherElements", ["types_t", "pos2"], ["type_ids"], name="type_ids", axis=1),
         N("Gather", ["type_table", "type_ids"], ["type_emb"], name="type_emb", axis=0),
         N("Add", ["h0", "type_emb"], ["h"], name="add_types"),
         N("Unsqueeze", ["b", "axis0"], ["b1"], name="b1"),
         N("Unsqueeze", ["t", "axis0"], ["t1"], name="t1"),
         N("Concat", ["b1", "t1", "four", "four"], ["target"], name="target", axis=0),
         N("Reshape", ["h", "target"], ["heads"], name="split_heads"),
         N("Transpose", ["heads"], ["ht"], name="ht", perm=[0, 2, 1, 3]),
         N("Slice", ["table2", "zero1", "t1", "zero1"], ["rows"], name="rows"),
         N("Add", ["ht", "rows"], ["h2"], name="add_rows"),
         N("Concat", ["b1", "four", "t1", "four"], ["full"], name="full", axis=0),
         N("Equal", ["full", "minus1"], ["is_free"], name="is_free"),
         N("Where", ["is_free", "ones", "full"], ["expand_to"], name="expand_to"),
         N("Expand", ["bias", "expand_to"], ["bias_full"], name="expand"),
         N("Add", ["h2", "bias_full"], ["h3"], name="add_bias"),
         N("Cast", ["pos", ], ["posf"], name="posf", to=TensorProto.FLOAT),
         N("Cast", ["t", ], ["tf"], name="tf", to=TensorProto.FLOAT),
         N("Div", ["posf", "tf"], ["rel"], name="relative"),
         N("Unsqueeze", ["rel", "axes13"], ["rel4"], name="rel4"),
         N("Mul", ["h3", "rel4"], ["h4"], name="scale_by_position"),
         N("Concat", ["b1", "minus1", "four"], ["out_shape"], name="out_shape", axis=0),
         N("Reshape", ["h4", "out_shape"], ["y"], name="merge")], "dyn_chain",
        [helper.make_tensor_value_info("x", f, ["batch", "seq", 16])],
        [helper.make_tensor_value_info("y", f, ["batch", "n", 4])],
        [ints("zero", 0), ints("one", 1), ints("axis0", [0]), ints("zero1", [0]),
         ints("four", [4]), ints("minus1", [-1]), ints("ones", [1, 1, 1, 1]),
         ints("axes13", [0, 1, 3]), ints("one1", [1]),
         ints("types", rng.integers(0, 3, size=(1, 64))), w("type_table", 3, 16),
         w("table", 64, 16), w("table2", 64, 4),
         w("bias", 1, 1, 1, 4)])
    shape_out = helper.make_graph(
        [N("Shape", ["x"], ["s"], name="shape"),
         N("Relu", ["x"], ["y"], name="relu")], "dyn_shape",
        [helper.make_tensor_value_info("x", f, ["batch", 4])],
        [helper.make_tensor_value_info("y", f, ["batch", 4]),
         helper.make_tensor_value_info("s", i64, [2])])
    tail = helper.make_graph(
        [N("Shape", ["x"], ["s"], name="shape"),
         N("Slice", ["s", "one1", "two1"], ["t1"], name="length"),
         N("Slice", ["table2", "two1", "t1", "zero1"], ["y"], name="rows_from_2")], "dyn_tail",
        [helper.make_tensor_value_info("x", f, ["batch", "seq", 4])],
        [helper.make_tensor_value_info("y", f, ["rows", 4])],
        [ints("one1", [1]), ints("two1", [2]), ints("zero1", [0]), w("table2", 64, 4)])
    for graph, shape in ((mlp, (5, 16)), (chain, (3, 7, 16)), (shape_out, (2, 4)), (tail, (2, 5, 4)), (two, (3, 7, 4)), (cnn, (3, 3, 16, 16)),
                         (attn, (2, 5, 16)), (tile, (3, 4))):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        path = os.path.join(out, graph.name + ".onnx")
        onnx.save(model, path)
        x = rng.normal(size=shape).astype(np.float32)
        y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.save(os.path.join(out, graph.name + "_in.npy"), x)
        np.save(os.path.join(out, graph.name + "_out.npy"), y)


if __name__ == "__main__":
    main()
