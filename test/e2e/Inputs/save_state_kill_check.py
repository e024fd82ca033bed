#!/usr/bin/env python3
"""Kills `kiln-run --save-state` at random moments; the state file must always
hold a whole state, the one before the run or the one after.

    save_state_kill_check.py OUTDIR [KILLS]

Compiles a training step whose state is 4 MiB (an MLP 1024-1024-1 trained
with Adam, so parameters and moments), then repeats KILLS times (default
60): run one step from the current state file saving over it, with SIGKILL
sent after a random delay between 0 and the time a whole run takes. After
each kill the file must be byte for byte the state before the step or the
state after it (computed once, unkilled, from the same start); a killed
write may leave its temporary beside it, which is removed. Prints a summary
line and exits 1 at the first torn state. kilnc and kiln-run come from PATH.
"""
import hashlib
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(path):
    rng = np.random.default_rng(0)
    w1 = (rng.normal(size=(1024, 1024)) / 32).astype(np.float32)
    w2 = (rng.normal(size=(1024, 1)) / 32).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
         helper.make_node("Relu", ["h"], ["a"], name="relu"),
         helper.make_node("MatMul", ["a", "w2"], ["p"], name="fc2"),
         helper.make_node("Sub", ["p", "t"], ["d"], name="err"),
         helper.make_node("Mul", ["d", "d"], ["sq"], name="sq"),
         helper.make_node("ReduceMean", ["sq"], ["loss"], name="loss", keepdims=0)],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1024]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [4, 1])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    out = sys.argv[1]
    kills = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    os.makedirs(out, exist_ok=True)
    model = os.path.join(out, "mlp.onnx")
    make_model(model)
    prefix = os.path.join(out, "step")
    subprocess.run(["kilnc", "train", model, "--loss=loss", "--optimizer=adam", "-o", prefix, "--shared"],
                   check=True)
    rng = np.random.default_rng(1)
    np.save(os.path.join(out, "x.npy"), rng.normal(size=(4, 1024)).astype(np.float32))
    np.save(os.path.join(out, "t.npy"), rng.normal(size=(4, 1)).astype(np.float32))
    base = ["kiln-run", prefix + ".so", "--input", "x=" + os.path.join(out, "x.npy"),
            "--input", "t=" + os.path.join(out, "t.npy")]
    state = os.path.join(out, "state.bin")
    subprocess.run(base + ["--save-state", state], check=True, capture_output=True)  # one step from the start
    random.seed(2)
    torn = completed = killed = 0
    for i in range(kills):
        before = digest(state)
        # The state after one more step, from a copy, unkilled.
        ahead = os.path.join(out, "ahead.bin")
        subprocess.run(["cp", state, ahead], check=True)
        t0 = time.monotonic()
        subprocess.run(base + ["--state", ahead, "--save-state", ahead], check=True, capture_output=True)
        whole = time.monotonic() - t0
        after = digest(ahead)
        p = subprocess.Popen(base + ["--state", state, "--save-state", state], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(0.0, whole))
        p.send_signal(signal.SIGKILL)
        code = p.wait()
        if code == 0:
            completed += 1
        else:
            killed += 1
        now = digest(state)
        if now not in (before, after):
            torn += 1
            print(f"kill {i}: TORN state ({os.path.getsize(state)} bytes)")
            break  # the next step cannot start from a torn state
        leftovers = [f for f in os.listdir(out) if f.startswith("state.bin.tmp-")]
        for f in leftovers:  # a killed write may leave its temporary; never the target torn
            os.remove(os.path.join(out, f))
    print(f"save-state kills: {killed} killed, {completed} finished first, {torn} torn states of "
          f"{killed + completed}")
    return 1 if torn else 0


if __name__ == "__main__":
    sys.exit(main())
