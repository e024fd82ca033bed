"""The GPU pack's bench: Kiln's CUDA artifacts against PyTorch eager and
torch.compile, on the same GPU, inputs and weights, in one run.

  python3 bench_gpu.py --bench DIR --runner kiln-pack-run --out FILE.json
                       [--seconds S] [--start-after FILE] [--emulate]

DIR is the unpacked bench folder: manifest.txt (bench/<model>_b<batch>) and
per model model.so and 0/out0.bin, ONNX Runtime's CPU output for the
pack's input (packdata.py makes that input here again, bit for bit). Per
model: Kiln's output is checked against that reference (rtol 1e-3, atol
1e-4), then Kiln is timed through `kiln-pack-run bench` with CUDA Graph
replay on and off, and PyTorch (bench/models.py with the pack's weights,
TF32 off) eager and torch.compile (default mode), each the median of as
many runs as fit in --seconds, every run ended by a synchronize. With
--profile, each Kiln model's per-step times go to that file. PyTorch's
output is checked against the same reference, which shows the weights
match. torch.compile compiles every model first; with --start-after the
timing waits until that file exists (run.sh runs the conformance tests
meanwhile). --emulate (no GPU): Kiln's correctness only, at batch 1, with
a single timed run; PyTorch is not run.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import packdata  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4


def median_ms(fn, seconds, sync):
    for _ in range(3):
        fn()
    sync()
    times, start = [], time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 2000):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def kiln_bench(runner, folder, x_path, seconds, graphs, emulate):
    cmd = [runner, "bench", os.path.join(folder, "model.so"), "--input", x_path,
           "--expect", os.path.join(folder, "0", "out0.bin"), "--rtol", str(RTOL), "--atol", str(ATOL),
           "--seconds", str(seconds)]
    if emulate:
        cmd += ["--warmup", "1", "--min-runs", "1"]
    if not graphs:
        cmd.append("--no-graphs")
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"ok": False, "error": (p.stderr or p.stdout).strip()[-400:]}
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--runner", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--start-after")
    ap.add_argument("--emulate", action="store_true")
    ap.add_argument("--profile", help="write each model's per-step times here (kiln-pack-run profile)")
    args = ap.parse_args()

    with open(os.path.join(args.bench, "manifest.txt")) as f:
        ids = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    torch, gpu, notes = None, "emulated (no GPU)", []
    if not args.emulate:
        try:
            import torch
            if not torch.cuda.is_available():
                notes.append("PyTorch sees no CUDA device: PyTorch not timed")
                torch = None
            else:
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                gpu = torch.cuda.get_device_name()
        except ImportError as e:
            notes.append(f"no PyTorch ({e}): PyTorch not timed")
            torch = None

    work = tempfile.mkdtemp(prefix="kiln-bench-")
    rows = []
    models = {}
    # Build (and for torch.compile, compile) every PyTorch model first.
    for test in ids:
        name, batch = test.split("/")[-1].rsplit("_b", 1)
        batch = int(batch)
        if args.emulate and batch != 1:
            rows.append({"model": name, "batch": batch, "skipped": "batch > 1 not emulated (too slow on a CPU)"})
            continue
        x = packdata.model_input(name, batch)
        x_path = os.path.join(work, f"{name}_b{batch}.x.bin")
        x.tofile(x_path)
        row = {"model": name, "batch": batch, "x": x_path, "folder": os.path.join(args.bench, test)}
        if torch is not None:
            try:
                sys.path.insert(0, HERE)
                model = packdata.build_model(name).cuda()
                xd = torch.from_numpy(x).cuda()
                t0 = time.perf_counter()
                with torch.no_grad():
                    compiled = torch.compile(model)
                    compiled(xd)
                    torch.cuda.synchronize()
                row["compile_s"] = time.perf_counter() - t0
                models[(name, batch)] = (model, compiled, xd)
            except Exception as e:  # a peer that fails is reported, not fatal
                row["torch_error"] = f"{type(e).__name__}: {e}"[:300]
        rows.append(row)
        print(f"bench: prepared {name} batch {batch}", flush=True)

    if args.start_after:
        while not os.path.exists(args.start_after):
            time.sleep(0.5)

    for row in rows:
        if "skipped" in row:
            continue
        name, batch = row["model"], row["batch"]
        ref = np.fromfile(os.path.join(row["folder"], "0", "out0.bin"), dtype=np.float32)
        row["kiln"] = kiln_bench(args.runner, row["folder"], row["x"], args.seconds, True, args.emulate)
        if not args.emulate:
            row["kiln_no_graphs"] = kiln_bench(args.runner, row["folder"], row["x"], args.seconds, False,
                                               False)
        if (name, batch) in models:
            model, compiled, xd = models[(name, batch)]
            with torch.no_grad():
                y = model(xd).float().cpu().numpy().reshape(-1)
                row["torch_matches_reference"] = bool(np.allclose(y, ref, rtol=RTOL, atol=ATOL))
                row["torch_max_abs_error"] = float(np.abs(y - ref).max())
                sync = torch.cuda.synchronize
                row["eager_ms"] = median_ms(lambda: model(xd), args.seconds, sync)
                row["compile_ms"] = median_ms(lambda: compiled(xd), args.seconds, sync)
        print(f"bench: {json.dumps({k: v for k, v in row.items() if k not in ('x', 'folder')})}", flush=True)

    if args.profile:
        # Where the time goes, step by step (no graph); under emulation only
        # the first model, once, to check the path.
        with open(args.profile, "w") as f:
            for row in [r for r in rows if "skipped" not in r][:1 if args.emulate else None]:
                p = subprocess.run([args.runner, "profile", os.path.join(row["folder"], "model.so"), "--input",
                                    row["x"], "--min-runs", "1" if args.emulate else "5"],
                                   capture_output=True, text=True)
                f.write(p.stdout + p.stderr + "\n")

    result = {"gpu": gpu, "torch": getattr(torch, "__version__", None), "notes": notes,
              "rtol": RTOL, "atol": ATOL, "rows": [{k: v for k, v in r.items() if k not in ("x", "folder")}
                                                  for r in rows]}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    ok = all(r.get("kiln", {}).get("ok") for r in rows if "skipped" not in r)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
