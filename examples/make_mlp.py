#!/usr/bin/env python3
"""Writes examples/mlp.onnx and examples/mlp_input.bin, the bundled example.

A small MLP classifier: 32 inputs -> Gemm(64) -> Relu -> Gemm(64) -> Relu ->
Gemm(10) -> Softmax. Weights come from a closed formula (no random generator),
so the files are byte-identical on every run and every numpy/onnx version
that writes the same protobuf. Run it from anywhere:

    python3 examples/make_mlp.py [OUTPUT_DIR]
"""
import math
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIZES = [32, 64, 64, 10]


def weight(rows, cols, layer):
    i = np.arange(rows, dtype=np.float64)[:, None]
    j = np.arange(cols, dtype=np.float64)[None, :]
    w = np.sin(0.37 * i + 0.91 * j + 1.3 * layer) / math.sqrt(rows)
    return w.astype(np.float32)


def bias(n, layer):
    return (0.05 * np.cos(0.5 * np.arange(n) + layer)).astype(np.float32)


def build():
    nodes, inits = [], []
    x = "input"
    for layer in range(len(SIZES) - 1):
        w = f"fc{layer + 1}.weight"
        b = f"fc{layer + 1}.bias"
        # Stored [out, in] like PyTorch exports, so Gemm uses transB=1.
        inits.append(numpy_helper.from_array(
            weight(SIZES[layer], SIZES[layer + 1], layer).T.copy(), w))
        inits.append(numpy_helper.from_array(bias(SIZES[layer + 1], layer), b))
        y = f"fc{layer + 1}"
        nodes.append(helper.make_node("Gemm", [x, w, b], [y], name=y, transB=1))
        x = y
        if layer < len(SIZES) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"relu{layer + 1}"],
                                          name=f"relu{layer + 1}"))
            x = f"relu{layer + 1}"
    nodes.append(helper.make_node("Softmax", [x], ["probabilities"],
                                  name="softmax", axis=-1))
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, SIZES[0]])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                       [1, SIZES[-1]])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="kiln-examples",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(out, "mlp.onnx"), "wb") as f:
        f.write(build().SerializeToString())
    x = np.cos(0.3 * np.arange(SIZES[0])).astype(np.float32)
    with open(os.path.join(out, "mlp_input.bin"), "wb") as f:
        f.write(struct.pack(f"<{SIZES[0]}f", *x))


if __name__ == "__main__":
    main()
