#!/usr/bin/env python3
"""Checks the symbolic sizes kilnc gives a model's outputs against ONNX Runtime.

    check_dims.py MODEL.onnx GRAPH.mlir NAME=V[,NAME=V...] [...]

GRAPH.mlir is `kilnc MODEL.onnx --dim NAME=LO..HI ... --emit=graph`. For each
assignment of sizes, runs MODEL in ONNX Runtime on random inputs of those
sizes and compares each output's shape with @main's result type: its
#kiln.dims expressions evaluated at the sizes (or its static shape). Prints
one line per assignment; exits 1 on a mismatch.
"""
import math
import re
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper


def result_sizes(text):
    """The sizes of @main's results, as expression strings."""
    signature = re.search(r"func\.func @main\(.*?\) -> \((.*?)\) attributes", text, re.S)
    if not signature:
        signature = re.search(r"func\.func @main\(.*?\) -> \((.*?)\) \{", text, re.S)
    results = []
    for m in re.finditer(r"tensor<([^,>]*?)x?([a-z0-9]+)(?:, #kiln\.dims<\[(.*?)\]>)?>", signature.group(1)):
        if m.group(3) is not None:
            results.append(re.findall(r'"([^"]*)"', m.group(3)))
        else:
            results.append([d for d in m.group(1).split("x") if d])
    return results


def evaluate(expr, sizes):
    env = dict(sizes, floor=lambda v: math.floor(v), ceil=lambda v: math.ceil(v))
    return int(eval(expr, {"__builtins__": {}}, env))


def parse_sizes(assignment):
    """`batch=3,seq=7` as {"batch": 3, "seq": 7}."""
    return {k: int(v) for k, v in (p.split("=") for p in assignment.split(","))}


def random_feeds(model, sizes, rng):
    """Random inputs of `model` at `sizes`: normal floats, integers in [0, 2)."""
    feeds = {}
    for inp in model.graph.input:
        t = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else sizes[d.dim_param] for d in t.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        feeds[inp.name] = (rng.standard_normal(shape) if dtype.kind == "f"
                           else rng.integers(0, 2, shape)).astype(dtype)
    return feeds


def main():
    model_path, graph_path = sys.argv[1:3]
    model = onnx.load(model_path)
    expected = result_sizes(open(graph_path).read())
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    ok = True
    for assignment in sys.argv[3:]:
        sizes = parse_sizes(assignment)
        feeds = random_feeds(model, sizes, rng)
        outputs = session.run(None, feeds)
        for out, want, exprs in zip(model.graph.output, outputs, expected):
            got = [evaluate(e, sizes) for e in exprs]
            status = "ok" if got == list(want.shape) else "MISMATCH"
            ok &= status == "ok"
            print(f"{assignment}: output '{out.name}' {exprs} = {got}, "
                  f"ONNX Runtime {list(want.shape)}: {status}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
