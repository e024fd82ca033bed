"""kilnc train --data-parallel end to end, on two MPI ranks of this machine.

Usage: data_parallel_check.py OUT_DIR

An MLP regression (MatMul, Add, Relu, MatMul, Add, mean squared error),
compiled as a data-parallel step for a batch of 8 per rank and run with
`mpirun -np 2 kiln-run` on a whole batch of 16 that kiln-run splits by
rank. Each check prints '<name>: ok' or '<name>: MISMATCH ...':

* sgd: one step equals w - lr * (grad(A) + grad(B)) / 2, with grad(A) and
  grad(B) computed by `kilnc grad` on each half (rtol 1e-5), and also by
  numpy in float64; it differs from rank 0's half alone.
* adam_f64 / adam_f32: 100 Adam steps on 2 ranks equal 100 steps of the
  plain (not data-parallel) step on 1 rank with the concatenated batch:
  the mean over the ranks of the halves' gradients is the whole batch's
  gradient, up to rounding (f64: 1e-12 relative to max(|w|, 1); f32:
  1e-5, the f32 sums being ordered differently).
* ranks: every rank ends with the same state (kiln-run checks the bytes).
* trace: in a profiled run, the first bucket's all-reduce starts before
  the last backward kernel (fc1's weight gradient).
* range: one step compiled over `--dim batch=1..16` runs 20 Adam steps of
  a whole batch of 12, then of 2, split by rank (6 and 1 per rank), equal
  to 1 rank of the plain range step (f64, 1e-12), rank 0's first loss
  being its half's; a whole batch that does
  not split evenly is an error naming the input.
* timeout: when one rank stops calling, the other's step fails with a
  timeout instead of hanging.
"""
import json
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_parallel_check_models import I, O, make_model  # noqa: E402

OUT = sys.argv[1]
MPIRUN = ["mpirun", "--oversubscribe", "-np", "2"]


def run(cmd, expect_ok=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if expect_ok and r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r


def kilnc(*args):
    run(["kilnc", *args])


def p(name):
    return os.path.join(OUT, name)


def verdict(name, ok, detail=""):
    print(f"{name}: {'ok' if ok else 'MISMATCH ' + detail}")


def numpy_grads(P, x, t):
    h1 = x @ P["w1"] + P["b1"]
    h = np.maximum(h1, 0)
    d = h @ P["w2"] + P["b2"] - t
    gy = 2 * d / d.size
    gh = (gy @ P["w2"].T) * (h1 > 0)
    return {"w1": x.T @ gh, "b1": gh.sum(0), "w2": h.T @ gy, "b2": gy.sum(0)}


rng = np.random.default_rng(1)

# ---- one SGD step ------------------------------------------------------------
P = make_model(p("mlp8.onnx"), 8, TensorProto.FLOAT)
x = rng.standard_normal((16, I)).astype(np.float32)
t = rng.standard_normal((16, O)).astype(np.float32)
np.save(p("x.npy"), x)
np.save(p("t.npy"), t)
for half, rows in (("a", slice(0, 8)), ("b", slice(8, 16))):
    np.save(p(f"x_{half}.npy"), x[rows])
    np.save(p(f"t_{half}.npy"), t[rows])
lr = 0.1
kilnc("train", p("mlp8.onnx"), "--loss=loss", f"--lr={lr}", "--data-parallel",
      "--bucket-bytes=600", "-o", p("sgd"), "--shared")
kilnc("grad", p("mlp8.onnx"), "--loss=loss", "-o", p("grad"), "--shared")
# kilnc grad takes the parameters as inputs.
params = []
for k, v in P.items():
    np.save(p(f"{k}.npy"), v.astype(np.float32))
    params += ["--input", f"{k}={p(f'{k}.npy')}"]
grads = {}
for half in "ab":
    run(["kiln-run", p("grad.so"), "--input", f"x={p(f'x_{half}.npy')}",
         "--input", f"t={p(f't_{half}.npy')}", *params, "--output-dir", p(f"grad_{half}")])
    grads[half] = {k: np.load(p(f"grad_{half}/grad.{k}.npy")).astype(np.float64) for k in P}
r = run(MPIRUN + ["kiln-run", p("sgd.so"), "--input", f"x={p('x.npy')}", "--input",
                  f"t={p('t.npy')}", "--output-dir", p("sgd_out")])
ranks_ok = "state: identical on all 2 ranks" in r.stdout
ok, alone_differs, numpy_ok = True, True, True
ref = {h: numpy_grads(P, x[rows].astype(np.float64), t[rows].astype(np.float64))
       for h, rows in (("a", slice(0, 8)), ("b", slice(8, 16)))}
for k in P:
    got = np.load(p(f"sgd_out/state.{k}.npy")).astype(np.float64)
    want = P[k] - lr * (grads["a"][k] + grads["b"][k]) / 2
    ok &= np.allclose(got, want, rtol=1e-5, atol=1e-7)
    numpy_ok &= np.allclose(got, P[k] - lr * (ref["a"][k] + ref["b"][k]) / 2, rtol=1e-5, atol=1e-7)
    alone_differs &= not np.allclose(got, P[k] - lr * grads["a"][k], rtol=1e-5, atol=1e-7)
verdict("sgd step equals the mean of kilnc grad's halves", ok)
# kilnc grad --data-parallel: the grad.<p> outputs are the averages.
kilnc("grad", p("mlp8.onnx"), "--loss=loss", "--data-parallel", "-o", p("grad_dp"), "--shared")
run(MPIRUN + ["kiln-run", p("grad_dp.so"), "--input", f"x={p('x.npy')}", "--input", f"t={p('t.npy')}",
              *params, "--output-dir", p("grad_dp_out")])
grad_ok = all(np.allclose(np.load(p(f"grad_dp_out/grad.{k}.npy")), (grads["a"][k] + grads["b"][k]) / 2,
                          rtol=1e-6, atol=1e-8) for k in P)
verdict("grad outputs are the mean of the halves' gradients", grad_ok)
verdict("sgd step equals numpy float64", numpy_ok)
verdict("sgd step differs from rank 0 alone", alone_differs)

# ---- 100 Adam steps: 2 ranks against 1 rank with the whole batch ---------------
for name, dtype, np_type, tol in (("adam_f64", TensorProto.DOUBLE, np.float64, 1e-12),
                                  ("adam_f32", TensorProto.FLOAT, np.float32, 1e-5)):
    P = make_model(p(f"{name}_8.onnx"), 8, dtype)
    make_model(p(f"{name}_16.onnx"), 16, dtype)
    xs = rng.standard_normal((100, 16, I)).astype(np_type)
    ts = (np.tanh(xs[:, :, :O]) + 0.1 * rng.standard_normal((100, 16, O))).astype(np_type)
    np.save(p(f"{name}_xs.npy"), xs)
    np.save(p(f"{name}_ts.npy"), ts)
    common = ["--loss=loss", "--optimizer=adam", "--lr=0.01"]
    kilnc("train", p(f"{name}_8.onnx"), *common, "--data-parallel", "--bucket-bytes=600",
          "-o", p(f"{name}_dp"), "--shared")
    kilnc("train", p(f"{name}_16.onnx"), *common, "-o", p(f"{name}_one"), "--shared")
    inputs = ["--input", f"x={p(f'{name}_xs.npy')}", "--input", f"t={p(f'{name}_ts.npy')}",
              "--steps", "100"]
    r = run(MPIRUN + ["kiln-run", p(f"{name}_dp.so"), *inputs, "--output-dir", p(f"{name}_dp_out")])
    ranks_ok &= "state: identical on all 2 ranks" in r.stdout
    run(["kiln-run", p(f"{name}_one.so"), *inputs, "--output-dir", p(f"{name}_one_out")])
    worst = 0.0
    moved = 0.0
    for k in P:
        got = np.load(p(f"{name}_dp_out/state.{k}.npy")).astype(np.float64)
        want = np.load(p(f"{name}_one_out/state.{k}.npy")).astype(np.float64)
        worst = max(worst, float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1.0))))
        moved = max(moved, float(np.max(np.abs(want - P[k]))))
    # The training moved the parameters: the comparison is not of two
    # untouched initial states.
    verdict(f"{name} 2 ranks equal 1 rank with the whole batch", worst <= tol and moved > 0.05,
            f"(max error {worst:.3g}, tolerance {tol:g}; parameters moved {moved:.3g})")

# ---- over a range of batch sizes (kilnc --dim batch=1..16) ----------------------
# One data-parallel artifact for any batch per rank: 20 Adam steps of a
# whole batch of 12 and of 2 (6 and 1 per rank) against 1 rank of the
# plain range step with the whole batch.
P = make_model(p("range.onnx"), "batch", TensorProto.DOUBLE)
common = ["--loss=loss", "--optimizer=adam", "--lr=0.01", "--dim", "batch=1..16"]
kilnc("train", p("range.onnx"), *common, "--data-parallel", "--bucket-bytes=600",
      "-o", p("range_dp"), "--shared")
kilnc("train", p("range.onnx"), *common, "-o", p("range_one"), "--shared")
for batch in (12, 2):
    xs = rng.standard_normal((20, batch, I))
    ts = np.tanh(xs[:, :, :O]) + 0.1 * rng.standard_normal((20, batch, O))
    np.save(p(f"range_xs_{batch}.npy"), xs)
    np.save(p(f"range_ts_{batch}.npy"), ts)
    inputs = ["--input", f"x={p(f'range_xs_{batch}.npy')}", "--input",
              f"t={p(f'range_ts_{batch}.npy')}", "--steps", "20"]
    r = run(MPIRUN + ["kiln-run", p("range_dp.so"), *inputs, "--output-dir", p(f"range_dp_{batch}")])
    ranks_ok &= "state: identical on all 2 ranks" in r.stdout
    run(["kiln-run", p("range_one.so"), *inputs, "--output-dir", p(f"range_one_{batch}")])
    worst, moved = 0.0, 0.0
    for k in P:
        got = np.load(p(f"range_dp_{batch}/state.{k}.npy"))
        want = np.load(p(f"range_one_{batch}/state.{k}.npy"))
        worst = max(worst, float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1.0))))
        moved = max(moved, float(np.max(np.abs(want - P[k]))))
    # Each rank ran its half: rank 0's first loss (the initial parameters)
    # is its half's, not the whole batch's.
    half = batch // 2
    np.save(p(f"range_xs_{batch}_a.npy"), xs[:1, :half])
    np.save(p(f"range_ts_{batch}_a.npy"), ts[:1, :half])
    run(["kiln-run", p("range_one.so"), "--input", f"x={p(f'range_xs_{batch}_a.npy')}", "--input",
         f"t={p(f'range_ts_{batch}_a.npy')}", "--output-dir", p(f"range_half_{batch}")])
    first = float(np.load(p(f"range_dp_{batch}/loss.npy"))[0])
    halves = abs(first - float(np.load(p(f"range_half_{batch}/loss.npy")))) <= 1e-12 * abs(first) and \
        abs(first - float(np.load(p(f"range_one_{batch}/loss.npy"))[0])) > 1e-6 * abs(first)
    verdict(f"range batch {batch}: 2 ranks equal 1 rank with the whole batch",
            worst <= 1e-12 and moved > 0.05 and halves,
            f"(max error {worst:.3g}; parameters moved {moved:.3g}; rank 0 ran its half: {halves})")
np.save(p("range_x_7.npy"), rng.standard_normal((7, I)))
np.save(p("range_t_7.npy"), rng.standard_normal((7, O)))
r = run(MPIRUN + ["kiln-run", p("range_dp.so"), "--input", f"x={p('range_x_7.npy')}",
                  "--input", f"t={p('range_t_7.npy')}"], expect_ok=False)
verdict("range: an uneven batch is an error", r.returncode != 0 and
        "input 'x': a batch of 7 does not split evenly over 2 ranks" in r.stderr,
        f"(exit {r.returncode}: {r.stderr[-400:]})")
verdict("every rank ends with the same state", ranks_ok)

# ---- the schedule, seen in a profiled run ------------------------------------------
run(MPIRUN + ["kiln-run", p("sgd.so"), "--input", f"x={p('x.npy')}", "--input", f"t={p('t.npy')}",
              "--profile", p("trace.json"), "--profile-runs", "3"])
events = [e for e in json.load(open(p("trace.json")))["traceEvents"] if e.get("ph") == "X"]
first_run = events[: len(events) // 3]
names = [e["name"] for e in first_run]
bucket0 = next(e for e in first_run if e["name"].startswith("all_reduce.bucket0"))
last_fc1 = [e for e in first_run if "fc1" in e["name"].split(",")][-1]
verdict("trace: the first bucket starts before the last backward kernel",
        bucket0["ts"] < last_fc1["ts"], f"({names})")

# ---- a rank that stops calling: a timeout, not a hang ---------------------------------
base = ["kiln-run", p("sgd.so"), "--input", f"x={p('x.npy')}", "--input", f"t={p('t.npy')}"]
r = run(["mpirun", "--oversubscribe", "-np", "1", *base, "--steps", "2", "--comm-timeout", "2",
         ":", "-np", "1", *base, "--steps", "1"], expect_ok=False)
verdict("timeout: the waiting rank fails, saying why",
        r.returncode != 0 and "timed out after 2 s" in r.stderr and "the state is unchanged" in r.stderr,
        f"(exit {r.returncode}: {r.stderr[-400:]})")
