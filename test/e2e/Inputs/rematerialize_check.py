#!/usr/bin/env python3
"""Rematerialization end to end: `kilnc grad` with and without a budget.

    rematerialize_check.py OUTDIR [MODEL...]

For each gradient model (an MLP with two Gelu layers, and the CNN and the
transformer block of gradient_check.py): compile it without a budget and
read <NAME>_ARENA_BYTES from the header; compile it again with
--memory-budget at 80% of that arena; run both artifacts with kiln-run on
the same inputs. Checks that the arena shrank, that every output of the
two artifacts is bitwise equal, and that the gradients of the budgeted one
match central finite differences of an independent numpy loss (float64),
never the code under test. Prints one line per model:

    NAME: arena A -> B bytes (budget C, fits|over budget): ok
    NAME: MISMATCH ...

and exits 1 if any model failed. kilnc and kiln-run are taken from PATH.
"""
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradient_check as gc  # noqa: E402


def mlp_gelu_model():
    """Two Gelu layers: the backward pass reads each pre-activation and the
    erf inside Gelu, elementwise values that are cheap to recompute."""
    from onnx import helper
    x, t = gc.uniform((16, 8)), gc.uniform((16, 4))
    inits = {"w1": gc.uniform((8, 32)), "b1": gc.uniform((32,)),
             "w2": gc.uniform((32, 32)), "b2": gc.uniform((32,)),
             "w3": gc.uniform((32, 4))}
    mk = helper.make_node
    nodes = [mk("Gemm", ["x", "w1", "b1"], ["a1"], name="fc1"),
             mk("Gelu", ["a1"], ["h1"], name="gelu1"),
             mk("Gemm", ["h1", "w2", "b2"], ["a2"], name="fc2"),
             mk("Gelu", ["a2"], ["h2"], name="gelu2"),
             mk("MatMul", ["h2", "w3"], ["z"], name="fc3"),
             mk("Sub", ["z", "t"], ["d"], name="err"),
             mk("Mul", ["d", "d"], ["sq"], name="square"),
             mk("ReduceMean", ["sq"], ["loss"], name="mse", keepdims=0)]

    def gelu(a):
        return 0.5 * a * (1.0 + gc.erf(a / np.sqrt(2.0)))

    def fn(x, t, w1, b1, w2, b2, w3):
        d = gelu(gelu(x @ w1 + b1) @ w2 + b2) @ w3 - t
        return (d * d).mean()
    return dict(name="mlp_gelu", nodes=nodes, inputs={"x": x, "t": t}, inits=inits,
                outputs=[("loss", [])], fn=fn, opset=20)


MODELS = {"mlp_gelu": mlp_gelu_model, "cnn": gc.onnx_cnn_model,
          "transformer": gc.onnx_transformer_model}


def arena_bytes(header):
    with open(header) as f:
        match = re.search(r"#define \w+_ARENA_BYTES (\d+)ull", f.read())
    return int(match.group(1))


def compile_and_run(model_path, prefix, args, extra):
    """Compiles the gradient artifact at PREFIX and runs it; returns
    (arena bytes, {output name: array}, kilnc's standard error)."""
    run = subprocess.run(["kilnc", "grad", model_path, "--loss=loss", "-o", prefix,
                          "--shared", *extra], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"kilnc {' '.join(extra)} failed: {run.stderr.strip()}")
    out = prefix + ".out"
    ran = subprocess.run(["kiln-run", prefix + ".so", *args, "--output-dir", out],
                         capture_output=True, text=True)
    if ran.returncode != 0:
        raise RuntimeError(f"kiln-run failed: {ran.stderr.strip()}")
    outputs = {f[:-4]: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}
    return arena_bytes(prefix + ".h"), outputs, run.stderr


def check(root, key):
    m = MODELS[key]()
    path = gc.save_onnx_model(root, key, m["nodes"], m["inputs"], m["inits"],
                              m["outputs"], m.get("opset", 17))
    folder = os.path.dirname(path)
    values = {**m["inputs"], **m["inits"]}
    for n, v in values.items():
        np.save(os.path.join(folder, n + ".npy"), v)
    # Float initializers are inputs of the gradient artifact; integer ones
    # stay constants.
    params = [n for n, v in m["inits"].items() if v.dtype == np.float64]
    args = [f"--input={n}={os.path.join(folder, n + '.npy')}" for n in values
            if n not in m["inits"] or n in params]

    plain_arena, plain, _ = compile_and_run(path, os.path.join(folder, "plain"), args, [])
    budget = plain_arena * 8 // 10
    arena, outputs, stderr = compile_and_run(path, os.path.join(folder, "remat"), args,
                                             [f"--memory-budget={budget}"])
    problems = []
    if arena >= plain_arena:
        problems.append(f"the arena did not shrink: {plain_arena} -> {arena} bytes")
    fits = arena <= budget
    if fits == ("warning:" in stderr):
        problems.append(f"arena {arena} with budget {budget}, kilnc said: {stderr.strip()!r}")
    if sorted(outputs) != sorted(plain):
        problems.append(f"outputs {sorted(outputs)} != {sorted(plain)}")
    for n in sorted(plain):
        a, b = plain[n], outputs.get(n)
        if b is None or a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            problems.append(f"{n} differs from the artifact without a budget")

    # The reference: central finite differences of the numpy loss, with a
    # step of 1e-5 (at 1e-6, rounding in the transformer's loss already
    # shows in the eighth digit).
    names = list(values)
    case = gc.Case(key, [(n, v, "param" if n in params else "input") for n, v in values.items()],
                   "", lambda *a: m["fn"](**dict(zip(names, a))), h=1e-5)
    expected = gc.finite_differences(case, np.float64(1.0))
    want_loss = m["fn"](**values)
    if abs(float(outputs["loss"]) - want_loss) > 1e-10 * max(1.0, abs(want_loss)):
        problems.append(f"loss {float(outputs['loss'])!r}, expected {want_loss!r}")
    for n in params:
        got, want = outputs[f"grad.{n}"], expected[n]
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-8):
            err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
            problems.append(f"grad.{n}: max abs error {err} against finite differences")
    status = "fits" if fits else "over budget"
    head = f"{key}: arena {plain_arena} -> {arena} bytes (budget {budget}, {status})"
    return head, "; ".join(problems)


def main():
    argv = sys.argv[1:]
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
    root, only = argv[0], argv[1:] or list(MODELS)
    failed = 0
    for key in only:
        try:
            head, problem = check(root, key)
        except RuntimeError as e:
            head, problem = key, str(e)
        if problem:
            failed += 1
            print(f"{head}: MISMATCH {problem}")
        else:
            print(f"{head}: ok")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
