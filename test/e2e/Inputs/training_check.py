#!/usr/bin/env python3
"""Trains an MLP classifier with `kilnc train` and checks it against numpy.

    training_check.py OUTDIR

Writes an ONNX MLP classifier (Gemm, Tanh, Gemm, SoftmaxCrossEntropyLoss
with mean reduction) in float64 and float32 and a synthetic data set (three
Gaussian blobs in 4-D, 30 batches of 16 points), compiles each with
`kilnc train` for sgd, momentum and adam, and runs 300 steps with
`kiln-run --steps`. The same training is computed independently in numpy
float64 (hand-written forward and backward pass and the optimizer formulas
of docs/passes.md, nothing from Kiln), and the loss curve, the final
parameters and the step counter are compared:

- float64 artifacts must agree with the reference to 1e-11 relative: the
  arithmetic is the same up to rounding order (~1e-16 per op); measured
  over 300 steps: at most 4e-15 on the loss, 2e-14 on the parameters;
- float32 artifacts agree to 2e-5 relative on the loss and 5e-4 on the
  parameters (absolute floor 2e-4): float32 rounds at 6e-8 per op, and the
  measured drift over 300 steps is at most 2e-6 on the loss and 4e-5 on the
  parameters (printed with each check), so the bounds leave a factor of
  ten; a wrong update rule or a step that reads an overwritten parameter
  is off by 1e-2 or more within a few steps.

It also checks that the reference loss falls (the last 10 steps average
below 40% of the first), that training in two halves through a saved state
gives the state of one run bit for bit, and that the parameters written
back into ONNX (`kiln-run --export-onnx`) load in onnxruntime and give the
logits and loss numpy computes from the trained parameters (1e-11 in
float64; 1e-4 in float32, where onnxruntime's float32 forward pass alone
differs from float64 by about 1e-5 on the smallest logits). Prints one line per
check ("NAME: ok" or "NAME: MISMATCH ...") and exits 1 on any mismatch.
kilnc and kiln-run are taken from PATH.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

STEPS = 300
BATCHES = 30
BATCH = 16
D_IN, D_HIDDEN, CLASSES = 4, 16, 3

OPTIMIZERS = {
    "sgd": {"lr": 0.2},
    "momentum": {"lr": 0.05, "momentum": 0.9},
    "adam": {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
}

failures = 0


def report(name, ok, detail="", measured=""):
    global failures
    print(f"{name}: " + ("ok" if ok else "MISMATCH " + detail) +
          (f" ({measured})" if measured and ok else ""), flush=True)
    failures += 0 if ok else 1


def data():
    """Three Gaussian blobs; batch i holds 16 points with their labels."""
    rng = np.random.default_rng(11)
    centers = rng.normal(0.0, 2.0, size=(CLASSES, D_IN))
    labels = rng.integers(0, CLASSES, size=(BATCHES, BATCH))
    x = centers[labels] + rng.normal(0.0, 1.0, size=(BATCHES, BATCH, D_IN))
    return x, labels.astype(np.int64)


def initial_parameters():
    rng = np.random.default_rng(5)
    return {
        "w1": rng.normal(0.0, 0.5, size=(D_IN, D_HIDDEN)),
        "b1": np.zeros(D_HIDDEN),
        "w2": rng.normal(0.0, 0.5, size=(D_HIDDEN, CLASSES)),
        "b2": np.zeros(CLASSES),
    }


def make_model(path, params, dtype):
    onnx_type = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Tanh", ["h"], ["a"], name="act"),
        helper.make_node("Gemm", ["a", "w2", "b2"], ["logits"], name="fc2"),
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"],
                         ["loss"], reduction="mean", name="xent"),
    ]
    inits = [numpy_helper.from_array(params[n].astype(dtype), n)
             for n in ("w1", "b1", "w2", "b2")]
    graph = helper.make_graph(
        nodes, "mlp_classifier",
        [helper.make_tensor_value_info("x", onnx_type, [BATCH, D_IN]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [BATCH])],
        [helper.make_tensor_value_info("loss", onnx_type, []),
         helper.make_tensor_value_info("logits", onnx_type, [BATCH, CLASSES])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


# ---- the float64 reference: forward, backward and the optimizers -------------

def forward(p, x):
    h = x @ p["w1"] + p["b1"]
    a = np.tanh(h)
    logits = a @ p["w2"] + p["b2"]
    return h, a, logits


def loss_and_grads(p, x, labels):
    _, a, logits = forward(p, x)
    shifted = logits - logits.max(axis=1, keepdims=True)
    logsum = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    logp = shifted - logsum
    n = x.shape[0]
    loss = -logp[np.arange(n), labels].mean()
    dlogits = np.exp(logp)
    dlogits[np.arange(n), labels] -= 1.0
    dlogits /= n
    grads = {"w2": a.T @ dlogits, "b2": dlogits.sum(axis=0)}
    da = dlogits @ p["w2"].T
    dh = da * (1.0 - a * a)
    grads["w1"] = x.T @ dh
    grads["b1"] = dh.sum(axis=0)
    return loss, grads


def reference_training(name, hyper, params, xs, ys, steps):
    p = {k: v.copy() for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(v) for k, v in p.items()}
    losses = []
    for t in range(1, steps + 1):
        i = (t - 1) % len(xs)
        loss, g = loss_and_grads(p, xs[i], ys[i])
        losses.append(loss)
        for k in p:
            if name == "sgd":
                p[k] = p[k] - hyper["lr"] * g[k]
            elif name == "momentum":
                m[k] = hyper["momentum"] * m[k] + g[k]
                p[k] = p[k] - hyper["lr"] * m[k]
            else:
                b1, b2 = hyper["beta1"], hyper["beta2"]
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k]
                denom = np.sqrt(v[k]) / np.sqrt(1 - b2 ** t) + hyper["epsilon"]
                p[k] = p[k] - hyper["lr"] / (1 - b1 ** t) * m[k] / denom
    return np.array(losses), p


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(" ".join(cmd) + "\n" + result.stdout + result.stderr)
        sys.exit(1)
    return result.stdout


def relative_error(a, b, floor):
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), floor)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    xs, ys = data()
    params = initial_parameters()
    import onnxruntime as ort

    for dtype, tag in ((np.float64, "f64"), (np.float32, "f32")):
        model = os.path.join(out, f"mlp_{tag}.onnx")
        # The reference starts from the parameters the model holds (rounded
        # to float32 for the float32 model) and sees the same rounded data.
        start = {k: v.astype(dtype).astype(np.float64) for k, v in params.items()}
        make_model(model, start, dtype)
        x_file = os.path.join(out, f"x_{tag}.npy")
        y_file = os.path.join(out, "labels.npy")
        np.save(x_file, xs.astype(dtype))
        np.save(y_file, ys)
        xs_ref = xs.astype(dtype).astype(np.float64)
        loss_tol, param_tol = (1e-11, 1e-11) if tag == "f64" else (2e-5, 5e-4)
        floor = 1e-12 if tag == "f64" else 2e-4

        for name, hyper in OPTIMIZERS.items():
            case = f"{name}_{tag}"
            prefix = os.path.join(out, case)
            flags = [f"--{k}={v!r}" for k, v in hyper.items()]
            run(["kilnc", "train", model, "--loss=loss", f"--optimizer={name}",
                 *flags, "-o", prefix, "--shared"])
            result = os.path.join(out, case + "_out")
            trained = os.path.join(out, case + "_trained.onnx")
            run(["kiln-run", prefix + ".so", "--input", "x=" + x_file,
                 "--input", "labels=" + y_file, "--steps", str(STEPS),
                 "--output-dir", result, "--save-state", prefix + ".state",
                 "--export-onnx", f"{model}={trained}"])

            losses, final = reference_training(name, hyper, start, xs_ref, ys,
                                               STEPS)
            falls = losses[-10:].mean() < 0.4 * losses[:10].mean()
            report(f"{case} reference loss falls", falls,
                   f"from {losses[:10].mean():.4f} to {losses[-10:].mean():.4f}")
            kiln_losses = np.load(os.path.join(result, "loss.npy")).astype(np.float64)
            err = relative_error(kiln_losses, losses, floor)
            report(f"{case} loss curve", kiln_losses.shape == (STEPS,) and err <= loss_tol,
                   f"max rel error {err:.3g} > {loss_tol} "
                   f"(kiln {kiln_losses[-1]:.6f}, numpy {losses[-1]:.6f})",
                   f"loss {losses[0]:.4f} -> {losses[-1]:.4f}, max rel error {err:.2g}")
            worst = 0.0
            for k in final:
                got = np.load(os.path.join(result, f"state.{k}.npy")).astype(np.float64)
                worst = max(worst, relative_error(got, final[k], floor))
            report(f"{case} parameters", worst <= param_tol,
                   f"max rel error {worst:.3g} > {param_tol}",
                   f"max rel error {worst:.2g}")
            step = np.load(os.path.join(result, "state.optimizer.step.npy"))
            report(f"{case} step counter", step.dtype == np.float64 and step == STEPS,
                   f"{step!r}")

            # Written back to ONNX: onnxruntime's logits on the trained model
            # equal numpy's forward pass with the parameters kiln trained.
            kiln_params = {k: np.load(os.path.join(result, f"state.{k}.npy"))
                           .astype(np.float64) for k in final}
            session = ort.InferenceSession(trained, providers=["CPUExecutionProvider"])
            ort_loss, ort_logits = session.run(
                ["loss", "logits"], {"x": xs[0].astype(dtype), "labels": ys[0]})
            _, _, logits = forward(kiln_params, xs_ref[0])
            expected_loss, _ = loss_and_grads(kiln_params, xs_ref[0], ys[0])
            err = max(relative_error(ort_logits.astype(np.float64), logits, 1e-3),
                      relative_error(np.float64(ort_loss), expected_loss, 1e-3))
            ort_tol = 1e-11 if tag == "f64" else 1e-4
            report(f"{case} onnx write-back", err <= ort_tol,
                   f"onnxruntime vs numpy on the trained parameters: {err:.3g}",
                   f"max rel error {err:.2g}")

        # Two halves through a saved state give one run's state, bit for bit
        # (150 is a multiple of the 30 batches, so the second half starts
        # over at batch 0 as the single run does at step 150).
        prefix = os.path.join(out, f"adam_{tag}")
        half = os.path.join(out, f"half_{tag}.state")
        run(["kiln-run", prefix + ".so", "--input", "x=" + x_file, "--input",
             "labels=" + y_file, "--steps", str(STEPS // 2), "--save-state", half])
        run(["kiln-run", prefix + ".so", "--input", "x=" + x_file, "--input",
             "labels=" + y_file, "--steps", str(STEPS // 2), "--state", half,
             "--save-state", half])
        same = open(half, "rb").read() == open(prefix + ".state", "rb").read()
        report(f"resume_{tag}", same, "two halves differ from one run")

    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
