"""The compile benchmark: kilnc's wall time and peak memory on one core.

  make bench-compile    (or: .venv/bin/python bench/compile_time.py --build build)

Compiles the bench models (bench/models.py) and a few large zoo models
(test/zoo: ResNet-50, DenseNet-121, ViT-B/16, BERT and MaxViT-T, the zoo's
slowest compile; TorchScript exporter, opset 17, random weights) with
`kilnc --shared`, one compile at a time: three times (--repeat) with `-j1`
pinned to one core (`taskset -c 0`) and twice with `-j2` on two cores
(`taskset -c 0,1`). For each it reports the lowest wall time at each -j
(this machine's neighbours slow single runs by 10-30%), the peak resident
memory (/usr/bin/time's maximum resident size), the weights' bytes, and the
issue 29 bound on memory (3x the weights plus 300 MB). All the objects must
be byte-identical.

--baseline KILNC also compiles every model with another kilnc (an older
build) on one core as often as this one at -j1, each compile beside one of
this kilnc's, and prints the ratio of the lowest times: the comparison a
change to the compiler is judged by (no -j flag: an older kilnc may not
have it; on one core it runs one thread anyway).

--write FILE replaces the compile-time section of FILE (docs/performance.md).
"""

import argparse
import datetime
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import time

from report import cpu_name, emit_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_PY = "/usr/bin/python3"
BEGIN, END = "<!-- compile-time: bench/compile_time.py -->", "<!-- /compile-time -->"
BENCH_MODELS = ["mlp_b64", "resnet18", "mobilenetv2", "transformer"]
ZOO_MODELS = ["resnet50.ts17", "densenet121.ts17", "vit_b_16.ts17", "bert.ts17", "maxvit_t.ts17"]


def weight_bytes(path):
    import onnx
    model = onnx.load(path, load_external_data=False)
    total = 0
    for init in model.graph.initializer:
        n = 1
        for d in init.dims:
            n *= d
        total += n * onnx.helper.tensor_dtype_to_np_dtype(init.data_type).itemsize
    return total


def compile_once(kilnc, model, out, jobs=None):
    """Wall seconds, peak RSS bytes and the object's digest of one compile,
    on one core, or on `jobs` cores with -jJOBS.
    /usr/bin/time measures the peak: a child forked from this process would
    count this process's pages (torch is loaded) as its own."""
    cores = ",".join(str(c) for c in range(jobs or 1))
    cmd = ["/usr/bin/time", "-f", "kiln-peak-kb %M", "taskset", "-c", cores, kilnc, model,
           "--shared", "-o", out] + ([f"-j{jobs}"] if jobs else [])
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[4:])} failed:\n{proc.stderr.strip()}")
    peak = [line for line in proc.stderr.splitlines() if line.startswith("kiln-peak-kb ")]
    with open(out + ".o", "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return wall, int(peak[-1].split()[1]) * 1024, digest


def models(build, only=None):
    """(name, model.onnx) of the bench and zoo models (those in `only`, when
    given), made if missing."""
    wanted = lambda name: not only or name in only
    bench = os.path.join(build, "bench")
    names = [m for m in BENCH_MODELS if wanted(m)]
    missing = [m for m in names if not os.path.exists(os.path.join(bench, m, "model.onnx"))]
    if missing:
        subprocess.run([TORCH_PY, os.path.join(ROOT, "bench", "models.py"), bench] + missing,
                       check=True)
    found = [(m, os.path.join(bench, m, "model.onnx")) for m in names]
    zoo = os.path.join(build, "bench-compile")
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import zoo as zoo_module
    for config in filter(wanted, ZOO_MODELS):
        path = os.path.join(zoo, config, "model.onnx")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            zoo_module.export(config, path)
        found.append((config, path))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline", help="another kilnc to compare with, compiled interleaved")
    ap.add_argument("--baseline-name", default="another kilnc",
                    help="what the baseline is, for the report (e.g. a commit)")
    ap.add_argument("--only", nargs="*", help="model names to compile (default: all)")
    ap.add_argument("--write", help="replace the compile-time section of this Markdown file")
    ap.add_argument("--repeat", type=int, default=3,
                    help="one-core compiles of each model, and of the baseline interleaved "
                         "with them; the lowest wall time counts (default: 3)")
    args = ap.parse_args()

    kilnc = os.path.join(args.build, "bin", "kilnc")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in models(args.build, args.only):
            out = os.path.join(tmp, "m")
            # The machine's neighbours slow single compiles by 10-30%: the
            # lowest of several, each beside one of the baseline's, is the
            # closest to an uncontended time, and the same for both.
            ones, bases = [], []
            for _ in range(max(1, args.repeat)):
                ones.append(compile_once(kilnc, path, out, 1))
                if args.baseline:
                    bases.append(compile_once(args.baseline, path, out))
            twos = [compile_once(kilnc, path, out, 2) for _ in range(2)]
            if len({digest for _, _, digest in ones + twos}) != 1:
                raise RuntimeError(f"{name}: compiles at -j1 and -j2 gave different objects")
            lowest = lambda runs: (min(r[0] for r in runs), max(r[1] for r in runs))
            wall, rss = lowest(ones)
            two = lowest(twos)
            base = lowest(bases) if bases else None
            weights = weight_bytes(path)
            row = dict(name=name, wall=wall, rss=rss, wall2=two[0], rss2=two[1],
                       weights=weights, bound=3 * weights + 300e6, base=base)
            rows.append(row)
            print(f"{name}: {wall:.1f} s, {rss / 1e6:.0f} MB; -j2 {two[0]:.1f} s, "
                  f"{two[1] / 1e6:.0f} MB"
                  + (f" (baseline {base[0]:.1f} s, {base[1] / 1e6:.0f} MB)" if base else ""),
                  file=sys.stderr)

    cpu = cpu_name(platform.machine())
    lines = [BEGIN, "", "## Compile time", "",
             f"Measured {datetime.date.today()} on {cpu}, "
             f"{os.cpu_count()} cores, by bench/compile_time.py: `kilnc --shared -j1` pinned "
             "to one core, one compile at a time, and `-j2` on two cores: the lowest wall time "
             f"of {max(1, args.repeat)} compiles at -j1 and of two at -j2. All the objects are "
             "byte-identical. Peak "
             "is the resident maximum; the bound is issue 29's (3x the weights plus "
             "300 MB)."
             + (f" The baseline is {args.baseline_name}, compiled on one core as often, "
                "each compile beside one of this kilnc's, in the same run; the time ratio is "
                "kilnc's time over the baseline's."
                if args.baseline else ""), ""]
    head = "| model | weights MB | -j1 s | -j1 peak MB | -j2 s | -j2 peak MB | bound MB |"
    rule = "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    if args.baseline:
        head += " baseline s | baseline MB | time ratio |"
        rule += " ---: | ---: | ---: |"
    lines += [head, rule]
    for r in rows:
        line = (f"| {r['name']} | {r['weights'] / 1e6:.0f} | {r['wall']:.2f} | "
                f"{r['rss'] / 1e6:.0f} | {r['wall2']:.2f} | {r['rss2'] / 1e6:.0f} | "
                f"{r['bound'] / 1e6:.0f} |")
        if args.baseline:
            line += f" {r['base'][0]:.2f} | {r['base'][1] / 1e6:.0f} | {r['wall'] / r['base'][0]:.2f} |"
        lines.append(line)
    emit_section(lines, BEGIN, END, args.write)


if __name__ == "__main__":
    main()
