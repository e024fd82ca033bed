"""The GPU benchmark: Kiln's CUDA artifacts against PyTorch eager and
torch.compile, same GPU, same inputs, same run.

  python3 bench/cuda.py [--build build] [--write docs/performance-cuda.md]

Runs in a Python that has PyTorch with CUDA (the device machines have one)
and needs kilnc and kiln-run built with the CUDA toolkit in --build. For
each model of bench/models.py (the MLP, ResNet-18, MobileNetV2 and the
transformer encoder) at batch 1 and 32: export ONNX from PyTorch, compile
it with `kilnc --target=cuda --shared`, check Kiln's output against
PyTorch's on the GPU (rtol 1e-3, atol 1e-4; TF32 off in PyTorch), then time
- Kiln: `kiln-run --bench N` (the run and the wait for it, data on the
  device, CUDA Graph replay from the second run);
- PyTorch eager and torch.compile (default mode): the call and
  torch.cuda.synchronize();
each the median of as many runs as fit in --seconds after a warm-up.
Prints a Markdown table; --write also stores it with the date and the GPU.
Exits 77 (skipped) when no CUDA device is present.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

# The architectures of bench/models.py (its mlp_b1 and mlp_b64 are one MLP).
ARCHS = {"mlp": "mlp_b1", "resnet18": "resnet18", "mobilenetv2": "mobilenetv2",
         "transformer": "transformer"}


def median_time(fn, seconds):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times, start = [], time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 1000):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def export(torch, model, x, path):
    """The TorchScript-based exporter, which newer PyTorch versions keep
    behind dynamo=False (their default needs onnxscript)."""
    kw = dict(input_names=["x"], output_names=["y"], opset_version=17,
              do_constant_folding=True)
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kw)
    except TypeError:
        torch.onnx.export(model, (x,), path, **kw)


def kiln(build, folder, seconds, probe_ms):
    prefix = os.path.join(folder, "kiln")
    subprocess.run([os.path.join(build, "bin", "kilnc"), os.path.join(folder, "model.onnx"),
                    "--target=cuda", "--shared", "-o", prefix], check=True,
                   capture_output=True, text=True)
    runs = int(max(5, min(1000, seconds * 1e3 / max(probe_ms, 1e-3))))
    out = subprocess.run([os.path.join(build, "bin", "kiln-run"), prefix + ".so",
                          "--input", os.path.join(folder, "x.npy"),
                          "--compare", os.path.join(folder, "y.npy"),
                          "--rtol", "1e-3", "--atol", "1e-4", "--bench", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) us", out).group(1)) / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--batches", type=int, nargs="*", default=[1, 32])
    ap.add_argument("--models", nargs="*", default=list(ARCHS))
    ap.add_argument("--write", help="also write the table to this Markdown file")
    args = ap.parse_args()

    import numpy as np
    import torch
    if not torch.cuda.is_available():
        print("bench/cuda.py: skipped: no CUDA device (torch.cuda.is_available() is False)")
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    import models as bench_models

    gpu = torch.cuda.get_device_name()
    rows = []
    work = tempfile.mkdtemp(prefix="kiln-bench-cuda-")
    for arch in args.models:
        cls, shape = bench_models.MODELS[ARCHS[arch]]
        for batch in args.batches:
            torch.manual_seed(0)
            gen = torch.Generator().manual_seed(0)
            model = cls().eval()
            with torch.no_grad():
                bench_models.randomize_norms(model, gen)
                x = torch.randn(batch, *shape[1:], generator=gen)
                folder = os.path.join(work, f"{arch}_b{batch}")
                os.makedirs(folder)
                export(torch, model, x, os.path.join(folder, "model.onnx"))
                model, xd = model.cuda(), x.cuda()
                y = model(xd)
                np.save(os.path.join(folder, "x.npy"), x.numpy())
                np.save(os.path.join(folder, "y.npy"), y.cpu().numpy())
                eager = median_time(lambda: model(xd), args.seconds)
                compiled = torch.compile(model)
                compiled_ms = median_time(lambda: compiled(xd), args.seconds)
            row = dict(model=arch, batch=batch, eager=eager, compiled=compiled_ms, kiln=None,
                       error=None)
            try:
                row["kiln"] = kiln(args.build, folder, args.seconds, eager)
            except subprocess.CalledProcessError as e:
                row["error"] = ((e.stderr or "") + (e.stdout or "")).strip().splitlines()[-1:]
            rows.append(row)
            print(row, flush=True)

    fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    lines = ["| model | batch | Kiln ms | eager ms | torch.compile ms | Kiln/eager | Kiln/compile |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        k = r["kiln"]
        lines.append(f"| {r['model']} | {r['batch']} | {fmt(k)} | {fmt(r['eager'])} | "
                     f"{fmt(r['compiled'])} | {fmt(k / r['eager'] if k else None)} | "
                     f"{fmt(k / r['compiled'] if k else None)} |"
                     + (f" Kiln failed: {r['error']}" if r["error"] else ""))
    table = "\n".join(lines)
    print()
    print(table)
    if args.write:
        with open(args.write, "w") as f:
            f.write(f"""# Performance on a GPU

Measured {datetime.date.today().isoformat()} on {gpu} with `bench/cuda.py`:
Kiln's CUDA artifacts (kilnc --target=cuda, run by kiln-run on the device,
CUDA Graph replay) against PyTorch {torch.__version__} eager and
torch.compile (default mode), fp32 with TF32 off. Latency is the median of
as many runs as fit in a few seconds after a warm-up, each ended by a
synchronize; ratios below 1 mean Kiln is faster. Kiln's outputs were
checked against PyTorch's on the same GPU (rtol 1e-3, atol 1e-4).

{table}
""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
