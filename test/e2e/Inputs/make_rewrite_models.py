#!/usr/bin/env python3
"""Models whose scale-folding rewrites see weights too big to fold away.

    make_rewrite_models.py OUTDIR

kiln-canonicalize moves a per-channel scale after a Conv or MatMul (a
batch normalization's affine tail, HardSigmoid's slope, an attention
scale) into the constant weight. Weights of 1,024 elements or fewer are
constant-folded before that rewrite sees them, so every weight here is
larger (2,304 to 16,384 elements), and some scales come from Constant
nodes placed after their consumer, as exporters write them. Writes
OUTDIR/NAME.onnx with ONNX Runtime's outputs for a random input
(OUTDIR/NAME/input_K.npy, output_K.npy), the layout check_models.py reads.
"""
import sys

import numpy as np
from check_models import write_cases
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(3)


def init(name, *shape, scale=0.1, positive=False):
    v = rng.normal(0.0, scale, size=shape).astype(np.float32)
    return numpy_helper.from_array(np.abs(v) + 0.5 if positive else v, name)


def const_node(name, value):
    return helper.make_node("Constant", [], [name], name=name + "_node",
                            value=numpy_helper.from_array(value, name))


def bn_inits(prefix, c):
    return [init(prefix + "_scale", c, scale=0.5), init(prefix + "_bias", c),
            init(prefix + "_mean", c), init(prefix + "_var", c, positive=True)]


def bn_node(x, prefix, y):
    return helper.make_node("BatchNormalization",
                            [x, prefix + "_scale", prefix + "_bias", prefix + "_mean", prefix + "_var"],
                            [y], name=prefix, epsilon=1e-5)


def models():
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    # Conv -> BatchNormalization (exports that keep BN; VGG-BN, ResNet-50).
    yield "conv_bn", [vi("x", f, [1, 16, 12, 12])], [vi("y", f, [1, 32, 12, 12])], [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        bn_node("c", "bn", "y")], [init("w", 32, 16, 3, 3), init("b", 32)] + bn_inits("bn", 32)
    # Conv -> BatchNormalization -> Relu, the BN before its Conv in the file.
    yield "conv_bn_relu_reordered", [vi("x", f, [2, 16, 10, 10])], [vi("y", f, [2, 64, 10, 10])], [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        bn_node("c", "bn", "n"),
        helper.make_node("Relu", ["n"], ["y"], name="relu")], [init("w", 64, 16, 3, 3)] + bn_inits("bn", 64)
    # Conv -> Mul by a per-channel Constant node written after the Conv.
    yield "conv_mul_late_constant", [vi("x", f, [1, 16, 8, 8])], [vi("y", f, [1, 32, 8, 8])], [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        const_node("s", rng.normal(1.0, 0.2, size=(1, 32, 1, 1)).astype(np.float32)),
        helper.make_node("Mul", ["c", "s"], ["y"], name="scale")], [init("w", 32, 16, 3, 3)]
    # Squeeze-excite (MobileNetV3): HardSigmoid(Conv(GlobalAveragePool(x))) * x.
    yield "squeeze_excite", [vi("x", f, [1, 64, 7, 7])], [vi("y", f, [1, 64, 7, 7])], [
        helper.make_node("GlobalAveragePool", ["x"], ["p"], name="pool"),
        helper.make_node("Conv", ["p", "w", "b"], ["c"], name="conv_se"),
        helper.make_node("HardSigmoid", ["c"], ["g"], name="hsig", alpha=1.0 / 6, beta=0.5),
        helper.make_node("Mul", ["x", "g"], ["y"], name="excite")], [init("w", 64, 64, 1, 1, scale=0.5),
                                                                      init("b", 64)]
    # Whisper's attention projection: (MatMul + Add) * scale.
    yield "matmul_add_scale", [vi("x", f, [1, 12, 64])], [vi("y", f, [1, 12, 64])], [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="q_proj"),
        helper.make_node("Add", ["m", "b"], ["a"], name="q_bias"),
        const_node("scale", np.array(0.125, np.float32)),
        helper.make_node("Mul", ["a", "scale"], ["y"], name="q_scale")], [init("w", 64, 64), init("b", 64)]
    # DeepLab's atrous pyramid over a small map: rate 12 over 10x10 reads
    # only padding with its outer taps (they are dropped), rate 4 reads the
    # input with all of them.
    yield "aspp_dead_taps", [vi("x", f, [1, 64, 10, 10])], [vi("y", f, [1, 64, 10, 10])], [
        helper.make_node("Conv", ["x", "w12"], ["a"], name="atrous12", dilations=[12, 12], pads=[12, 12, 12, 12]),
        helper.make_node("Conv", ["x", "w4"], ["b"], name="atrous4", dilations=[4, 4], pads=[4, 4, 4, 4]),
        helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=1)], [init("w12", 32, 64, 3, 3),
                                                                          init("w4", 32, 64, 3, 3)]
    # Rate 8 over 10x10: every outer tap meets the input in two rows or
    # columns (22% of the taps' reads land inside), so the convolution is
    # computed tap by tap (kiln-canonicalize's SplitSparseConvTaps), its bias
    # and ReLU after the sum; grouped and 1-D ones too. The filters are
    # constants split into their taps at compile time.
    yield "aspp_sparse_taps", [vi("x", f, [1, 64, 10, 10])], [vi("y", f, [1, 32, 10, 10])], [
        helper.make_node("Conv", ["x", "w8", "b8"], ["a"], name="atrous8", dilations=[8, 8], pads=[8, 8, 8, 8]),
        helper.make_node("Relu", ["a"], ["y"], name="relu")], [init("w8", 32, 64, 3, 3), init("b8", 32)]
    yield "sparse_taps_grouped", [vi("x", f, [2, 64, 9, 12])], [vi("y", f, [2, 32, 9, 12])], [
        helper.make_node("Conv", ["x", "w"], ["y"], name="grouped", group=4, dilations=[7, 9],
                         pads=[7, 9, 7, 9])], [init("w", 32, 16, 3, 3)]
    yield "sparse_taps_1d", [vi("x", f, [1, 48, 16])], [vi("y", f, [1, 40, 16])], [
        helper.make_node("Conv", ["x", "w"], ["y"], name="atrous1d", dilations=[13], pads=[26, 13])], [
        init("w", 40, 48, 4)]
    # A depthwise 3x3 over a 2x2 map (SSDlite's last head levels): most
    # taps read padding, so it is split tap by tap, and a piece's sum
    # reaches the depthwise schedule as an epilogue reading a later piece.
    yield "depthwise_tiny_map", [vi("x", f, [1, 256, 2, 2])], [vi("y", f, [1, 256, 2, 2])], [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="dw", group=256, kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu")], [init("w", 256, 1, 3, 3), init("b", 256)]
    # MatMul -> BatchNormalization over [N, C] (BatchNorm1d after a Linear).
    yield "matmul_bn1d", [vi("x", f, [4, 128])], [vi("y", f, [4, 128])], [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="fc"),
        bn_node("m", "bn", "y")], [init("w", 128, 128)] + bn_inits("bn", 128)


def main():
    write_cases(sys.argv[1], models(), rng)


if __name__ == "__main__":
    main()
