#!/usr/bin/env python3
"""Writes models whose graphs kiln-fuse groups into kernels, with references.

    make_fusion_models.py OUTDIR

For each model NAME: OUTDIR/NAME.onnx, OUTDIR/NAME/input_K.npy and
OUTDIR/NAME/output_K.npy (the layout check_models.py reads). The expected
outputs are computed here with numpy in float64 from the same weights, never
by Kiln; inputs use a fixed seed.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, F32, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, F32, s) for n, s in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0], **attrs)


def softmax64(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm64(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def cases(rng):
    r = lambda *s: rng.standard_normal(s).astype(np.float32)
    d = lambda a: a.astype(np.float64)

    # Softmax over rows of odd width (a vector remainder).
    x = r(6, 37) * 3
    yield "softmax_rows", model(
        [node("Softmax", ["x"], ["y"], axis=-1)], [("x", [6, 37])], [("y", [6, 37])]), \
        [x], [softmax64(d(x))]

    # Layer norm written out as ONNX ops (as exporters emit it).
    x, g, b = r(5, 64), r(64), r(64)
    eps = np.array(1e-5, np.float32)
    two = np.array(2.0, np.float32)
    yield "layer_norm", model(
        [node("ReduceMean", ["x"], ["mean"], axes=[-1]),
         node("Sub", ["x", "mean"], ["d"]),
         node("Pow", ["d", "two"], ["sq"]),
         node("ReduceMean", ["sq"], ["var"], axes=[-1]),
         node("Add", ["var", "eps"], ["ve"]),
         node("Sqrt", ["ve"], ["sd"]),
         node("Div", ["d", "sd"], ["n"]),
         node("Mul", ["n", "g"], ["scaled"]),
         node("Add", ["scaled", "b"], ["y"])],
        [("x", [5, 64])], [("y", [5, 64])],
        [("g", g), ("b", b), ("eps", eps), ("two", two)]), \
        [x], [layer_norm64(d(x), d(g), d(b))]

    # Two dense layers: matmul + bias + relu, then matmul + bias + residual.
    x, w1, b1, w2, b2 = r(8, 48), r(48, 40) * 0.2, r(40), r(40, 48) * 0.2, r(48)
    h = np.maximum(d(x) @ d(w1) + d(b1), 0)
    yield "mlp_residual", model(
        [node("MatMul", ["x", "w1"], ["m1"]),
         node("Add", ["m1", "b1"], ["a1"]),
         node("Relu", ["a1"], ["h"]),
         node("MatMul", ["h", "w2"], ["m2"]),
         node("Add", ["m2", "b2"], ["a2"]),
         node("Add", ["a2", "x"], ["y"])],
        [("x", [8, 48])], [("y", [8, 48])],
        [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]), \
        [x], [h @ d(w2) + d(b2) + d(x)]

    # Conv + bias + relu + residual add (a ResNet block's tail).
    x, w, b = r(1, 4, 9, 9), r(4, 4, 3, 3) * 0.3, r(4)
    xd, wd = d(x), d(w)
    pad = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 4, 9, 9))
    for i in range(9):
        for j in range(9):
            conv[0, :, i, j] = np.einsum("mckl,ckl->m", wd, pad[0, :, i:i + 3, j:j + 3])
    yield "conv_residual", model(
        [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         node("Relu", ["c"], ["h"]),
         node("Add", ["h", "x"], ["y"])],
        [("x", [1, 4, 9, 9])], [("y", [1, 4, 9, 9])], [("w", w), ("b", b)]), \
        [x], [np.maximum(conv + d(b)[None, :, None, None], 0) + xd]

    # A tanh-GELU chain and, beside it, a sigmoid of the same input
    # (horizontal fusion), both outputs.
    x = r(3, 50)
    c = np.array(0.7978845608, np.float32)
    k = np.array(0.044715, np.float32)
    half = np.array(0.5, np.float32)
    one = np.array(1.0, np.float32)
    xd = d(x)
    gelu = 0.5 * xd * (1 + np.tanh(0.7978845608 * (xd + 0.044715 * xd ** 3)))
    yield "gelu_and_sigmoid", model(
        [node("Mul", ["x", "x"], ["x2"]),
         node("Mul", ["x2", "x"], ["x3"]),
         node("Mul", ["x3", "k"], ["kx3"]),
         node("Add", ["x", "kx3"], ["inner"]),
         node("Mul", ["inner", "c"], ["scaled"]),
         node("Tanh", ["scaled"], ["t"]),
         node("Add", ["t", "one"], ["t1"]),
         node("Mul", ["x", "t1"], ["xt"]),
         node("Mul", ["xt", "half"], ["gelu"]),
         node("Sigmoid", ["x"], ["sig"])],
        [("x", [3, 50])], [("gelu", [3, 50]), ("sig", [3, 50])],
        [("c", c), ("k", k), ("half", half), ("one", one)]), \
        [x], [gelu, 1 / (1 + np.exp(-xd))]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261123)
    for name, m, inputs, outputs in cases(rng):
        onnx.save(m, os.path.join(out, name + ".onnx"))
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for i, a in enumerate(inputs):
            np.save(os.path.join(out, name, f"input_{i}.npy"), a)
        for i, a in enumerate(outputs):
            np.save(os.path.join(out, name, f"output_{i}.npy"), a.astype(np.float32))


if __name__ == "__main__":
    main()
