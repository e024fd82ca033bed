#!/usr/bin/env python3
"""kilnc train and kilnc grad with --target=cuda, run without a GPU.

    training_cuda_check.py OUTDIR FAKE_DRIVER_DIR

The MLP classifier of training_check.py (its model, data and float64 numpy
reference), compiled with `kilnc train --target=cuda` for sgd, momentum and
adam in float64 and float32, run for 300 steps by kiln-run through the CUDA
runtime against the fake NVIDIA libraries in emulation (the kernels built
for the host from `kilnc --emit=cuda-host`, cuBLASLt computed on the host).
Checked: the loss curve and final parameters against numpy with
training_check.py's tolerances, the step counter, and every output and
state tensor against the CPU target's step (the same graph, so only the
order of rounding differs: the largest difference per tensor, relative to
its largest value, 1e-13 in float64 and 1e-5 in float32; measured 0 and
about 3e-7). `kilnc grad --target=cuda` gives the
gradients numpy computes. Prints a line per check and exits 1 on a
mismatch; kilnc, kiln-run and c++ are taken from PATH.
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import training_check as tc  # noqa: E402


def emulated_env(out, prefix, kilnc_args):
    """Builds the host kernels of the artifact kilnc_args make and returns
    the environment that runs it on the fake driver."""
    source = prefix + ".host.cpp"
    tc.run(["kilnc", *kilnc_args, "--target=cuda", "--emit=cuda-host", "-o", source])
    library = prefix + ".host.so"
    tc.run(["c++", "-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-pthread",
            "-fno-strict-aliasing", source, "-o", library])
    env = dict(os.environ)
    env["KILN_FAKE_CUDA_KERNELS"] = library
    env["LD_LIBRARY_PATH"] = FAKE_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def run_env(cmd, env):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.stderr.write(" ".join(cmd) + "\n" + result.stdout + result.stderr)
        sys.exit(1)
    return result.stdout


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    xs, ys = tc.data()
    params = tc.initial_parameters()
    for dtype, tag in ((np.float64, "f64"), (np.float32, "f32")):
        model = os.path.join(out, f"mlp_{tag}.onnx")
        start = {k: v.astype(dtype).astype(np.float64) for k, v in params.items()}
        tc.make_model(model, start, dtype)
        x_file, y_file = os.path.join(out, f"x_{tag}.npy"), os.path.join(out, "labels.npy")
        np.save(x_file, xs.astype(dtype))
        np.save(y_file, ys)
        xs_ref = xs.astype(dtype).astype(np.float64)
        loss_tol, param_tol = (1e-11, 1e-11) if tag == "f64" else (2e-5, 5e-4)
        floor = 1e-12 if tag == "f64" else 2e-4
        cpu_tol = 1e-13 if tag == "f64" else 1e-5

        for name, hyper in tc.OPTIMIZERS.items():
            case = f"{name}_{tag}"
            flags = [f"--{k}={v!r}" for k, v in hyper.items()]
            args = ["train", model, "--loss=loss", f"--optimizer={name}", *flags]
            results = {}
            for target in ("cpu", "cuda"):
                prefix = os.path.join(out, f"{case}_{target}")
                tc.run(["kilnc", *args, f"--target={target}", "-o", prefix, "--shared"])
                env = emulated_env(out, prefix, args) if target == "cuda" else dict(os.environ)
                result = prefix + "_out"
                run_env(["kiln-run", prefix + ".so", "--input", "x=" + x_file, "--input", "labels=" + y_file,
                         "--steps", str(tc.STEPS), "--output-dir", result], env)
                results[target] = result
            losses, final = tc.reference_training(name, hyper, start, xs_ref, ys, tc.STEPS)
            load = lambda target, f: np.load(os.path.join(results[target], f)).astype(np.float64)  # noqa: E731
            kiln_losses = load("cuda", "loss.npy")
            err = tc.relative_error(kiln_losses, losses, floor)
            tc.report(f"cuda {case} loss curve", kiln_losses.shape == (tc.STEPS,) and err <= loss_tol,
                      f"max rel error {err:.3g} > {loss_tol}", f"max rel error {err:.2g}")
            worst = max(tc.relative_error(load("cuda", f"state.{k}.npy"), final[k], floor) for k in final)
            tc.report(f"cuda {case} parameters", worst <= param_tol, f"max rel error {worst:.3g} > {param_tol}",
                      f"max rel error {worst:.2g}")
            step = np.load(os.path.join(results["cuda"], "state.optimizer.step.npy"))
            tc.report(f"cuda {case} step counter", step == tc.STEPS, f"{step!r}")
            # Against the CPU step, per file relative to its largest value:
            # logits near 0 differ by a few float32 ulps of the large ones.
            names = sorted(f for f in os.listdir(results["cpu"]) if f.endswith(".npy"))
            vs_cpu = max(float(np.max(np.abs(load("cuda", f) - load("cpu", f)))) /
                         max(float(np.max(np.abs(load("cpu", f)))), 1e-30) for f in names)
            tc.report(f"cuda {case} matches the cpu step", vs_cpu <= cpu_tol and
                      names == sorted(f for f in os.listdir(results["cuda"]) if f.endswith(".npy")),
                      f"max rel difference {vs_cpu:.3g} > {cpu_tol} over {len(names)} files",
                      f"max rel difference {vs_cpu:.2g}")

        # kilnc grad: the gradients of the loss at the initial parameters.
        prefix = os.path.join(out, f"grad_{tag}")
        args = ["grad", model, "--loss=loss"]
        tc.run(["kilnc", *args, "--target=cuda", "-o", prefix, "--shared"])
        env = emulated_env(out, prefix, args)
        inputs = []
        for k in ("w1", "b1", "w2", "b2"):
            np.save(os.path.join(out, f"{k}_{tag}.npy"), start[k].astype(dtype))
            inputs += ["--input", f"{k}={os.path.join(out, f'{k}_{tag}.npy')}"]
        np.save(os.path.join(out, f"x0_{tag}.npy"), xs[0].astype(dtype))
        np.save(os.path.join(out, "labels0.npy"), ys[0])
        run_env(["kiln-run", prefix + ".so", "--input", "x=" + os.path.join(out, f"x0_{tag}.npy"),
                 "--input", "labels=" + os.path.join(out, "labels0.npy"), *inputs,
                 "--output-dir", prefix + "_out"], env)
        _, grads = tc.loss_and_grads(start, xs_ref[0], ys[0])
        worst = max(tc.relative_error(np.load(os.path.join(prefix + "_out", f"grad.{k}.npy")).astype(np.float64),
                                      grads[k], 1e-6 if tag == "f64" else 1e-3) for k in grads)
        tol = 1e-10 if tag == "f64" else 1e-4
        tc.report(f"cuda grad_{tag} gradients", worst <= tol, f"max rel error {worst:.3g} > {tol}",
                  f"max rel error {worst:.2g}")

    sys.exit(1 if tc.failures else 0)


if __name__ == "__main__":
    FAKE_DIR = sys.argv[2]
    main()
