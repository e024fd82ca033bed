"""Symbolic dimensions: one artifact compiled for a range of sizes against
a static compile at each size (issue 22, decision 0027).

  make bench-dims   (or: .venv/bin/python bench/dims.py --build build)

Three models made here with random weights, their inputs declaring
`dim_param`s as exporters write them: an MLP (784-1024-1024-10, symbolic
batch), a CNN (three 3x3 convolutions, a global mean and a classifier,
symbolic batch) and a transformer encoder layer (width 256, 4 heads, a
1024 feed-forward, symbolic batch and sequence). Each is compiled once
with `--dim NAME=LO..HI` and once per size with `--dim NAME=N`, and both
are timed by `kiln-run --threads 1 --bench N` pinned to core 0 at the
same inputs, alternately --repeat times (the best median of each kept).
The ratio is the range artifact's time over the static one's: the goal is
at most 1.10. Prints a Markdown table; --write FILE replaces the dims
section of FILE (docs/performance.md).
"""

import argparse
import datetime
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from data_parallel import dense_layers
from report import cpu_name, emit_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- dims: bench/dims.py -->", "<!-- /dims -->"
F = TensorProto.FLOAT


def weight(rng, name, *shape, fan_in=None):
    scale = 1.0 / np.sqrt(fan_in or shape[0])
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def mlp():
    inits, nodes, x = dense_layers(np.random.default_rng(0), [784, 1024, 1024, 10])
    return helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F, ["batch", 784])],
                             [helper.make_tensor_value_info(x, F, ["batch", 10])], inits)


def cnn():
    rng = np.random.default_rng(1)
    convs = [(3, 32, 1), (32, 64, 2), (64, 128, 2)]
    inits, nodes, x = [], [], "x"
    for i, (c, k, s) in enumerate(convs):
        inits += [weight(rng, f"cw{i}", k, c, 3, 3, fan_in=9 * c),
                  numpy_helper.from_array(np.zeros(k, np.float32), f"cb{i}")]
        nodes += [helper.make_node("Conv", [x, f"cw{i}", f"cb{i}"], [f"c{i}"], pads=[1, 1, 1, 1], strides=[s, s]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
    inits += [weight(rng, "fw", 128, 10), numpy_helper.from_array(np.array([2, 3], np.int64), "axes")]
    nodes += [helper.make_node("ReduceMean", [x, "axes"], ["pooled"], keepdims=0),
              helper.make_node("MatMul", ["pooled", "fw"], ["y"])]
    return helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", F, ["batch", 3, 32, 32])],
                             [helper.make_tensor_value_info("y", F, ["batch", 10])], inits)


def encoder():
    rng = np.random.default_rng(2)
    d, heads, ff = 256, 4, 1024
    hd = d // heads
    inits = [weight(rng, n, d, d) for n in ("wq", "wk", "wv", "wo")]
    inits += [weight(rng, "w1", d, ff), weight(rng, "w2", ff, d, fan_in=ff),
              numpy_helper.from_array(np.ones(d, np.float32), "g"),
              numpy_helper.from_array(np.zeros(d, np.float32), "be"),
              numpy_helper.from_array(np.array([0, 0, heads, hd], np.int64), "split"),
              numpy_helper.from_array(np.array([0, 0, d], np.int64), "merge"),
              numpy_helper.from_array(np.array(1.0 / np.sqrt(hd), np.float32), "scale")]
    n = helper.make_node
    nodes = [n("LayerNormalization", ["x", "g", "be"], ["h"], axis=-1)]
    for p in "qkv":
        nodes += [n("MatMul", ["h", f"w{p}"], [f"{p}0"]), n("Reshape", [f"{p}0", "split"], [f"{p}1"]),
                  n("Transpose", [f"{p}1"], [p], perm=[0, 2, 1, 3])]
    nodes += [n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), n("MatMul", ["q", "kt"], ["s0"]),
              n("Mul", ["s0", "scale"], ["s"]), n("Softmax", ["s"], ["pr"], axis=-1),
              n("MatMul", ["pr", "v"], ["o0"]), n("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]),
              n("Reshape", ["o1", "merge"], ["o2"]), n("MatMul", ["o2", "wo"], ["o"]),
              n("Add", ["x", "o"], ["r"]), n("LayerNormalization", ["r", "g", "be"], ["h2"], axis=-1),
              n("MatMul", ["h2", "w1"], ["f0"]), n("Relu", ["f0"], ["f1"]), n("MatMul", ["f1", "w2"], ["f2"]),
              n("Add", ["r", "f2"], ["y"])]
    return helper.make_graph(nodes, "encoder", [helper.make_tensor_value_info("x", F, ["batch", "seq", d])],
                             [helper.make_tensor_value_info("y", F, ["batch", "seq", d])], inits)


# (name, graph, ranges, the sizes timed, input shape at those sizes)
CASES = [
    ("MLP", mlp, {"batch": (1, 64)}, [{"batch": b} for b in (1, 7, 32, 64)], lambda s: (s["batch"], 784)),
    ("CNN", cnn, {"batch": (1, 32)}, [{"batch": b} for b in (1, 7, 32)], lambda s: (s["batch"], 3, 32, 32)),
    ("encoder", encoder, {"batch": (1, 8), "seq": (1, 128)},
     [{"batch": 1, "seq": 17}, {"batch": 1, "seq": 128}, {"batch": 7, "seq": 17}],
     lambda s: (s["batch"], s["seq"], 256)),
]


def kilnc(build, model, dims, out):
    args = [os.path.join(build, "bin", "kilnc"), model, "-o", out, "--shared"]
    for name, value in dims.items():
        args += ["--dim", f"{name}={value}"]
    subprocess.run(args, check=True)
    return out + ".so"


def time_us(build, artifact, inp, runs):
    out = subprocess.run(["taskset", "-c", "0", os.path.join(build, "bin", "kiln-run"), artifact, "--input",
                          f"x={inp}", "--threads", "1", "--bench", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith("latency: median")][-1]
    return float(line.split()[2])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", help="replace the dims section of this Markdown file")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, make, ranges, sizes, shape in CASES:
            model = os.path.join(work, f"{name}.onnx")
            onnx.save(helper.make_model(make(), opset_imports=[helper.make_opsetid("", 18)], ir_version=8), model)
            ranged = kilnc(args.build, model, {k: f"{lo}..{hi}" for k, (lo, hi) in ranges.items()},
                           os.path.join(work, f"{name}_range"))
            for size in sizes:
                tag = "_".join(f"{k}{v}" for k, v in size.items())
                inp = os.path.join(work, f"{name}_{tag}.npy")
                np.save(inp, np.random.default_rng(3).standard_normal(shape(size)).astype(np.float32))
                static = kilnc(args.build, model, size, os.path.join(work, f"{name}_{tag}"))
                best_static = best_range = float("inf")
                for _ in range(args.repeat):
                    best_static = min(best_static, time_us(args.build, static, inp, args.runs))
                    best_range = min(best_range, time_us(args.build, ranged, inp, args.runs))
                ratio = best_range / best_static
                rows.append((name, ", ".join(f"{k}={v}" for k, v in size.items()), best_static, best_range, ratio))
                print(f"{name} {tag}: static {best_static:.1f} us, range {best_range:.1f} us, "
                      f"{ratio:.2f}x", file=sys.stderr)
    ranges_text = {name: ", ".join(f"{k}={lo}..{hi}" for k, (lo, hi) in r.items()) for name, _, r, _, _ in CASES}
    lines = [
        BEGIN,
        "",
        f"Symbolic dimensions (issue 22, bench/dims.py, {datetime.date.today()}, {cpu_name()}, 1 thread pinned "
        f"to core 0): one artifact per model compiled with `--dim NAME=LO..HI` against a static compile at each "
        f"size, median of {args.runs} runs, best of {args.repeat}. The goal is a ratio of at most 1.10.",
        "",
        "| model | range | sizes | static (us) | range (us) | range / static |",
        "|---|---|---|---:|---:|---:|",
    ]
    for name, size, s, r, ratio in rows:
        lines.append(f"| {name} | {ranges_text[name]} | {size} | {s:.1f} | {r:.1f} | {ratio:.2f} |")
    emit_section(lines, BEGIN, END, args.write)


if __name__ == "__main__":
    main()
