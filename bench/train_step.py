"""The training benchmark: one Adam step of Kiln against PyTorch 2.x eager and
torch.compile, same model, same data, same run.

  make bench     (or: .venv/bin/python bench/train_step.py --build build)

The models are bench/data_parallel.py's (an MLP 784-1024-1024-10 at batch
64 and a 3-convolution CNN at batch 16, each with an MSE loss). Kiln
compiles the step with `kilnc train --optimizer=adam --lr=1e-3 --shared`
and runs it with `kiln-run --bench N --threads T`. PyTorch builds the same
network from the ONNX file's initializers and times
zero_grad + forward + loss + backward + Adam's step: eager with
torch.optim.Adam(fused=True), and torch.compile with the forward and loss
compiled (AOTAutograd compiles the backward) and the optimizer step
compiled as PyTorch's tutorial does it. Before any timing, the losses of 5
steps on the same batch are compared with Kiln's (they move with the
updates, so the optimizer is checked too). 1-thread runs are pinned to one
core. Prints a Markdown table; --write FILE replaces the training section
of FILE (docs/performance.md).
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_parallel import MODELS  # noqa: E402
from report import cpu_name, emit_section, pinned  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- training: bench/train_step.py -->", "<!-- /training -->"
LR, STEPS = 1e-3, 5


def torch_step(name, folder, threads, seconds):
    """Runs in a process of its own: PyTorch's losses for STEPS steps and
    the median step time, eager and compiled."""
    import torch
    torch.set_num_threads(threads)
    model = onnx.load(os.path.join(folder, "model.onnx"))
    x = torch.from_numpy(np.load(os.path.join(folder, "x.npy")))
    t = torch.from_numpy(np.load(os.path.join(folder, "t.npy")))
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}

    def forward(p, x):
        if name.startswith("mlp"):
            for i in range(3):
                x = x @ p[f"w{i}"] + p[f"b{i}"]
                x = torch.relu(x) if i < 2 else x
            return x
        for i, stride in enumerate((1, 2, 2)):
            x = torch.relu(torch.nn.functional.conv2d(x, p[f"cw{i}"], p[f"cb{i}"], stride=stride, padding=1))
        return x.mean(dim=(2, 3)) @ p["fw"]

    def measure(mode):
        p = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
        loss_fn = lambda x, t: ((forward(p, x) - t) ** 2).mean()  # noqa: E731
        if mode == "eager":
            opt = torch.optim.Adam(list(p.values()), lr=LR, fused=True)
            opt_step = opt.step
        else:
            opt = torch.optim.Adam(list(p.values()), lr=LR)
            loss_fn = torch.compile(loss_fn)
            opt_step = torch.compile(opt.step)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(x, t)
            loss.backward()
            opt_step()
            return loss
        losses = [float(step()) for _ in range(STEPS)]
        for _ in range(3):
            step()
        times, start = [], time.perf_counter()
        while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 1000):
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
        return losses, sorted(times)[len(times) // 2]

    out = {"torch": torch.__version__}
    for mode in ("eager", "compile"):
        out[mode] = measure(mode)
    return out


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=3.0, help="time budget per measurement (default 3)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="Kiln and PyTorch measured alternately this many times; the lowest median counts (default 3)")
    ap.add_argument("--write", help="replace the training section of this Markdown file")
    ap.add_argument("--torch", nargs=3, metavar=("NAME", "FOLDER", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch:
        name, folder, threads = args.torch
        print(json.dumps(torch_step(name, folder, int(threads), args.seconds)))
        return

    kilnc, kiln_run = (os.path.join(args.build, "bin", n) for n in ("kilnc", "kiln-run"))
    rows = []
    for name, (make, batch) in MODELS.items():
        folder = os.path.join(args.build, "bench-train", name)
        os.makedirs(folder, exist_ok=True)
        graph, shapes = make(batch)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                  os.path.join(folder, "model.onnx"))
        rng = np.random.default_rng(1)
        for k, shape in shapes.items():
            np.save(os.path.join(folder, f"{k}.npy"), rng.standard_normal(shape).astype(np.float32))
        step = os.path.join(folder, "step")
        run([kilnc, "train", os.path.join(folder, "model.onnx"), "--loss=loss", "--optimizer=adam",
             f"--lr={LR}", "-o", step, "--shared"])
        feeds = [a for k in shapes for a in ("--input", f"{k}={os.path.join(folder, k + '.npy')}")]
        run([kiln_run, step + ".so", *feeds, "--steps", str(STEPS), "--output-dir", folder])
        kiln_losses = np.load(os.path.join(folder, "loss.npy"))
        for threads in (1, 2):
            bench = run(pinned(threads) + [kiln_run, step + ".so", *feeds, "--threads", str(threads),
                                           "--bench", "1"])
            ms = float(re.search(r"median ([0-9.]+) us", bench).group(1)) / 1e3
            runs = str(int(max(5, min(1000, args.seconds * 1e3 / max(ms, 1e-3)))))
            # The host's speed drifts over minutes: the engines take turns, and
            # each keeps its lowest median.
            kiln_ms, row = float("inf"), {}
            for _ in range(max(1, args.rounds)):
                bench = run(pinned(threads) + [kiln_run, step + ".so", *feeds, "--threads", str(threads),
                                               "--bench", runs])
                kiln_ms = min(kiln_ms, float(re.search(r"median ([0-9.]+) us", bench).group(1)) / 1e3)
                peers = json.loads(run(pinned(threads) + [sys.executable, os.path.abspath(__file__), "--seconds",
                                                          str(args.seconds), "--torch", name, folder,
                                                          str(threads)]).strip().splitlines()[-1])
                row.update({"model": name, "batch": batch, "threads": threads, "torch": peers["torch"]})
                for mode in ("eager", "compile"):
                    losses, peer_ms = peers[mode]
                    if not np.allclose(kiln_losses, losses, rtol=1e-4, atol=1e-6):
                        sys.exit(f"{name}: PyTorch {mode}'s losses {losses} differ from Kiln's {kiln_losses.tolist()}")
                    row[mode] = min(row.get(mode, float("inf")), peer_ms)
            row["kiln"] = kiln_ms
            rows.append(row)
            print(f"{name} threads={threads}: kiln {kiln_ms:.3f} ms, eager {row['eager']:.3f} ms, "
                  f"torch.compile {row['compile']:.3f} ms", flush=True)

    cpu = cpu_name()
    lines = [BEGIN, "", "## Training steps", "",
             f"Measured {datetime.date.today().isoformat()} on {cpu}, {os.cpu_count()} cores, with `make bench` "
             f"(bench/train_step.py): one Adam step (lr {LR}) of bench/data_parallel.py's models with an MSE loss. "
             "Kiln: `kilnc train --optimizer=adam --shared`, timed by `kiln-run --bench`; PyTorch "
             f"{rows[0]['torch'] if rows else ''} from PyPI: zero_grad, forward, loss, backward and the step, "
             "eager with the fused Adam, and torch.compile over the forward and loss and over the optimizer "
             f"step. The losses of {STEPS} steps on one batch agree with Kiln's (rtol 1e-4) before any timing; "
             "the median step time of as many steps as fit in a few seconds, measured "
             f"{max(1, args.rounds)} times with Kiln and PyTorch taking turns, the lowest median of each; "
             "1-thread runs pinned to one core.",
             "",
             "| model | batch | threads | Kiln ms | eager ms | compile ms | Kiln/eager | Kiln/compile |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['batch']} | {r['threads']} | {r['kiln']:.3f} | {r['eager']:.3f} | "
                     f"{r['compile']:.3f} | {r['kiln'] / r['eager']:.2f} | {r['kiln'] / r['compile']:.2f} |")
    emit_section(lines, BEGIN, END, args.write)


if __name__ == "__main__":
    main()
