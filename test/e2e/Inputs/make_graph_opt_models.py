#!/usr/bin/env python3
"""Writes models for the graph optimization end-to-end test.

    make_graph_opt_models.py OUTDIR

For each model NAME: OUTDIR/NAME.onnx, OUTDIR/NAME/input_K.npy and
OUTDIR/NAME/output_0.npy (the layout check_models.py reads). Expected
outputs are computed here with numpy in float64 from the same weights,
independently of Kiln and of ONNX Runtime.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, F32, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, F32, s) for n, s in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def relu(a):
    return np.maximum(a, 0)


def twin_subgraphs(rng):
    # Two copies of MatMul + Add + Relu with equal weights stored under
    # different names; the output adds them. One copy should remain.
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    nodes = []
    for k in ("1", "2"):
        nodes += [helper.make_node("MatMul", ["x", "w" + k], ["m" + k]),
                  helper.make_node("Add", ["m" + k, "b" + k], ["s" + k]),
                  helper.make_node("Relu", ["s" + k], ["r" + k])]
    nodes.append(helper.make_node("Add", ["r1", "r2"], ["y"]))
    m = model(nodes, [("x", [2, 3])], [("y", [2, 4])],
              [("w1", w), ("w2", w.copy()), ("b1", b), ("b2", b.copy())])
    x64 = x.astype(np.float64)
    y = 2 * relu(x64 @ w + b)
    return m, x, y


def dead_half(rng):
    # The output needs only Relu(x) * 2; Exp, Tanh, Sigmoid and the MatMul
    # branch feed nothing that reaches it.
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    two = np.array(2.0, dtype=np.float32)
    nodes = [helper.make_node("Exp", ["x"], ["e"]),
             helper.make_node("Tanh", ["e"], ["t"]),
             helper.make_node("MatMul", ["t", "w"], ["mm"]),
             helper.make_node("Sigmoid", ["mm"], ["unused"]),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Mul", ["r", "two"], ["y"])]
    m = model(nodes, [("x", [2, 3])], [("y", [2, 3])], [("w", w), ("two", two)])
    return m, x, 2 * relu(x.astype(np.float64))


def conv_batchnorm(rng):
    # Conv with bias followed by inference BatchNormalization: folds into one
    # conv and one bias add.
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    scale = rng.uniform(0.5, 2, 3).astype(np.float32)
    shift = rng.standard_normal(3).astype(np.float32)
    mean = rng.standard_normal(3).astype(np.float32)
    var = rng.uniform(0.5, 2, 3).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "bias"], ["c"]),
             helper.make_node("BatchNormalization",
                              ["c", "scale", "shift", "mean", "var"], ["y"],
                              epsilon=1e-5)]
    m = model(nodes, [("x", [1, 2, 5, 5])], [("y", [1, 3, 3, 3])],
              [("w", w), ("bias", bias), ("scale", scale), ("shift", shift),
               ("mean", mean), ("var", var)])
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    c = np.zeros((1, 3, 3, 3))
    for o in range(3):
        for i in range(3):
            for j in range(3):
                c[0, o, i, j] = np.sum(x64[0, :, i:i + 3, j:j + 3] * w64[o]) + bias[o]
    per = lambda a: a.astype(np.float64).reshape(3, 1, 1)
    y = (c - per(mean)) / np.sqrt(per(var) + 1e-5) * per(scale) + per(shift)
    return m, x, y


def transposed_matmul(rng):
    # Transposes of run-time inputs feeding a MatMul become the matmul's
    # transpose flags; the values must not change.
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    nodes = [helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1]),
             helper.make_node("Transpose", ["b"], ["bt"], perm=[1, 0]),
             helper.make_node("MatMul", ["at", "bt"], ["y"])]
    m = model(nodes, [("a", [2, 3, 4]), ("b", [5, 3])], [("y", [2, 4, 5])], [])
    y = np.swapaxes(a.astype(np.float64), 1, 2) @ b.astype(np.float64).T
    return m, [a, b], y


def dense_block(rng):
    # A DenseNet block over a batch of 2: each layer concatenates every
    # feature map so far again, scales and shifts it per channel, and adds
    # 8 channels through a 1x1 and a 3x3 convolution. The later concats
    # share one buffer (kiln-share-concat-prefixes); the first one is also
    # an output, so it keeps its own. Outputs: the last concat and the
    # first.
    n, h, w, growth, width = 2, 10, 10, 8, 16
    x = rng.standard_normal((n, 8, h, w)).astype(np.float32)
    nodes, inits = [], []
    features = ["x"]
    values = {"x": x.astype(np.float64)}

    def conv(a, wt):
        k = wt.shape[2] // 2
        p = np.pad(a, ((0, 0), (0, 0), (k, k), (k, k)))
        return sum(np.einsum("oc,nchw->nohw", wt[:, :, i, j], p[:, :, i:i + h, j:j + w])
                   for i in range(wt.shape[2]) for j in range(wt.shape[3]))

    for i in range(4):
        if len(features) == 1:
            joined = features[0]
        else:
            joined = f"c{i}"
            nodes.append(helper.make_node("Concat", list(features), [joined], axis=1))
            values[joined] = np.concatenate([values[f] for f in features], axis=1)
        c = values[joined].shape[1]
        scale = rng.uniform(0.5, 1.5, (1, c, 1, 1)).astype(np.float32)
        shift = rng.uniform(-0.2, 0.2, (1, c, 1, 1)).astype(np.float32)
        w1 = (rng.standard_normal((width, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
        w3 = (rng.standard_normal((growth, width, 3, 3)) / np.sqrt(9 * width)).astype(np.float32)
        names = [f"scale{i}", f"shift{i}", f"w1_{i}", f"w3_{i}"]
        inits += list(zip(names, (scale, shift, w1, w3)))
        nodes += [helper.make_node("Mul", [joined, names[0]], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", names[1]], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"]),
                  helper.make_node("Conv", [f"r{i}", names[2]], [f"b{i}"]),
                  helper.make_node("Relu", [f"b{i}"], [f"rb{i}"]),
                  helper.make_node("Conv", [f"rb{i}", names[3]], [f"f{i}"],
                                   pads=[1, 1, 1, 1])]
        r = relu(values[joined] * scale + shift)
        values[f"f{i}"] = conv(relu(conv(r, w1.astype(np.float64))), w3.astype(np.float64))
        features.append(f"f{i}")
    nodes.append(helper.make_node("Concat", list(features), ["y"], axis=1))
    y = np.concatenate([values[f] for f in features], axis=1)
    nodes.append(helper.make_node("Identity", ["c1"], ["first"]))
    m = model(nodes, [("x", [n, 8, h, w])],
              [("y", list(y.shape)), ("first", list(values["c1"].shape))], inits)
    return m, x, [y, values["c1"]]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261123)
    for make in (twin_subgraphs, dead_half, conv_batchnorm, transposed_matmul,
                 dense_block):
        m, x, y = make(rng)
        name = make.__name__
        onnx.save(m, os.path.join(out, name + ".onnx"))
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for k, a in enumerate(x if isinstance(x, list) else [x]):
            np.save(os.path.join(d, f"input_{k}.npy"), a)
        for k, a in enumerate(y if isinstance(y, list) else [y]):
            np.save(os.path.join(d, f"output_{k}.npy"), a.astype(np.float32))


if __name__ == "__main__":
    main()
