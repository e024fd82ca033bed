#!/usr/bin/env python3
"""Writes that fail, and compiles that are interrupted.

    output_failure_check.py OUTDIR

1. A full disk: kilnc writing a stage to /dev/full and to a standard output
   that is /dev/full, then (where this process may mount a small tmpfs, as
   root may) kilnc writing an artifact, kiln-run writing its outputs and
   its state into a full file system: each must fail with exit 1 and
   "cannot write '...': No space left on device", with no LLVM fatal error
   and no file or temporary left behind.
2. Interrupted compiles: kilnc on a model with 24 MB of weights, sent
   SIGINT or SIGTERM at moments spread over its run, 12 times: no
   PREFIX.*.tmp-* file may be left.
3. An interrupted link: kilnc --shared with a linker driver whose child
   writes the output 2 s late, sent SIGTERM while the driver runs. The
   signal must reach the driver's children too: nothing may be written
   after kilnc has removed its temporaries (a real cc/collect2/ld did).

Prints a line per check ("NAME: ok" or "NAME: MISMATCH ...") and exits 1 on
a mismatch. kilnc and kiln-run come from PATH.
"""
import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

failures = 0
ENOSPC = "No space left on device"


def report(name, ok, detail=""):
    global failures
    print(f"{name}: " + ("ok" if ok else "MISMATCH " + detail), flush=True)
    failures += 0 if ok else 1


def run(cmd, stdout=subprocess.PIPE):
    return subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)


def expect_enospc(name, result, path):
    err = result.stderr
    report(name, result.returncode == 1 and f"cannot write '{path}'" in err and ENOSPC in err
           and "LLVM ERROR" not in err, f"exit {result.returncode}: {err.strip()[-300:]}")


def fill(folder):
    """Fills the file system of `folder` to the last byte."""
    with open(os.path.join(folder, "fill"), "wb", buffering=0) as f:
        for size in (4096, 512, 1):
            try:
                while True:
                    f.write(bytes(size))
            except OSError:
                pass


def big_model(path):
    rng = np.random.default_rng(0)
    w = rng.normal(size=(256, 256, 3, 3)).astype(np.float32)  # 2.4 MB a layer
    nodes, inits, x = [], [], "x"
    for i in range(10):
        inits.append(numpy_helper.from_array(w + i, f"w{i}"))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        x = f"c{i}"
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256, 8, 8])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 256, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
    mlp = os.path.join(src, "examples", "mlp.onnx")

    # 1. A full disk.
    expect_enospc("stage to /dev/full", run(["kilnc", mlp, "--emit=import", "-o", "/dev/full"]), "/dev/full")
    with open("/dev/full", "w") as full:
        r = run(["kilnc", mlp, "--emit=import"], stdout=full)
    report("stage to a full standard output", r.returncode == 1 and ENOSPC in r.stderr and
           "LLVM ERROR" not in r.stderr, r.stderr.strip()[-300:])
    report("/dev/full is still a device", not os.path.isfile("/dev/full"))

    tiny = os.path.join(out, "tiny")
    os.makedirs(tiny, exist_ok=True)
    mounted = run(["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", tiny]).returncode == 0
    if not mounted:
        print("full file system: skipped (cannot mount a tmpfs here); /dev/full covered the rest")
    else:
        try:
            expect_enospc("artifact into a full file system", run(["kilnc", mlp, "-o", os.path.join(tiny, "m"),
                                                                    "--shared"]),
                          os.path.join(tiny, "m.o"))
            report("nothing left by kilnc", os.listdir(tiny) == [], str(os.listdir(tiny)))
            prefix = os.path.join(out, "mlp")
            subprocess.run(["kilnc", mlp, "-o", prefix, "--shared"], check=True)
            x = os.path.join(out, "x.npy")
            np.save(x, np.zeros((1, 32), np.float32))
            fill(tiny)
            r = run(["kiln-run", prefix + ".so", "--input", "input=" + x, "--output-dir", os.path.join(tiny, "o")])
            expect_enospc("kiln-run outputs into a full file system", r,
                          os.path.join(tiny, "o", "probabilities.npy"))
            report("no partial output", os.listdir(os.path.join(tiny, "o")) == [],
                   str(os.listdir(os.path.join(tiny, "o"))))
            r = run(["kilnc", "train", os.path.join(src, "test", "e2e", "Inputs", "train_tiny.mlir"),
                     "--optimizer=sgd", "-o", os.path.join(out, "tiny_step"), "--shared"])
            if r.returncode == 0:
                state = os.path.join(tiny, "state.bin")
                x3 = os.path.join(out, "x3.npy")
                np.save(x3, np.ones(3, np.float32))
                r = run(["kiln-run", os.path.join(out, "tiny_step.so"), "--input", "x=" + x3,
                         "--save-state", state])
                expect_enospc("kiln-run state into a full file system", r, state)
                report("no temporary state left", not glob.glob(state + "*"), str(glob.glob(state + "*")))
        finally:
            run(["umount", tiny])

    # 2. Interrupted compiles leave no temporaries.
    model = os.path.join(out, "big.onnx")
    big_model(model)
    t0 = time.monotonic()
    subprocess.run(["kilnc", model, "-o", os.path.join(out, "whole"), "--shared"], check=True)
    whole = time.monotonic() - t0
    left = []
    for i in range(12):
        prefix = os.path.join(out, f"cut{i}")
        p = subprocess.Popen(["kilnc", model, "-o", prefix, "--shared"], stderr=subprocess.DEVNULL)
        time.sleep(whole * (0.3 + 0.7 * i / 11))
        p.send_signal(signal.SIGINT if i % 2 else signal.SIGTERM)
        p.wait()
        left += glob.glob(prefix + ".*.tmp-*")
    report("interrupted compiles leave no temporaries", not left, str(left))

    # A reader that goes away (`kilnc ... --time-passes 2>&1 | head -1`):
    # the write after it kills the compile with SIGPIPE, which must not
    # leave the temporaries either.
    prefix = os.path.join(out, "piped")
    p = subprocess.Popen(["kilnc", model, "-o", prefix, "--shared", "--time-passes"], stderr=subprocess.PIPE)
    first = p.stderr.readline()
    p.stderr.close()
    p.wait()
    left = glob.glob(prefix + ".*")
    report("a closed pipe leaves no temporaries", bool(first) and p.returncode == -signal.SIGPIPE and not left,
           f"exit {p.returncode}, left {left}")

    # 3. An interrupted link.
    mark = os.path.join(out, "linking")
    slow = os.path.join(out, "slow-linker")
    with open(slow, "w") as f:
        f.write("#!/bin/sh\n"
                "out=\n"
                "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
                f"touch '{mark}'\n"
                "( sleep 2; echo late > \"$out\" ) &\n"
                "wait\n")
    os.chmod(slow, 0o755)
    prefix = os.path.join(out, "slow")
    p = subprocess.Popen(["kilnc", mlp, "-o", prefix, "--shared", "--linker", slow], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not os.path.exists(mark) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    started = os.path.exists(mark)
    p.send_signal(signal.SIGTERM)
    p.wait()
    time.sleep(3)
    left = glob.glob(prefix + ".*")
    report("an interrupted link writes nothing late", started and p.returncode == -signal.SIGTERM and not left,
           f"linker started: {started}, exit {p.returncode}, left {left}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
