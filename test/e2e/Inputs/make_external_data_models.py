#!/usr/bin/env python3
"""Writes models whose weights are stored as ONNX external data.

    make_external_data_models.py OUTDIR

good.onnx (with weights.bin beside it, layout of check_models.py: inputs and
ONNX Runtime's outputs under OUTDIR/good/) and, under OUTDIR/bad/, one model
per way an external reference can be hostile: a `..` escape, an absolute
path, a symlink out of the folder, an offset past the end, a length that
does not match the tensor, an unknown key, a missing file.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def mlp(w1, b1, w2):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]),
         helper.make_node("Add", ["h", "b1"], ["hb"]),
         helper.make_node("Relu", ["hb"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])],
        initializer=[numpy_helper.from_array(w1, "w1"),
                     numpy_helper.from_array(b1, "b1"),
                     numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def external(tensor, location, offset=None, length=None, extra=()):
    """Points `tensor` at external data with these (raw) entries."""
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries + list(extra):
        e = tensor.external_data.add()
        e.key, e.value = k, v


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((64, 32)).astype(np.float32)
    b1 = rng.standard_normal(32).astype(np.float32)
    w2 = rng.standard_normal((32, 16)).astype(np.float32)
    x = rng.standard_normal((2, 64)).astype(np.float32)

    # The good model: onnx writes all three tensors into weights.bin (the
    # small bias too, threshold 0), at aligned offsets.
    os.makedirs(os.path.join(out, "good"), exist_ok=True)
    m = mlp(w1, b1, w2)
    onnx.save_model(m, os.path.join(out, "good.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)
    y = ort.InferenceSession(os.path.join(out, "good.onnx")).run(None, {"x": x})[0]
    np.save(os.path.join(out, "good", "input_0.npy"), x)
    np.save(os.path.join(out, "good", "output_0.npy"), y)

    # Hostile references, each in a folder of its own with a valid data file.
    bad = os.path.join(out, "bad")
    secret = os.path.join(out, "outside.bin")
    with open(secret, "wb") as f:
        f.write(w1.tobytes())
    cases = {
        "dotdot": dict(location="../outside.bin"),
        "absolute": dict(location=os.path.abspath(secret)),
        "symlink": dict(location="link.bin"),
        "offset_past_end": dict(location="w1.bin", offset=1 << 20),
        "short_length": dict(location="w1.bin", length=100),
        "unknown_key": dict(location="w1.bin", extra=[("basepath", "/")]),
        "missing_file": dict(location="nope.bin"),
    }
    for name, kw in cases.items():
        folder = os.path.join(bad, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "w1.bin"), "wb") as f:
            f.write(w1.tobytes())
        if name == "symlink":
            os.symlink(os.path.abspath(secret), os.path.join(folder, "link.bin"))
        m = mlp(w1, b1, w2)
        external(m.graph.initializer[0], **kw)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
