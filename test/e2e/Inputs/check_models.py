#!/usr/bin/env python3
"""Compiles every model in DIR with kilnc --shared and checks it with kiln-run.

    check_models.py DIR [--rtol R] [--atol A]

For DIR/NAME.onnx, the inputs DIR/NAME/input_K.npy and expected outputs
DIR/NAME/output_K.npy (see make_e2e_models.py). Prints "PASS NAME" or
"FAIL NAME" with the tools' output, and exits 1 if any model fails.
"""
import argparse
import glob
import os
import subprocess
import sys


def write_case(out, name, model, rng):
    """Writes OUT/NAME.onnx, a random normal input per graph input
    (OUT/NAME/input_K.npy) and ONNX Runtime's outputs for them
    (OUT/NAME/output_K.npy): the layout main() reads. For the make_*_models
    scripts."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    path = os.path.join(out, name + ".onnx")
    onnx.save(model, path)
    os.makedirs(os.path.join(out, name), exist_ok=True)
    feeds = {}
    for k, i in enumerate(model.graph.input):
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = rng.normal(0.0, 1.0, size=shape).astype(np.float32)
        np.save(os.path.join(out, name, f"input_{k}.npy"), feeds[i.name])
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, y in enumerate(session.run(None, feeds)):
        np.save(os.path.join(out, name, f"output_{k}.npy"), y)


def write_cases(out, cases, rng):
    """write_case for each (name, inputs, outputs, nodes, initializers) of
    `cases`, as an opset 17 model."""
    import onnx
    from onnx import helper
    os.makedirs(out, exist_ok=True)
    for name, inputs, outputs, nodes, inits in cases:
        graph = helper.make_graph(nodes, name, inputs, outputs, inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        write_case(out, name, model, rng)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--rtol", default="1e-4")
    p.add_argument("--atol", default="1e-5")
    args = p.parse_args()
    failed = 0
    for model in sorted(glob.glob(os.path.join(args.dir, "*.onnx"))):
        name = os.path.basename(model)[:-5]
        data = os.path.join(args.dir, name)
        prefix = os.path.join(data, "kiln")
        cmd = ["kilnc", model, "-o", prefix, "--shared"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            cmd = ["kiln-run", prefix + ".so", "--rtol", args.rtol, "--atol", args.atol]
            for f in sorted(glob.glob(os.path.join(data, "input_*.npy"))):
                cmd += ["--input", f]
            for f in sorted(glob.glob(os.path.join(data, "output_*.npy"))):
                cmd += ["--compare", f]
            r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            print("PASS", name)
        else:
            failed += 1
            print("FAIL", name, "\n  $", " ".join(cmd), "\n", r.stdout, r.stderr)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
