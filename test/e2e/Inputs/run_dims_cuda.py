#!/usr/bin/env python3
"""Compiles a model over ranges for --target=cuda and runs the artifact,
its kernels built for the host, at given sizes against ONNX Runtime:

    run_dims_cuda.py MODEL.onnx PREFIX FAKE_CUDA_DIR "KILNC ARGS" NAME=V[,...] [...]

kilnc MODEL KILNC_ARGS --target=cuda writes PREFIX.so and (--emit=cuda-host)
PREFIX.host.cpp, which the host C++ compiler builds into PREFIX.host.so;
run_dims.py then runs kiln-run on the fake libcuda of FAKE_CUDA_DIR
(test/unit/runtime/FakeCudaDriver.c), which runs each launch's threads on
the CPU (KILN_FAKE_CUDA_KERNELS). Prints run_dims.py's lines; exits 1
when a step fails or an output differs.
"""
import os
import shlex
import subprocess
import sys


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    sys.stdout.write(result.stdout + result.stderr)
    if result.returncode != 0:
        print("failed: " + " ".join(cmd))
        sys.exit(1)


def main():
    model, prefix, fake_dir, kilnc_args = sys.argv[1:5]
    args = ["kilnc", model] + shlex.split(kilnc_args) + ["--target=cuda"]
    run(args + ["-o", prefix, "--shared"])
    run(args + ["--emit=cuda-host", "-o", prefix + ".host.cpp"])
    run(["c++", "-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-pthread", "-fno-strict-aliasing",
         prefix + ".host.cpp", "-o", prefix + ".host.so"])
    env = dict(os.environ)
    env["KILN_FAKE_CUDA_KERNELS"] = prefix + ".host.so"
    env["LD_LIBRARY_PATH"] = fake_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    here = os.path.dirname(os.path.abspath(__file__))
    run([sys.executable, os.path.join(here, "run_dims.py"), model, prefix + ".so", "kiln-run",
         prefix + "-runs"] + sys.argv[5:], env)


if __name__ == "__main__":
    main()
