"""Times a bench model in PyTorch 2.x: eager, torch.compile (Inductor) and
AOTInductor (compiled to a package, loaded back), after checking each one's
output against the reference bench/models.py saved.

Runs in the project's venv with PyTorch from PyPI (scripts/setup.sh --bench).
The module is rebuilt (bench/models.py's class, or bench/exported.py's
builder) and given the weights the export had (FOLDER/state.pt); the inputs
are FOLDER/x.npy, or the files FOLDER/inputs.json names.
Usage:
  .venv/bin/python bench/torch2_time.py NAME FOLDER THREADS SECONDS
Prints one JSON object: {"eager": ms, "compile": ms, "aoti": ms, "errors": {...}}
(a mode that fails has no time and its first error line under "errors").
"""

import json
import os
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exported  # noqa: E402
from models import MODELS  # noqa: E402  (the same nn.Module definitions)


def median_ms(fn, x, seconds):
    with torch.no_grad():
        for _ in range(3):
            fn(*x)
        times, start = [], time.perf_counter()
        while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 1000):
            t0 = time.perf_counter()
            fn(*x)
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def check(fn, x, expected, what):
    with torch.no_grad():
        y = fn(*x)
    if isinstance(y, (tuple, list)):
        y = y[0]
    y = y.detach().numpy()
    rtol, atol = exported.tolerance(expected)
    if not np.allclose(y, expected, rtol=rtol, atol=atol):
        raise RuntimeError(f"{what} disagrees with the reference: max abs diff {np.max(np.abs(y - expected)):.3g}")


def inputs(folder):
    names = ["x"]
    if os.path.exists(os.path.join(folder, "inputs.json")):
        with open(os.path.join(folder, "inputs.json")) as f:
            names = json.load(f)
    return tuple(torch.from_numpy(np.load(os.path.join(folder, f"{n}.npy"))) for n in names)


def main():
    name, folder, threads, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    warnings.filterwarnings("ignore")
    torch.set_num_threads(threads)
    model = (MODELS[name][0]() if name in MODELS else exported.module(name)).eval()
    model.load_state_dict(torch.load(os.path.join(folder, "state.pt")))
    x = inputs(folder)
    expected = np.load(os.path.join(folder, "y_torch.npy"))
    out, errors = {}, {}

    def measure(mode, make):
        try:
            fn = make()
            check(fn, x, expected, mode)
            out[mode] = median_ms(fn, x, seconds)
        except Exception as e:  # noqa: BLE001 - a failing peer is reported, not fatal
            errors[mode] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]

    measure("eager", lambda: model)
    measure("compile", lambda: torch.compile(model))

    def aoti():
        with torch.no_grad():
            program = torch.export.export(model, x)
        path = torch._inductor.aoti_compile_and_package(
            program, package_path=os.path.join(folder, f"model_{threads}.pt2"))
        return torch._inductor.aoti_load_package(path)
    measure("aoti", aoti)
    out["errors"] = errors
    out["torch"] = torch.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
