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
