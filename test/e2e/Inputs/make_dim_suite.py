#!/usr/bin/env python3
"""The symbolic-dimension models of make_dim_models.py as tests in the ONNX
backend suite's layout, for kiln-conformance and the GPU pack:

    make_dim_suite.py OUT

writes OUT/dims/<model>/model.onnx, ranges.txt (kilnc's --dim for it, one
NAME=LO..HI a line), tolerance.txt (rtol 1e-4, atol 1e-5: the reference is
ONNX Runtime's float32, not exact data) and test_data_set_<k>/input_<i>.pb,
output_<i>.pb: one set per size (the ranges' lower and upper bounds and an
odd size between), random inputs as check_dims.py makes them and ONNX
Runtime's outputs.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_dims import random_feeds  # noqa: E402

# model: (ranges, sizes of each set)
MODELS = {
    "dyn_mlp": ({"batch": (1, 64)}, [{"batch": 1}, {"batch": 7}, {"batch": 64}]),
    "two_dims": ({"batch": (1, 8), "seq": (1, 32)},
                 [{"batch": 1, "seq": 1}, {"batch": 3, "seq": 17}, {"batch": 8, "seq": 32}]),
    "dyn_attn": ({"batch": (1, 8), "seq": (2, 64)},
                 [{"batch": 1, "seq": 2}, {"batch": 5, "seq": 33}, {"batch": 8, "seq": 64}]),
    "dyn_chain": ({"batch": (1, 8), "seq": (1, 64)},
                  [{"batch": 1, "seq": 1}, {"batch": 3, "seq": 17}, {"batch": 8, "seq": 64}]),
    "dyn_cnn": ({"batch": (1, 16)}, [{"batch": 1}, {"batch": 5}, {"batch": 16}]),
    "dyn_tail": ({"batch": (1, 8), "seq": (2, 64)},
                 [{"batch": 1, "seq": 2}, {"batch": 2, "seq": 5}, {"batch": 8, "seq": 64}]),
    "dyn_shape": ({"batch": (1, 8)}, [{"batch": 1}, {"batch": 6}]),
}


def write(path, array):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())


def main():
    out = os.path.join(sys.argv[1], "dims")
    rng = np.random.default_rng(5)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "make_dim_models.py"), tmp], check=True)
        for name, (ranges, sets) in MODELS.items():
            folder = os.path.join(out, name)
            os.makedirs(folder, exist_ok=True)
            model_path = os.path.join(folder, "model.onnx")
            model = onnx.load(os.path.join(tmp, name + ".onnx"))
            onnx.save(model, model_path)
            with open(os.path.join(folder, "ranges.txt"), "w") as f:
                for dim, (lo, hi) in ranges.items():
                    f.write(f"{dim}={lo}..{hi}\n")
            with open(os.path.join(folder, "tolerance.txt"), "w") as f:
                f.write("1e-4 1e-5\n")
            session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
            for k, sizes in enumerate(sets):
                data = os.path.join(folder, f"test_data_set_{k}")
                os.makedirs(data, exist_ok=True)
                feeds = random_feeds(model, sizes, rng)
                for i, inp in enumerate(model.graph.input):
                    write(os.path.join(data, f"input_{i}.pb"), feeds[inp.name])
                for i, value in enumerate(session.run(None, feeds)):
                    write(os.path.join(data, f"output_{i}.pb"), np.asarray(value))


if __name__ == "__main__":
    main()
