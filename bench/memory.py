#!/usr/bin/env python3
"""Memory-planning benchmark: how close the arena is to the lower bound.

Compiles every model under the ONNX backend test folders pytorch-converted,
pytorch-operator and simple, and the node tests whose buffers add up to at
least --node-min-bytes without reuse, with `kilnc --emit=memory-plan`, and
prints one row per model (arena, live-set lower bound, no-reuse total and
the two ratios) and a summary: median and max of arena/lower-bound, median
of arena/no-reuse, against the targets of issue 5 (docs/decisions/
0005-memory-planning.md). Models without intermediate buffers (arena 0) are
listed but left out of the ratios; models kilnc rejects are counted apart.

  /usr/bin/python3 bench/memory.py [--kilnc build/bin/kilnc] [--check]
"""

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TESTS = os.path.join(os.path.dirname(ROOT), "shared", "onnx-backend-tests")
if not os.path.isdir(DEFAULT_TESTS):
    DEFAULT_TESTS = "/work/shared/onnx-backend-tests"
SUITES = ["pytorch-converted", "pytorch-operator", "simple", "node"]
TARGET_MEDIAN_LB, TARGET_MAX_LB, TARGET_MEDIAN_NR = 1.10, 1.5, 0.5


def plan(kilnc, model):
    try:
        out = subprocess.run(
            [kilnc, model, "--emit=memory-plan"],
            capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kilnc", default=os.path.join(ROOT, "build", "bin", "kilnc"))
    ap.add_argument("--tests", default=DEFAULT_TESTS)
    ap.add_argument("--node-min-bytes", type=int, default=4096,
                    help="node tests count when their no-reuse total is at least this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a target is missed")
    args = ap.parse_args()

    models = []
    for suite in SUITES:
        folder = os.path.join(args.tests, suite)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name, "model.onnx")
            if os.path.isfile(path):
                models.append((suite, name, path))

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        plans = list(pool.map(lambda m: plan(args.kilnc, m[2]), models))

    rows, rejected, empty = [], 0, 0
    for (suite, name, _), p in zip(models, plans):
        if p is None:
            rejected += 1
            continue
        if suite == "node" and p["no_reuse_bytes"] < args.node_min_bytes:
            continue
        if p["arena_bytes"] == 0:
            empty += 1
            continue
        rows.append((f"{suite}/{name}", p["arena_bytes"], p["lower_bound_bytes"],
                     p["no_reuse_bytes"], len(p["buffers"]),
                     sum(1 for b in p["buffers"] if "in_place_of" in b)))

    print(f"{'model':<58} {'arena':>10} {'lower':>10} {'no-reuse':>10} "
          f"{'bufs':>5} {'inpl':>5} {'a/lb':>6} {'a/nr':>6}")
    for model, arena, lb, nr, bufs, inpl in rows:
        print(f"{model:<58} {arena:>10} {lb:>10} {nr:>10} {bufs:>5} {inpl:>5} "
              f"{arena / lb:>6.3f} {arena / nr:>6.3f}")
    if not rows:
        print("no models planned")
        return 1
    lb_ratios = [r[1] / r[2] for r in rows]
    nr_ratios = [r[1] / r[3] for r in rows]
    worst = max(rows, key=lambda r: r[1] / r[2])
    med_lb, max_lb = statistics.median(lb_ratios), max(lb_ratios)
    med_nr = statistics.median(nr_ratios)
    print()
    print(f"models planned: {len(rows)} (no intermediates: {empty}, "
          f"rejected by kilnc: {rejected})")
    print(f"arena / lower bound: median {med_lb:.3f} (target <= {TARGET_MEDIAN_LB}), "
          f"max {max_lb:.3f} (target <= {TARGET_MAX_LB}, {worst[0]})")
    print(f"arena / no reuse:    median {med_nr:.3f} (target <= {TARGET_MEDIAN_NR}), "
          f"total {sum(r[1] for r in rows)} / {sum(r[3] for r in rows)} bytes")
    for suite in SUITES:
        sub = [r for r in rows if r[0].startswith(suite + "/")]
        if sub:
            print(f"  {suite:<18} {len(sub):>4} models: arena/lower bound median "
                  f"{statistics.median(r[1] / r[2] for r in sub):.3f} max "
                  f"{max(r[1] / r[2] for r in sub):.3f}; arena/no reuse median "
                  f"{statistics.median(r[1] / r[3] for r in sub):.3f}")
    ok = med_lb <= TARGET_MEDIAN_LB and max_lb <= TARGET_MAX_LB and med_nr <= TARGET_MEDIAN_NR
    print("targets: " + ("met" if ok else "MISSED"))
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
