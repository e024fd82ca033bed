#!/usr/bin/env python3
"""A model whose loops are large enough to run on several threads, its
input and ONNX Runtime's output for it.

    make_threads_model.py OUTDIR

conv 3x3 (a matmul over shifted rows) -> relu -> depthwise 3x3 -> add -> flatten ->
matmul -> add: every parallel schedule (matmul tiles, the im2col copy, the
depthwise channel loop, an elementwise nest) with enough work to be split.
Writes model.onnx, x.npy and y_ort.npy; and pointwise.onnx, p.npy, q.npy,
z_ort.npy and s_ort.npy: a 1x1 conv 160 -> 960 over a 7x7 image with bias and Clip
(MobileNetV2's expansions), computed as positions x channels, whose only
parallel loop is over the packed weight's panels and whose product goes
back to channels x positions through a transpose of 49 x 960; and a 3x3
stride-2 conv 128 -> 256 from 28x28 (ResNet's downsampling), 196 positions
by 256 channels: its 3 m cache tiles and 8 panels run as 24 pairs.
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
    rng = np.random.default_rng(12)
    n, c, h, w, m, classes = 2, 8, 24, 24, 32, 200
    x = rng.uniform(-1, 1, (n, c, h, w)).astype(np.float32)
    inits = {
        "w1": rng.uniform(-0.3, 0.3, (m, c, 3, 3)),
        "b1": rng.uniform(-0.1, 0.1, (m,)),
        "wd": rng.uniform(-0.3, 0.3, (m, 1, 3, 3)),
        "wf": rng.uniform(-0.05, 0.05, (m * h * w, classes)),
        "bf": rng.uniform(-0.1, 0.1, (classes,)),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
        helper.make_node("Conv", ["r1", "wd"], ["d1"], pads=[1, 1, 1, 1], group=m, name="depthwise"),
        helper.make_node("Add", ["d1", "c1"], ["s1"], name="residual"),
        helper.make_node("Flatten", ["s1"], ["f1"], name="flatten"),
        helper.make_node("MatMul", ["f1", "wf"], ["mm"], name="fc"),
        helper.make_node("Add", ["mm", "bf"], ["y"], name="bias"),
    ]
    save(out, "model", nodes, {"x": x}, {"y": [n, classes]}, inits)

    p = rng.uniform(-1, 1, (1, 160, 7, 7)).astype(np.float32)
    q = rng.uniform(-1, 1, (1, 128, 28, 28)).astype(np.float32)
    pointwise = {
        "ws": rng.uniform(-0.05, 0.05, (256, 128, 3, 3)),
        "wp": rng.uniform(-0.1, 0.1, (960, 160, 1, 1)),
        "bp": rng.uniform(-0.5, 0.5, (960,)),
        "lo": np.array(0.0),
        "hi": np.array(1.0),
    }
    nodes = [
        helper.make_node("Conv", ["p", "wp", "bp"], ["cp"], name="pointwise"),
        helper.make_node("Clip", ["cp", "lo", "hi"], ["z"], name="clip"),
        helper.make_node("Conv", ["q", "ws"], ["s"], pads=[1, 1, 1, 1], strides=[2, 2], name="strided"),
    ]
    save(out, "pointwise", nodes, {"p": p, "q": q}, {"z": [1, 960, 7, 7], "s": [1, 256, 14, 14]}, pointwise)


def save(out, name, nodes, inputs, outputs, inits):
    """Writes NAME.onnx (opset 17, f32), INPUT.npy for each input and
    OUTPUT_ort.npy, ONNX Runtime's value, for each output."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, shape) for k, shape in outputs.items()],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    path = os.path.join(out, name + ".onnx")
    onnx.save(model, path)
    for k, v in inputs.items():
        np.save(os.path.join(out, k + ".npy"), v)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, v in zip(outputs, sess.run(list(outputs), inputs)):
        np.save(os.path.join(out, k + "_ort.npy"), v)

if __name__ == "__main__":
    main()
