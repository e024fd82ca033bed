"""Where Kiln loses to ONNX Runtime inside one model: Kiln's per-kernel
profile (kiln-run --profile) beside ONNX Runtime's per-node profile
(SessionOptions.enable_profiling), matched by ONNX node name, sorted by the
time Kiln spends above ONNX Runtime.

A Kiln kernel names the ONNX nodes it fused ("/conv1/Conv,/relu/Relu").
ONNX Runtime's optimized graph renames the nodes it rewrites after one of
their outputs ("/relu/Relu_output_0_nchwc" is conv1 with its Relu fused),
so an ONNX Runtime node belongs to the Kiln kernel that holds the node its
name starts with; what matches no kernel (layout reorders, say) is listed
apart. Both engines' medians per kernel and node are over --runs runs after
a warm-up, one engine after the other, 1-thread runs pinned to one core;
on a machine whose speed drifts, compare the rows with each other, not
with another run's.

Usage (a bench model folder: model.onnx, inputs.json, NAME.npy per input;
bench/exported.py writes them):
  .venv/bin/python bench/compare_profile.py build/bench/resnet18.ts17 [--threads N]
"""

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import input_names, pinned  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kiln_profile(build, folder, so, threads, runs, work):
    """{kernel name: median us} from kiln-run --profile's trace."""
    trace = os.path.join(work, "kiln-trace.json")
    feeds = [a for n in input_names(folder) for a in ("--input", f"{n}={os.path.join(folder, n + '.npy')}")]
    subprocess.run(pinned(threads) + [os.path.join(build, "bin", "kiln-run"), so, "--threads", str(threads)]
                   + feeds + ["--bench", "3", "--profile", trace, "--profile-runs", str(runs)],
                   check=True, capture_output=True, text=True)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    times = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            times[e["name"]].append(e["dur"])
    return {name: statistics.median(v) for name, v in times.items()}


def ort_profile(folder, threads, runs, work):
    """({node name: median us}, {node name: op type}) from ONNX Runtime's
    profiler, all graph optimizations on (as bench/run.py times it)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(work, "ort")
    session = ort.InferenceSession(os.path.join(folder, "model.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    feed = {n: np.load(os.path.join(folder, n + ".npy")) for n in input_names(folder)}
    for _ in range(runs + 3):
        session.run(None, feed)
    with open(session.end_profiling()) as f:
        events = json.load(f)
    times, ops = collections.defaultdict(list), {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][: -len("_kernel_time")]
            times[name].append(e["dur"])
            ops[name] = e.get("args", {}).get("op_name", "?")
    # The first runs are the warm-up.
    return {n: statistics.median(v[3:] or v) for n, v in times.items()}, ops


def ort_base(name):
    """The ONNX node an optimized ONNX Runtime node is named after."""
    return re.sub(r"(_output_\d+.*|_token_\d+.*)$", "", name)


def match(kiln, ort_nodes):
    """Rows (kiln us, ort us, kiln kernel, [ort nodes]) and the ORT nodes no
    kernel holds."""
    owner = {}
    for kernel in kiln:
        for node in kernel.split(","):
            owner.setdefault(node, kernel)
    held = collections.defaultdict(list)
    apart = []
    for name in ort_nodes:
        kernel = owner.get(name) or owner.get(ort_base(name))
        (held[kernel].append(name) if kernel else apart.append(name))
    rows = [(us, sum(ort_nodes[n] for n in held[k]), k, held[k]) for k, us in kiln.items()]
    return rows, apart


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="a bench model folder (bench/exported.py)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--so", help="a compiled artifact (default: compile FOLDER/model.onnx with kilnc --shared)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20, help="profiled runs per engine (default 20)")
    ap.add_argument("--top", type=int, default=20, help="rows to print (default 20)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as work:
        so = args.so
        if so is None:
            so = os.path.join(work, "model.so")
            subprocess.run([os.path.join(args.build, "bin", "kilnc"), os.path.join(args.folder, "model.onnx"),
                            "--shared", "-o", so[:-3]], check=True)
        kiln = kiln_profile(args.build, args.folder, so, args.threads, args.runs, work)
        ort_nodes, ops = ort_profile(args.folder, args.threads, args.runs, work)

    rows, apart = match(kiln, ort_nodes)
    kiln_total, ort_total = sum(kiln.values()), sum(ort_nodes.values())
    # Excess: Kiln's time above ONNX Runtime's for the same nodes, with
    # ONNX Runtime scaled to Kiln's total, so that the rows add up to zero
    # and a machine that drifted between the two runs does not make every
    # row a loss.
    scale = kiln_total / ort_total if ort_total else 1.0
    rows.sort(key=lambda r: r[0] - r[1] * scale, reverse=True)
    print(f"{os.path.basename(os.path.normpath(args.folder))}, {args.threads} thread(s), medians of {args.runs} runs: "
          f"Kiln kernels {kiln_total / 1e3:.2f} ms, ONNX Runtime nodes {ort_total / 1e3:.2f} ms "
          f"(Kiln/ORT {kiln_total / ort_total:.2f})")
    print(f"{'excess us':>10} {'Kiln us':>9} {'ORT us':>9} {'ratio':>6}  kernel (ONNX Runtime ops)")
    for k_us, o_us, kernel, nodes in rows[: args.top]:
        ratio = f"{k_us / o_us:6.2f}" if o_us else "     -"
        kinds = ",".join(sorted({ops[n] for n in nodes})) or "no node"
        print(f"{k_us - o_us * scale:10.1f} {k_us:9.1f} {o_us:9.1f} {ratio}  {kernel[:90]} ({kinds})")
    if apart:
        print(f"ONNX Runtime nodes of no Kiln kernel: {sum(ort_nodes[n] for n in apart):.1f} us "
              f"({', '.join(sorted({ops[n] for n in apart}))})")


if __name__ == "__main__":
    sys.exit(main())
