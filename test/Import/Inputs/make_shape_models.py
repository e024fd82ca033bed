"""Writes the ONNX models that Import/shape-ops.test feeds to kilnc.

Usage: make_shape_models.py OUTDIR (created if missing). One model per case
of the shape, indexing and data movement handlers (OnnxOpsShape.cpp), and
bad_* models that kilnc must refuse, each for one reason. Models are built
from fixed values with the onnx helper API, so the files are the same on
every run; valid ones pass onnx.checker.check_model(full_check=True) unless
marked check=False with a reason.
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
    """An int64 initializer (shapes, axes, indices)."""
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def model(name, nodes, inputs, outputs, inits=(), opset=17, check=True):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="kiln-tests")
    if check:
        onnx.checker.check_model(m, full_check=True)
    assert name not in MODELS, name
    MODELS[name] = m


def node(op, inputs, outputs, name=None, **attrs):
    return helper.make_node(op, inputs, outputs,
                            name=name if name is not None else op.lower(),
                            **attrs)


def one(name, op, inputs, outputs, inits=(), opset=17, check=True, **attrs):
    """A model of one node reading `inputs` (value infos) and initializers."""
    names = [i.name for i in inputs] + [t.name for t in inits]
    model(name, [node(op, names, [o.name for o in outputs], **attrs)], inputs,
          outputs, inits, opset, check)


def shape_models():
    x4 = [f32("x", [2, 3, 4, 5])]
    one("shape", "Shape", x4, [vi("y", I64, [4])])
    one("shape_15_start_end", "Shape", x4, [vi("y", I64, [2])], opset=15,
        start=1, end=-1)
    one("shape_15_clamped", "Shape", x4, [vi("y", I64, [1])], opset=15,
        start=-10, end=1)
    one("size", "Size", x4, [vi("y", I64, [])])

    one("squeeze_11", "Squeeze", [f32("x", [1, 3, 1, 2])],
        [f32("y", [3, 1, 2])], opset=11, axes=[0])
    one("squeeze_13_all", "Squeeze", [f32("x", [1, 3, 1, 2])],
        [f32("y", [3, 2])], opset=13)
    one("squeeze_13_axes", "Squeeze", [f32("x", [1, 3, 1, 2])],
        [f32("y", [1, 3, 2])], inits=[ints("axes", [-2])], opset=13)
    one("unsqueeze_11", "Unsqueeze", [f32("x", [3, 2])],
        [f32("y", [1, 3, 2])], opset=11, axes=[0])
    one("unsqueeze_13", "Unsqueeze", [f32("x", [3, 2])],
        [f32("y", [3, 1, 2, 1])], inits=[ints("axes", [-1, 1])], opset=13)

    one("concat", "Concat", [f32("a", [2, 3]), f32("b", [2, 1])],
        [f32("y", [2, 4])], axis=-1)
    one("concat_one", "Concat", [f32("a", [2, 3])], [f32("y", [2, 3])],
        axis=0)
    one("concat_3_default_axis", "Concat",
        [f32("a", [2, 3]), f32("b", [2, 1])], [f32("y", [2, 4])], opset=3)

    one("split_11", "Split", [f32("x", [6, 2])],
        [f32("y0", [2, 2]), f32("y1", [4, 2])], opset=11, split=[2, 4])
    one("split_13_equal", "Split", [f32("x", [2, 6])],
        [f32("y0", [2, 3]), f32("y1", [2, 3])], opset=13, axis=1)
    one("split_13_input", "Split", [f32("x", [5])],
        [f32("y0", [2]), f32("y1", [0]), f32("y2", [3])],
        inits=[ints("split", [2, 0, 3])], opset=13)
    one("split_1_input", "Split", [f32("x", [5])],
        [f32("y0", [1]), f32("y1", [4])],
        inits=[numpy_helper.from_array(np.array([1, 4], np.float32), "split")],
        opset=1)
    one("split_18_uneven", "Split", [f32("x", [7])],
        [f32("y0", [3]), f32("y1", [3]), f32("y2", [1])], opset=18,
        num_outputs=3)

    one("slice_9", "Slice", [f32("x", [4, 5])], [f32("y", [2, 5])], opset=9,
        starts=[1], ends=[3], axes=[0])
    one("slice_13", "Slice", [f32("x", [4, 5])], [f32("y", [3, 2])],
        inits=[ints("starts", [1, -1]), ints("ends", [1000, 0]),
               ints("axes", [0, 1]), ints("steps", [1, -2])], opset=13)
    # Bounds past either end clamp: a backward slice from far past the end
    # to INT64_MIN reverses the whole axis.
    one("slice_13_reverse", "Slice", [f32("x", [4, 5])], [f32("y", [4, 5])],
        inits=[ints("starts", [100]), ints("ends", [-(2**63)]),
               ints("axes", [-2]), ints("steps", [-1])], opset=13)

    one("gather_const_indices", "Gather", [f32("x", [5, 3])],
        [f32("y", [2, 2, 3])], inits=[ints("idx", [[0, -1], [2, 4]])], axis=0)
    one("gather_runtime", "Gather", [f32("x", [5, 3]), vi("idx", I32, [4])],
        [f32("y", [5, 4])], axis=1)

    one("expand", "Expand", [f32("x", [3, 1])], [f32("y", [2, 3, 4])],
        inits=[ints("shape", [2, 1, 4])], opset=13)
    one("tile", "Tile", [f32("x", [2, 3])], [f32("y", [4, 3])],
        inits=[ints("repeats", [2, 1])], opset=13)
    one("tile_5", "Tile", [f32("x", [2, 3])], [f32("y", [2, 6])],
        inits=[numpy_helper.from_array(np.array(v, np.float32), name)
               for name, v in [("tiles", 2), ("axis", 1)]], opset=5)
    model("constantofshape",
          [node("ConstantOfShape", ["shape"], ["y"],
                value=helper.make_tensor("v", I32, [1], [7]))],
          [], [vi("y", I32, [2, 3])], inits=[ints("shape", [2, 3])])
    model("range",
          [node("Range", ["start", "limit", "delta"], ["y"])], [],
          [f32("y", [4])],
          inits=[numpy_helper.from_array(np.array(v, np.float32), n)
                 for n, v in [("start", 1.0), ("limit", 3.0), ("delta", 0.5)]])
    one("eyelike", "EyeLike", [f32("x", [2, 3])], [vi("y", I64, [2, 3])],
        k=1, dtype=I64)
    one("argmax", "ArgMax", [f32("x", [2, 3, 4])], [vi("y", I64, [2, 4])],
        axis=-2, keepdims=0, select_last_index=1)
    one("argmin", "ArgMin", [f32("x", [2, 3])], [vi("y", I64, [1, 3])])
    one("depthtospace_dcr", "DepthToSpace", [f32("x", [1, 8, 2, 3])],
        [f32("y", [1, 2, 4, 6])], blocksize=2)
    one("depthtospace_crd", "DepthToSpace", [f32("x", [1, 8, 2, 3])],
        [f32("y", [1, 2, 4, 6])], blocksize=2, mode="CRD")
    one("spacetodepth", "SpaceToDepth", [f32("x", [1, 2, 4, 6])],
        [f32("y", [1, 8, 2, 3])], blocksize=2)
    one("trilu_upper", "Trilu", [f32("x", [2, 3])], [f32("y", [2, 3])],
        opset=14)
    one("trilu_lower_k", "Trilu", [f32("x", [2, 3])], [f32("y", [2, 3])],
        inits=[ints("k", -1)], opset=14, upper=0)
    one("trilu_runtime_k", "Trilu", [f32("x", [2, 3]), vi("k", I64, [])],
        [f32("y", [2, 3])], opset=14)
    one("onehot", "OneHot", [vi("idx", I32, [2])], [f32("y", [3, 2])],
        inits=[ints("depth", 3),
               numpy_helper.from_array(np.array([0, 5], np.float32), "values")],
        opset=11, axis=0)


def folding_models():
    # Shape arithmetic folds to constants, through the shape handlers and
    # through core ops with folders (Div), so the Reshape gets its shape:
    # [2, 6] -> Concat(Shape[0:1], Shape[1:2] / 2, [2]) = [2, 3, 2].
    model("fold_shape_chain",
          [node("Shape", ["x"], ["s"]),
           node("Slice", ["s", "zero", "one"], ["s0"], name="s0"),
           node("Slice", ["s", "one", "two"], ["s1"], name="s1"),
           node("Div", ["s1", "two"], ["half"]),
           node("Concat", ["s0", "half", "two"], ["shape"], axis=0),
           node("Reshape", ["x", "shape"], ["y"])],
          [f32("x", [2, 6])], [f32("y", [2, 3, 2])],
          inits=[ints("zero", [0]), ints("one", [1]), ints("two", [2])])
    # Gather of Shape with a scalar index, Unsqueeze, Concat with -1.
    model("fold_gather_unsqueeze",
          [node("Shape", ["x"], ["s"]),
           node("Gather", ["s", "i"], ["d"], axis=0),
           node("Unsqueeze", ["d", "axes"], ["d1"]),
           node("Concat", ["d1", "minus1"], ["shape"], axis=0),
           node("Reshape", ["x", "shape"], ["y"])],
          [f32("x", [2, 3, 4])], [f32("y", [2, 12])],
          inits=[ints("i", 0), ints("axes", [0]), ints("minus1", [-1])])
    # Size(Shape) - 1 -> ConstantOfShape -> Concat: LayerNormalization's
    # function body builds its reduction shape this way.
    model("fold_constantofshape",
          [node("Shape", ["x"], ["s"]),
           node("Size", ["s"], ["rank"]),
           node("Sub", ["rank", "one"], ["n"]),
           node("Unsqueeze", ["n", "axes"], ["n1"]),
           node("ConstantOfShape", ["n1"], ["ones"],
                value=helper.make_tensor("v", I64, [1], [1])),
           node("Concat", ["minus1", "ones"], ["shape"], axis=0),
           node("Reshape", ["x", "shape"], ["y"])],
          [f32("x", [2, 3, 4])], [f32("y", [24, 1, 1])],
          inits=[ints("one", 1), ints("axes", [0]), ints("minus1", [-1])])


def error_models():
    one("bad_slice_dynamic", "Slice",
        [f32("x", [4]), vi("starts", I64, [1])], [f32("y", ["n"])],
        inits=[ints("ends", [3])], opset=13)
    one("bad_slice_step_zero", "Slice", [f32("x", [4])], [f32("y", ["n"])],
        inits=[ints("starts", [0]), ints("ends", [3]), ints("axes", [0]),
               ints("steps", [0])], opset=13, check=False)
    one("bad_squeeze_not_one", "Squeeze", [f32("x", [1, 3])],
        [f32("y", ["n"])], inits=[ints("axes", [1])], opset=13, check=False)
    one("bad_unsqueeze_repeat", "Unsqueeze", [f32("x", [3])],
        [f32("y", ["n"])], inits=[ints("axes", [0, -3])], opset=13,
        check=False)
    one("bad_concat_shapes", "Concat", [f32("a", [2, 3]), f32("b", [3, 3])],
        [f32("y", ["n"])], axis=1, check=False)
    one("bad_split_sum", "Split", [f32("x", [5])],
        [f32("y0", ["n"]), f32("y1", ["m"])], inits=[ints("split", [2, 2])],
        opset=13, check=False)
    # Invalid ONNX (the checker refuses it too): 5 does not split evenly.
    one("bad_split_uneven", "Split", [f32("x", [5])],
        [f32("y0", ["n"]), f32("y1", ["m"])], opset=13, check=False)
    one("bad_gather_range", "Gather", [f32("x", [5, 3])], [f32("y", ["n"])],
        inits=[ints("idx", [5])], check=False)
    one("bad_expand", "Expand", [f32("x", [3])], [f32("y", ["n"])],
        inits=[ints("shape", [2, 4])], opset=13, check=False)
    one("bad_tile_repeats", "Tile", [f32("x", [2, 3])], [f32("y", ["n"])],
        inits=[ints("repeats", [2])], opset=13, check=False)
    one("bad_depthtospace_channels", "DepthToSpace",
        [f32("x", [1, 6, 2, 2])], [f32("y", ["n"])], blocksize=2, check=False)
    one("bad_onehot_depth", "OneHot",
        [vi("idx", I64, [2]), vi("depth", I64, [])], [f32("y", [2, "n"])],
        inits=[numpy_helper.from_array(np.array([0, 1], np.float32),
                                       "values")], opset=11)
    one("bad_range_delta", "Range", [], [f32("y", ["n"])],
        inits=[numpy_helper.from_array(np.array(v, np.float32), n)
               for n, v in [("start", 1.0), ("limit", 3.0), ("delta", 0.0)]],
        check=False)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_shape_models.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    shape_models()
    folding_models()
    error_models()
    for name, m in MODELS.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString(deterministic=True))


if __name__ == "__main__":
    main()
