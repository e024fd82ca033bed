"""The CPU benchmark: Kiln against ONNX Runtime and PyTorch, same machine,
same inputs, same run.

  make bench            (or: .venv/bin/python bench/run.py --build build)

The model set is the MLP at batch 1 and 64 (bench/models.py) and the models
as exporters write them (bench/exported.py: torchvision CNNs, two exports
of nn.TransformerEncoder, BERT and GPT-2 from transformers); bench/models.py's
hand-written ResNet-18, MobileNetV2 and encoder stay available by name
(--models resnet18 ...). For every model: compile with kilnc (--shared), time
Kiln (kiln-run --bench --threads N), ONNX Runtime (CPU provider, all graph
optimizations) and PyTorch 2.x from PyPI in the venv (bench/torch2_time.py:
eager, torch.compile with Inductor, and an AOTInductor package loaded back),
with 1 and 2 threads; warm-up, then the median of as many runs as fit in
--seconds (Kiln and ONNX Runtime --rounds times, taking turns, keeping the
lowest median of each). Every output is checked against the reference
before any time is reported. Where the venv has no PyTorch 2.x the PyTorch peer is Debian's
1.13 (frozen TorchScript), which is not a fair peer, and the table says so.
Prints a Markdown table; --write FILE also stores it with the date and the
machine.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exported  # noqa: E402
from report import cpu_name, input_names, pinned  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_PY = "/usr/bin/python3"

# Sections of docs/performance.md that other benchmarks write.
KEPT_SECTIONS = [("<!-- training: bench/train_step.py -->", "<!-- /training -->"),
                 ("<!-- data-parallel: bench/data_parallel.py -->", "<!-- /data-parallel -->"),
                 ("<!-- compile-time: bench/compile_time.py -->", "<!-- /compile-time -->")]


def nominal_peak():
    """(GFLOP/s fp32 of one core, flops a cycle, GHz) of this machine: two
    FMA units of the widest vectors the CPU has (AVX-512: 64 flops a cycle,
    AVX2 with FMA: 32, else 16) at the clock in the model name, else the one
    /proc/cpuinfo reports. AMD's Zen 4 (family 25 with AVX-512) runs AVX-512
    on 256-bit units: 32. Turbo runs the core faster, so a kernel can pass
    100 % of it."""
    flags, ghz, vendor, family = set(), None, None, None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "flags" and not flags:
                    flags = set(value.split())
                elif key == "vendor_id" and vendor is None:
                    vendor = value.strip()
                elif key == "cpu family" and family is None:
                    family = int(value)
                elif key == "model name" and ghz is None and "GHz" in value:
                    ghz = float(value.split("@")[-1].strip().removesuffix("GHz"))
                elif key == "cpu MHz" and ghz is None:
                    ghz = float(value) / 1000
    except (OSError, ValueError):
        pass
    per_cycle = 64 if "avx512f" in flags else 32 if {"avx2", "fma"} <= flags else 16
    if per_cycle == 64 and vendor == "AuthenticAMD" and family == 25:
        per_cycle = 32
    ghz = ghz or 2.0
    return per_cycle * ghz, per_cycle, ghz


PEAK_GFLOPS_PER_CORE, PEAK_FLOPS_PER_CYCLE, PEAK_GHZ = nominal_peak()


def flops(model_path):
    """Multiply-adds x 2 of the Conv, MatMul and Gemm nodes."""
    m = shape_inference.infer_shapes(onnx.load(model_path))
    shapes = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    for init in m.graph.initializer:
        shapes[init.name] = list(init.dims)
    total = 0
    for node in m.graph.node:
        if node.op_type == "Conv":
            w = shapes.get(node.input[1])
            y = shapes.get(node.output[0])
            if w and y:
                total += 2 * int(np.prod(y)) * int(np.prod(w[1:]))
        elif node.op_type in ("MatMul", "Gemm"):
            a, y = shapes.get(node.input[0]), shapes.get(node.output[0])
            if a and y:
                k = a[-1]
                if node.op_type == "Gemm":
                    trans_a = any(at.name == "transA" and at.i for at in node.attribute)
                    k = a[0] if trans_a else a[-1]
                total += 2 * int(np.prod(y)) * k
    return total


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def kiln_compile(build, folder):
    prefix = os.path.join(folder, "kiln")
    start = time.perf_counter()
    run([os.path.join(build, "bin", "kilnc"), os.path.join(folder, "model.onnx"),
         "--shared", "-o", prefix])
    return prefix + ".so", time.perf_counter() - start


def kiln_time(build, so, folder, seconds, threads, expected):
    rtol, atol = exported.tolerance(expected)
    feeds = [a for n in input_names(folder) for a in ("--input", f"{n}={os.path.join(folder, n + '.npy')}")]
    base = pinned(threads) + [os.path.join(build, "bin", "kiln-run"), so, "--threads", str(threads),
            *feeds, "--compare", os.path.join(folder, "y_torch.npy"),
            "--rtol", str(rtol), "--atol", str(atol)]
    probe = run(base + ["--bench", "1"]).stdout
    median = lambda text: float(re.search(r"median ([0-9.]+) us", text).group(1)) / 1e3
    ms = median(probe)
    runs = int(max(5, min(1000, seconds * 1e3 / max(ms, 1e-3))))
    return median(run(base + ["--bench", str(runs)]).stdout)


def ort_time(folder, threads, seconds, expected):
    cores = os.sched_getaffinity(0)
    if threads == 1:
        os.sched_setaffinity(0, {min(cores)})
    try:
        return ort_time_here(folder, threads, seconds, expected)
    finally:
        os.sched_setaffinity(0, cores)


def ort_time_here(folder, threads, seconds, expected):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(os.path.join(folder, "model.onnx"), opts,
                                providers=["CPUExecutionProvider"])
    feed = {n: np.load(os.path.join(folder, f"{n}.npy")) for n in input_names(folder)}
    y = sess.run(None, feed)[0]
    rtol, atol = exported.tolerance(expected)
    if not np.allclose(y, expected, rtol=rtol, atol=atol):
        raise RuntimeError(f"onnxruntime disagrees with PyTorch: max abs diff "
                           f"{np.max(np.abs(y - expected))}")
    for _ in range(3):
        sess.run(None, feed)
    times, start = [], time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 1000):
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def have_torch2():
    try:
        import importlib.metadata as md
        return int(md.version("torch").split(".")[0]) >= 2
    except Exception:  # noqa: BLE001 - no torch in the venv
        return False


HAVE_TORCH2 = have_torch2()


def torch2_time(name, folder, threads, seconds):
    """PyTorch 2.x eager, torch.compile and AOTInductor, in a process of
    their own (bench/torch2_time.py), so thread settings do not leak."""
    out = run(pinned(threads) + [sys.executable, os.path.join(ROOT, "bench", "torch2_time.py"), name,
                                 folder, str(threads), str(seconds)]).stdout
    return json.loads(out.strip().splitlines()[-1])


def torch_time(folder, threads, seconds):
    # Debian's OpenBLAS (under Debian's PyTorch) picks SSE3 kernels on this
    # CPU unless told the core type: without it PyTorch would look 4x slower
    # than it is.
    env = dict(os.environ)
    env.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
    out = run([TORCH_PY, os.path.join(ROOT, "bench", "torch_time.py"),
               os.path.join(folder, "model.pt"), os.path.join(folder, "x.npy"),
               str(threads), str(seconds)], env=env).stdout
    return float(out.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=3.0,
                    help="time budget per measurement (default 3)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="measurements of Kiln and ONNX Runtime, taking turns; "
                         "each keeps its lowest median (default 3)")
    ap.add_argument("--models", nargs="*", help="subset of the model set")
    ap.add_argument("--write", help="also write the table to this Markdown file")
    args = ap.parse_args()

    work = os.path.join(args.build, "bench")
    names = args.models or ["mlp_b1", "mlp_b64"] + (exported.EXPORTED if HAVE_TORCH2 else [])
    handwritten = [n for n in names if n not in exported.EXPORTED]
    if handwritten:
        subprocess.run([TORCH_PY, os.path.join(ROOT, "bench", "models.py"), work] + handwritten, check=True)
    if len(handwritten) < len(names):
        if not HAVE_TORCH2:
            sys.exit("bench/run.py: the exported models need PyTorch 2.x in the venv (scripts/setup.sh --bench)")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "exported.py"), work]
                       + [n for n in names if n in exported.EXPORTED], check=True)

    rows = []
    for name in names:
        folder = os.path.join(work, name)
        expected = np.load(os.path.join(folder, "y_torch.npy"))
        gflop = flops(os.path.join(folder, "model.onnx")) / 1e9
        try:
            so, compile_s = kiln_compile(args.build, folder)
            kiln_err = None
        except subprocess.CalledProcessError as e:
            so, compile_s = None, None
            kiln_err = (e.stderr or e.stdout).strip().splitlines()[-1:]
        for threads in (1, 2):
            # Kiln and ONNX Runtime take turns, --rounds times, and each keeps
            # its lowest median: on a shared VM whose speed moves between
            # minutes, one median each could land in different phases.
            kiln_ms, o = None, None
            for _ in range(args.rounds):
                if so is not None and kiln_err is None:
                    try:
                        k = kiln_time(args.build, so, folder, args.seconds, threads, expected)
                        kiln_ms = k if kiln_ms is None else min(kiln_ms, k)
                    except subprocess.CalledProcessError as e:
                        kiln_err = (e.stderr or e.stdout).strip().splitlines()[-1:]
                t = ort_time(folder, threads, args.seconds, expected)
                o = t if o is None else min(o, t)
            peers = torch2_time(name, folder, threads, args.seconds) if HAVE_TORCH2 else {
                "eager": torch_time(folder, threads, args.seconds)}
            row = dict(model=name, threads=threads, kiln=kiln_ms, ort=o, torch=peers.get("eager"),
                       compile=peers.get("compile"), aoti=peers.get("aoti"),
                       peer_errors=peers.get("errors", {}),
                       gflop=gflop, compile_s=compile_s, error=kiln_err)
            rows.append(row)
            print(format_row(row), flush=True)

    table = render(rows)
    print()
    print(table)
    if args.write:
        # The other benchmarks' sections (bench/train_step.py,
        # bench/data_parallel.py, bench/compile_time.py), kept as they last
        # wrote them.
        kept = ""
        if os.path.exists(args.write):
            old = open(args.write).read()
            for begin, end in KEPT_SECTIONS:
                if begin in old and end in old:
                    kept += "\n" + old[old.index(begin): old.index(end) + len(end)] + "\n"
        with open(args.write, "w") as f:
            f.write(document(table, args.rounds) + kept)


def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def format_row(r):
    return (f"{r['model']:<20} threads={r['threads']} kiln={fmt(r['kiln'])} ms "
            f"ort={fmt(r['ort'])} ms eager={fmt(r['torch'])} ms compile={fmt(r.get('compile'))} ms "
            f"aoti={fmt(r.get('aoti'))} ms"
            + (f"  kiln failed: {r['error']}" if r["error"] else "")
            + "".join(f"  {k} failed: {v}" for k, v in r.get("peer_errors", {}).items()))


def ratio(k, peer):
    return k / peer if k and peer else None


def render(rows):
    lines = ["| model | threads | Kiln ms | ORT ms | eager ms | compile ms | AOTI ms | Kiln/ORT | "
             "Kiln/eager | Kiln/compile | Kiln/AOTI | GFLOP | Kiln GFLOP/s | % of peak |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        k = r["kiln"]
        rate = r["gflop"] / (k / 1e3) if k and r["gflop"] else None
        peak = rate / (PEAK_GFLOPS_PER_CORE * r["threads"]) * 100 if rate else None
        lines.append(
            f"| {r['model']} | {r['threads']} | {fmt(k, '.3f')} | {fmt(r['ort'], '.3f')} | "
            f"{fmt(r['torch'], '.3f')} | {fmt(r.get('compile'), '.3f')} | {fmt(r.get('aoti'), '.3f')} | "
            f"{fmt(ratio(k, r['ort']))} | {fmt(ratio(k, r['torch']))} | "
            f"{fmt(ratio(k, r.get('compile')))} | {fmt(ratio(k, r.get('aoti')))} | {fmt(r['gflop'], '.3f')} | "
            f"{fmt(rate, '.1f')} | {fmt(peak, '.1f')} |")
    errors = [f"- {r['model']}, {r['threads']} thread(s): {k}: {v}"
              for r in rows for k, v in r.get("peer_errors", {}).items()]
    if errors:
        lines += ["", "Peers that failed (no time reported):", ""] + errors
    return "\n".join(lines) + "\n\n" + summary(rows)


def summary(rows):
    """Per thread count: the geometric means of Kiln/ORT and Kiln/PyTorch
    over the models Kiln ran, and the slowest model against ORT."""
    lines = []
    for threads in sorted({r["threads"] for r in rows}):
        ran = [r for r in rows if r["threads"] == threads and r["kiln"] and r["ort"]]
        if not ran:
            continue

        def geo(peer):
            have = [r for r in ran if r.get(peer)]
            if not have:
                return "-"
            return f"{math.exp(sum(math.log(r['kiln'] / r[peer]) for r in have) / len(have)):.2f}"
        worst = max(ran, key=lambda r: r["kiln"] / r["ort"])
        lines.append(
            f"{threads} thread{'s' if threads > 1 else ''}, {len(ran)} models: geometric mean "
            f"Kiln/ORT {geo('ort')}, Kiln/eager {geo('torch')}, Kiln/torch.compile {geo('compile')}, "
            f"Kiln/AOTInductor {geo('aoti')}; slowest against ORT: "
            f"{worst['model']} ({worst['kiln'] / worst['ort']:.2f}).")
    return "\n\n".join(lines)


def peer_text():
    if not HAVE_TORCH2:
        return ("PyTorch from Debian's python3-torch 1.13 (frozen TorchScript): not a fair "
                "peer; `scripts/setup.sh --bench` installs PyTorch 2.x")
    import importlib.metadata as md
    return (f"PyTorch {md.version('torch')} from PyPI, eager, torch.compile (Inductor) and "
            "AOTInductor (torch._inductor.aoti_compile_and_package, loaded back with "
            "aoti_load_package), each called from Python, so sub-millisecond models carry "
            "Python's call overhead (a few microseconds) that Kiln's C entry does not")


def document(table, rounds):
    cpu = cpu_name()
    return f"""# Performance

Measured {datetime.date.today().isoformat()} on {cpu}, {os.cpu_count()} cores,
{platform.system()} {platform.release()}, with `make bench` (bench/run.py).
Latency is the median of as many runs as fit in a few seconds after a
warm-up; Kiln and ONNX Runtime are measured {rounds} times, taking turns,
and each keeps its lowest median; the PyTorch peers, which compile in a
process of their own, are measured once. 1-thread runs of every peer
are pinned to the same core (taskset); ratios below 1 mean Kiln is faster. Every output was checked
against PyTorch eager's before timing (rtol 1e-3, atol 1e-4 of the output's
largest magnitude).

The models: the MLP (784-512-512-10) at batch 1 and 64, written by hand
(bench/models.py), and models as exporters write them (bench/exported.py,
named MODEL.EXPORTER as in the model zoo; random weights): torchvision's
ResNet-18, ResNet-50, EfficientNet-B0 and ConvNeXt-T through the
TorchScript exporter at opset 17 (BatchNorm folded), MobileNetV2 with its
BatchNormalization kept (`ts17-bn`), nn.TransformerEncoder (2 layers, d 256,
4 heads, GELU, sequence 128) through the TorchScript exporter at opset 14
(LayerNorm decomposed, erf GELU, attention's shape arithmetic; its attention
does not export at 13) and the current exporter at opset 18, and from
transformers BERT (4 layers, hidden 256) and GPT-2 small (12 layers, 768
wide), sequence 128 with 8 padded positions, through the current exporter.
ONNX Runtime
{ort.__version__} (CPU provider, all graph optimizations); {peer_text()}. The nominal peak is
{PEAK_GFLOPS_PER_CORE:.0f} GFLOP/s fp32 per core ({PEAK_FLOPS_PER_CYCLE} flops a cycle at {PEAK_GHZ:.2f} GHz);
turbo runs faster, so the last column can pass 100.

Kiln runs with `kiln-run --threads N` (kiln_model_set_num_threads): the
matmul and convolution tiles (a loop of few cache tiles together with its
weight panels, as one index space), im2col copies, depthwise channels,
blocked transposes and large elementwise nests are split over the
runtime's thread pool, the rest runs
on the calling thread (docs/decisions/0012-threads.md). f32 matmul and
convolution are tiled and
vectorized (kiln-schedule-matmul, docs/decisions/0007-cpu-matmul.md;
13x32 register tiles with AVX-512), and each register tile's k loop
prefetches the rows of the weight the next k tile reads
(kiln-prefetch-panels, docs/decisions/0014-convolution-layouts.md).
3x3 stride-1 convolutions with constant filters over at least 49 2x2
tiles are Winograd's F(2x2, 3x3), 16 matmuls between an input and an
output transform (docs/decisions/0032-winograd.md); other
stride-1 convolutions read their input as shifted rows (no im2col copy),
images of at most 64 positions (1,024 for deep reductions into few
channels) are computed as positions x channels, atrous convolutions whose
taps mostly read padding tap by tap, the
rest go through im2col, a block of output rows (1-D: positions) at a time
when the columns pass 1 MB (docs/decisions/0014-convolution-layouts.md). Ops
are fused into kernels (kiln-fuse, docs/decisions/0010-fusion.md):
elementwise chains, softmax and layer norm, and matmul/conv epilogues
become few loop nests, and f32 elementwise nests and row reductions are
vectorized; matmul and convolution epilogues (bias, activation, residual)
run on each output tile while it is in cache, depthwise ones on each row
vector (docs/decisions/0015-epilogues-in-tiles.md).
Constant weights are packed into panels at compile time (a width that is
not a multiple of the panel, a classifier's 1000 columns, as whole panels
and a row-major rest; rows a little past the m cache tile, a 7x7 image's
49 positions, are one tile, not 48 and 1), depthwise
convolutions are vector FMAs over output rows, or over whole small planes
as one flat row (max poolings vector maxes),
and exp/log/tanh/erf are
polynomials (0007, 0013).
To see where a model loses, `bench/compare_profile.py FOLDER` puts Kiln's
per-kernel profile beside ONNX Runtime's per-node one for a model folder
of this run (build/bench/NAME), worst first. On a shared VM whose speed
moves 20-40 % between minutes one median can be off by that much (a
2-thread row above all, when the host takes the second vCPU away): compare
builds with interleaved runs, not across tables.

The GPU benchmark (Kiln's CUDA artifacts against PyTorch eager and
torch.compile) is bench/cuda.py; it writes docs/performance-cuda.md on a
machine with a GPU.

{table}
"""


if __name__ == "__main__":
    sys.exit(main())
