"""Writes the ONNX models that Import/index-ops.test feeds to kilnc.

Usage: make_index_models.py OUTDIR (created if missing). One model per case
of GatherND, CumSum, ScatterElements, ScatterND, TopK and Einsum
(OnnxOpsIndex.cpp, OnnxOpsEinsum.cpp), and bad_* models that kilnc must
refuse, each for one reason. Models are built from fixed values with the
onnx helper API, so the files are the same on every run; valid ones pass
onnx.checker.check_model(full_check=True) unless marked check=False.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
I32 = TensorProto.INT32

MODELS = {}


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def f32(name, shape):
    return vi(name, F, shape)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def one(name, op, inputs, outputs, inits=(), opset=18, check=True, **attrs):
    names = [i.name for i in inputs] + [t.name for t in inits]
    node = helper.make_node(op, names, [o.name for o in outputs],
                            name=op.lower(), **attrs)
    graph = helper.make_graph([node], name, inputs, outputs,
                              initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="kiln-tests")
    if check:
        onnx.checker.check_model(m, full_check=True)
    assert name not in MODELS, name
    MODELS[name] = m


def models():
    one("gathernd", "GatherND", [f32("x", [2, 3, 4]), vi("i", I64, [5, 2])],
        [f32("y", [5, 4])])
    one("gathernd_batch", "GatherND",
        [vi("x", I32, [2, 3, 4]), vi("i", I64, [2, 1])], [vi("y", I32, [2, 4])],
        batch_dims=1)
    one("cumsum", "CumSum", [f32("x", [2, 5])], [f32("y", [2, 5])],
        inits=[ints("axis", 1)])
    one("cumsum_exclusive_reverse", "CumSum", [vi("x", I32, [3])],
        [vi("y", I32, [3])], inits=[ints("axis", 0)], exclusive=1, reverse=1)
    one("cumsum_runtime_axis", "CumSum",
        [vi("x", I32, [2, 3]), vi("axis", I32, [])], [vi("y", I32, [2, 3])])
    one("scatter_elements", "ScatterElements",
        [f32("x", [3, 3]), vi("i", I64, [2, 3]), f32("u", [2, 3])],
        [f32("y", [3, 3])], axis=0, reduction="add")
    one("scatternd", "ScatterND",
        [f32("x", [4, 4, 4]), vi("i", I64, [2, 1]), f32("u", [2, 4, 4])],
        [f32("y", [4, 4, 4])], reduction="max")
    one("topk", "TopK", [f32("x", [3, 4])],
        [f32("v", [3, 2]), vi("i", I64, [3, 2])], inits=[ints("k", [2])])
    one("topk_axis0_smallest", "TopK", [f32("x", [4, 3])],
        [f32("v", [1, 3]), vi("i", I64, [1, 3])], inits=[ints("k", [1])],
        axis=0, largest=0)
    one("einsum_matmul", "Einsum", [f32("a", [2, 3, 4]), f32("b", [2, 4, 5])],
        [f32("y", [2, 3, 5])], opset=12, equation="bij,bjk->bik")
    one("einsum_diagonal", "Einsum", [f32("x", [3, 5, 5])],
        [f32("y", [3, 5])], opset=12, equation="...ii->...i")
    one("einsum_implicit", "Einsum", [f32("a", [3, 4]), f32("b", [4])],
        [f32("y", [3])], opset=12, equation="ij,j")

    # Errors, one reason each.
    one("bad_gathernd_k", "GatherND", [f32("x", [2, 3]), vi("i", I64, [1, 3])],
        [f32("y", ["n"])], check=False)
    one("bad_cumsum_axis", "CumSum", [f32("x", [2, 5])], [f32("y", [2, 5])],
        inits=[ints("axis", 2)], check=False)
    one("bad_scatter_rank", "ScatterElements",
        [f32("x", [3, 3]), vi("i", I64, [3]), f32("u", [3])],
        [f32("y", [3, 3])], check=False)
    one("bad_scatternd_updates", "ScatterND",
        [f32("x", [4, 4]), vi("i", I64, [2, 1]), f32("u", [2, 3])],
        [f32("y", [4, 4])], check=False)
    one("bad_scatter_reduction", "ScatterElements",
        [f32("x", [3]), vi("i", I64, [1]), f32("u", [1])], [f32("y", [3])],
        check=False, reduction="avg")
    one("bad_topk_k", "TopK", [f32("x", [3, 4])],
        [f32("v", ["n", "m"]), vi("i", I64, ["n", "m"])],
        inits=[ints("k", [5])], check=False)
    one("bad_einsum_rank", "Einsum", [f32("a", [3, 4])], [f32("y", [3])],
        opset=12, check=False, equation="ijk->i")
    one("bad_einsum_output", "Einsum", [f32("a", [3, 4])], [f32("y", [3])],
        opset=12, check=False, equation="ij->k")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_index_models.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    models()
    for name, m in MODELS.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString(deterministic=True))


if __name__ == "__main__":
    main()
