#!/usr/bin/env python3
"""Seeds the artifact-loader fuzzer with real descriptors.

    make_artifact_corpus.py BUILD_DIR OUT_DIR

Compiles a few e2e test models with BUILD_DIR/bin/kilnc --shared, loads each
.so and writes the bytes of its descriptor (kiln_artifact_v1()->descriptor).
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
        models = sorted(glob.glob(os.path.join(tmp, "*.onnx")))
        models.append(os.path.join(src, "examples/mlp.onnx"))
        for model in models:
            name = os.path.basename(model)[:-5]
            prefix = os.path.join(tmp, name + "_art")
            r = subprocess.run([os.path.join(build, "bin/kilnc"), model, "-o", prefix, "--shared"],
                               capture_output=True)
            if r.returncode:
                continue
            lib = ctypes.CDLL(prefix + ".so")
            lib.kiln_artifact_v1.restype = ctypes.POINTER(Artifact)
            a = lib.kiln_artifact_v1().contents
            data = ctypes.string_at(a.descriptor, a.descriptor_size)
            with open(os.path.join(out, name + ".bin"), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
