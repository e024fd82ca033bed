"""Kiln's model zoo: models as users bring them, compiled and compared with
ONNX Runtime.

Each configuration is one model (test/zoo/models.py) exported one way:

  dynamo         torch.onnx.export(dynamo=True), the current exporter
  dynamoNN       the same at opset NN (bench/exported.py uses it)
  ts13, ts17     the TorchScript exporter at opset 13 / 17 (BatchNorm folded)
  ts17-bn        TorchScript, opset 17, BatchNormalization kept
                 (training=TrainingMode.PRESERVE on an eval-mode model)
  ts17-dyn       TorchScript, opset 17, dynamic batch (and sequence) axes,
                 compiled with kilnc --dim to pin them
  classic        opset 7-9 graphs in the style of the classic ONNX zoo

For each: export, run ONNX Runtime (the reference), compile with
`kilnc --shared` (wall time and peak memory), run the artifact through the
Python package and compare every output with ONNX Runtime's (max error
relative to the output's largest magnitude), then time both at 1 thread on
one core (with --jobs N, worker k times on core k). Every configuration runs
in its own process with a time limit.

  zoo.py [--only REGEX] [--slice] [--jobs N] [--resume] [--write docs/zoo.md]
         [--expect test/zoo/expected.txt] [--write-expect]

Results go under BUILD/zoo/<config>/ (result.json, model.onnx, kilnc.log).
With --expect, exits 1 when a configuration listed there no longer passes.
Exits 77 (CTest's skip) when torch, torchvision or transformers is missing.
"""

import argparse
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

REL_TOL = 1e-3          # max |kiln - ort| / max |ort|, per output
KILNC_TIMEOUT = 900     # seconds
KILNC_MEMORY = 20 << 30  # address-space cap for kilnc

# Configurations `make test` runs where torch is installed: small, fast, and
# one of each kind of pattern the zoo found broken before (squeeze-excite
# with kept BatchNorm, LRN, Dropout's mask, opset 7 BatchNormalization,
# pinned dimensions, an exported transformer).
SLICE = ["squeezenet1_1.ts13", "mobilenet_v3_small.ts17-bn", "alexnet_lrn.classic",
         "squeezenet_dropout_mask.classic", "batchnorm_spatial.classic", "fpn_sum_upsample.classic",
         "bert.ts17-dyn", "distilbert.ts17"]

BN_KEPT = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "vgg11_bn", "densenet121"]
DYNAMIC = {"resnet18": ["--dim", "batch=1"],
           "bert": ["--dim", "batch=1", "--dim", "sequence=32"]}


def configurations():
    """Breadth first: every model once (classic graphs, then the torch
    models through the TorchScript exporter at opset 17, then the current
    exporter) before the other variants, so a run cut short still covers
    every architecture."""
    import models
    out = [f"{name}.classic" for name in models.CLASSIC]
    out += [f"{name}.ts17" for name in models.TORCH_MODELS]
    out += [f"{name}.dynamo" for name in models.TORCH_MODELS]
    out += [f"{name}.ts13" for name in models.TORCH_MODELS]
    out += [f"{name}.ts17-bn" for name in models.TORCH_MODELS if name in BN_KEPT]
    out += [f"{name}.ts17-dyn" for name in models.TORCH_MODELS if name in DYNAMIC]
    return out


# --- one configuration (the worker) ------------------------------------------

def export(config, path, built=None):
    """Writes the ONNX file; returns {input name: numpy array}. `built` is
    the torch model's (module, inputs, names) when the caller already built
    it (bench/exported.py also runs it)."""
    import models
    name, exporter = config.rsplit(".", 1)
    if exporter == "classic":
        import onnx
        model = models.CLASSIC[name]()
        onnx.save(model, path)
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        rng = models._rng_for("input")
        return {"data": rng.standard_normal(shape).astype("float32")}

    import torch
    import warnings
    warnings.filterwarnings("ignore")
    module, args, names = built or models.TORCH_MODELS[name]()
    names = names or [f"input{i}" for i in range(len(args))]
    feeds = {n: a.numpy() for n, a in zip(names, args)}
    # No torch.no_grad() around the export, as users write it: under no_grad
    # nn.MultiheadAttention takes a fused fast path the TorchScript exporter
    # cannot export (ViT).
    if exporter.startswith("dynamo"):
        # `dynamoNN` asks the current exporter for opset NN (the bench's
        # transformer encoder at 18); plain `dynamo` takes its default.
        opset = dict(opset_version=int(exporter[6:])) if exporter[6:] else {}
        program = torch.onnx.export(module, args, input_names=names, dynamo=True, verbose=False, **opset)
        program.save(path)  # weights inside the file
    else:
        opset = int(re.match(r"ts(\d+)", exporter).group(1))
        kw = dict(opset_version=opset, input_names=names, dynamo=False, do_constant_folding=True)
        if exporter.endswith("-bn"):
            kw["training"] = torch.onnx.TrainingMode.PRESERVE
        if exporter.endswith("-dyn"):
            axes = {names[0]: {0: "batch"}}
            if len(args[0].shape) == 2 and args[0].dtype == torch.int64:
                axes = {n: {0: "batch", 1: "sequence"} for n in names}
            kw["dynamic_axes"] = axes
        torch.onnx.export(module, args, path, **kw)
    return feeds


def first_error(text):
    for line in text.splitlines():
        if "error:" in line:
            return line.strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip() if lines else "(no output)"


def classify(rc, log):
    """unsupported: a refusal naming what Kiln does not do (an op, a
    data-dependent shape); crash: a signal, an internal or verifier error."""
    if rc < 0 or rc > 128:
        return "crash"
    if re.search(r"does not dominate|verif|internal|LLVM ERROR|Assertion|PLEASE submit", log):
        return "crash"
    if re.search(r"unsupported|not supported|data-dependent|depends on (the )?data|symbolic dimension|"
                 r"must be a constant|kiln compiles static", log):
        return "unsupported"
    return "error"


def measure(run, seconds=1.0, least=3, most=200):
    for _ in range(2):
        run()
    times, start = [], time.perf_counter()
    while len(times) < least or (time.perf_counter() - start < seconds and len(times) < most):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e3


def compare(kiln_out, ort_out):
    import numpy as np
    worst, close = 0.0, True
    for k, r in zip(kiln_out, ort_out):
        if k.shape != r.shape:
            return float("inf"), False, f"shape {list(k.shape)} vs onnxruntime's {list(r.shape)}"
        if r.dtype.kind in "biu":
            if not np.array_equal(k, r):
                return float("inf"), False, "integer output differs"
            continue
        k64, r64 = k.astype(np.float64), r.astype(np.float64)
        if not np.all(np.isfinite(r64)):
            return float("inf"), False, "onnxruntime's output is not finite"
        scale = max(float(np.max(np.abs(r64))) if r64.size else 0.0, 1e-30)
        err = float(np.max(np.abs(k64 - r64))) / scale if r64.size else 0.0
        if not np.isfinite(err):
            err = float("inf")
        worst = max(worst, err)
        close = close and bool(np.allclose(k64, r64, rtol=1e-3, atol=1e-4))
    return worst, close, ""


def worker(config, build, out, timed=True, core=0):
    import numpy as np
    import onnx
    import onnxruntime as ort
    folder = os.path.join(out, config)
    os.makedirs(folder, exist_ok=True)
    result = {"config": config, "status": "error", "error": ""}
    path = os.path.join(folder, "model.onnx")

    def done(**kw):
        result.update(kw)
        # Keep the model only where it failed (to reproduce); artifacts never:
        # the whole zoo would otherwise leave tens of GiB behind.
        for f in ["kiln.o", "kiln.so"] + (["model.onnx"] if result["status"] == "pass" else []):
            try:
                os.remove(os.path.join(folder, f))
            except OSError:
                pass
        with open(os.path.join(folder, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        return 0

    t0 = time.perf_counter()
    try:
        feeds = export(config, path)
    except Exception as e:  # the exporter's failure, not Kiln's
        msg = " ".join(str(e).split())[:300]
        return done(status="export-error", error=f"{type(e).__name__}: {msg}")
    result["export_s"] = round(time.perf_counter() - t0, 1)
    model = onnx.load(path, load_external_data=False)
    result["opset"] = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    result["nodes"] = len(model.graph.node)
    result["weights_mb"] = round(os.path.getsize(path) / 2**20, 1)
    del model

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)
    except Exception as e:
        return done(status="ort-error", error=" ".join(str(e).split())[:300])

    prefix = os.path.join(folder, "kiln")
    extra = DYNAMIC.get(config.split(".")[0], []) if config.endswith(".ts17-dyn") else []
    cmd = ["/usr/bin/time", "-f", "%e %M", "-o", os.path.join(folder, "time.txt"),
           os.path.join(build, "bin", "kilnc"), path, "--shared", "-o", prefix] + extra
    result["kilnc"] = " ".join(["kilnc", "model.onnx", "--shared"] + extra)
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (KILNC_MEMORY, KILNC_MEMORY))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=KILNC_TIMEOUT, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return done(status="timeout", error=f"kilnc ran past {KILNC_TIMEOUT} s")
    log = p.stdout + p.stderr
    with open(os.path.join(folder, "kilnc.log"), "w") as f:
        f.write(log)
    try:
        wall, rss = open(os.path.join(folder, "time.txt")).read().split()[-2:]
        result["compile_s"] = round(float(wall), 1)
        result["compile_peak_mb"] = round(int(rss) / 1024)
    except (OSError, ValueError):
        pass
    rc = p.returncode
    if rc != 0:
        return done(status=classify(rc, log), error=first_error(log))

    sys.path.insert(0, os.path.join(ROOT, "python"))
    import kiln
    try:
        m = kiln.load(prefix + ".so")
        m.set_num_threads(1)
        result["arena_mb"] = round(m._arena.nbytes / 2**20, 2)
        got = m.run(feeds)
    except Exception as e:
        return done(status="run-error", error=" ".join(str(e).split())[:300])
    kiln_out = [got[o.name] for o in sess.get_outputs()]
    import models
    spec = models.SPEC_REFERENCES.get(config, {})
    for i, o in enumerate(sess.get_outputs()):
        if o.name in spec:
            ref[i] = spec[o.name](ref[i])
            result["note"] = f"'{o.name}' compared with the ONNX specification, not ONNX Runtime"

    err, close, why = compare(kiln_out, ref)
    result["max_rel_err"] = err
    result["allclose"] = close
    if err > REL_TOL:
        return done(status="wrong", error=why or f"max error {err:.3g} of the output's magnitude")
    if not timed:
        return done(status="pass", error="")

    # Interleaved timing, both at 1 thread on one core.
    try:
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[core % len(cores)]})
    except OSError:
        pass
    k_ms = o_ms = None
    for _ in range(2):
        k_ms = min(k_ms or 1e9, measure(lambda: m.run(feeds)))
        o_ms = min(o_ms or 1e9, measure(lambda: sess.run(None, feeds)))
    result["kiln_ms"] = round(k_ms, 3)
    result["ort_ms"] = round(o_ms, 3)
    return done(status="pass", error="")


# --- the driver --------------------------------------------------------------

def run_all(configs, build, out, jobs, timeout, timed, resume=False):
    pending = [c for c in configs if not (resume and (load_result(out, c) or {}).get("status")
                                          not in (None, "harness-error", "timeout"))]
    running = {}
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    while pending or running:
        while pending and len(running) < jobs:
            c = pending.pop(0)
            slot = min(set(range(jobs)) - {r[3] for r in running.values()})
            folder = os.path.join(out, c)
            os.makedirs(folder, exist_ok=True)
            try:
                os.remove(os.path.join(folder, "result.json"))
            except OSError:
                pass
            log = open(os.path.join(folder, "worker.log"), "w")
            cmd = [sys.executable, __file__, "--one", c, "--build", build, "--out", out]
            cmd += ["--core", str(slot)] + ([] if timed else ["--no-time"])
            p = subprocess.Popen(cmd,
                                 stdout=log, stderr=subprocess.STDOUT, env=env)
            running[c] = (p, time.time(), log, slot)
        time.sleep(0.2)
        for c, (p, start, log, _) in list(running.items()):
            if p.poll() is None and time.time() - start < timeout:
                continue
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
            del running[c]
            r = load_result(out, c)
            if r is None:
                tail = open(os.path.join(out, c, "worker.log"), errors="replace").read()[-300:]
                r = {"config": c, "status": "timeout" if time.time() - start >= timeout else "harness-error",
                     "error": " ".join(tail.split())[-200:]}
                with open(os.path.join(out, c, "result.json"), "w") as f:
                    json.dump(r, f, indent=1)
            print(f"{c:45s} {r['status']:12s} {r.get('error', '')[:100]}", flush=True)


def load_result(out, c):
    try:
        with open(os.path.join(out, c, "result.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, spec):
    return "" if v is None else format(v, spec)


def clean(text, out):
    """An error line for the report: no terminal colours, no local paths."""
    text = re.sub(r"\x1b\[[0-9;]*m|\[[0-9;]*m", "", text)
    return text.replace(out + os.sep, "").replace("|", "\\|")


def render(results, versions, jobs, out):
    ok = [r for r in results if r["status"] == "pass"]
    not_run = [r for r in results if r["status"] == "not run"]
    exported = [r for r in results if r["status"] not in ("export-error", "ort-error", "not run")]
    lines = ["# Model zoo", "",
             "Written by `make zoo` (test/zoo/zoo.py); do not edit by hand. Models as users",
             "bring them: torchvision and transformers from PyPI with random weights (BatchNorm",
             "statistics re-estimated on random data), exported with the current torch",
             "exporter (`dynamo`) and the TorchScript one (`ts13`, `ts17`; `-bn` keeps",
             "BatchNormalization, `-dyn` has dynamic axes pinned with `kilnc --dim`), plus",
             "opset 7-9 graphs in the classic ONNX zoo's style. Each is compiled with",
             "`kilnc --shared` and compared with ONNX Runtime on the same input: *error* is",
             "the largest difference over the largest magnitude of the output. Latency is",
             "the median at 1 thread on one core, Kiln over ONNX Runtime (below 1: Kiln is",
             "faster), measured interleaved in the same process; with other configurations",
             "compiling on the other cores a single ratio is only good to about 20% (make",
             "bench measures properly).", "",
             f"Versions: {versions}. Compile seconds and peak memory are kilnc's wall time and "
             f"maximum resident size (`/usr/bin/time`) on a {os.cpu_count()}-core machine running "
             f"{jobs} configuration{'s' if jobs > 1 else ''} at once, so they are upper bounds.", "",
             f"**{len(ok)} of {len(exported)} exported configurations compile and match ONNX Runtime "
             f"({100.0 * len(ok) / max(len(exported), 1):.1f}%).** "
             f"{len(results) - len(exported) - len(not_run)} did not export or did not run in ONNX "
             f"Runtime (not counted)" + (f"; {len(not_run)} were not run this time" if not_run else "") + ".",
             ""]
    timed = [r for r in ok if r.get("kiln_ms") and r.get("ort_ms")]
    if timed:
        import math
        ratios = sorted(((r["kiln_ms"] / r["ort_ms"], r["config"]) for r in timed), reverse=True)
        geo = math.exp(sum(math.log(q) for q, _ in ratios) / len(ratios))
        lines += [f"Kiln/ONNX Runtime at 1 thread over the {len(timed)} timed configurations: geometric "
                  f"mean {geo:.2f}; Kiln faster on {sum(q < 1 for q, _ in ratios)}; slowest: "
                  + ", ".join(f"{c} {q:.2f}" for q, c in ratios[:5]) + ".", ""]
    by = {}
    for r in results:
        by[r["status"]] = by.get(r["status"], 0) + 1
    lines += ["| status | configurations |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(by.items())]
    lines += ["", "| model | exporter | opset | nodes | status | error | compile s | compile peak MB | "
              "arena MB | Kiln/ORT 1 thread | first error (or note) |",
              "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        name, exporter = r["config"].rsplit(".", 1)
        ratio = (r["kiln_ms"] / r["ort_ms"]) if r.get("kiln_ms") and r.get("ort_ms") else None
        err = r.get("max_rel_err")
        lines.append("| " + " | ".join([
            name, exporter, str(r.get("opset", "")), str(r.get("nodes", "")), r["status"],
            "" if err is None else f"{err:.1e}", fmt(r.get("compile_s"), ".1f"),
            fmt(r.get("compile_peak_mb"), "d"), fmt(r.get("arena_mb"), ".1f"), fmt(ratio, ".2f"),
            clean(r.get("error", "") or r.get("note", ""), out)[:160]]) + " |")
    return "\n".join(lines) + "\n"


def versions():
    import importlib.metadata as md
    return ", ".join(f"{p} {md.version(p)}" for p in
                     ["torch", "torchvision", "transformers", "onnxscript", "onnx", "onnxruntime"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", help="results folder (default BUILD/zoo)")
    ap.add_argument("--only", help="configurations whose name matches this regular expression")
    ap.add_argument("--slice", action="store_true", help="only the small slice `make test` runs")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per configuration")
    ap.add_argument("--render-only", action="store_true", help="rewrite the report from saved results")
    ap.add_argument("--write", help="write the report (docs/zoo.md)")
    ap.add_argument("--expect", help="fail when a configuration listed in this file does not pass")
    ap.add_argument("--write-expect", help="write the passing configurations to this file")
    ap.add_argument("--no-time", action="store_true", help="check, but time neither Kiln nor ONNX Runtime")
    ap.add_argument("--resume", action="store_true",
                    help="keep the results already there; run only the configurations without one")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--core", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    out = os.path.abspath(a.out or os.path.join(a.build, "zoo"))
    build = os.path.abspath(a.build)

    missing = [m for m in ("torch", "torchvision", "transformers", "onnxscript")
               if importlib.util.find_spec(m) is None]
    if missing:
        print(f"zoo: skipped: {', '.join(missing)} not installed in {sys.executable} "
              f"(scripts/setup.sh --zoo installs them)")
        return 77
    if a.one:
        return worker(a.one, build, out, timed=not a.no_time, core=a.core)

    configs = configurations()
    if a.slice:
        configs = [c for c in configs if c in SLICE]
    if a.only:
        configs = [c for c in configs if re.search(a.only, c)]
    if a.list:
        print("\n".join(configs))
        return 0
    if not a.render_only:
        run_all(configs, build, out, a.jobs, a.timeout, timed=not a.no_time, resume=a.resume)
    results = [load_result(out, c) or {"config": c, "status": "not run", "error": ""} for c in configs]

    if a.write:
        with open(a.write + ".tmp", "w") as f:
            f.write(render(results, versions(), a.jobs, out))
        os.replace(a.write + ".tmp", a.write)
    if a.write_expect:
        passing = sorted(r["config"] for r in results if r["status"] == "pass")
        if os.path.exists(a.write_expect):  # keep what passed before and was not run now
            old = {l.strip() for l in open(a.write_expect) if l.strip() and not l.startswith("#")}
            passing = sorted(set(passing) | {c for c in old
                                             if (load_result(out, c) or {}).get("status") is None})
        with open(a.write_expect, "w") as f:
            f.write("# Zoo configurations that compile and match ONNX Runtime (zoo.py --write-expect).\n")
            f.write("\n".join(passing) + "\n")
    ok = sum(r["status"] == "pass" for r in results)
    ran = sum(r["status"] != "not run" for r in results)
    print(f"zoo: {ok} of {ran} configurations pass" + (f" ({len(results) - ran} not run)" if ran < len(results) else ""))
    if a.expect:
        expected = {l.strip() for l in open(a.expect) if l.strip() and not l.startswith("#")}
        status = {r["config"]: r for r in results}
        lost = [c for c in configs if c in expected and status.get(c, {}).get("status") != "pass"]
        gained = [c for c in configs if c not in expected and status.get(c, {}).get("status") == "pass"]
        for c in lost:
            r = status.get(c, {})
            print(f"zoo: REGRESSION {c}: {r.get('status', 'no result')}: {r.get('error', '')}")
        for c in gained:
            print(f"zoo: {c} passes now; add it to {a.expect}")
        if lost:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
