#!/usr/bin/env python3
"""Writes .npy files whose headers lie about their size.

    make_bad_npy.py OUTDIR

wrap.npy declares shape (2^58 + 1, 1, 1, 28, 28) of float32, a batch per
step of a [1, 1, 28, 28] input: the element count times 4 bytes wraps
around 2^64 to 3,136, and the file holds 3,136 bytes of data, so a reader
that multiplies without checking takes it for 2^58 + 1 batches (the
element count alone overflows). huge.npy declares (2^62,) float32: the
count fits in 64 bits, the count times 4 bytes does not. relu.onnx
is the model they are fed to (x[1, 1, 28, 28] -> Relu).
"""
import onnx
from onnx import TensorProto, helper
import os
import sys

MAGIC = b"\x93NUMPY\x01\x00"


def write(path, descr, shape, data_bytes):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, ", ".join(map(str, shape)))
    header += " " * (63 - (len(MAGIC) + 2 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(MAGIC + len(header).to_bytes(2, "little") + header.encode() + bytes(data_bytes))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "wrap.npy"), "<f4", (2 ** 58 + 1, 1, 1, 28, 28), 3136)
    write(os.path.join(out, "huge.npy"), "<f4", (2 ** 62,), 128)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 28, 28])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, "relu.onnx"))


if __name__ == "__main__":
    main()
