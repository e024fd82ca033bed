"""Writes a suite (onnx_suite layout) of matrix products and convolutions
that the CUDA target runs through cuBLASLt and cuDNN (docs/decisions/0019),
with float64 numpy references: row-major products whose operands cuBLASLt
sees swapped, Gemm with each transpose, batches, a batch merged into the
rows, bias and relu epilogues, f16 inputs accumulated in f32, a product too
broadcast for cuBLASLt that stays a kernel; padded, strided, dilated,
grouped and depthwise 2-d convolutions with bias, a residual block, and a
1-d one that stays a kernel."""
import sys

import numpy as np
from onnx import helper

from conv_reference import conv
from onnx_suite import Suite

suite = Suite(sys.argv[1])
rng = np.random.default_rng(11)


def f32(shape):
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def relu(x):
    return np.maximum(x, 0.0)


# MatMul + bias + Relu: one step with the RELU_BIAS epilogue.
x, w, b = f32((8, 64)), f32((64, 32)), f32((32,))
suite.graph("matmul_bias_relu", [node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "b"], ["s"]),
                                 node("Relu", ["s"], ["y"])],
            [("x", x), ("w", w), ("b", b)],
            [("y", relu(x.astype(np.float64) @ w + b).astype(np.float32))])

# MatMul + Relu: the RELU epilogue.
suite.graph("matmul_relu", [node("MatMul", ["x", "w"], ["m"]), node("Relu", ["m"], ["y"])],
            [("x", x), ("w", w)], [("y", relu(x.astype(np.float64) @ w).astype(np.float32))])

# [2, 5, 16] x [16, 24] + bias: the batch merges into the rows (m = 10).
x, w, b = f32((2, 5, 16)), f32((16, 24)), f32((24,))
suite.graph("linear_3d_bias", [node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "b"], ["y"])],
            [("x", x), ("w", w), ("b", b)], [("y", (x.astype(np.float64) @ w + b).astype(np.float32))])

# A strided batch of 3 and a 4-d batch of 2 x 3.
p, q = f32((3, 4, 8)), f32((3, 8, 5))
suite.case("batched_3", "MatMul", [("p", p), ("q", q)], [("y", (p.astype(np.float64) @ q).astype(np.float32))])
p, q = f32((2, 3, 4, 8)), f32((2, 3, 8, 5))
suite.case("batched_2x3", "MatMul", [("p", p), ("q", q)], [("y", (p.astype(np.float64) @ q).astype(np.float32))])

# A left side broadcast over the batch: no cuBLASLt layout, a kernel.
p, q = f32((1, 4, 8)), f32((3, 8, 5))
suite.case("left_broadcast", "MatMul", [("p", p), ("q", q)], [("y", (p.astype(np.float64) @ q).astype(np.float32))])

# Gemm with every transpose, alpha and a bias.
for ta in (0, 1):
    for tb in (0, 1):
        a = f32((7, 5) if ta else (5, 7))
        bm = f32((6, 7) if tb else (7, 6))
        c = f32((6,))
        ref = 0.5 * ((a.T if ta else a).astype(np.float64) @ (bm.T if tb else bm)) + c
        suite.case("gemm_t%d%d" % (ta, tb), "Gemm", [("a", a), ("b", bm), ("c", c)],
                   [("y", ref.astype(np.float32))], alpha=0.5, transA=ta, transB=tb)

# A long k (4 splits' worth) and sizes that are no multiple of anything.
x, w = f32((33, 300)), f32((300, 17))
suite.case("matmul_k300", "MatMul", [("x", x), ("w", w)], [("y", (x.astype(np.float64) @ w).astype(np.float32))])

# f16 inputs: products accumulate in f32 and round once to f16.
x = rng.integers(-4, 5, (6, 40)).astype(np.float16)
w = (rng.integers(-4, 5, (40, 10)) / 4).astype(np.float16)
suite.case("matmul_f16", "MatMul", [("x", x), ("w", w)],
           [("y", (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float16))])

# Convolutions (cuDNN, padding the input itself where the padding is
# symmetric, else reading the input padded into the arena).
def conv_case(name, x_shape, w_shape, bias=True, **attrs):
    x, w = f32(x_shape), f32(w_shape)
    k = len(x_shape) - 2
    y = conv(x.astype(np.float64), w.astype(np.float64), attrs.get("strides", [1] * k),
             attrs.get("dilations", [1] * k), attrs.get("pads", [0] * (2 * k)), attrs.get("group", 1))
    inputs = [("x", x), ("w", w)]
    if bias:
        b = f32((w_shape[0],))
        inputs.append(("b", b))
        y = y + b.reshape((1, -1) + (1,) * k)
    suite.case(name, "Conv", inputs, [("y", y.astype(np.float32))], **attrs)


conv_case("conv_pad_bias", (2, 3, 9, 8), (5, 3, 3, 3), pads=[1, 1, 1, 1])
conv_case("conv_strided_dilated", (1, 4, 13, 11), (6, 4, 3, 2), bias=False, strides=[2, 3],
          dilations=[2, 1], pads=[0, 1, 2, 0])
conv_case("conv_grouped", (1, 6, 7, 7), (9, 2, 3, 3), group=3, pads=[1, 1, 1, 1])
conv_case("conv_depthwise", (2, 8, 6, 6), (8, 1, 3, 3), group=8, strides=[2, 2], pads=[1, 1, 1, 1])
conv_case("conv_pointwise", (1, 16, 4, 4), (32, 16, 1, 1))
conv_case("conv_1d", (2, 3, 20), (4, 3, 5), pads=[2, 2])

# Conv with a bias, then Relu: cuDNN's bias + relu epilogue writes the output.
x, w, b = f32((2, 4, 6, 7)), f32((8, 4, 3, 3)), f32((8,))
y = conv(x.astype(np.float64), w.astype(np.float64), [1, 1], [1, 1], [1, 1, 1, 1], 1) + b.reshape(1, -1, 1, 1)
suite.graph("conv_bias_relu", [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["y"])],
            [("x", x), ("w", w), ("b", b)], [("y", relu(y).astype(np.float32))])

# A residual block: relu(Conv(x) + b + x), x both the padded input cuDNN
# pads itself and the residual z of its bias + residual + relu epilogue.
x, w, b = f32((2, 4, 6, 7)), f32((4, 4, 3, 3)), f32((4,))
y = conv(x.astype(np.float64), w.astype(np.float64), [1, 1], [1, 1], [1, 1, 1, 1], 1) + b.reshape(1, -1, 1, 1) + x
suite.graph("conv_residual_relu", [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                                   node("Add", ["c", "x"], ["s"]), node("Relu", ["s"], ["y"])],
            [("x", x), ("w", w), ("b", b)], [("y", relu(y).astype(np.float32))])

suite.finish()
