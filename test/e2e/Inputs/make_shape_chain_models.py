#!/usr/bin/env python3
"""Models whose shape-deciding inputs are computed by nodes from static shapes.

    make_shape_chain_models.py OUTDIR

Exporters compute pads, target shapes, repeats, slice bounds, TopK's k and
Range's limit from Shape nodes (torchvision's detection models pad each
image to a multiple of 32 through Shape -> Gather -> Div -> Ceil ->
ReduceMax -> Concat). With static input shapes every such chain has a
value at compile time; Kiln must compute it, as ONNX Runtime does. Writes
OUTDIR/NAME.onnx with ONNX Runtime's outputs for a random input
(OUTDIR/NAME/input_K.npy, output_K.npy), the layout check_models.py reads.
"""
import os
import sys

import numpy as np
import onnx
from check_models import write_case
from onnx import TensorProto as T, helper, numpy_helper

rng = np.random.default_rng(5)
F, I64 = T.FLOAT, T.INT64


def c(name, value):
    return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(np.array(value), name))


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0] + "_" + op.lower(), **attrs)


def dims(x, out, indices):
    """out = Shape(x)[indices], int64."""
    return [node("Shape", [x], [out + "_shape"]), c(out + "_idx", np.array(indices, np.int64)),
            node("Gather", [out + "_shape", out + "_idx"], [out], axis=0)]


def models():
    vi = helper.make_tensor_value_info
    # torchvision's batching: pad H and W up to a multiple of 32.
    yield "pad_to_stride", [vi("x", F, [1, 3, 50, 70])], [
        *dims("x", "hw", [2, 3]),
        node("Cast", ["hw"], ["hwf"], to=F), c("stride", np.float32(32)),
        node("Div", ["hwf", "stride"], ["q"]), node("Ceil", ["q"], ["cq"]),
        node("Mul", ["cq", "stride"], ["target"]), c("ax0", np.array([0], np.int64)),
        node("Unsqueeze", ["target", "ax0"], ["t2"]),
        node("ReduceMax", ["t2"], ["tmax"], axes=[0], keepdims=0),
        node("Sub", ["tmax", "hwf"], ["extra"]), node("Cast", ["extra"], ["extra_i"], to=I64),
        c("zeros6", np.zeros(6, np.int64)),
        node("Concat", ["zeros6", "extra_i"], ["pads"], axis=0),
        node("Pad", ["x", "pads"], ["y"])]
    # Flatten all but the batch: Reshape(x, [Shape(x)[0], -1]).
    yield "reshape_computed", [vi("x", F, [2, 3, 4, 5])], [
        *dims("x", "n", [0]), c("minus1", np.array([-1], np.int64)),
        node("Concat", ["n", "minus1"], ["shape"], axis=0), node("Reshape", ["x", "shape"], ["y"])]
    # A bias expanded to the input's shape, and a fill of that shape.
    yield "expand_constantofshape", [vi("x", F, [2, 3, 4])], [
        node("Shape", ["x"], ["s"]), c("bias", rng.normal(size=(4,)).astype(np.float32)),
        node("Expand", ["bias", "s"], ["e"]),
        helper.make_node("ConstantOfShape", ["s"], ["fill"], name="fill",
                         value=numpy_helper.from_array(np.array([0.5], np.float32), "v")),
        node("Add", ["x", "e"], ["xe"]), node("Mul", ["xe", "fill"], ["y"])]
    # Tile by a repeat count computed from the shape: [1, 4 / 2, 1].
    yield "tile_computed", [vi("x", F, [3, 2, 5])], [
        *dims("x", "two", [1]), c("four", np.array([4], np.int64)),
        node("Div", ["four", "two"], ["rep"]), c("one", np.array([1], np.int64)),
        node("Concat", ["one", "rep", "one"], ["reps"], axis=0), node("Tile", ["x", "reps"], ["y"])]
    # Drop the last row: Slice(x, 0, Shape(x)[2] - 1, axis 2).
    yield "slice_computed", [vi("x", F, [2, 3, 7])], [
        *dims("x", "w", [2]), c("one", np.array([1], np.int64)), node("Sub", ["w", "one"], ["end"]),
        c("start", np.array([0], np.int64)), c("axis", np.array([2], np.int64)),
        node("Slice", ["x", "start", "end", "axis"], ["y"])]
    # TopK with k = Shape(x)[1] / 2, and Range up to Shape(x)[1].
    yield "topk_range_computed", [vi("x", F, [2, 8])], [
        *dims("x", "width", [1]), c("two", np.array([2], np.int64)), node("Div", ["width", "two"], ["k"]),
        node("TopK", ["x", "k"], ["y", "idx"], axis=1),
        c("zero", np.array(0, np.int64)), c("step", np.array(1, np.int64)),
        c("ax0", np.array([0], np.int64)), node("Squeeze", ["width", "ax0"], ["limit"]),
        node("Range", ["zero", "limit", "step"], ["r"]), node("Cast", ["r"], ["z"], to=F)]
    # Resize to twice the spatial size, the sizes computed from the shape.
    yield "resize_computed", [vi("x", F, [1, 2, 3, 4])], [
        node("Shape", ["x"], ["s"]), c("scale2", np.array([1, 1, 2, 2], np.int64)),
        node("Mul", ["s", "scale2"], ["sizes"]),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize", mode="nearest")]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, inputs, nodes in models():
        produced = {o for n in nodes for o in n.output}
        consumed = {i for n in nodes for i in n.input}
        outputs = [helper.make_tensor_value_info(o, T.UNDEFINED, None)
                   for n in nodes for o in n.output if o not in consumed]
        graph = helper.make_graph(nodes, name, inputs, outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        model = onnx.shape_inference.infer_shapes(model)
        onnx.checker.check_model(model)
        write_case(out, name, model, rng)
        assert produced


if __name__ == "__main__":
    main()
