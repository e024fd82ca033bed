"""Writes the ONNX models of test/Import/elementwise-ops.test.

Usage: make_elementwise_models.py OUTDIR (created if missing). One small model
per decomposition the importer makes for the elementwise, activation, Cast,
Clip, composite Reduce* and Hardmax ops, and the bad_* models it must refuse.
Built with the onnx helper API from fixed values, so the files are
byte-identical on every run; models kilnc should import pass
onnx.checker.check_model(full_check=True) unless marked check=False with a
reason.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
F16 = TensorProto.FLOAT16
I32 = TensorProto.INT32
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL

MODELS = {}


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def f32(name, shape):
    return vi(name, F, shape)


def model(name, nodes, inputs, outputs, inits=(), opset=17, check=True):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="kiln-tests")
    if check:
        onnx.checker.check_model(m, full_check=True)
    assert name not in MODELS, name
    MODELS[name] = m
    return m


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=op.lower(), **attrs)


def unary(name, op, elem=F, out_elem=None, opset=17, check=True, **attrs):
    """One node y = op(x) on a [2, 3] tensor."""
    model(name, [node(op, ["x"], ["y"], **attrs)], [vi("x", elem, [2, 3])],
          [vi("y", out_elem if out_elem is not None else elem, [2, 3])],
          opset=opset, check=check)


def ok_models():
    # Unary ops map one to one.
    unary("abs_int32", "Abs", I32)
    unary("round", "Round", F)
    unary("erf", "Erf", F)
    unary("not", "Not", BOOL)
    unary("bitwise_not", "BitwiseNot", I32, opset=18)
    unary("isnan", "IsNaN", F, BOOL)
    unary("isinf", "IsInf", F, BOOL)
    unary("isinf_negative", "IsInf", F, BOOL, detect_positive=0)

    # Pow: the result has the base's type.
    model("pow_float_int", [node("Pow", ["x", "e"], ["y"])],
          [f32("x", [2, 3]), vi("e", I64, [3])], [f32("y", [2, 3])])
    model("pow_int_float", [node("Pow", ["x", "e"], ["y"])],
          [vi("x", I32, [2, 3]), f32("e", [])], [vi("y", I32, [2, 3])])

    # Before opset 7: rhs aligned at `axis` with broadcast=1, and a 1-D PRelu
    # slope per channel.
    model("less_legacy_axis",
          [node("Less", ["a", "b"], ["y"], broadcast=1, axis=1)],
          [f32("a", [2, 3, 4]), f32("b", [3])], [vi("y", BOOL, [2, 3, 4])],
          opset=6)
    model("prelu_legacy_channel", [node("PRelu", ["x", "s"], ["y"])],
          [f32("x", [2, 3, 4]), f32("s", [3])], [f32("y", [2, 3, 4])], opset=6)

    # Variadic ops fold left to right with broadcasting.
    model("max_three", [node("Max", ["a", "b", "c"], ["y"])],
          [f32("a", [2, 3]), f32("b", [3]), f32("c", [2, 1])],
          [f32("y", [2, 3])])
    model("mean_three", [node("Mean", ["a", "b", "c"], ["y"])],
          [f32("a", [3]), f32("b", [3]), f32("c", [3])], [f32("y", [3])])
    model("sum_one", [node("Sum", ["a"], ["y"])], [f32("a", [3])],
          [f32("y", [3])])

    # Mod: fmod = 1 is the core remainder; fmod = 0 on integers takes the
    # divisor's sign.
    model("mod_int", [node("Mod", ["a", "b"], ["y"])],
          [vi("a", I32, [4]), vi("b", I32, [4])], [vi("y", I32, [4])])
    model("mod_fmod", [node("Mod", ["a", "b"], ["y"], fmod=1)],
          [f32("a", [4]), f32("b", [4])], [f32("y", [4])])

    # Logic, bitwise ops and comparisons.
    model("and", [node("And", ["a", "b"], ["y"])],
          [vi("a", BOOL, [2, 3]), vi("b", BOOL, [3])], [vi("y", BOOL, [2, 3])])
    model("bitwise_xor", [node("BitwiseXor", ["a", "b"], ["y"])],
          [vi("a", I64, [2, 3]), vi("b", I64, [2, 3])], [vi("y", I64, [2, 3])],
          opset=18)
    model("less_or_equal", [node("LessOrEqual", ["a", "b"], ["y"])],
          [f32("a", [2, 3]), f32("b", [])], [vi("y", BOOL, [2, 3])])
    model("equal_bool", [node("Equal", ["a", "b"], ["y"])],
          [vi("a", BOOL, [4]), vi("b", BOOL, [4])], [vi("y", BOOL, [4])])
    model("where", [node("Where", ["c", "a", "b"], ["y"])],
          [vi("c", BOOL, [2, 1]), f32("a", [3]), f32("b", [])],
          [f32("y", [2, 3])])

    # Cast and CastLike; a cast to the same type is no op.
    unary("cast_f16", "Cast", F, F16, to=F16)
    unary("cast_bool", "Cast", I32, BOOL, opset=19, to=BOOL, saturate=1)
    unary("cast_same", "Cast", F, F, to=F)
    model("castlike", [node("CastLike", ["x", "t"], ["y"])],
          [f32("x", [3]), vi("t", I64, [])], [vi("y", I64, [3])])

    # Clip: attributes before opset 11, optional inputs after.
    unary("clip_6", "Clip", F, opset=10, min=-1.0, max=1.0)
    model("clip_max_only", [node("Clip", ["x", "", "hi"], ["y"])],
          [f32("x", [2, 3]), f32("hi", [1])], [f32("y", [2, 3])])

    # Activations.
    unary("leaky_relu", "LeakyRelu", alpha=0.25)
    model("prelu", [node("PRelu", ["x", "s"], ["y"])],
          [f32("x", [2, 3]), f32("s", [3])], [f32("y", [2, 3])])
    unary("elu", "Elu")
    unary("selu", "Selu", alpha=2.0, gamma=3.0)
    unary("celu", "Celu", alpha=2.0)
    unary("gelu", "Gelu", opset=20)
    unary("gelu_tanh", "Gelu", opset=20, approximate="tanh")
    unary("hard_sigmoid", "HardSigmoid", alpha=0.25, beta=0.75)
    unary("hard_swish", "HardSwish")
    unary("softplus", "Softplus")
    unary("softsign", "Softsign")
    unary("mish", "Mish", opset=18)
    unary("thresholded_relu", "ThresholdedRelu", alpha=2.0)
    unary("shrink", "Shrink", lambd=1.5, bias=0.5)

    # Reductions made of a core reduction and elementwise steps.
    x = [f32("x", [2, 3, 4])]
    model("reduce_l2_13", [node("ReduceL2", ["x"], ["y"], axes=[-1])], x,
          [f32("y", [2, 3, 1])], opset=13)
    model("reduce_sum_square_18",
          [node("ReduceSumSquare", ["x", "axes"], ["y"], keepdims=0)], x,
          [f32("y", [2, 4])], opset=18,
          inits=[numpy_helper.from_array(np.array([1], np.int64), "axes")])
    model("reduce_log_sum_exp",
          [node("ReduceLogSumExp", ["x"], ["y"], axes=[0, 2], keepdims=0)], x,
          [f32("y", [3])], opset=13)
    # An empty axes input is known to be empty even as a graph input.
    model("reduce_l1_empty_axes_input", [node("ReduceL1", ["x", "axes"], ["y"])],
          x + [vi("axes", I64, [0])], [f32("y", [1, 1, 1])], opset=18)
    model("reduce_l1_noop",
          [node("ReduceL1", ["x"], ["y"], noop_with_empty_axes=1)], x,
          [f32("y", [2, 3, 4])], opset=18)

    # Casts to and from the narrow types keep saturate and round_mode.
    unary("cast_float8", "Cast", F, TensorProto.FLOAT8E4M3FN, opset=19,
          to=TensorProto.FLOAT8E4M3FN)
    unary("cast_float8_no_saturate", "Cast", F, TensorProto.FLOAT8E5M2,
          opset=19, to=TensorProto.FLOAT8E5M2, saturate=0)
    unary("cast_e8m0_nearest", "Cast", F, TensorProto.FLOAT8E8M0, opset=25,
          to=TensorProto.FLOAT8E8M0, round_mode="nearest")
    unary("cast_int4_to_float", "Cast", TensorProto.INT4, F, opset=21,
          to=TensorProto.FLOAT)
    # A packed int4 initializer: five elements in three bytes.
    model("int4_initializer", [node("Cast", ["w"], ["y"], to=TensorProto.FLOAT)],
          [], [f32("y", [5])], opset=21,
          inits=[helper.make_tensor("w", TensorProto.INT4, [5], [-8, 7, -1, 0, 3])])
    # Quantization decomposes into casts and arithmetic.
    model("quantize_per_axis",
          [node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)],
          [f32("x", [2, 3]), f32("s", [3]), vi("z", TensorProto.INT8, [3])],
          [vi("y", TensorProto.INT8, [2, 3])], opset=21)
    model("dequantize_blocked",
          [node("DequantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)],
          [vi("x", TensorProto.UINT4, [2, 4]), f32("s", [2, 2])],
          [f32("y", [2, 4])], opset=21)

    # Integer matmul and conv subtract zero points in i32; a per-row zero
    # point of A lies along its rows.
    model("matmul_integer",
          [node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])],
          [vi("a", TensorProto.UINT8, [2, 3]), vi("b", TensorProto.UINT8, [3, 4]),
           vi("za", TensorProto.UINT8, [2]), vi("zb", TensorProto.UINT8, [])],
          [vi("y", I32, [2, 4])], opset=10)
    model("qlinear_matmul",
          [node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])],
          [vi("a", TensorProto.INT8, [2, 3]), f32("sa", []), vi("za", TensorProto.INT8, []),
           vi("b", TensorProto.INT8, [3, 4]), f32("sb", []), vi("zb", TensorProto.INT8, []),
           f32("sy", []), vi("zy", TensorProto.INT8, [])],
          [vi("y", TensorProto.INT8, [2, 4])], opset=10)
    model("dynamic_quantize",
          [node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
          [f32("x", [2, 3])],
          [vi("y", TensorProto.UINT8, [2, 3]), f32("s", []), vi("z", TensorProto.UINT8, [])],
          opset=11)

    # Resize with constant scales: nearest is a gather per resized axis,
    # linear a matmul with the axis's weight matrix.
    scales = numpy_helper.from_array(np.array([1, 1, 2, 1.5], np.float32), "scales")
    model("resize_nearest", [node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
          [f32("x", [1, 1, 2, 2])], [f32("y", [1, 1, 4, 3])], opset=13,
          inits=[scales])
    model("resize_linear", [node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
          [f32("x", [1, 1, 2, 2])], [f32("y", [1, 1, 4, 3])], opset=13,
          inits=[scales])

    # Hardmax: one axis from opset 13, the flattened tail before.
    model("hardmax_13", [node("Hardmax", ["x"], ["y"])], x,
          [f32("y", [2, 3, 4])], opset=13)
    model("hardmax_11", [node("Hardmax", ["x"], ["y"])], x,
          [f32("y", [2, 3, 4])], opset=11)


def error_models():
    # Invalid ONNX too (Sin is float only), so unchecked.
    unary("bad_sin_int", "Sin", I32, check=False)
    unary("bad_cast_uint8", "Cast", F, TensorProto.UINT8, to=TensorProto.UINT8)
    unary("bad_cast_string", "Cast", F, TensorProto.STRING,
          to=TensorProto.STRING, check=False)
    # Narrow types are storage only: no arithmetic on them.
    unary("bad_neg_float8", "Neg", TensorProto.FLOAT8E4M3FN, check=False)
    model("bad_quantize_int32", [node("QuantizeLinear", ["x", "s", "z"], ["y"])],
          [f32("x", [2, 3]), f32("s", []), vi("z", I32, [])],
          [vi("y", I32, [2, 3])], opset=21, check=False)
    model("bad_matmul_integer_i32", [node("MatMulInteger", ["a", "b"], ["y"])],
          [vi("a", I32, [2, 3]), vi("b", I32, [3, 4])], [vi("y", I32, [2, 4])],
          opset=10, check=False)
    model("bad_resize_runtime_scales",
          [node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
          [f32("x", [1, 1, 2, 2]), f32("scales", [4])], [f32("y", [1, 1, 4, 4])],
          opset=13, check=False)
    model("bad_resize_linear_int",
          [node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
          [vi("x", I32, [1, 1, 2, 2])], [vi("y", I32, [1, 1, 4, 3])], opset=13,
          inits=[numpy_helper.from_array(np.array([1, 1, 2, 1.5], np.float32), "scales")])
    model("bad_dequantize_axis", [node("DequantizeLinear", ["x", "s"], ["y"], axis=0)],
          [vi("x", TensorProto.INT8, [2, 3]), f32("s", [3])],
          [f32("y", [2, 3])], opset=21)
    model("bad_and_float", [node("And", ["a", "b"], ["y"])],
          [f32("a", [2]), f32("b", [2])], [vi("y", BOOL, [2])], check=False)
    model("bad_less_types", [node("Less", ["a", "b"], ["y"])],
          [f32("a", [2]), vi("b", I32, [2])], [vi("y", BOOL, [2])], check=False)
    model("bad_max_shapes", [node("Max", ["a", "b", "c"], ["y"])],
          [f32("a", [2]), f32("b", [2]), f32("c", [3])], [f32("y", [2])],
          check=False)
    # ONNX requires fmod = 1 for floats.
    model("bad_mod_float", [node("Mod", ["a", "b"], ["y"])],
          [f32("a", [2]), f32("b", [2])], [f32("y", [2])])
    model("bad_where_cond", [node("Where", ["c", "a", "b"], ["y"])],
          [f32("c", [2]), f32("a", [2]), f32("b", [2])], [f32("y", [2])],
          check=False)
    model("bad_prelu_slope", [node("PRelu", ["x", "s"], ["y"])],
          [f32("x", [3]), f32("s", [2, 3])], [f32("y", [2, 3])], check=False)
    model("bad_clip_bound", [node("Clip", ["x", "lo"], ["y"])],
          [f32("x", [3]), f32("lo", [2])], [f32("y", [3])], check=False)
    unary("bad_gelu_approximate", "Gelu", opset=20, approximate="fast")
    model("bad_reduce_l2_int", [node("ReduceL2", ["x"], ["y"], axes=[1])],
          [vi("x", I32, [2, 3])], [vi("y", I32, [2, 1])], opset=13)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_elementwise_models.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    ok_models()
    error_models()
    for name, m in MODELS.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString(deterministic=True))


if __name__ == "__main__":
    main()
