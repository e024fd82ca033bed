#!/usr/bin/env python3
"""A naive float64 reference for the example MLP, written from the ONNX
operator definitions (Gemm, Relu, Softmax) with numpy, sharing nothing with
Kiln or ONNX Runtime.

    mlp_reference.py MODEL.onnx INPUT.bin OUTDIR

Writes OUTDIR/input.npy (float32, the model's input shape) and
OUTDIR/probabilities.npy (the reference, rounded to float32).
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def main():
    model = onnx.load(sys.argv[1])
    g = model.graph
    shape = [d.dim_value for d in g.input[0].type.tensor_type.shape.dim]
    x = np.fromfile(sys.argv[2], dtype="<f4").reshape(shape)
    values = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in g.initializer}
    values[g.input[0].name] = x.astype(np.float64)
    for n in g.node:
        ins = [values[i] for i in n.input]
        if n.op_type == "Gemm":
            a, b = ins[0], ins[1]
            if attr(n, "transA", 0):
                a = a.T
            if attr(n, "transB", 0):
                b = b.T
            y = attr(n, "alpha", 1.0) * (a @ b)
            if len(ins) > 2:
                y = y + attr(n, "beta", 1.0) * ins[2]
        elif n.op_type == "Relu":
            y = np.maximum(ins[0], 0.0)
        elif n.op_type == "Softmax":
            axis = attr(n, "axis", -1)
            e = np.exp(ins[0] - ins[0].max(axis=axis, keepdims=True))
            y = e / e.sum(axis=axis, keepdims=True)
        else:
            raise SystemExit(f"reference: unsupported op {n.op_type}")
        values[n.output[0]] = y
    out = sys.argv[3]
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "input.npy"), x)
    for o in g.output:
        np.save(os.path.join(out, o.name + ".npy"), values[o.name].astype(np.float32))
        print(o.name, " ".join(f"{v:.6f}" for v in values[o.name].ravel()))


if __name__ == "__main__":
    main()
