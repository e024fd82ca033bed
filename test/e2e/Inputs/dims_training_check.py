#!/usr/bin/env python3
"""Gradients and training steps over a symbolic batch (decision 0027, step 8).

    dims_training_check.py OUTDIR

Gradients: ONNX models whose inputs declare a symbolic `batch` (an MLP with
a mean-squared error, a classifier with SoftmaxCrossEntropyLoss, a
transformer block with an embedding, causal attention and a mean over batch
and sequence, a CNN with a strided convolution, BatchNormalization in
training mode, max and average pooling, grouped and depthwise
convolutions) are compiled once with `kilnc grad
--dim batch=1..6` and run by kiln-run at batch 1, 4 and 6, and position
tables sliced to a symbolic sequence (`--dim batch=1..3 --dim seq=1..8`) at
batch x seq 1x1, 2x5 and 3x8; the loss and every parameter's gradient are
compared with central finite differences of an independent numpy forward
function (float64) at that batch. The transformer and the CNN again with
`--memory-budget=1K`, where recomputing values must lower the arena.

Training: the classifier compiled once with `kilnc train --dim batch=1..16`
(sgd and adam) runs steps at batch 16, 5 and 1 in turn, the state carried
between kiln-run calls by --state/--save-state; the loss of each step and
the final parameters are compared with a numpy float64 reference of the
same steps (the mean over each step's own batch). Then one kiln-run of
`--steps 3` over files that stack a batch of 7 per step.

With `--cuda FAKE_CUDA_DIR` the same checks of the MLP, the transformer,
the CNN and the training steps compile with --target=cuda and run on the
fake libcuda of that folder, which runs the kernels built for the host
(--emit=cuda-host) on the CPU.

Prints one line per check ("NAME: ok" or "NAME: MISMATCH ...") and exits 1
on any mismatch. kilnc and kiln-run are taken from PATH.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradient_check import (Case, conv_np, finite_differences, log_softmax,  # noqa: E402
                            pool_np, transformer_block)

RNG = np.random.default_rng(23)
BATCHES = (1, 4, 6)
failures = 0


def report(name, problem):
    global failures
    print(f"{name}: " + (f"MISMATCH {problem}" if problem else "ok"), flush=True)
    failures += 1 if problem else 0


# --cuda: the fake libcuda's folder (None: the CPU target).
FAKE_CUDA = None


def run(cmd):
    env = None
    if FAKE_CUDA and cmd[0] == "kiln-run":
        env = dict(os.environ)
        env["KILN_FAKE_CUDA_KERNELS"] = cmd[1][:-len(".so")] + ".host.so"
        env["LD_LIBRARY_PATH"] = FAKE_CUDA + (":" + env["LD_LIBRARY_PATH"]
                                              if env.get("LD_LIBRARY_PATH") else "")
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return result.returncode, result.stdout + result.stderr


def kilnc(cmd, prefix):
    """kilnc CMD -o PREFIX --shared; with --cuda for the CUDA target, and
    PREFIX.host.so built from the kernels' host source."""
    if not FAKE_CUDA:
        return run(["kilnc", *cmd, "-o", prefix, "--shared"])
    rc, log = run(["kilnc", *cmd, "--target=cuda", "-o", prefix, "--shared"])
    if rc == 0:
        rc, more = run(["kilnc", *cmd, "--target=cuda", "--emit=cuda-host", "-o", prefix + ".host.cpp"])
        log += more
    if rc == 0:
        rc, more = run(["c++", "-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-pthread",
                        "-fno-strict-aliasing", prefix + ".host.cpp", "-o", prefix + ".host.so"])
        log += more
    return rc, log


def save_model(path, nodes, inputs, inits, outputs, opset):
    """`inputs`: (name, onnx type, shape with "batch"); `inits`: arrays."""
    graph = helper.make_graph(
        nodes, os.path.basename(path),
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def uniform(shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


D = TensorProto.DOUBLE
I64 = TensorProto.INT64


def mlp():
    inits = {"w1": uniform((3, 5)), "b1": uniform((5,)), "w2": uniform((5, 2))}
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h0"], name="fc1"),
             helper.make_node("Tanh", ["h0"], ["h"], name="act"),
             helper.make_node("MatMul", ["h", "w2"], ["z"], name="fc2"),
             helper.make_node("Sub", ["z", "t"], ["d"], name="err"),
             helper.make_node("Mul", ["d", "d"], ["sq"], name="square"),
             helper.make_node("ReduceMean", ["sq"], ["loss"], name="mse", keepdims=0)]
    inputs = [("x", D, ["batch", 3]), ("t", D, ["batch", 2])]

    def feeds(b):
        return {"x": uniform((b, 3)), "t": uniform((b, 2))}

    def fn(x, t, w1, b1, w2):
        d = np.tanh(x @ w1 + b1) @ w2 - t
        return (d * d).mean()
    return dict(nodes=nodes, inputs=inputs, inits=inits, feeds=feeds, fn=fn,
                outputs=[("loss", D, []), ("z", D, ["batch", 2])], opset=17)


def classifier():
    inits = {"w1": uniform((4, 6)), "b1": uniform((6,)), "w2": uniform((6, 3)),
             "b2": uniform((3,))}
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
             helper.make_node("Tanh", ["h"], ["a"], name="act"),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["logits"], name="fc2"),
             helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"],
                              reduction="mean", name="xent")]
    inputs = [("x", D, ["batch", 4]), ("labels", I64, ["batch"])]

    def feeds(b):
        return {"x": uniform((b, 4)), "labels": RNG.integers(0, 3, (b,)).astype(np.int64)}

    def fn(x, labels, w1, b1, w2, b2):
        logits = np.tanh(x @ w1 + b1) @ w2 + b2
        return -log_softmax(logits)[np.arange(len(labels)), labels].mean()
    return dict(nodes=nodes, inputs=inputs, inits=inits, feeds=feeds, fn=fn,
                outputs=[("loss", D, []), ("logits", D, ["batch", 3])], opset=17)


def cnn():
    """Conv (stride 2) + BatchNormalization in training mode (batch
    statistics over the symbolic batch) + Relu + MaxPool + Conv +
    AveragePool + Flatten + Gemm + SoftmaxCrossEntropyLoss."""
    inits = {"W1": uniform((3, 2, 3, 3)), "B1": uniform((3,)), "S": uniform((3,), 0.5, 1.5),
             "Bn": uniform((3,)), "Rm": uniform((3,)), "Rv": uniform((3,), 0.5, 1.5),
             "W2": uniform((4, 3, 2, 2)), "W3": uniform((4, 3)), "B3": uniform((3,))}
    mk = helper.make_node
    nodes = [
        mk("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
        mk("BatchNormalization", ["c1", "S", "Bn", "Rm", "Rv"], ["n1"], name="bn1",
           training_mode=1, epsilon=1e-3),
        mk("Relu", ["n1"], ["r1"], name="relu1"),
        mk("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2]),
        mk("Conv", ["p1", "W2"], ["c2"], name="conv2"),
        mk("AveragePool", ["c2"], ["p2"], name="pool2", kernel_shape=[2, 2]),
        mk("Flatten", ["p2"], ["f"], name="flatten"),
        mk("Gemm", ["f", "W3", "B3"], ["logits"], name="fc"),
        mk("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"], name="xent")]
    inputs = [("x", D, ["batch", 2, 7, 7]), ("labels", I64, ["batch"])]

    def feeds(b):
        return {"x": uniform((b, 2, 7, 7)), "labels": RNG.integers(0, 3, (b,)).astype(np.int64)}

    def fn(x, labels, W1, B1, S, Bn, Rm, Rv, W2, W3, B3):
        c1 = conv_np(x, W1, (2, 2), (1, 1), (1, 1, 1, 1), 1) + B1.reshape(1, 3, 1, 1)
        mean = c1.mean(axis=(0, 2, 3), keepdims=True)
        var = ((c1 - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
        eps = float(np.float32(1e-3))  # a float32 attribute
        n1 = (c1 - mean) / np.sqrt(var + eps) * S.reshape(1, 3, 1, 1) + Bn.reshape(1, 3, 1, 1)
        p1 = pool_np(np.maximum(n1, 0.0), "max", (2, 2), (1, 1), (1, 1), (0, 0, 0, 0))
        c2 = conv_np(p1, W2, (1, 1), (1, 1), (0, 0, 0, 0), 1)
        p2 = pool_np(c2, "sum", (2, 2), (1, 1), (1, 1), (0, 0, 0, 0)) / 4.0
        logits = p2.reshape(len(x), -1) @ W3 + B3
        return -log_softmax(logits)[np.arange(len(x)), labels].mean()
    return dict(nodes=nodes, inputs=inputs, inits=inits, feeds=feeds, fn=fn,
                outputs=[("loss", D, [])], opset=15)


def transformer():
    """gradient_check's transformer block (embedding, layer norm, causal
    attention whose reshapes go through -1, gelu, tied unembedding) with a
    mean over batch x sequence, over a symbolic batch."""
    S, V = 4, 10
    nodes, inits, fn = transformer_block(S=S, D=8, H=2, V=V, F=12)
    inputs = [("ids", I64, ["batch", S]), ("target", D, ["batch", S, V])]

    def feeds(b):
        return {"ids": RNG.integers(0, V, (b, S)).astype(np.int64),
                "target": np.eye(V)[RNG.integers(0, V, (b, S))]}
    return dict(nodes=nodes, inputs=inputs, inits=inits, feeds=feeds, fn=fn,
                outputs=[("loss", D, [])], opset=20)


def positions():
    """A position table sliced to a symbolic sequence (Shape -> Slice, as
    exporters write it) and another from row 2: windows of a
    static axis whose gradients are spread back by a one-hot product. Ranges
    batch 1..3 and seq 1..8, run at (batch, seq) = (1, 1), (2, 5), (3, 8)."""
    inits = {"P": uniform((8, 4)), "Q": uniform((12, 4)),
             "zero": np.array([0], dtype=np.int64), "two": np.array([2], dtype=np.int64)}
    mk = helper.make_node
    nodes = [mk("Shape", ["x"], ["len"], name="shape", start=1, end=2),
             mk("Slice", ["P", "zero", "len", "zero"], ["p"], name="positions"),
             mk("Add", ["x", "p"], ["h"], name="add"),
             mk("Mul", ["h", "h"], ["sq"], name="square"),
             mk("ReduceMean", ["sq"], ["m1"], name="mean1", keepdims=0),
             mk("Add", ["len", "two"], ["end2"], name="end"),
             mk("Slice", ["Q", "two", "end2", "zero"], ["q"], name="offset"),
             mk("Mul", ["x", "q"], ["xq"], name="weigh"),
             mk("ReduceMean", ["xq"], ["m2"], name="mean2", keepdims=0),
             mk("Add", ["m1", "m2"], ["loss"], name="loss")]
    inputs = [("x", D, ["batch", "seq", 4])]

    def feeds(size):
        b, seq = size
        return {"x": uniform((b, seq, 4))}

    def fn(x, P, Q, zero, two):
        h = x + P[:x.shape[1]]
        return (h * h).mean() + (x * Q[2:2 + x.shape[1]]).mean()
    return dict(nodes=nodes, inputs=inputs, inits=inits, feeds=feeds, fn=fn,
                outputs=[("loss", D, [])], opset=17, dims=["batch=1..3", "seq=1..8"],
                sizes=[(1, 1), (2, 5), (3, 8)])


def check_gradients(root, name, m, flags=(), says=None):
    """One `kilnc grad` over the model's ranges (default batch 1..6), run
    at each of its sizes (default BATCHES); `flags` go to kilnc, whose
    output must then contain `says`."""
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    save_model(path, m["nodes"], m["inputs"], m["inits"], m["outputs"], m["opset"])
    prefix = os.path.join(folder, "grad")
    dims = [flag for d in m.get("dims", ["batch=1..6"]) for flag in ("--dim", d)]
    rc, log = kilnc(["grad", path, "--loss=loss", *dims, *flags], prefix)
    if rc != 0:
        return report(f"grad_{name}", f"kilnc failed: {log.strip()}")
    if says and says not in log:
        return report(f"grad_{name}", f"kilnc did not say '{says}': {log.strip()}")
    params = [n for n, v in m["inits"].items() if v.dtype == np.float64]
    for size in m.get("sizes", BATCHES):
        b = "x".join(map(str, size)) if isinstance(size, tuple) else size
        feeds = m["feeds"](size)
        values = {**feeds, **m["inits"]}
        args = []
        for n, v in values.items():
            if n in m["inits"] and n not in params:
                continue  # integer initializers stay constants
            np.save(os.path.join(folder, f"{n}_{b}.npy"), v)
            args.append(f"--input={n}={os.path.join(folder, f'{n}_{b}.npy')}")
        out = os.path.join(folder, f"out_{b}")
        rc, log = run(["kiln-run", prefix + ".so", *args, "--output-dir", out])
        if rc != 0:
            report(f"grad_{name}_batch{b}", f"kiln-run failed: {log.strip()}")
            continue
        names = list(values)
        case = Case(name, [(n, v, "param" if n in params else "input")
                           for n, v in values.items()],
                    "", lambda *a: m["fn"](**dict(zip(names, a))))
        expected = finite_differences(case, np.float64(1.0))
        problems = []
        loss, want = float(np.load(os.path.join(out, "loss.npy"))), m["fn"](**values)
        if abs(loss - want) > 1e-10 * max(1.0, abs(want)):
            problems.append(f"loss {loss!r}, expected {want!r}")
        for n in params:
            got = np.load(os.path.join(out, f"grad.{n}.npy"))
            if got.shape != expected[n].shape or not np.allclose(
                    got, expected[n], rtol=1e-6, atol=1e-8):
                err = (np.max(np.abs(got - expected[n])) if got.shape == expected[n].shape
                       else f"shape {got.shape}")
                problems.append(f"grad.{n}: max abs error {err}")
        report(f"grad_{name}_batch{b}", "; ".join(problems))


def reference_step(p, state, optimizer, x, labels, t):
    """One step of the classifier's training in float64: loss, new params."""
    h = np.tanh(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    logp = log_softmax(logits)
    n = x.shape[0]
    loss = -logp[np.arange(n), labels].mean()
    dz = np.exp(logp)
    dz[np.arange(n), labels] -= 1.0
    dz /= n
    g = {"w2": h.T @ dz, "b2": dz.sum(0)}
    dh = dz @ p["w2"].T * (1.0 - h * h)
    g["w1"], g["b1"] = x.T @ dh, dh.sum(0)
    for k in p:
        if optimizer == "sgd":
            p[k] = p[k] - 0.1 * g[k]
        else:
            m, v = state.setdefault(k, (np.zeros_like(p[k]), np.zeros_like(p[k])))
            m = 0.9 * m + 0.1 * g[k]
            v = 0.999 * v + 0.001 * g[k] * g[k]
            state[k] = (m, v)
            denom = np.sqrt(v) / np.sqrt(1 - 0.999 ** t) + 1e-8
            p[k] = p[k] - 0.01 / (1 - 0.9 ** t) * m / denom
    return loss


def check_training(root):
    m = classifier()
    folder = os.path.join(root, "train")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    save_model(path, m["nodes"], m["inputs"], m["inits"], m["outputs"], m["opset"])
    schedule = (16, 16, 5, 1, 5)
    data = [m["feeds"](b) for b in schedule]
    for optimizer, flags in (("sgd", ["--lr=0.1"]), ("adam", ["--lr=0.01"])):
        prefix = os.path.join(folder, optimizer)
        rc, log = kilnc(["train", path, "--loss=loss", f"--optimizer={optimizer}",
                         *flags, "--dim", "batch=1..16"], prefix)
        if rc != 0:
            report(f"train_{optimizer}", f"kilnc failed: {log.strip()}")
            continue
        p = {k: v.copy() for k, v in m["inits"].items()}
        moments = {}
        problems = []
        state = None
        for t, feeds in enumerate(data, start=1):
            want = reference_step(p, moments, optimizer, feeds["x"], feeds["labels"], t)
            args = []
            for n, v in feeds.items():
                f = os.path.join(folder, f"{optimizer}_{n}_{t}.npy")
                np.save(f, v)
                args += ["--input", f"{n}={f}"]
            out = os.path.join(folder, f"{optimizer}_out_{t}")
            saved = os.path.join(folder, f"{optimizer}_{t}.state")
            rc, log = run(["kiln-run", prefix + ".so", *args, "--output-dir", out,
                           "--save-state", saved] + (["--state", state] if state else []))
            if rc != 0:
                problems.append(f"step {t}: kiln-run failed: {log.strip()}")
                break
            state = saved
            loss = float(np.load(os.path.join(out, "loss.npy")))
            if abs(loss - want) > 1e-11 * max(1.0, abs(want)):
                problems.append(f"step {t} (batch {len(feeds['x'])}): loss {loss!r}, "
                                f"expected {want!r}")
        if not problems:
            for k, v in p.items():
                got = np.load(os.path.join(out, f"state.{k}.npy"))
                err = float(np.max(np.abs(got - v) / np.maximum(np.abs(v), 1e-12)))
                if err > 1e-11:
                    problems.append(f"{k}: relative error {err}")
        report(f"train_{optimizer}", "; ".join(problems))

    # One kiln-run of 3 steps whose input files stack a batch of 7 per step.
    prefix = os.path.join(folder, "sgd")
    steps = [m["feeds"](7) for _ in range(3)]
    args = []
    for n in ("x", "labels"):
        f = os.path.join(folder, f"steps_{n}.npy")
        np.save(f, np.stack([feeds[n] for feeds in steps]))
        args += ["--input", f"{n}={f}"]
    out = os.path.join(folder, "steps_out")
    rc, log = run(["kiln-run", prefix + ".so", *args, "--steps", "3", "--output-dir", out])
    if rc != 0:
        return report("train_steps", f"kiln-run failed: {log.strip()}")
    p = {k: v.copy() for k, v in m["inits"].items()}
    want = [reference_step(p, {}, "sgd", f["x"], f["labels"], t)
            for t, f in enumerate(steps, start=1)]
    got = np.load(os.path.join(out, "loss.npy"))
    logits = np.load(os.path.join(out, "logits.npy"))
    report("train_steps", "" if got.shape == (3,) and logits.shape == (3, 7, 3) and
           np.allclose(got, want, rtol=1e-11, atol=0) else
           f"losses {got.tolist()} (logits {logits.shape}), expected {want}")


def grouped():
    """A grouped convolution (2 groups, stride 2, 2 filters a group) and a
    depthwise one (dilation 2) under a mean of squares: the filter gradients
    are batched matmuls over the groups of columns gathered at run time."""
    inits = {"W1": uniform((4, 2, 3, 3)), "B1": uniform((4,)), "W2": uniform((4, 1, 2, 2))}
    mk = helper.make_node
    nodes = [mk("Conv", ["x", "W1", "B1"], ["c1"], name="grouped", pads=[1, 1, 1, 1],
                strides=[2, 2], group=2),
             mk("Conv", ["c1", "W2"], ["c2"], name="depthwise", dilations=[2, 2], group=4),
             mk("Mul", ["c2", "c2"], ["sq"], name="square"),
             mk("ReduceMean", ["sq"], ["loss"], name="mean", keepdims=0)]
    inputs = [("x", D, ["batch", 4, 7, 7])]

    def feeds(b):
        return {"x": uniform((b, 4, 7, 7))}

    def fn(x, W1, B1, W2):
        c1 = conv_np(x, W1, (2, 2), (1, 1), (1, 1, 1, 1), 2) + B1.reshape(1, 4, 1, 1)
        c2 = conv_np(c1, W2, (1, 1), (2, 2), (0, 0, 0, 0), 4)
        return (c2 * c2).mean()
    return dict(nodes=nodes, inputs=inputs, inits=inits, feeds=feeds, fn=fn,
                outputs=[("loss", D, [])], opset=17)


def main():
    global FAKE_CUDA
    args = sys.argv[1:]
    if len(args) == 3 and args[1] == "--cuda":
        FAKE_CUDA = args.pop(2)
        args.pop(1)
    if len(args) != 1 or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    root = args[0]
    os.makedirs(root, exist_ok=True)
    if FAKE_CUDA:
        for name, make in (("mlp", mlp), ("transformer", transformer), ("cnn", cnn)):
            check_gradients(root, name, make())
        check_training(root)
        sys.exit(1 if failures else 0)
    for name, make in (("mlp", mlp), ("classifier", classifier),
                       ("transformer", transformer), ("cnn", cnn),
                       ("grouped", grouped), ("positions", positions)):
        check_gradients(root, name, make())
    # Rematerialization over ranges: the budget is met at the upper bounds.
    for name, make in (("transformer", transformer), ("cnn", cnn)):
        check_gradients(root, f"{name}_budget", make(), ["--memory-budget=1K"],
                        "(recomputing values lowered it from")
    check_training(root)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
