#!/usr/bin/env python3
"""Writes small Conv/ConvTranspose/pooling models into OUTDIR for conv.test."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, node, inputs, outputs, opset=17, check=True):
    g = helper.make_graph([node], name,
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))


save("conv_same_upper", helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv",
                                          auto_pad="SAME_UPPER", strides=[2, 2]),
     [("x", [1, 2, 5, 5]), ("w", [3, 2, 2, 2]), ("b", [3])], [("y", [1, 3, 3, 3])])
save("avgpool_exclude_pad", helper.make_node("AveragePool", ["x"], ["y"], name="pool",
                                              kernel_shape=[3], pads=[1, 1]),
     [("x", [1, 1, 4])], [("y", [1, 1, 4])])
save("maxpool_ceil", helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                                       kernel_shape=[2], strides=[2], ceil_mode=1),
     [("x", [1, 1, 5])], [("y", [1, 1, 3])])
save("convtranspose_stride", helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv",
                                               strides=[2]),
     [("x", [1, 1, 3]), ("w", [1, 1, 3])], [("y", [1, 1, 7])])
save("globalavgpool", helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap"),
     [("x", [1, 3, 4, 4])], [("y", [1, 3, 1, 1])])
save("bad_conv_group", helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=2),
     [("x", [1, 3, 5, 5]), ("w", [4, 1, 3, 3])], [("y", [1, 4, 3, 3])], check=False)
save("bad_maxpool_indices", helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool",
                                              kernel_shape=[2, 2]),
     [("x", [1, 1, 4, 4])], [("y", [1, 1, 3, 3]), ("i", [1, 1, 3, 3])], check=False)
save("bad_auto_pad", helper.make_node("Conv", ["x", "w"], ["y"], name="conv", auto_pad="SAME"),
     [("x", [1, 1, 5, 5]), ("w", [1, 1, 3, 3])], [("y", [1, 1, 5, 5])], check=False)


def save_init(name, node, inputs, outputs, inits, opset=17, check=True, in_types=None):
    in_types = in_types or {}
    g = helper.make_graph([node], name,
                          [helper.make_tensor_value_info(n, in_types.get(n, TensorProto.FLOAT), s)
                           for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))


pads = lambda v: helper.make_tensor("pads", TensorProto.INT64, [len(v)], v)
save_init("pad_reflect", helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="reflect"),
          [("x", [2, 4])], [("y", [2, 7])], [pads([0, 2, 0, 1])])
save_init("pad_negative", helper.make_node("Pad", ["x", "pads"], ["y"], name="pad"),
          [("x", [2, 4])], [("y", [2, 3])], [pads([0, -1, 0, 0])])
save_init("bad_pad_reflect", helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="reflect"),
          [("x", [2, 2])], [("y", [2, 5])], [pads([0, 3, 0, 0])])
save_init("nll_ignore", helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], name="nll",
                                         ignore_index=1),
          [("x", [3, 4]), ("t", [3])], [("y", [])], [], in_types={"t": TensorProto.INT64})

# Grouped-query attention on 3-D inputs with a causal mask.
att = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", is_causal=1,
                       q_num_heads=4, kv_num_heads=2)
g = helper.make_graph([att], "attention",
                      [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 3, 16]),
                       helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 3, 8]),
                       helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 3, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 16])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
m.ir_version = 10
onnx.save(m, os.path.join(out, "attention_gqa_causal.onnx"))

# GatherElements along axis 1 with int32 indices.
ge = helper.make_node("GatherElements", ["d", "i"], ["y"], name="ge", axis=1)
g = helper.make_graph([ge], "gather_elements",
                      [helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 3]),
                       helper.make_tensor_value_info("i", TensorProto.INT32, [2, 2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, os.path.join(out, "gather_elements.onnx"))
