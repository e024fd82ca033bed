#!/usr/bin/env python3
"""Models with symbolic dimensions, as exporters write them.

    make_dim_models.py OUTDIR

dyn_mlp.onnx: x [batch, 16] -> MatMul -> Relu -> y [batch, 8], the output
named with the same dim_param. two_dims.onnx: x [batch, seq, 4] ->
ReduceSum over seq -> y [batch, 4]. Also writes, for dyn_mlp pinned to 5
and two_dims pinned to (3, 7), an input and ONNX Runtime's output on it
(ONNX Runtime runs the symbolic model as it is): OUTDIR/<name>_in.npy and
<name>_out.npy.
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
    for graph, shape in ((mlp, (5, 16)), (two, (3, 7, 4))):
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
