"""Times a frozen TorchScript model: prints the median latency in ms.

Runs on Debian's Python (python3-torch). Usage:
  /usr/bin/python3 bench/torch_time.py MODEL.pt INPUT.npy THREADS SECONDS
Warm-up first, then as many runs as fit in SECONDS (at least 5).
"""

import sys
import time

import numpy as np
import torch


def main():
    path, inp, threads, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    torch.set_num_threads(threads)
    model = torch.jit.load(path).eval()
    x = torch.from_numpy(np.load(inp))
    times = []
    with torch.no_grad():
        for _ in range(3):
            model(x)
        start = time.perf_counter()
        while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 1000):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print(f"{times[len(times) // 2]:.4f}")


if __name__ == "__main__":
    main()
