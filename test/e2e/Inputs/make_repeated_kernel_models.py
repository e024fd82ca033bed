#!/usr/bin/env python3
"""Models whose kernels repeat with different weights.

    make_repeated_kernel_models.py OUTDIR

kiln-outline-kernels gives kernels that print the same one function, the
schedules run on it once, and each call gets a copy back with its own
weights (docs/decisions/0030-schedule-each-kernel-once.md). A copy that
read another kernel's weights, or a shared body that folded one kernel's
constant, would still compile; only the outputs tell. So every block here
repeats the one before at the same shapes with its own random weights
(4,096 to 36,864 elements: too large to be constant-folded), and ONNX
Runtime gives the reference:

- resblocks: a stem convolution and four residual blocks of two 3x3
  convolutions with bias and ReLU (ResNet's identical blocks);
- mlp_layers: five MatMul + Add + Relu layers of 128 x 128 (a
  transformer's identical layers), with the input also added to the
  last one so a kernel's result is read two kernels later;
- depthwise: three depthwise 3x3 + pointwise 1x1 pairs (MobileNet).

Writes OUTDIR/NAME.onnx and ONNX Runtime's outputs for a random input
(OUTDIR/NAME/input_K.npy, output_K.npy), the layout check_models.py reads.
"""
import sys

import numpy as np
from check_models import write_cases
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(30)


def init(name, *shape, scale=0.1):
    return numpy_helper.from_array(
        rng.normal(0.0, scale, size=shape).astype(np.float32), name)


def conv(x, w, b, y, pads=1, group=1):
    return helper.make_node("Conv", [x, w, b], [y], name=y + "_conv",
                            pads=[pads] * 4, group=group)


def relu(x, y):
    return helper.make_node("Relu", [x], [y], name=y + "_relu")


def resblocks():
    c = 32
    nodes = [conv("x", "w0", "b0", "s0"), relu("s0", "h0")]
    inits = [init("w0", c, 3, 3, 3), init("b0", c)]
    for k in range(4):
        h = f"h{k}"
        nodes += [conv(h, f"wa{k}", f"ba{k}", f"a{k}"), relu(f"a{k}", f"ra{k}"),
                  conv(f"ra{k}", f"wb{k}", f"bb{k}", f"cb{k}"),
                  helper.make_node("Add", [f"cb{k}", h], [f"s{k + 1}"], name=f"add{k}"),
                  relu(f"s{k + 1}", f"h{k + 1}")]
        inits += [init(f"wa{k}", c, c, 3, 3), init(f"ba{k}", c),
                  init(f"wb{k}", c, c, 3, 3), init(f"bb{k}", c)]
    nodes.append(helper.make_node("Identity", ["h4"], ["y"], name="out"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 24, 24])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 24, 24])
    return "resblocks", [x], [y], nodes, inits


def mlp_layers():
    d = 128
    nodes, inits, h = [], [], "x"
    for k in range(5):
        nodes += [helper.make_node("MatMul", [h, f"w{k}"], [f"m{k}"], name=f"mm{k}"),
                  helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"], name=f"bias{k}")]
        last = f"a{k}"
        if k == 4:
            nodes.append(helper.make_node("Add", [last, "x"], ["skip"], name="skip"))
            last = "skip"
        nodes.append(relu(last, f"h{k}"))
        inits += [init(f"w{k}", d, d), init(f"b{k}", d)]
        h = f"h{k}"
    nodes.append(helper.make_node("Identity", [h], ["y"], name="out"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, d])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, d])
    return "mlp_layers", [x], [y], nodes, inits


def depthwise():
    c = 64
    nodes = [conv("x", "w0", "b0", "s0"), relu("s0", "h0")]
    inits = [init("w0", c, 8, 3, 3), init("b0", c)]
    for k in range(3):
        h = f"h{k}"
        nodes += [conv(h, f"dw{k}", f"db{k}", f"d{k}", group=c), relu(f"d{k}", f"rd{k}"),
                  conv(f"rd{k}", f"pw{k}", f"pb{k}", f"p{k}", pads=0),
                  relu(f"p{k}", f"h{k + 1}")]
        inits += [init(f"dw{k}", c, 1, 3, 3, scale=0.3), init(f"db{k}", c),
                  init(f"pw{k}", c, c, 1, 1, scale=0.2), init(f"pb{k}", c)]
    nodes.append(helper.make_node("Identity", ["h3"], ["y"], name="out"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 20, 20])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 20, 20])
    return "depthwise", [x], [y], nodes, inits


def main():
    write_cases(sys.argv[1], (resblocks(), mlp_layers(), depthwise()), rng)


if __name__ == "__main__":
    main()
