#!/usr/bin/env python3
"""Seeds the artifact-loader fuzzer with real descriptors.

    make_artifact_corpus.py BUILD_DIR OUT_DIR

Compiles a few e2e test models with BUILD_DIR/bin/kilnc --shared, and a
data-parallel training step for the CPU and for CUDA (its buckets and bucket
steps), loads each .so and writes the bytes of its descriptor
(kiln_artifact_v1()->descriptor).
"""
import ctypes
import glob
import os
import subprocess
import sys
import tempfile


class Artifact(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                ("descriptor", ctypes.c_void_p), ("descriptor_size", ctypes.c_uint64),
                ("run_packed", ctypes.c_void_p)]  # the fields past it are not read here


def main():
    build, out = sys.argv[1], sys.argv[2]
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(src, "test/e2e/Inputs/make_e2e_models.py"), tmp],
                       check=True, capture_output=True)
        jobs = [(os.path.basename(m)[:-5], [m]) for m in sorted(glob.glob(os.path.join(tmp, "*.onnx")))]
        jobs.append(("mlp", [os.path.join(src, "examples/mlp.onnx")]))
        sys.path.insert(0, os.path.join(src, "test/e2e/Inputs"))
        from data_parallel_check_models import FLOAT, make_model
        step = os.path.join(tmp, "dp_step.onnx")
        make_model(step, 8, FLOAT)
        dp = ["train", step, "--loss=loss", "--data-parallel", "--bucket-bytes=600"]
        jobs += [("dp_step", dp), ("dp_step_cuda", dp + ["--target=cuda"])]
        for name, args in jobs:
            prefix = os.path.join(tmp, name + "_art")
            r = subprocess.run([os.path.join(build, "bin/kilnc"), *args, "-o", prefix, "--shared"],
                               capture_output=True)
            if r.returncode:
                continue  # e.g. --target=cuda in a build without the CUDA toolkit
            lib = ctypes.CDLL(prefix + ".so")
            lib.kiln_artifact_v1.restype = ctypes.POINTER(Artifact)
            a = lib.kiln_artifact_v1().contents
            data = ctypes.string_at(a.descriptor, a.descriptor_size)
            with open(os.path.join(out, name + ".bin"), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
