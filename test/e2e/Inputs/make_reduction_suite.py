"""Writes a small suite in the ONNX backend-test layout (OUT/node/NAME/
model.onnx and test_data_set_0/) of reductions long enough for the CUDA
target's block reductions (32 or more elements per output element), with
float64 numpy references, for kiln-conformance --suite OUT. Also writes
OUT/expect.txt, the ids of every test."""
import sys

import numpy as np

from onnx_suite import Suite

suite = Suite(sys.argv[1])
case = suite.case
rng = np.random.default_rng(7)


def f32(shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


# Softmax over 300: the max and the exp-sum (which also writes exp) are
# block reductions of 256 threads, each thread taking one or two elements.
x = f32((4, 300))
e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
case("softmax_300", "Softmax", [("x", x)],
     [("y", (e / e.sum(axis=1, keepdims=True)).astype(np.float32))], axis=-1)

# Layer norm over 96: mean and variance as block reductions of 128 threads.
x = f32((3, 5, 96))
s = rng.uniform(0.5, 1.5, 96).astype(np.float32)
b = f32((96,))
x64 = x.astype(np.float64)
mean = x64.mean(axis=-1, keepdims=True)
var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)
y = (x64 - mean) / np.sqrt(var + 1e-5) * s + b
case("layer_norm_96", "LayerNormalization", [("x", x), ("s", s), ("b", b)],
     [("y", y.astype(np.float32))], axis=-1, epsilon=1e-5)

# A reduced dim that is not innermost (strided reads), 40 elements.
x = f32((2, 40, 7))
case("reduce_max_middle_40", "ReduceMax", [("x", x)],
     [("y", x.max(axis=1, keepdims=True))], opset=13, axes=[1], keepdims=1)

# Two reduced dims (64 elements per output) decoded from one flat index.
x = f32((2, 6, 8, 8), 0.0, 1.0)
case("reduce_sum_two_axes_64", "ReduceSum", [("x", x)],
     [("y", x.astype(np.float64).sum(axis=(2, 3)).astype(np.float32))],
     opset=11, axes=[2, 3], keepdims=0)

# 49 elements: a block of 64 threads, 15 of which hold only the identity.
x = f32((1, 16, 7, 7), 0.0, 1.0)
case("global_average_pool_49", "GlobalAveragePool", [("x", x)],
     [("y", x.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32))])

# Integer min over 100, whose identity is the largest int32.
x = rng.integers(-1000, 1000, (5, 100)).astype(np.int32)
case("reduce_min_int32_100", "ReduceMin", [("x", x)],
     [("y", x.min(axis=1, keepdims=True))], opset=13, axes=[1], keepdims=1)

# Product over 40 (identity 1), values near 1.
x = f32((2, 40), 0.9, 1.1)
case("reduce_prod_40", "ReduceProd", [("x", x)],
     [("y", x.astype(np.float64).prod(axis=1, keepdims=True).astype(np.float32))],
     opset=13, axes=[1], keepdims=1)

# Log-sum-exp over 50.
x = f32((4, 50))
case("reduce_log_sum_exp_50", "ReduceLogSumExp", [("x", x)],
     [("y", np.log(np.exp(x.astype(np.float64)).sum(axis=1, keepdims=True)).astype(np.float32))],
     opset=13, axes=[1], keepdims=1)

# f16 sum over 200 of small integers: exact in f16 in any order.
x = rng.integers(-3, 4, (3, 200)).astype(np.float16)
case("reduce_sum_f16_200", "ReduceSum", [("x", x)],
     [("y", x.astype(np.float64).sum(axis=1, keepdims=True).astype(np.float16))],
     opset=11, axes=[1], keepdims=1)

# Int64 sum over 1000 (several elements per thread).
x = rng.integers(-10**12, 10**12, (2, 1000)).astype(np.int64)
case("reduce_sum_int64_1000", "ReduceSum", [("x", x)],
     [("y", x.sum(axis=1, keepdims=True))], opset=11, axes=[1], keepdims=1)

# Arg max over 64: two coupled outputs, not a block reduction; one thread
# per row still gives the first maximum.
x = rng.integers(0, 8, (3, 64)).astype(np.float32)
case("argmax_64", "ArgMax", [("x", x)],
     [("y", x.argmax(axis=1).reshape(3, 1).astype(np.int64))], axis=1, keepdims=1)

# Gemm with a bias over k = 64: a block per output element, and the bias
# add is the contraction's epilogue (no kernel of its own).
a = f32((3, 64))
w = f32((64, 5))
c = f32((5,))
case("gemm_bias_64", "Gemm", [("a", a), ("w", w), ("c", c)],
     [("y", (a.astype(np.float64) @ w + c).astype(np.float32))])

suite.finish()
