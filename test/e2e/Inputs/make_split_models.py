#!/usr/bin/env python3
"""Models whose objects kilnc generates in parts.

    make_split_models.py OUTDIR

kilnc deals a module of more than about 8,000 LLVM instructions into parts
generated on threads and joined by `cc -r`, and then writes the weights
(constant arrays of 4 KiB or more) from their blobs into a data object of
their own, beside the parts (decision 0021). A weight written at the wrong
offset, or a symbol bound to another weight, would still link; only the
outputs tell. So `convs` chains 24 convolutions of shapes that all differ
(each its own kernel, none shared) and a Gemm, with random weights of 216
to 150,528 elements (arrays under 4 KiB stay in LLVM's constants, as the
biases do), and ONNX Runtime gives the reference.

`wide_gemm` has code for one part only, but 2 MB of weights, which are
joined with it all the same.

Writes OUTDIR/NAME.onnx and ONNX Runtime's outputs for a random input
(OUTDIR/NAME/input_K.npy, output_K.npy), the layout check_models.py reads.
"""
import sys

import numpy as np
from check_models import write_cases
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(21)


def init(name, *shape):
    return numpy_helper.from_array(
        rng.normal(0.0, 0.2, size=shape).astype(np.float32), name)


def convs():
    # (out channels, kernel, stride, dilation, group) after 8 channels in.
    layers = [(16, 3, 1, 1, 1), (32, 3, 2, 1, 1), (48, 1, 1, 1, 1),
              (24, 5, 1, 1, 2), (24, 3, 1, 1, 24), (40, 3, 1, 2, 1),
              (56, 3, 2, 1, 1), (64, 1, 1, 1, 1), (72, 3, 1, 1, 1),
              (72, 3, 1, 1, 72), (80, 1, 1, 1, 1), (80, 5, 1, 1, 4),
              (88, 3, 1, 2, 1), (96, 3, 2, 1, 1), (64, 1, 1, 1, 1),
              (48, 7, 1, 1, 1), (48, 3, 1, 1, 48), (36, 3, 1, 1, 3),
              (60, 1, 1, 1, 1), (60, 5, 1, 1, 60), (44, 3, 1, 1, 1),
              (52, 3, 1, 3, 1), (64, 1, 1, 1, 1)]
    nodes, inits = [], []
    x, c = "x", 8
    for k, (out, kernel, stride, dilation, group) in enumerate(layers):
        pad = dilation * (kernel - 1) // 2
        inits += [init(f"w{k}", out, c // group, kernel, kernel),
                  init(f"b{k}", out)]
        nodes += [helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"c{k}"],
                                   name=f"conv{k}", pads=[pad] * 4,
                                   strides=[stride] * 2,
                                   dilations=[dilation] * 2, group=group),
                  helper.make_node("Relu", [f"c{k}"], [f"r{k}"],
                                   name=f"relu{k}")]
        x, c = f"r{k}", out
    inits += [init("fc", c, 100), init("fcb", 100)]
    nodes += [helper.make_node("GlobalAveragePool", [x], ["pooled"],
                               name="pool"),
              helper.make_node("Flatten", ["pooled"], ["flat"], name="flat"),
              helper.make_node("Gemm", ["flat", "fc", "fcb"], ["y"],
                               name="fc")]
    return ("convs",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                           [1, 8, 28, 28])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 100])],
            nodes, inits)


def wide_gemm():
    """Code for one part, but 2 MB of weights: the object is the module's
    and the data's, still joined."""
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="gemm"),
             helper.make_node("Relu", ["g"], ["y"], name="relu")]
    return ("wide_gemm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 512])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1024])],
            nodes, [init("w", 512, 1024), init("b", 1024)])


if __name__ == "__main__":
    write_cases(sys.argv[1], [convs(), wide_gemm()], rng)
