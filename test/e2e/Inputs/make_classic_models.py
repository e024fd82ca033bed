#!/usr/bin/env python3
"""Ops of the classic ONNX model zoo (opset 7 to 9 graphs), with the sizes
those models use.

    make_classic_models.py OUTDIR

LRN as AlexNet, GoogLeNet and Inception v1 use it (size 5 over 64 or 96
channels; an even size too, whose window is asymmetric) and Dropout with
its mask output as SqueezeNet and VGG-19 write it (in inference the mask
keeps everything: all true from opset 10, ones of the input's type
before). Writes OUTDIR/NAME.onnx with ONNX Runtime's outputs for a random
input (OUTDIR/NAME/input_K.npy, output_K.npy), the layout check_models.py
reads. ONNX Runtime refuses an even LRN size, which ONNX defines; LRN's
expected output is a float64 numpy implementation of the operator's
definition, checked against ONNX Runtime where it runs.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper

rng = np.random.default_rng(9)


def lrn_reference(x, size, alpha=1e-4, beta=0.75, bias=1.0):
    """ONNX LRN: the channel window [c - floor((size-1)/2), c + ceil((size-1)/2)]."""
    x = x.astype(np.float64)
    channels = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    square_sum = np.zeros_like(x)
    for ch in range(channels):
        square_sum[:, ch] = (x[:, max(0, ch - lo):min(channels, ch + hi + 1)] ** 2).sum(axis=1)
    return x / (bias + alpha / size * square_sum) ** beta


def models():
    vi = helper.make_tensor_value_info
    f = T.FLOAT
    yield "lrn_alexnet", 9, [vi("x", f, [1, 96, 13, 13])], [vi("y", f, [1, 96, 13, 13])], [
        helper.make_node("LRN", ["x"], ["y"], name="norm1", size=5, alpha=1e-4, beta=0.75, bias=1.0)]
    yield "lrn_googlenet", 8, [vi("x", f, [2, 64, 7, 9])], [vi("y", f, [2, 64, 7, 9])], [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("LRN", ["r"], ["y"], name="norm", size=5, alpha=2e-4, beta=0.75)]
    yield "lrn_even_size", 13, [vi("x", f, [1, 10, 4, 4])], [vi("y", f, [1, 10, 4, 4])], [
        helper.make_node("LRN", ["x"], ["y"], name="norm", size=4, alpha=0.5, beta=0.6, bias=2.0)]
    # As SqueezeNet and VGG-19 write it: the mask named, used by nothing.
    # (As a graph output ONNX Runtime gives zeros for it at opset 7, and
    # ONNX's reference evaluator true; Kiln gives ones, the kept elements.)
    yield "dropout_mask_opset7", 7, [vi("x", f, [2, 16])], [vi("y", f, [2, 16])], [
        helper.make_node("Dropout", ["x"], ["d", "mask"], name="drop", ratio=0.5),
        helper.make_node("Relu", ["d"], ["y"], name="relu")]
    yield "dropout_mask_opset13", 13, [vi("x", f, [2, 16])], [vi("y", f, [2, 16]),
                                                               vi("mask", T.BOOL, [2, 16])], [
        helper.make_node("Dropout", ["x"], ["d", "mask"], name="drop"),
        helper.make_node("Cast", ["mask"], ["m"], name="cast", to=f),
        helper.make_node("Mul", ["d", "m"], ["y"], name="apply")]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, opset, inputs, outputs, nodes in models():
        model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs),
                                  opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 7
        onnx.checker.check_model(model)
        path = os.path.join(out, name + ".onnx")
        onnx.save(model, path)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        feeds = {}
        for k, i in enumerate(inputs):
            shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
            feeds[i.name] = rng.normal(0.0, 1.0, size=shape).astype(np.float32)
            np.save(os.path.join(out, name, f"input_{k}.npy"), feeds[i.name])
        lrn = [n for n in nodes if n.op_type == "LRN"]
        expected, size = None, 1
        if lrn:
            a = {x.name: helper.get_attribute_value(x) for x in lrn[0].attribute}
            size = a["size"]
            x = feeds["x"] if lrn[0].input[0] == "x" else np.maximum(feeds["x"], 0)
            expected = [lrn_reference(x, size, a.get("alpha", 1e-4), a.get("beta", 0.75),
                                      a.get("bias", 1.0)).astype(np.float32)]
        if size % 2 == 1:
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            got = session.run(None, feeds)
            if expected is not None:
                assert np.allclose(got[0], expected[0], rtol=1e-5, atol=1e-6), name
            expected = got
        for k, y in enumerate(expected):
            np.save(os.path.join(out, name, f"output_{k}.npy"), y)


if __name__ == "__main__":
    main()
