#!/usr/bin/env python3
"""A model whose outputs are convolutions and matmuls with elementwise
epilogues of every shape kiln-schedule-matmul handles, its inputs, and
float64 numpy references for each output.

    make_epilogue_models.py OUTDIR

Writes OUTDIR/epilogues.onnx, one .npy per input and ref_<output>.npy.
Each output stresses one path: a per-channel bias and clip on a pointwise
conv (remainder tiles in both m and n), a residual of the output's own
shape, im2col at stride 2 with batch 2, shifted rows (where the epilogue
also runs on the cut-off columns) with and without a residual, depthwise
convolutions as flat rows of whole planes (with a clip; dilated with a
residual, which stays a pass), as row FMAs over a plane too large for
that, and unpadded narrow ones as shifted rows, positions x channels, a matmul
with swish (the result read twice) and one with a per-row scale, and an
operand indexed by the image rows alone (part of the flattened positions,
so it stays a separate pass); grouped convolutions with a bias; a convolution whose columns are made a block
of output rows at a time; and max poolings, which share the depthwise row
path.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_reference import conv  # noqa: E402
from save_cases import save_cases  # noqa: E402


def conv_by_taps(x, w, stride, pad):
    """2-D convolution (one group) as a sum over filter taps of strided
    slices times the tap's weights: the loop-nest reference is too slow
    for 75x75 outputs."""
    x = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    kh, kw = w.shape[2:]
    oh = (x.shape[2] - kh) // stride + 1
    ow = (x.shape[3] - kw) // stride + 1
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            y += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j])
    return y


def maxpool(x, kernel, strides, dilations, pads):
    """2-D max pooling from the definition: -inf padding, windowed max."""
    x = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])],
               constant_values=-np.inf)
    oh = (x.shape[2] - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    ow = (x.shape[3] - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    y = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            r, c = i * dilations[0], j * dilations[1]
            y = np.maximum(y, x[:, :, r:r + strides[0] * (oh - 1) + 1:strides[0],
                                c:c + strides[1] * (ow - 1) + 1:strides[1]])
    return y


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(21)

    def uniform(*shape, scale=1.0):
        return rng.uniform(-scale, scale, shape).astype(np.float32)

    inputs = dict(x1=uniform(1, 16, 20, 20), x2=uniform(2, 6, 17, 17),
                  xs=uniform(1, 8, 12, 40), xd=uniform(2, 8, 20, 37),
                  xn=uniform(1, 40, 9, 9), x7=uniform(1, 40, 7, 7),
                  a=uniform(3, 37), b3=uniform(2, 5, 24),
                  xm=uniform(2, 8, 21, 37) - 1.5, xb=uniform(2, 3, 150, 150),
                  xg=uniform(2, 6, 11, 30), xr=uniform(1, 4, 48, 45),
                  xv=uniform(1, 24, 11, 11), x1d=uniform(1, 128, 2050))
    weights = dict(
        w_pw=uniform(40, 16, 1, 1, scale=0.5), b_pw=uniform(40),
        w_res=uniform(16, 16, 1, 1, scale=0.5), b_res=uniform(16),
        w_i2c=uniform(24, 6, 3, 3, scale=0.3), b_i2c=uniform(24),
        w_sh=uniform(10, 8, 3, 3, scale=0.3), b_sh=uniform(10),
        w_shr=uniform(8, 8, 3, 3, scale=0.3), b_shr=uniform(8),
        w_dw=uniform(8, 1, 3, 3), b_dw=uniform(8),
        w_dn=uniform(40, 1, 3, 3), b_dn=uniform(40),
        w_dd=uniform(40, 1, 3, 3), w_dr=uniform(4, 1, 3, 3), b_dr=uniform(4),
        w_dv=uniform(24, 1, 3, 3), b_dv=uniform(24),
        w_rows=uniform(48, 40, 3, 3, scale=0.1), b_rows=uniform(48),
        w_mm=uniform(37, 200, scale=0.3), b_mm=uniform(200),
        w_mmp=uniform(37, 64, scale=0.3), b_mmp=uniform(64),
        w_mm3=uniform(24, 64, scale=0.3), scale3=uniform(5, 1),
        w_rowdep=uniform(12, 16, 1, 1, scale=0.5), rowdep=uniform(1, 1, 20, 1),
        w_big=uniform(16, 3, 7, 7, scale=0.2), b_big=uniform(16),
        w_g=uniform(10, 3, 3, 3, scale=0.3), b_g=uniform(10),
        w_1d=uniform(64, 128, 3, scale=0.1), b_1d=uniform(64),
        lo=np.array(0.0, np.float32), hi=np.array(6.0, np.float32),
    )
    d = {k: v.astype(np.float64) for k, v in {**inputs, **weights}.items()}

    def bias(b):
        return b.reshape(1, -1, 1, 1)

    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    clip = lambda v: np.clip(v, 0, 6)  # noqa: E731
    refs = {}
    nodes = []

    def node(op, ins, outs, **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=outs[0], **attrs))

    # Pointwise: bias + clip; bias + residual.
    node("Conv", ["x1", "w_pw", "b_pw"], ["pw"])
    node("Clip", ["pw", "lo", "hi"], ["pw_clip"])
    refs["pw_clip"] = clip(conv(d["x1"], d["w_pw"], [1, 1], [1, 1], [0] * 4, 1) + bias(d["b_pw"]))
    node("Conv", ["x1", "w_res", "b_res"], ["res"])
    node("Add", ["res", "x1"], ["pw_res"])
    refs["pw_res"] = conv(d["x1"], d["w_res"], [1, 1], [1, 1], [0] * 4, 1) + bias(d["b_res"]) + d["x1"]
    # im2col at stride 2, batch 2.
    node("Conv", ["x2", "w_i2c", "b_i2c"], ["i2c"], strides=[2, 2], pads=[1, 1, 1, 1])
    node("Relu", ["i2c"], ["i2c_relu"])
    refs["i2c_relu"] = relu(conv(d["x2"], d["w_i2c"], [2, 2], [1, 1], [1] * 4, 1) + bias(d["b_i2c"]))
    # Shifted rows: bias + relu fused (extra columns computed too); with a
    # residual left as a pass.
    node("Conv", ["xs", "w_sh", "b_sh"], ["sh"], pads=[1, 1, 1, 1])
    node("Relu", ["sh"], ["sh_relu"])
    refs["sh_relu"] = relu(conv(d["xs"], d["w_sh"], [1, 1], [1, 1], [1] * 4, 1) + bias(d["b_sh"]))
    node("Conv", ["xs", "w_shr", "b_shr"], ["shr"], pads=[1, 1, 1, 1])
    node("Add", ["shr", "xs"], ["shr_add"])
    node("Relu", ["shr_add"], ["sh_res"])
    refs["sh_res"] = relu(conv(d["xs"], d["w_shr"], [1, 1], [1, 1], [1] * 4, 1) + bias(d["b_shr"]) + d["xs"])
    # Depthwise as flat rows of whole planes: 20x37 (batch 2) and 9x9 (a
    # last chunk of one position), with a clip; dilated, with a residual.
    node("Conv", ["xd", "w_dw", "b_dw"], ["dw"], pads=[1, 1, 1, 1], group=8)
    node("Clip", ["dw", "lo", "hi"], ["dw_clip"])
    refs["dw_clip"] = clip(conv(d["xd"], d["w_dw"], [1, 1], [1, 1], [1] * 4, 8) + bias(d["b_dw"]))
    node("Conv", ["xn", "w_dn", "b_dn"], ["dn"], pads=[1, 1, 1, 1], group=40)
    node("Clip", ["dn", "lo", "hi"], ["dn_clip"])
    refs["dn_clip"] = clip(conv(d["xn"], d["w_dn"], [1, 1], [1, 1], [1] * 4, 40) + bias(d["b_dn"]))
    node("Conv", ["xn", "w_dd"], ["dd"], pads=[2, 2, 2, 2], dilations=[2, 2], group=40)
    node("Add", ["dd", "xn"], ["dd_res"])
    refs["dd_res"] = conv(d["xn"], d["w_dd"], [1, 1], [2, 2], [2] * 4, 40) + d["xn"]
    # Depthwise row FMAs over a plane too large for one flat row (45
    # columns: a partial chunk), and an unpadded narrow one as shifted rows.
    node("Conv", ["xr", "w_dr", "b_dr"], ["dr"], pads=[1, 1, 1, 1], group=4)
    node("Clip", ["dr", "lo", "hi"], ["dr_clip"])
    refs["dr_clip"] = clip(conv(d["xr"], d["w_dr"], [1, 1], [1, 1], [1] * 4, 4) + bias(d["b_dr"]))
    node("Conv", ["xv", "w_dv", "b_dv"], ["dv"], group=24)
    node("Relu", ["dv"], ["dv_relu"])
    refs["dv_relu"] = relu(conv(d["xv"], d["w_dv"], [1, 1], [1, 1], [0] * 4, 24) + bias(d["b_dv"]))
    # Positions x channels.
    node("Conv", ["x7", "w_rows", "b_rows"], ["rows"], pads=[1, 1, 1, 1])
    node("Relu", ["rows"], ["rows_relu"])
    refs["rows_relu"] = relu(conv(d["x7"], d["w_rows"], [1, 1], [1, 1], [1] * 4, 1) + bias(d["b_rows"]))
    # Matmuls: bias + swish (x * sigmoid(x)); a per-row scale.
    node("MatMul", ["a", "w_mm"], ["mm"])
    node("Add", ["mm", "b_mm"], ["mm_b"])
    node("Sigmoid", ["mm_b"], ["mm_sig"])
    node("Mul", ["mm_b", "mm_sig"], ["mm_swish"])
    v = d["a"] @ d["w_mm"] + d["b_mm"]
    refs["mm_swish"] = v / (1 + np.exp(-v))
    # The same on a weight of whole panels (64 columns): 200 splits at the
    # last whole panel, and its epilogue runs after both parts.
    node("MatMul", ["a", "w_mmp"], ["mmp"])
    node("Add", ["mmp", "b_mmp"], ["mmp_b"])
    node("Sigmoid", ["mmp_b"], ["mmp_sig"])
    node("Mul", ["mmp_b", "mmp_sig"], ["mmp_swish"])
    v = d["a"] @ d["w_mmp"] + d["b_mmp"]
    refs["mmp_swish"] = v / (1 + np.exp(-v))
    node("MatMul", ["b3", "w_mm3"], ["mm3"])
    node("Mul", ["mm3", "scale3"], ["mm_scaled"])
    refs["mm_scaled"] = (d["b3"] @ d["w_mm3"]) * d["scale3"]
    # An operand that varies along the rows only.
    node("Conv", ["x1", "w_rowdep"], ["rd"])
    node("Add", ["rd", "rowdep"], ["pw_rowdep"])
    refs["pw_rowdep"] = conv(d["x1"], d["w_rowdep"], [1, 1], [1, 1], [0] * 4, 1) + d["rowdep"]

    # Grouped convolutions: the per-channel bias splits into (group,
    # channel in group) on the matmul's side. Shifted rows (stride 1) and
    # im2col (stride 2), batch 2.
    node("Conv", ["xg", "w_g", "b_g"], ["g1"], pads=[1, 1, 1, 1], group=2)
    node("Relu", ["g1"], ["g_shift"])
    refs["g_shift"] = relu(conv(d["xg"], d["w_g"], [1, 1], [1, 1], [1] * 4, 2) + bias(d["b_g"]))
    node("Conv", ["xg", "w_g", "b_g"], ["g2"], strides=[2, 2], pads=[1, 1, 1, 1], group=2)
    node("Clip", ["g2", "lo", "hi"], ["g_i2c"])
    refs["g_i2c"] = clip(conv(d["xg"], d["w_g"], [2, 2], [1, 1], [1] * 4, 2) + bias(d["b_g"]))
    # A 7x7 stride-2 conv whose columns (6.6 MB) are made a block of rows
    # at a time (15 blocks of 5 rows, 3 parallel chunks), batch 2, with its
    # bias and relu applied per block.
    node("Conv", ["xb", "w_big", "b_big"], ["big"], strides=[2, 2], pads=[3, 3, 3, 3])
    node("Relu", ["big"], ["big_relu"])
    refs["big_relu"] = relu(conv_by_taps(d["xb"], d["w_big"], 2, 3) + bias(d["b_big"]))
    # A 1-D stride-2 conv (wav2vec2's feature extractor) whose columns
    # (1.6 MB, in one row) are made a block of 205 positions at a time,
    # with its bias and relu applied per block.
    node("Conv", ["x1d", "w_1d", "b_1d"], ["c1d"], strides=[2], pads=[1, 1])
    node("Relu", ["c1d"], ["c1d_relu"])
    x1d = np.pad(d["x1d"], [(0, 0), (0, 0), (1, 1)])
    o1d = (x1d.shape[2] - 3) // 2 + 1
    c1d = sum(np.einsum("ncl,mc->nml", x1d[:, :, j:j + 2 * (o1d - 1) + 1:2], d["w_1d"][:, :, j])
              for j in range(3))
    refs["c1d_relu"] = relu(c1d + d["b_1d"].reshape(1, -1, 1))
    # Max pooling through the depthwise row path: padding (as -inf, the
    # inputs are all negative so a zero would show), stride 2 with a
    # partial last chunk, dilation with asymmetric pads.
    node("MaxPool", ["xm"], ["pool_s2"], kernel_shape=[3, 3], strides=[2, 2],
         pads=[1, 1, 1, 1])
    refs["pool_s2"] = maxpool(d["xm"], [3, 3], [2, 2], [1, 1], [1, 1, 1, 1])
    node("MaxPool", ["xm"], ["pool_dil"], kernel_shape=[2, 3], strides=[1, 1],
         dilations=[2, 1], pads=[0, 2, 1, 0])
    refs["pool_dil"] = maxpool(d["xm"], [2, 3], [1, 1], [2, 1], [0, 2, 1, 0])

    graph = helper.make_graph(
        nodes, "epilogues",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
         for k, v in refs.items()],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "epilogues.onnx"))
    save_cases(out, inputs, refs)


if __name__ == "__main__":
    main()
