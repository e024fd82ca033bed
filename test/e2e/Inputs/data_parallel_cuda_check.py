"""kilnc train --target=cuda --data-parallel without a GPU: the step runs
through the CUDA runtime (kiln-run) against the fake NVIDIA libraries,
which run the kernels built for the host (kilnc --emit=cuda-host), and the
fake libnccl.so.2, whose all-reduce averages across the ranks of an MPI
run (through the process's Open MPI, as NCCL would over the GPUs).

Usage: data_parallel_cuda_check.py OUT_DIR FAKE_LIBRARY_DIR

For the MLP of data_parallel_check.py in f64 and f32, 20 Adam steps:
* 1 rank: the CUDA step (NCCL with one rank) equals the CPU step;
* 2 ranks: the CUDA step under `mpirun -np 2` equals the CPU step under
  `mpirun -np 2`, which test/e2e/data-parallel.test checks against one
  process with the whole batch; every rank ends with the same state;
* the trace of the fake driver: NCCL initialized (with both ranks under
  mpirun), each bucket's all-reduces grouped on the side stream, compute
  launched between the first bucket's start and the next bucket's, and
  streams waiting for each bucket (the side stream for the compute before
  its start, the compute stream for its end).
Tolerances (relative to each tensor's largest value): f64 1e-13 and f32 1e-5,
as training_cuda_check.py's CUDA-against-CPU comparison.
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data_parallel_check_models as models  # noqa: E402

OUT, FAKE_DIR = sys.argv[1], sys.argv[2]
STEPS = 20


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def p(name):
    return os.path.join(OUT, name)


def emulated_env(prefix, kilnc_args, trace):
    source = prefix + ".host.cpp"
    run(["kilnc", *kilnc_args, "--target=cuda", "--emit=cuda-host", "-o", source])
    library = prefix + ".host.so"
    run(["c++", "-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-pthread", "-fno-strict-aliasing", source,
         "-o", library])
    env = dict(os.environ)
    env["KILN_FAKE_CUDA_KERNELS"] = library
    env["KILN_FAKE_CUDA_TRACE"] = trace
    env["LD_LIBRARY_PATH"] = FAKE_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def verdict(name, ok, detail=""):
    print(f"{name}: {'ok' if ok else 'MISMATCH ' + detail}")


MPIRUN = ["mpirun", "--oversubscribe", "-np", "2"]
rng = np.random.default_rng(3)
for tag, dtype, np_type, tol in (("f64", models.DOUBLE, np.float64, 1e-13), ("f32", models.FLOAT, np.float32, 1e-5)):
    model = p(f"mlp_{tag}.onnx")
    P = models.make_model(model, 8, dtype)
    xs = rng.standard_normal((STEPS, 16, models.I)).astype(np_type)
    ts = rng.standard_normal((STEPS, 16, models.O)).astype(np_type)
    np.save(p(f"xs_{tag}.npy"), xs)
    np.save(p(f"ts_{tag}.npy"), ts)
    np.save(p(f"xs1_{tag}.npy"), xs[:, :8])
    np.save(p(f"ts1_{tag}.npy"), ts[:, :8])
    args = ["train", model, "--loss=loss", "--optimizer=adam", "--lr=0.01", "--data-parallel", "--bucket-bytes=600"]
    cpu, cuda = p(f"dp_{tag}_cpu"), p(f"dp_{tag}_cuda")
    run(["kilnc", *args, "-o", cpu, "--shared"])
    run(["kilnc", *args, "--target=cuda", "-o", cuda, "--shared"])
    for ranks in (1, 2):
        trace = p(f"trace_{tag}_{ranks}.txt")
        if os.path.exists(trace):
            os.remove(trace)
        env = emulated_env(cuda, args, trace)
        suffix = "" if ranks == 2 else "1"
        feed = ["--input", f"x={p(f'xs{suffix}_{tag}.npy')}", "--input", f"t={p(f'ts{suffix}_{tag}.npy')}",
                "--steps", str(STEPS)]
        launch = MPIRUN if ranks == 2 else []
        out = {}
        for target, prefix, e in (("cpu", cpu, None), ("cuda", cuda, env)):
            out[target] = p(f"out_{tag}_{target}_{ranks}")
            stdout = run(launch + ["kiln-run", prefix + ".so", *feed, "--output-dir", out[target]], e)
            if ranks == 2:
                verdict(f"{tag} {target} 2 ranks end with the same state",
                        "state: identical on all 2 ranks" in stdout)
        names = sorted(f for f in os.listdir(out["cpu"]) if f.endswith(".npy"))
        load = lambda t, f: np.load(os.path.join(out[t], f)).astype(np.float64)  # noqa: E731
        worst = max(float(np.max(np.abs(load("cuda", f) - load("cpu", f)))) /
                    max(float(np.max(np.abs(load("cpu", f)))), 1e-30) for f in names)
        verdict(f"{tag} cuda with nccl on {ranks} rank(s) matches the cpu step", worst <= tol,
                f"(max rel difference {worst:.3g} > {tol} over {len(names)} files)")
        lines = open(trace).read().splitlines()
        if ranks == 2:
            # Both processes append to one trace: only what each must say.
            verdict(f"{tag} trace on 2 ranks: nccl set up on both",
                    "nccl init rank 0 of 2" in lines and "nccl init rank 1 of 2" in lines)
            continue
        groups = [i for i, l in enumerate(lines) if l == "nccl group start"]
        first = groups[0]
        compute = [i for i, l in enumerate(lines)
                   if l.startswith("launch ") and "nccl" not in l and "stream wait" not in l and "event" not in l]
        # Kernels or library calls launched after the first bucket started
        # and before the second did: compute the all-reduce can overlap.
        between = any(groups[0] < i < groups[1] for i in compute) if len(groups) > 1 else False
        waits = sum(1 for l in lines if "stream wait event" in l)
        verdict(f"{tag} trace on 1 rank: nccl set up, buckets grouped, compute overlapping, waits",
                "nccl init rank 0 of 1" in lines and lines[first + 1].startswith("launch nccl allreduce avg " + tag)
                and between and waits >= 2 * len(groups),
                f"({lines[first + 1:first + 2]}, {between}, {waits} waits for {len(groups)} groups)")

# A lost rank: the fake NCCL's all-reduces never complete ("hang": a peer
# that stopped calling, caught by the timeout; "remote": NCCL reports the
# peer's failure, caught at once). The run must fail with a status naming
# the bucket, abort the communicator, and not hang.
import time  # noqa: E402

tag = "f32"
args = ["train", p(f"mlp_{tag}.onnx"), "--loss=loss", "--optimizer=adam", "--lr=0.01", "--data-parallel",
        "--bucket-bytes=600"]
for mode, timeout, expect in (("hang", "0.5", "timed out after 0.5 s (a rank failed or stopped calling)"),
                              ("remote", "600", "failed: remote process exited or there was a network error")):
    trace = p(f"trace_fail_{mode}.txt")
    if os.path.exists(trace):
        os.remove(trace)
    env = emulated_env(p(f"dp_{tag}_cuda"), args, trace)
    env["KILN_FAKE_NCCL_FAIL"] = mode
    begin = time.monotonic()
    r = subprocess.run(["kiln-run", p(f"dp_{tag}_cuda.so"), "--input", f"x={p(f'xs1_{tag}.npy')}", "--input",
                        f"t={p(f'ts1_{tag}.npy')}", "--steps", "3", "--comm-timeout", timeout,
                        "--output-dir", p(f"out_fail_{mode}")], capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - begin
    lines = open(trace).read().splitlines() if os.path.exists(trace) else []
    verdict(f"nccl {mode}: the step fails with a status naming the bucket and aborts the communicator",
            r.returncode != 0 and "nccl: the all-reduce of bucket" in r.stderr and expect in r.stderr
            and "nccl abort" in lines and took < 60,
            f"(rc {r.returncode}, {took:.1f} s, stderr: {r.stderr.strip()[-300:]!r})")
