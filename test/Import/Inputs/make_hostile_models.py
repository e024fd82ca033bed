"""Writes hostile model files: broken on purpose, each one a way a stranger's
file can go wrong (or a reduced input the fuzzer once crashed on). kilnc must
refuse every one with a located error and exit code 1, never crash, hang or
allocate what the file merely claims.

Usage: make_hostile_models.py OUTDIR. The files are the same on every run
(random bytes come from a fixed seed).
"""

import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    graph = helper.make_graph(nodes, "hostile", inputs, outputs,
                              initializer=list(inits))
    return helper.make_model(
        graph, producer_name="kiln-tests",
        opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])


def relu_model():
    return model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                 [vi("x", [2, 3])], [vi("y", [2, 3])])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = {}

    # Bytes that are not a model at all.
    good = relu_model().SerializeToString()
    files["empty"] = b""
    files["truncated"] = good[: len(good) // 2]
    files["random"] = random.Random(9).randbytes(4096)

    # Two nodes that read each other's output: a cycle.
    files["cycle"] = model(
        [helper.make_node("Relu", ["b"], ["a"], name="first"),
         helper.make_node("Relu", ["a"], ["b"], name="second")],
        [vi("x", [2])], [vi("a", [2])])

    # Dims: negative, and far larger than memory (never allocated).
    files["negative_dim"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        [vi("x", [2, -3])], [vi("y", [2, -3])])
    files["huge_dim"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        [vi("x", [1 << 40, 1 << 40])], [vi("y", [1 << 40, 1 << 40])])
    # An initializer whose dims promise 2^62 floats but whose data is 8 bytes.
    big = numpy_helper.from_array(np.zeros(2, np.float32), "w")
    del big.dims[:]
    big.dims.extend([1 << 31, 1 << 31])
    files["init_dims_vs_data"] = model(
        [helper.make_node("Identity", ["w"], ["y"], name="id")],
        [], [vi("y", [1 << 31, 1 << 31])], inits=[big])
    # A ConstantOfShape asked for 2^60 elements.
    shape = numpy_helper.from_array(np.array([1 << 30, 1 << 30], np.int64), "s")
    files["constant_of_shape_huge"] = model(
        [helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos")],
        [], [vi("y", [1 << 30, 1 << 30])], inits=[shape])

    # 4 TiB of zeros: a tensor kiln could plan, but not a constant it could
    # embed in an object file.
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20], np.int64), "s")
    files["constant_too_big_to_embed"] = model(
        [helper.make_node("ConstantOfShape", ["s"], ["y"], name="zeros")],
        [], [vi("y", [1 << 20, 1 << 20])], inits=[shape])
    # A graph input that is its own output, too large to exist.
    files["huge_input_passthrough"] = model(
        [helper.make_node("Identity", ["x"], ["y"], name="id")],
        [vi("x", [1 << 50, 1 << 20])], [vi("y", [1 << 50, 1 << 20])])

    # Opsets and domains nobody defines.
    files["unknown_opset"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        [vi("x", [2])], [vi("y", [2])], opsets=(("", 999),))
    files["unknown_domain"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.evil")],
        [vi("x", [2])], [vi("y", [2])],
        opsets=(("", 17), ("com.evil", 1)))

    # An attribute of the wrong type (a string where an int belongs).
    files["attr_wrong_type"] = model(
        [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis="one")],
        [vi("x", [2, 3])], [vi("y", [2, 3])])

    # Found by kiln-fuzz-import: Attention with a past_key whose rank does
    # not match K used to abort inside the concat's type inference.
    files["attention_past_rank"] = model(
        [helper.make_node("Attention",
                          ["q", "k", "v", "", "past_key", "past_value"],
                          ["y", "present_key", "present_value"], name="attn")],
        [vi("q", [2, 3, 4, 8]), vi("k", [2, 3, 6, 8]), vi("v", [2, 3, 6, 8]),
         vi("past_key", [8]), vi("past_value", [2, 3, 12, 8])],
        [vi("y", [2, 3, 4, 8]), vi("present_key", [2, 3, 18, 8]),
         vi("present_value", [2, 3, 18, 8])], opsets=(("", 23),))

    # Found by kiln-fuzz-import: a Reshape target whose product overflows
    # int64 (signed overflow under UBSan) before it was compared.
    target = numpy_helper.from_array(
        np.array([1 << 62, 1 << 62, 4], np.int64), "shape")
    files["reshape_overflow"] = model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")],
        [vi("x", [1, 9, 4, 4])], [vi("y", [1, 1, 1])], inits=[target])

    # Found by kiln-fuzz-import: QLinearMatMul with an empty b_scale used to
    # abort inside the requantizing multiply's type inference.
    I8 = TensorProto.INT8
    H = TensorProto.FLOAT16
    files["qlinearmatmul_empty_scale"] = model(
        [helper.make_node("QLinearMatMul",
                          ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp",
                           "y_scale", "y_zp"], ["y"], name="qmm")],
        [vi("a", [2, 4], I8), vi("a_scale", [1], H), vi("a_zp", [1], I8),
         vi("b", [4, 3], I8), vi("b_scale", [0], H), vi("b_zp", [1], I8),
         vi("y_scale", [1], H), vi("y_zp", [1], I8)],
        [vi("y", [2, 3], I8)], opsets=(("", 21),))

    # Found by kiln-fuzz-import (a slow unit): a constant Range of 2^31
    # elements was built attribute by attribute.
    files["range_huge"] = model(
        [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="rg")],
        [], [vi("y", [1 << 31], TensorProto.INT64)],
        inits=[numpy_helper.from_array(np.array(0, np.int64), "start"),
               numpy_helper.from_array(np.array(1 << 31, np.int64), "limit"),
               numpy_helper.from_array(np.array(1, np.int64), "delta")])
    # Decompositions that build a constant as large as an input.
    files["eyelike_huge"] = model(
        [helper.make_node("EyeLike", ["x"], ["y"], name="eye")],
        [vi("x", [1 << 20, 1 << 20])], [vi("y", [1 << 20, 1 << 20])])
    scales = numpy_helper.from_array(np.array([1, 1, 1e6, 1e6], np.float32), "scales")
    files["resize_huge"] = model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rz",
                          mode="linear")],
        [vi("x", [1, 1, 64, 64])], [vi("y", [1, 1, 64000000, 64000000])],
        inits=[scales], opsets=(("", 19),))

    for name, content in files.items():
        data = content if isinstance(content, bytes) else content.SerializeToString()
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
