#!/usr/bin/env python3
"""Turns ONNX backend tests with shape-determining inputs into models Kiln can
compile, keeping the suite's own data as the reference.

    bind_suite_inputs.py SUITE_NODE_DIR OUT_DIR PATTERN...

Kiln compiles static shapes, so inputs that decide an output's shape (Resize's
scales and sizes, Pad's pads, ...) must be constants. For every test folder
matching a glob PATTERN, every graph input but the first becomes an
initializer holding the value of test_data_set_0; the first input and the
expected outputs are written as OUT_DIR/NAME/input_0.npy and output_K.npy, the
model as OUT_DIR/NAME.onnx (the layout check_models.py reads).
"""
import fnmatch
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    suite, out, patterns = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(suite)):
        if not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue
        model = onnx.load(os.path.join(suite, name, "model.onnx"))
        data = os.path.join(suite, name, "test_data_set_0")
        graph = model.graph
        inputs = [i for i in graph.input
                  if i.name not in {t.name for t in graph.initializer}]
        dest = os.path.join(out, name)
        os.makedirs(dest, exist_ok=True)
        np.save(os.path.join(dest, "input_0.npy"),
                read_pb(os.path.join(data, "input_0.pb")))
        for k, info in enumerate(inputs[1:], start=1):
            value = read_pb(os.path.join(data, f"input_{k}.pb"))
            graph.initializer.append(numpy_helper.from_array(value, info.name))
        for info in inputs[1:]:
            graph.input.remove(info)
        k = 0
        while os.path.exists(os.path.join(data, f"output_{k}.pb")):
            np.save(os.path.join(dest, f"output_{k}.npy"),
                    read_pb(os.path.join(data, f"output_{k}.pb")))
            k += 1
        onnx.save(model, os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
