"""Writes the GPU pack's summary.md from its result files and prints it.

  python3 summary.py --results DIR --manifest FILE [--only PART] [--emulate]

With --emulate the exit status is 1 when a conformance test that is not a
known CUDA difference, a bench model or the training step failed, or a
test of the manifest has no result.
"""

import argparse
import collections
import json
import os
import sys


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--known", required=True)
    ap.add_argument("--only")
    ap.add_argument("--emulate", action="store_true")
    a = ap.parse_args()
    wants = lambda part: not a.only or a.only == part  # noqa: E731
    out, bad = [], []
    device = read_lines(os.path.join(a.logs, "device.txt"))
    out.append("# GPU pack results\n")
    out.append("Device: " + (" / ".join(device) if device else "unknown") + "\n")

    if wants("conformance"):
        manifest = read_lines(a.manifest)
        known = set(read_lines(a.known))
        results = {}
        for line in read_lines(os.path.join(a.results, "conformance.tsv")):
            parts = line.split("\t")
            results[parts[0]] = (parts[1] if len(parts) > 1 else "?", parts[2] if len(parts) > 2 else "")
        by_folder = collections.defaultdict(lambda: collections.Counter())
        for test in manifest:
            status = results.get(test, ("missing", ""))[0]
            by_folder[test.split("/")[0]][status] += 1
        out.append("## Conformance (ONNX backend tests the CPU passes)\n")
        out.append("| folder | tests | pass | fail | error | crash | timeout | missing |")
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        total = collections.Counter()
        for folder, c in sorted(by_folder.items()):
            total.update(c)
            out.append(f"| {folder} | {sum(c.values())} | " +
                       " | ".join(str(c[s]) for s in ("pass", "fail", "error", "crash", "timeout", "missing")) + " |")
        out.append(f"| **all** | {sum(total.values())} | " +
                   " | ".join(str(total[s]) for s in ("pass", "fail", "error", "crash", "timeout", "missing")) + " |\n")
        failures = [(t, results.get(t, ("missing", ""))) for t in manifest
                    if results.get(t, ("missing", ""))[0] != "pass"]
        unexpected = [f for f in failures if f[0] not in known]
        if failures:
            out.append(f"Not passing ({len(failures)}; {len(failures) - len(unexpected)} are known CUDA "
                       "differences):\n")
            for t, (status, detail) in failures[:80]:
                out.append(f"- {t}: {status}: {detail[:240]}" + (" (known difference)" if t in known else ""))
            if len(failures) > 80:
                out.append(f"- ... and {len(failures) - 80} more (conformance.tsv)")
            out.append("")
        if unexpected:
            bad.append(f"{len(unexpected)} conformance tests")

    if wants("bench"):
        path = os.path.join(a.results, "bench.json")
        out.append("## Bench models\n")
        if not os.path.exists(path):
            out.append("No bench results (see bench.log in log.txt).\n")
            bad.append("bench")
        else:
            with open(path) as f:
                bench = json.load(f)
            out.append(f"GPU: {bench['gpu']}; PyTorch {bench['torch']}; Kiln checked against ONNX Runtime's "
                       f"CPU output (rtol {bench['rtol']}, atol {bench['atol']}). Times are medians in ms; "
                       "ratios below 1 mean Kiln is faster.\n")
            for note in bench.get("notes", []):
                out.append(f"Note: {note}\n")
            out.append("| model | batch | Kiln matches | Kiln ms (graph) | Kiln ms (no graph) | eager ms | "
                       "torch.compile ms | Kiln/eager | Kiln/compile | PyTorch matches |")
            out.append("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
            fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
            for r in bench["rows"]:
                if "skipped" in r:
                    out.append(f"| {r['model']} | {r['batch']} | skipped: {r['skipped']} | | | | | | | |")
                    continue
                k = r.get("kiln", {})
                kms = k.get("median_us") / 1e3 if k.get("median_us") is not None else None
                kng = r.get("kiln_no_graphs", {}).get("median_us")
                kng = kng / 1e3 if kng is not None else None
                eager, comp = r.get("eager_ms"), r.get("compile_ms")
                ok = "yes" if k.get("ok") else "NO: " + (k.get("mismatch") or k.get("error") or "?")[:120]
                if not k.get("ok"):
                    bad.append(f"bench {r['model']} b{r['batch']}")
                tm = r.get("torch_matches_reference")
                out.append(f"| {r['model']} | {r['batch']} | {ok} | {fmt(kms)} | {fmt(kng)} | {fmt(eager)} | "
                           f"{fmt(comp)} | {fmt(kms / eager if kms and eager else None)} | "
                           f"{fmt(kms / comp if kms and comp else None)} | "
                           f"{'-' if tm is None else ('yes' if tm else 'no')} |")
            out.append("")

    if wants("train"):
        lines = read_lines(os.path.join(a.results, "train.txt"))
        out.append("## Training step\n")
        if not lines:
            out.append("Not run (no training artifact in the pack).\n")
        else:
            out.extend("    " + line for line in lines)
            out.append("")
            if lines[-1] != "exit 0":
                bad.append("training step")
        dp = read_lines(os.path.join(a.results, "train_dp.txt"))
        if dp:
            out.append("## Data-parallel training step (NCCL, 1 rank)\n")
            out.extend("    " + line for line in dp)
            out.append("")
            if dp[-1] != "exit 0":
                bad.append("data-parallel training step")

    if bad:
        out.append("Failed: " + ", ".join(bad) + "\n")
    text = "\n".join(out)
    with open(os.path.join(a.results, "summary.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 1 if (a.emulate and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
