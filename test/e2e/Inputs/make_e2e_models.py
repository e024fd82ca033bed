#!/usr/bin/env python3
"""Writes end-to-end test models with their inputs and expected outputs.

    make_e2e_models.py OUTDIR

For each model NAME: OUTDIR/NAME.onnx, OUTDIR/NAME/input_K.npy and
OUTDIR/NAME/output_K.npy. Expected outputs come from ONNX Runtime, which
shares no code with Kiln. Inputs use a fixed seed.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F32, F64, F16 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16
I32, I64 = TensorProto.INT32, TensorProto.INT64
NP = {F32: np.float32, F64: np.float64, F16: np.float16, I32: np.int32, I64: np.int64}


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def cases(rng):
    r = lambda *s: rng.standard_normal(s).astype(np.float32)
    yield "matmul_batched", model(
        [helper.make_node("MatMul", ["a", "w"], ["m"]),
         helper.make_node("Add", ["m", "b"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])],
        [("a", F32, [2, 3, 4])], [("y", F32, [2, 3, 5])],
        [init("w", r(4, 5)), init("b", r(5))])
    yield "matmul_broadcast_batch", model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        [("a", F32, [2, 1, 3, 4]), ("b", F32, [3, 4, 2])], [("y", F32, [2, 3, 3, 2])])
    yield "matmul_vectors", model(
        [helper.make_node("MatMul", ["v", "m"], ["vm"]),
         helper.make_node("MatMul", ["vm", "u"], ["y"])],
        [("v", F32, [4]), ("m", F32, [4, 3]), ("u", F32, [3])], [("y", F32, [])])
    yield "gemm_trans_alpha_beta", model(
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1,
                          alpha=0.5, beta=2.0)],
        [("a", F32, [4, 3]), ("b", F32, [5, 4])], [("y", F32, [3, 5])],
        [init("c", r(1, 5))])
    yield "gemm_f64", model(
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"])],
        [("a", F64, [2, 3]), ("b", F64, [3, 4]), ("c", F64, [4])], [("y", F64, [2, 4])])
    for op in ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"]:
        for keep in (0, 1):
            yield f"{op.lower()}_keep{keep}", model(
                [helper.make_node(op, ["x", "axes"], ["y"], keepdims=keep)],
                [("x", F32, [2, 3, 4])],
                [("y", F32, [2, 1, 4] if keep else [2, 4])],
                [init("axes", np.array([1], np.int64))], opset=18)
    yield "reducesum_all", model(
        [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)],
        [("x", F32, [3, 4])], [("y", F32, [])], opset=13)
    yield "softmax_axis1", model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=1)],
        [("x", F32, [2, 3, 4])], [("y", F32, [2, 3, 4])], opset=13)
    yield "softmax_legacy_flatten", model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=1)],
        [("x", F32, [2, 3, 4])], [("y", F32, [2, 3, 4])], opset=11)
    yield "logsoftmax", model(
        [helper.make_node("LogSoftmax", ["x"], ["y"])],
        [("x", F32, [3, 5])], [("y", F32, [3, 5])], opset=13)
    yield "unary_chain", model(
        [helper.make_node("Exp", ["x"], ["e"]),
         helper.make_node("Log", ["e"], ["l"]),
         helper.make_node("Tanh", ["l"], ["t"]),
         helper.make_node("Sigmoid", ["t"], ["s"]),
         helper.make_node("Sqrt", ["s"], ["q"]),
         helper.make_node("Neg", ["q"], ["y"])],
        [("x", F32, [3, 4])], [("y", F32, [3, 4])])
    yield "binary_broadcast", model(
        [helper.make_node("Sub", ["a", "b"], ["d"]),
         helper.make_node("Div", ["d", "c"], ["q"]),
         helper.make_node("Mul", ["q", "a"], ["y"])],
        [("a", F32, [2, 1, 4]), ("b", F32, [3, 1]), ("c", F32, [4])], [("y", F32, [2, 3, 4])])
    yield "shapes", model(
        [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
         helper.make_node("Reshape", ["t", "shape"], ["r"]),
         helper.make_node("Flatten", ["r"], ["f"], axis=2),
         helper.make_node("Transpose", ["f"], ["y"])],
        [("x", F32, [2, 3, 4])], [("y", F32, [3, 8])],
        [init("shape", np.array([4, 2, -1], np.int64))])
    yield "int32_ops", model(
        [helper.make_node("Add", ["a", "b"], ["s"]),
         helper.make_node("Mul", ["s", "a"], ["m"]),
         helper.make_node("Div", ["m", "c"], ["d"]),
         helper.make_node("Relu", ["d"], ["y"])],
        [("a", I32, [3, 4]), ("b", I32, [4])], [("y", I32, [3, 4])],
        [init("c", np.array([3, -2, 5, 7], np.int32))], opset=14)
    yield "int64_reduce", model(
        [helper.make_node("ReduceMax", ["x"], ["y"], axes=[0], keepdims=0)],
        [("x", I64, [3, 4])], [("y", I64, [4])], opset=13)
    yield "f16_add_relu", model(
        [helper.make_node("Add", ["a", "b"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])],
        [("a", F16, [4, 8]), ("b", F16, [8])], [("y", F16, [4, 8])], opset=14)
    # Outputs that are not computed: a graph input, an initializer, twice the same value.
    # Deep reductions into few channels over more than 64 positions, as
    # positions x channels with the packed filter (kiln-schedule-matmul's
    # convolution layouts): a 1x1 1024 -> 96 with bias, residual and ReLU,
    # and a 3x3 dilated too far for shifted rows (128 -> 48 over 12x13,
    # 1,152 products per output) with bias.
    yield "conv_deep_pointwise", model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"]),
         helper.make_node("Add", ["c", "res"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])],
        [("x", F32, [1, 1024, 9, 11]), ("res", F32, [1, 96, 9, 11])], [("y", F32, [1, 96, 9, 11])],
        [init("w", 0.05 * r(96, 1024, 1, 1)), init("b", r(96))])
    yield "conv_deep_dilated", model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], dilations=[4, 4], pads=[4, 4, 4, 4])],
        [("x", F32, [2, 128, 12, 13])], [("y", F32, [2, 48, 12, 13])],
        [init("w", 0.05 * r(48, 128, 3, 3)), init("b", r(48))])
    # Convolutions fed directly by step-2 slices (a polyphase split): the
    # views are copied dense before the convolutions read them.
    yield "conv_strided_view", model(
        [helper.make_node("Slice", ["x", "s0", "e", "ax", "st"], ["even"]),
         helper.make_node("Slice", ["x", "s1", "e", "ax", "st"], ["odd"]),
         helper.make_node("Conv", ["even", "w2"], ["a"]),
         helper.make_node("Conv", ["odd", "w1"], ["b"]),
         helper.make_node("Add", ["a", "b"], ["y"])],
        [("x", F32, [1, 64, 83])], [("y", F32, [1, 32, 41])],
        [init("s0", np.array([0], np.int64)), init("s1", np.array([1], np.int64)),
         init("e", np.array([83], np.int64)), init("ax", np.array([2], np.int64)),
         init("st", np.array([2], np.int64)), init("w2", 0.1 * r(32, 64, 2)), init("w1", 0.1 * r(32, 64, 1))])
    yield "passthrough_outputs", model(
        [helper.make_node("Identity", ["x"], ["same"]),
         helper.make_node("Identity", ["w"], ["weight"]),
         helper.make_node("Relu", ["x"], ["r"])],
        [("x", F32, [2, 2])],
        [("same", F32, [2, 2]), ("weight", F32, [2]), ("r", F32, [2, 2]), ("x", F32, [2, 2])],
        [init("w", np.array([1.5, -2.5], np.float32))])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1234)
    for name, m in cases(rng):
        path = os.path.join(out, name + ".onnx")
        onnx.save(m, path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {}
        for i in sess.get_inputs():
            t = next(v for v in m.graph.input if v.name == i.name).type.tensor_type
            shape = [d.dim_value for d in t.shape.dim]
            dt = NP[t.elem_type]
            if np.issubdtype(dt, np.integer):
                a = rng.integers(-9, 10, size=shape).astype(dt)
            else:
                a = rng.standard_normal(shape).astype(dt)
            feeds[i.name] = a
        results = sess.run(None, feeds)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for k, i in enumerate(sess.get_inputs()):
            np.save(os.path.join(d, f"input_{k}.npy"), feeds[i.name])
        for k, y in enumerate(results):
            np.save(os.path.join(d, f"output_{k}.npy"), y)


if __name__ == "__main__":
    main()
