#!/usr/bin/env python3
"""Convolutions that kiln-schedule-matmul computes as Winograd's F(2x2, 3x3),
their inputs and ONNX Runtime's outputs for them.

    make_winograd_models.py OUTDIR

model.onnx: x [2, 32, 16, 16] -> conv 3x3 32 -> 48 with bias -> relu ->
conv 3x3 48 -> 48 -> add (residual) = y; both convolutions are 8x8 2x2
tiles per image with constant filters. A 3x3 over 15x15 of the same input
cropped is z: 8x8 tiles too, over one more zero row and column, whose
outputs are dropped. Filters are drawn
with large values and offsets so that the transformed filters
(G g G^T, halves and sums of taps) are far from the taps themselves.
Writes model.onnx, x.npy, y_ort.npy, z_ort.npy.
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
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, 32, 16, 16)).astype(np.float32)
    inits = {
        "w1": rng.uniform(-0.3, 0.5, (48, 32, 3, 3)),
        "b1": rng.uniform(-0.5, 0.5, (48,)),
        "w2": rng.uniform(-0.2, 0.2, (48, 48, 3, 3)),
        "w3": rng.uniform(-0.2, 0.2, (40, 32, 3, 3)),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "r1"], ["y"], name="residual"),
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["xs"], name="crop"),
        helper.make_node("Conv", ["xs", "w3"], ["z"], pads=[1, 1, 1, 1], name="odd"),
    ]
    initializers = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()]
    initializers += [
        numpy_helper.from_array(np.array([0, 0], np.int64), "starts"),
        numpy_helper.from_array(np.array([15, 15], np.int64), "ends"),
        numpy_helper.from_array(np.array([2, 3], np.int64), "axes"),
    ]
    graph = helper.make_graph(
        nodes, "winograd",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 48, 16, 16]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 40, 15, 15])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    path = os.path.join(out, "model.onnx")
    onnx.save(model, path)
    np.save(os.path.join(out, "x.npy"), x)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    y, z = session.run(None, {"x": x})
    np.save(os.path.join(out, "y_ort.npy"), y)
    np.save(os.path.join(out, "z_ort.npy"), z)


if __name__ == "__main__":
    main()
