"""Writes a suite (onnx_suite layout) of elementwise models whose rows the
CUDA target's kernels read and write 16 bytes at a time (4 f32 or i32,
8 f16, 16 i8, 2 i64 a thread), with broadcasts along and across the rows,
and numpy references."""
import sys

import numpy as np
from onnx import helper

from onnx_suite import Suite

suite = Suite(sys.argv[1])
rng = np.random.default_rng(5)


def f32(shape):
    return rng.uniform(-2.0, 2.0, shape).astype(np.float32)


x, b, s = f32((4, 64)), f32((64,)), f32((4, 1))
suite.graph("add_mul_relu_rows",
            [helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Mul", ["a", "s"], ["m"]),
             helper.make_node("Relu", ["m"], ["y"])],
            [("x", x), ("b", b), ("s", s)],
            [("y", np.maximum((x.astype(np.float64) + b) * s, 0).astype(np.float32))])
x, y = f32((8, 16)), f32((8, 16))
suite.graph("sigmoid_of_sum",
            [helper.make_node("Add", ["x", "y"], ["a"]), helper.make_node("Sigmoid", ["a"], ["z"])],
            [("x", x), ("y", y)], [("z", (1 / (1 + np.exp(-(x.astype(np.float64) + y)))).astype(np.float32))])
h = rng.uniform(-2, 2, (2, 32)).astype(np.float16)
suite.case("exp_f16", "Exp", [("h", h)], [("y", np.exp(h.astype(np.float64)).astype(np.float16))])
i = rng.integers(-100, 100, (2, 64)).astype(np.int8)
suite.case("relu_i8", "Relu", [("i", i)], [("y", np.maximum(i, 0).astype(np.int8))])
p, q = rng.integers(-10**12, 10**12, (3, 8)), rng.integers(-10**12, 10**12, (8,))
suite.case("add_i64", "Add", [("p", p), ("q", q)], [("y", p + q)])
m, n = rng.integers(-1000, 1000, (5, 12)).astype(np.int32), rng.integers(1, 50, (5, 12)).astype(np.int32)
suite.case("mul_i32", "Mul", [("m", m), ("n", n)], [("y", m * n)])
suite.finish()
