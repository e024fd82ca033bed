"""Writes the ONNX models that Import/nn-ops.test feeds to kilnc.

Usage: make_nn_models.py OUTDIR (created if missing). One model per case of
the normalization handlers (OnnxOpsNN.cpp), and bad_* models that kilnc must
refuse, each for one reason. Models are built from fixed values with the
onnx helper API, so the files are the same on every run; valid ones pass
onnx.checker.check_model(full_check=True) unless marked check=False with a
reason.
"""

import os
import sys

from onnx import TensorProto, checker, helper

F = TensorProto.FLOAT
F16 = TensorProto.FLOAT16

MODELS = {}


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def f32(name, shape):
    return vi(name, F, shape)


def one(name, op, inputs, outputs, opset, check=True, **attrs):
    """A model of one node; an output named "" is an unused optional one."""
    n = helper.make_node(op, [i.name for i in inputs],
                         [o.name if o else "" for o in outputs],
                         name=op.lower(), **attrs)
    graph = helper.make_graph([n], name, inputs, [o for o in outputs if o])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="kiln-tests")
    if check:
        checker.check_model(m, full_check=True)
    assert name not in MODELS, name
    MODELS[name] = m


def nn_models():
    x = f32("x", [2, 3, 4, 5])
    c = [f32(n, [3]) for n in ["scale", "bias", "mean", "var"]]
    one("batchnorm", "BatchNormalization", [x] + c, [f32("y", [2, 3, 4, 5])],
        opset=15, epsilon=0.01)
    one("batchnorm_7", "BatchNormalization", [x] + c,
        [f32("y", [2, 3, 4, 5])], opset=7, momentum=0.5)
    one("batchnorm_6", "BatchNormalization", [x] + c,
        [f32("y", [2, 3, 4, 5])], opset=6, is_test=1)
    one("instancenorm", "InstanceNormalization", [x] + c[:2],
        [f32("y", [2, 3, 4, 5])], opset=17)
    one("layernorm", "LayerNormalization",
        [f32("x", [2, 3, 4]), f32("scale", [3, 4]), f32("bias", [4])],
        [f32("y", [2, 3, 4]), f32("mean", [2, 1, 1]),
         f32("inv_std", [2, 1, 1])], opset=17, axis=1)
    # float16 data with the default stash type: statistics in f32.
    one("layernorm_f16", "LayerNormalization",
        [vi("x", F16, [2, 4]), vi("scale", F16, [4])], [vi("y", F16, [2, 4])],
        opset=17)
    one("groupnorm", "GroupNormalization",
        [x, f32("scale", [3]), f32("bias", [3])], [f32("y", [2, 3, 4, 5])],
        opset=21, num_groups=3)
    # Opset 18: scale and bias per group. The checker refuses the op as
    # deprecated at this opset, but models using it exist.
    one("groupnorm_18", "GroupNormalization",
        [f32("x", [2, 4, 3]), f32("scale", [2]), f32("bias", [2])],
        [f32("y", [2, 4, 3])], opset=18, num_groups=2, epsilon=0.5,
        check=False)
    one("rmsnorm", "RMSNormalization", [f32("x", [2, 3, 4]), f32("s", [4])],
        [f32("y", [2, 3, 4])], opset=23)
    one("lpnorm_l1", "LpNormalization", [f32("x", [2, 3])],
        [f32("y", [2, 3])], opset=22, axis=0, p=1)
    one("lpnorm_l2", "LpNormalization", [f32("x", [2, 3])],
        [f32("y", [2, 3])], opset=22)
    one("mvn_axes", "MeanVarianceNormalization", [x],
        [f32("y", [2, 3, 4, 5])], opset=13, axes=[-1, 1])
    # Default axes [0, 2, 3]. The checker's expansion of the function body
    # fails when the attribute is absent, though the model is valid.
    one("mvn", "MeanVarianceNormalization", [x], [f32("y", [2, 3, 4, 5])],
        opset=13, check=False)
    # Training mode: batch statistics, and the running ones updated.
    c = [f32(n, [3]) for n in ["scale", "bias", "mean", "var"]]
    one("batchnorm_training", "BatchNormalization", [f32("x", [2, 3, 4, 5])] + c,
        [f32("y", [2, 3, 4, 5]), f32("running_mean", [3]),
         f32("running_var", [3])], opset=15, training_mode=1)


def error_models():
    x = f32("x", [2, 3, 4, 5])
    c = [f32(n, [3]) for n in ["scale", "bias", "mean", "var"]]
    # Before opset 7 training is the default mode.
    one("bad_batchnorm_6_training", "BatchNormalization", [x] + c,
        [f32("y", [2, 3, 4, 5])], opset=6)
    # Invalid ONNX (the running statistics exist only in training mode).
    one("bad_batchnorm_stats", "BatchNormalization", [x] + c,
        [f32("y", [2, 3, 4, 5]), f32("running_mean", [3])], opset=15,
        check=False)
    # The rest are invalid ONNX as well: wrong parameter shapes, a group
    # count that does not divide the channels, p = 3, an integer input.
    one("bad_batchnorm_param", "BatchNormalization",
        [x, f32("scale", [4])] + c[1:], [f32("y", [2, 3, 4, 5])], opset=15,
        check=False)
    one("bad_layernorm_scale", "LayerNormalization",
        [f32("x", [2, 3]), f32("scale", [2])], [f32("y", [2, 3])], opset=17,
        check=False)
    one("bad_groupnorm_groups", "GroupNormalization",
        [x, f32("scale", [3]), f32("bias", [3])], [f32("y", [2, 3, 4, 5])],
        opset=21, num_groups=2, check=False)
    one("bad_lpnorm_p", "LpNormalization", [f32("x", [2, 3])],
        [f32("y", [2, 3])], opset=22, p=3, check=False)
    one("bad_mvn_int", "MeanVarianceNormalization",
        [vi("x", TensorProto.INT32, [2, 3, 4, 5])],
        [vi("y", TensorProto.INT32, [2, 3, 4, 5])], opset=13, check=False)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_nn_models.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    nn_models()
    error_models()
    for name, m in MODELS.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString(deterministic=True))


if __name__ == "__main__":
    main()
