"""Which ONNX node's result goes wrong first: Kiln against ONNX Runtime,
node by node.

    python -m kiln.debug model.onnx --input x=x.npy [--rtol 1e-3] [--atol 1e-4]
                         [--all] [kilnc flags, e.g. --precision=bf16]

    report = kiln.debug.compare_nodes("model.onnx", {"x": x}, precision="bf16")

Every value a node computes becomes a graph output of a copy of the model
(its types from ONNX shape inference), so both ONNX Runtime and Kiln
return every intermediate; Kiln still fuses, but writes each exposed value
out. The nodes are then walked in the model's order, and the first whose
result leaves the tolerance (|kiln - ort| <= atol + rtol * |ort|) is
reported with its op type, its error relative to the result's magnitude,
and the errors of its inputs: a node whose inputs are exact but whose
result is not is where the difference starts.

Needs onnx and onnxruntime besides numpy.
"""

import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

from . import _model


class NodeResult:
    def __init__(self, node, output, max_abs, max_rel, ok, input_errors):
        self.node = node              # name (or "#index" when unnamed)
        self.op_type = ""
        self.output = output          # the ONNX value
        self.max_abs = max_abs
        self.max_rel = max_rel        # max |kiln - ort| / max |ort|
        self.ok = ok
        self.input_errors = input_errors  # [(value, max_rel or None for graph inputs/constants)]

    def __repr__(self):
        return (f"{'ok ' if self.ok else 'BAD'} {self.node} ({self.op_type}) -> '{self.output}': "
                f"max abs {self.max_abs:.3g}, relative {self.max_rel:.3g}")


class Report:
    def __init__(self, results):
        self.results = results

    @property
    def first_bad(self):
        return next((r for r in self.results if not r.ok), None)

    def text(self, every=False):
        lines = []
        for r in self.results:
            if every or not r.ok:
                lines.append(repr(r))
                if not r.ok:
                    for value, err in r.input_errors:
                        lines.append(f"    input '{value}': " +
                                     ("exact (graph input or constant)" if err is None else f"relative {err:.3g}"))
                    if not every:
                        break
        bad = self.first_bad
        lines.append(f"{len(self.results)} node results compared; " +
                     (f"first outside the tolerance: {bad.node} ({bad.op_type})" if bad else "all within the tolerance"))
        return "\n".join(lines)


# What the runtime opens: inputs and outputs together (KILN_DESC_MAX_TENSORS
# in runtime/src/descriptor.h). A model with more node results than that is
# compiled as several copies, each exposing a share of them.
MAX_TENSORS = 256


def _expose_everything(model_path, out_path, limit=None):
    """Copies of the model whose graph outputs are every node output with a
    known type, in node order: `out_path` with all of them (for ONNX
    Runtime), and the paths of copies that each stay within `limit` inputs
    and outputs (for Kiln). Returns (pairs, kiln_paths); pairs lists
    (node, op type, output, inputs)."""
    import onnx
    from onnx import shape_inference
    limit = limit or MAX_TENSORS
    model = onnx.load(model_path)
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    types = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    graph = model.graph
    original = list(graph.output)
    existing = {o.name for o in graph.output}
    initializers = {t.name for t in graph.initializer}
    num_inputs = sum(1 for i in graph.input if i.name not in initializers)
    pairs, added = [], []
    for i, node in enumerate(graph.node):
        name = node.name or f"#{i}"
        for out in node.output:
            if not out or out not in types:
                continue
            pairs.append((name, node.op_type, out, list(node.input)))
            if out not in existing:
                added.append(types[out])
                existing.add(out)
    graph.output.extend(added)
    onnx.save(model, out_path)
    room = max(1, limit - num_inputs - len(original))
    chunks = [added[i:i + room] for i in range(0, len(added), room)] or [[]]
    if len(chunks) == 1:
        return pairs, [out_path]
    paths = []
    for c, chunk in enumerate(chunks):
        del graph.output[:]
        graph.output.extend(original + chunk)
        path = f"{os.path.splitext(out_path)[0]}.part{c}.onnx"
        onnx.save(model, path)
        paths.append(path)
    return pairs, paths


def _errors(k, r):
    k = np.asarray(k).astype(np.float64)
    r = np.asarray(r).astype(np.float64)
    if k.shape != r.shape:
        return float("inf"), float("inf")
    if r.size == 0:
        return 0.0, 0.0
    diff = np.abs(k - r)
    diff[np.isnan(k) & np.isnan(r)] = 0.0
    max_abs = float(np.max(diff)) if np.all(np.isfinite(diff)) else float("inf")
    scale = float(np.max(np.abs(r[np.isfinite(r)]))) if np.any(np.isfinite(r)) else 0.0
    return max_abs, max_abs / max(scale, 1e-30)


def compare_nodes(model_path, feeds, rtol=1e-3, atol=1e-4, **kilnc_options):
    """Runs every node's result through ONNX Runtime and Kiln; returns a
    Report (report.first_bad is None when all agree)."""
    import onnxruntime as ort
    work = tempfile.mkdtemp(prefix="kiln-debug-")
    try:
        exposed = os.path.join(work, "exposed.onnx")
        pairs, parts = _expose_everything(os.fspath(model_path), exposed)
        opts = ort.SessionOptions()
        # The values as the model defines them, not as ORT's fusions compute them.
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(exposed, opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        ref = dict(zip(names, sess.run(None, feeds)))
        got = {}
        for part in parts:
            prefix = os.path.splitext(part)[0]
            _model._kilnc([part, "-o", prefix, "--shared", *_model._flags(kilnc_options)])
            model = _model.Model(prefix + ".so")
            got.update(model.run(feeds))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rel_of = {}
    results = []
    for node, op_type, out, inputs in pairs:
        if out not in got or out not in ref:
            continue
        k, r = got[out], ref[out]
        max_abs, max_rel = _errors(k, r)
        if r.dtype.kind in "biu" or r.dtype == np.bool_:
            ok = k.shape == r.shape and bool(np.array_equal(k, r))
        else:
            kf, rf = np.asarray(k, np.float64), np.asarray(r, np.float64)
            ok = kf.shape == rf.shape and bool(np.allclose(kf, rf, rtol=rtol, atol=atol, equal_nan=True))
        rel_of[out] = max_rel
        res = NodeResult(node, out, max_abs, max_rel, ok, [(v, rel_of.get(v)) for v in inputs if v])
        res.op_type = op_type
        results.append(res)
    return Report(results)


def _parse_input(text):
    name, _, path = text.partition("=")
    if not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE.npy, found '{text}'")
    return name, np.load(path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m kiln.debug", description=__doc__.split("\n\n")[0],
                                 epilog="Unknown --flags are passed to kilnc (e.g. --precision=bf16).")
    ap.add_argument("model")
    ap.add_argument("--input", action="append", type=_parse_input, default=[], metavar="NAME=FILE.npy")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--all", action="store_true", help="print every node, not only the first bad one")
    args, kilnc_flags = ap.parse_known_args(argv)
    options = {}
    for flag in kilnc_flags:
        if not flag.startswith("--"):
            ap.error(f"unexpected argument '{flag}'")
        key, eq, value = flag[2:].partition("=")
        options[key.replace("-", "_")] = value if eq else True
    try:
        report = compare_nodes(args.model, dict(args.input), args.rtol, args.atol, **options)
    except _model.KilnError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - onnx or onnxruntime refusing the model
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(report.text(every=args.all))
    return 0 if report.first_bad is None else 2


if __name__ == "__main__":
    sys.exit(main())
