#!/usr/bin/env python3
"""Runs an artifact compiled with ranges at given sizes against ONNX Runtime.

    run_dims.py MODEL.onnx ARTIFACT.so KILN_RUN WORKDIR NAME=V[,NAME=V...] [...]

For each assignment of sizes, makes random inputs of those sizes (as
check_dims.py does: normal floats, integers in [0, 2)), runs MODEL in ONNX Runtime and the artifact
through `KILN_RUN ARTIFACT --input ... --compare ...`, which reads the sizes
from the input files and compares every output. Prints kiln-run's lines
under one header per assignment; exits 1 when a run fails or an output
differs.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort

from check_dims import parse_sizes, random_feeds


def main():
    model_path, artifact, kiln_run, workdir = sys.argv[1:5]
    model = onnx.load(model_path)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    os.makedirs(workdir, exist_ok=True)
    ok = True
    for assignment in sys.argv[5:]:
        tag = assignment.replace("=", "").replace(",", "_")
        feeds, args = random_feeds(model, parse_sizes(assignment), rng), []
        for name, value in feeds.items():
            path = os.path.join(workdir, f"{tag}_in_{name}.npy")
            np.save(path, value)
            args += ["--input", f"{name}={path}"]
        for out, value in zip(model.graph.output, session.run(None, feeds)):
            path = os.path.join(workdir, f"{tag}_out_{out.name}.npy")
            np.save(path, value)
            args += ["--compare", f"{out.name}={path}"]
        run = subprocess.run([kiln_run, artifact] + args, capture_output=True, text=True)
        print(f"{assignment}:")
        print((run.stdout + run.stderr).rstrip())
        ok &= run.returncode == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
