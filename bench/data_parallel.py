"""The data-parallel benchmark: weak scaling of a training step from 1 to 2
ranks, and the part of the all-reduce time that compute hides.

  make bench-data-parallel   (or: .venv/bin/python bench/data_parallel.py --build build)

For an MLP and a small CNN, each with an MSE loss and Adam: compile the
step with `kilnc train --data-parallel --bucket-bytes=256K` and time it with
`kiln-run --threads 1 --bench N`, first alone pinned to core 0 (one rank, no
communicator: the step's compute), then as 2 ranks under `mpirun -np 2
--bind-to core`, each on its own core with the same per-rank batch (weak
scaling: ideal is the same step time). The efficiency is the 1-rank time
over the 2-rank time. The two are measured alternately --repeat times and
the best median of each kept, since a 2-core machine shared with others
is noisy. kiln-run's --bench also reports, averaged over the
ranks, the all-reduce time in flight per step and the part of it the step
waited for; the rest is hidden behind compute. Prints a Markdown table;
--write FILE replaces the data-parallel section of FILE (docs/performance.md)
and leaves the rest as bench/run.py wrote it.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from report import cpu_name, emit_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- data-parallel: bench/data_parallel.py -->", "<!-- /data-parallel -->"


def mse_tail(nodes, y, out_dim, batch):
    nodes += [helper.make_node("Sub", [y, "t"], ["d"]), helper.make_node("Mul", ["d", "d"], ["d2"]),
              helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)]
    return helper.make_tensor_value_info("t", TensorProto.FLOAT, [batch, out_dim])


def dense_layers(rng, sizes, x="x"):
    """MatMul + Add layers of `sizes` (Relu between them) from `x`, weights
    scaled by 1/sqrt(fan-in): (initializers, nodes, output name)."""
    inits, nodes = [], []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        inits += [numpy_helper.from_array((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(b, np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        x = f"a{i}"
        if i + 1 < len(sizes) - 1:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    return inits, nodes, x


def mlp(batch):
    sizes = [784, 1024, 1024, 10]
    inits, nodes, x = dense_layers(np.random.default_rng(0), sizes)
    t = mse_tail(nodes, x, sizes[-1], batch)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, sizes[0]]), t]
    return helper.make_graph(nodes, "mlp", inputs, [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                             inits), {"x": (batch, sizes[0]), "t": (batch, sizes[-1])}


def cnn(batch):
    rng = np.random.default_rng(0)
    convs = [(3, 32, 1), (32, 64, 2), (64, 128, 2)]
    inits, nodes, x = [], [], "x"
    for i, (c, k, s) in enumerate(convs):
        inits += [numpy_helper.from_array((rng.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32),
                                          f"cw{i}"),
                  numpy_helper.from_array(np.zeros(k, np.float32), f"cb{i}")]
        nodes += [helper.make_node("Conv", [x, f"cw{i}", f"cb{i}"], [f"c{i}"], pads=[1, 1, 1, 1], strides=[s, s]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
    inits += [numpy_helper.from_array((rng.standard_normal((128, 10)) / np.sqrt(128)).astype(np.float32), "fw")]
    nodes += [helper.make_node("ReduceMean", [x], ["pooled"], axes=[2, 3], keepdims=0),
              helper.make_node("MatMul", ["pooled", "fw"], ["y"])]
    t = mse_tail(nodes, "y", 10, batch)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 32, 32]), t]
    return helper.make_graph(nodes, "cnn", inputs, [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                             inits), {"x": (batch, 3, 32, 32), "t": (batch, 10)}


MODELS = {"mlp_b64": (mlp, 64), "cnn_b16": (cnn, 16)}


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None, help="work folder (default: BUILD/bench-data-parallel)")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bucket-bytes", default="256K")
    ap.add_argument("--write", help="replace the data-parallel section of this Markdown file")
    args = ap.parse_args()
    out = args.out or os.path.join(args.build, "bench-data-parallel")
    os.makedirs(out, exist_ok=True)
    kilnc, kiln_run = (os.path.join(args.build, "bin", n) for n in ("kilnc", "kiln-run"))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rows = []
    for name, (make, batch) in MODELS.items():
        graph, shapes = make(batch)
        model = os.path.join(out, f"{name}.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
        step = os.path.join(out, f"{name}_dp")
        run([kilnc, "train", model, "--loss=loss", "--optimizer=adam", "--lr=1e-3", "--data-parallel",
             f"--bucket-bytes={args.bucket_bytes}", "-o", step, "--shared"])
        rng = np.random.default_rng(1)
        inputs = []
        for k, shape in shapes.items():
            # The whole batch of 2 ranks; alone, rank 0's half.
            whole = rng.standard_normal((2 * shape[0],) + shape[1:]).astype(np.float32)
            np.save(os.path.join(out, f"{name}_{k}_2.npy"), whole)
            np.save(os.path.join(out, f"{name}_{k}_1.npy"), whole[: shape[0]])
            inputs.append(k)
        bench = ["--threads", "1", "--bench", str(args.runs)]

        def feed(ranks):
            return [a for k in inputs for a in ("--input", f"{k}={os.path.join(out, f'{name}_{k}_{ranks}.npy')}")]

        t1 = t2 = None
        for _ in range(args.repeat):
            alone = run(["taskset", "-c", "0", kiln_run, step + ".so", *feed(1), *bench], env)
            two = run(["mpirun", "--oversubscribe", "-np", "2", "--bind-to", "core", "--map-by", "core", kiln_run,
                       step + ".so", *feed(2), *bench], env)
            one_median = float(re.search(r"median ([0-9.]+) us", alone).group(1))
            # A step of 2 ranks takes as long as the slower one.
            two_median = max(float(m) for m in re.findall(r"median ([0-9.]+) us", two))
            t1 = one_median if t1 is None else min(t1, one_median)
            if t2 is None or two_median < t2:
                t2 = two_median
                comm = re.search(r"all-reduce: ([0-9.]+) us in flight per step, ([0-9.]+) us of it waited for: "
                                 r"(\d+)% hidden", two)
        buckets = run([kilnc, "train", model, "--loss=loss", "--optimizer=adam", "--data-parallel",
                       f"--bucket-bytes={args.bucket_bytes}", "--emit=graph"]).count("kiln.all_reduce")
        grad_mb = sum(int(np.prod(i.dims)) * 4 for i in graph.initializer) / 2**20
        rows.append((name, batch, grad_mb, buckets, t1 / 1e3, t2 / 1e3, t1 / t2, float(comm.group(1)) / 1e3,
                     float(comm.group(2)) / 1e3, int(comm.group(3))))
        print(f"{name}: 1 rank {t1 / 1e3:.2f} ms, 2 ranks {t2 / 1e3:.2f} ms, efficiency {t1 / t2:.2f}, "
              f"{comm.group(3)}% of the all-reduce hidden", flush=True)

    cpu = cpu_name()
    lines = [BEGIN, "", "## Data-parallel training", "",
             f"Measured {datetime.date.today().isoformat()} on {cpu}, {os.cpu_count()} cores, with "
             "`make bench-data-parallel` (bench/data_parallel.py): an Adam training step "
             f"(`kilnc train --data-parallel --bucket-bytes={args.bucket_bytes}`) timed by `kiln-run --threads 1 "
             f"--bench {args.runs}`, alone on core 0 (one rank) and as 2 ranks of `mpirun --bind-to core` on "
             "loopback, one core each, the same batch per rank (weak scaling: efficiency = 1-rank time / "
             "2-rank time, 1 is ideal; the best median of 3 alternating measurements of each). In flight: each bucket's start to the end of its wait, per step, "
             "summed over the buckets; waited: the part the step was blocked; hidden = 1 - waited / in flight, "
             "averaged over the ranks. Open MPI 4.1 (Debian), shared memory between the ranks.", "",
             "| model | batch per rank | gradients MB | buckets | 1 rank ms | 2 ranks ms | efficiency | "
             "all-reduce in flight ms | waited ms | hidden |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} | "
                     f"{r[7]:.2f} | {r[8]:.2f} | {r[9]}% |")
    emit_section(lines, BEGIN, END, args.write)


if __name__ == "__main__":
    main()
