"""Writes the GPU pack's training step: an ONNX MLP classifier and its data.

  .venv/bin/python make_train.py OUTDIR

OUTDIR/mlp_train.onnx: x[32, 784] -> Gemm(256) -> Relu -> Gemm(10) ->
SoftmaxCrossEntropyLoss(labels) -> loss, float32, with deterministic
weights; OUTDIR/x.npy [STEPS, 32, 784] and labels.npy [STEPS, 32], one
batch per step (for kiln-run), and the same as raw tensors in
OUTDIR/batches/in0.bin and in1.bin (for kiln-pack-run train). build.sh
compiles it with kilnc train for the CPU (the reference: losses and final
state) and for CUDA (the pack's artifact).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

STEPS, BATCH, D_IN, D_HIDDEN, CLASSES = 12, 32, 784, 256, 10


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "batches"), exist_ok=True)
    rng = np.random.default_rng(7)
    # Inputs on a grid of 1/16 (they compress), weights scaled by fan-in.
    x = (rng.integers(-16, 16, size=(STEPS, BATCH, D_IN)) / 16.0).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=(STEPS, BATCH)).astype(np.int64)
    w1 = (rng.normal(0, 1, size=(D_IN, D_HIDDEN)) / np.sqrt(D_IN)).astype(np.float32)
    w2 = (rng.normal(0, 1, size=(D_HIDDEN, CLASSES)) / np.sqrt(D_HIDDEN)).astype(np.float32)
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(np.zeros(D_HIDDEN, np.float32), "b1"),
             numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(np.zeros(CLASSES, np.float32), "b2")]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["a"], name="relu"),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["logits"], name="fc2"),
             helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"], reduction="mean",
                              name="xent")]
    graph = helper.make_graph(
        nodes, "mlp_train",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, D_IN]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [BATCH])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "mlp_train.onnx"))
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "labels.npy"), labels)
    x.tofile(os.path.join(out, "batches", "in0.bin"))
    labels.tofile(os.path.join(out, "batches", "in1.bin"))
    with open(os.path.join(out, "steps"), "w") as f:
        f.write(f"{STEPS}\n")


if __name__ == "__main__":
    main()
