"""Checks a kiln-run --profile trace against the model it profiled.

  profile_check.py TRACE.json MODEL.onnx FUSED.txt RUNS

FUSED.txt is `kilnc --emit=fused` of the same model: the trace must hold one
slice per kernel and run, named by that kernel's ONNX nodes, in kernel order,
back to back in time; each kernel's flops must be what the model's Gemm and
MatMul shapes give (2 * M * N * K, computed here from the ONNX file).
"""
import json
import sys

import onnx
from onnx import shape_inference


def main():
    trace_path, model_path, fused_path, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    kernels = []  # node lists, in kernel order
    for line in open(fused_path):
        if line.startswith("  nodes:"):
            kernels.append(",".join(line.split()[1:]))
    events = [e for e in json.load(open(trace_path))["traceEvents"] if e["ph"] == "X"]
    ok = True

    def check(what, good):
        nonlocal ok
        print(f"{what}: {'ok' if good else 'MISMATCH'}")
        ok &= good

    check(f"{len(events)} slices for {len(kernels)} kernels x {runs} runs", len(events) == len(kernels) * runs)
    names = [e["name"] for e in events]
    check("slice names follow --emit=fused", names == kernels * runs)
    back_to_back = all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 and a["dur"] >= 0
                       for a, b in zip(events, events[1:]))
    check("slices in order, none overlapping", back_to_back)

    # Flops of each node's product from the model's own shapes.
    model = shape_inference.infer_shapes(onnx.load(model_path))
    shapes = {}
    for v in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in model.graph.initializer:
        shapes[t.name] = list(t.dims)
    node_flops = {}
    for n in model.graph.node:
        if n.op_type in ("Gemm", "MatMul"):
            a = shapes[n.input[0]]
            trans_a = any(at.name == "transA" and at.i for at in n.attribute)
            k = a[-2] if trans_a else a[-1]
            out = 1
            for d in shapes[n.output[0]]:
                out *= d
            node_flops[n.name] = 2 * out * k
    expected = [sum(node_flops.get(node, 0) for node in k.split(",")) for k in kernels]
    found = [e["args"].get("flops", 0) for e in events[:len(kernels)]]
    check(f"flops {found} from the model's shapes", found == expected)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
