"""Writes a suite (onnx_suite layout) of graphs that list one tensor as
several outputs: directly, through Identity, and an input passed through
twice; references from numpy."""
import sys

import numpy as np
from onnx import helper

from onnx_suite import Suite

suite = Suite(sys.argv[1])
x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
t = np.tanh(x.astype(np.float64)).astype(np.float32)
suite.graph("output_through_identity",
            [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Identity", ["t"], ["u"])],
            [("x", x)], [("t", t), ("u", t)])
suite.graph("input_twice",
            [helper.make_node("Identity", ["x"], ["u"]), helper.make_node("Identity", ["x"], ["v"])],
            [("x", x)], [("u", x), ("v", x)])
suite.graph("three_of_one",
            [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Identity", ["t"], ["u"]),
             helper.make_node("Identity", ["u"], ["v"])],
            [("x", x)], [("t", t), ("u", t), ("v", t)])
suite.finish()
