#!/usr/bin/env python3
"""Inputs and float64 numpy references for conv_shapes.mlir.

    conv_reference.py OUTDIR

A direct loop-nest convolution (cross-correlation, as ONNX defines Conv) in
float64 over the f32 inputs, written from the definition.
"""
import os
import sys

import numpy as np

from save_cases import save_cases


def conv(x, w, strides, dilations, pads, group):
    k = x.ndim - 2
    pad = [(0, 0), (0, 0)] + [(pads[i], pads[k + i]) for i in range(k)]
    x = np.pad(x, pad)
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    ks = w.shape[2:]
    out = [(x.shape[2 + i] - dilations[i] * (ks[i] - 1) - 1) // strides[i] + 1 for i in range(k)]
    y = np.zeros((n, m) + tuple(out))
    mg = m // group
    for o in np.ndindex(*out):
        for kk in np.ndindex(*ks):
            idx = tuple(o[i] * strides[i] + kk[i] * dilations[i] for i in range(k))
            patch = x[(slice(None), slice(None)) + idx]  # [n, c]
            for g in range(group):
                xs = patch[:, g * cg:(g + 1) * cg]  # [n, cg]
                ws = w[(slice(g * mg, (g + 1) * mg), slice(None)) + kk]  # [mg, cg]
                y[(slice(None), slice(g * mg, (g + 1) * mg)) + o] += xs @ ws.T
    return y


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(3)
    shapes = dict(x=(2, 4, 9, 9), w=(6, 2, 3, 3), wd=(4, 1, 3, 3), w1=(40, 4, 1, 1),
                  s=(2, 3, 20), ws=(5, 3, 4), xd=(2, 3, 11, 37), wd3=(3, 1, 3, 3),
                  wd5=(3, 1, 5, 5), xs=(2, 5, 12, 40), ws3=(7, 5, 3, 3),
                  wsd=(6, 5, 3, 2), xg=(1, 6, 10, 33), wg=(4, 3, 3, 3),
                  xv=(1, 2, 4, 30, 30), wv=(3, 2, 3, 3, 3), sl=(2, 3, 50),
                  wl=(4, 3, 5), x7=(1, 40, 7, 7), w7=(48, 40, 3, 3),
                  xq=(2, 8, 6, 6), wq=(64, 4, 3, 3), wq1=(40, 8, 1, 1),
                  wdn=(40, 1, 3, 3), xf=(2, 3, 26, 26), wf=(3, 1, 3, 3),
                  xt=(1, 4, 28, 28), wt=(4, 1, 5, 5))
    v = {k: rng.uniform(-1, 1, sh).astype(np.float32) for k, sh in shapes.items()}
    d = {k: a.astype(np.float64) for k, a in v.items()}
    refs = dict(
        grouped=conv(d["x"], d["w"], [2, 1], [1, 2], [1, 0, 1, 0], 2),
        depthwise=conv(d["x"], d["wd"], [1, 1], [1, 1], [1, 1, 1, 1], 4),
        pointwise=conv(d["x"], d["w1"], [1, 1], [1, 1], [0, 0, 0, 0], 1),
        conv1d=conv(d["s"], d["ws"], [2], [1], [1, 0], 1),
        dw_s2=conv(d["xd"], d["wd3"], [2, 2], [1, 1], [1, 1, 1, 1], 3),
        dw_dil=conv(d["xd"], d["wd3"], [1, 2], [2, 2], [2, 1, 0, 3], 3),
        dw_5x5=conv(d["xd"], d["wd5"], [1, 1], [1, 1], [2, 2, 2, 2], 3),
        dw_wide_pad=conv(d["xd"], d["wd3"], [1, 1], [1, 1], [3, 3, 3, 3], 3),
        shifted=conv(d["xs"], d["ws3"], [1, 1], [1, 1], [1, 1, 1, 1], 1),
        shifted_dil=conv(d["xs"], d["wsd"], [1, 1], [2, 1], [2, 0, 1, 0], 1),
        shifted_grouped=conv(d["xg"], d["wg"], [1, 1], [1, 1], [0, 0, 0, 0], 2),
        shifted_3d=conv(d["xv"], d["wv"], [1, 1, 1], [1, 1, 1], [1] * 6, 1),
        shifted_1d=conv(d["sl"], d["wl"], [1], [1], [2, 2], 1),
        rows=conv(d["x7"], d["w7"], [1, 1], [1, 1], [1, 1, 1, 1], 1),
        rows_grouped=conv(d["xq"], d["wq"], [1, 1], [1, 1], [1, 1, 1, 1], 2),
        rows_pointwise=conv(d["xq"], d["wq1"], [1, 1], [1, 1], [0, 0, 0, 0], 1),
        dw_narrow=conv(d["x7"], d["wdn"], [1, 1], [1, 1], [1, 1, 1, 1], 40),
        dw_loop=conv(d["xf"], d["wf"], [1, 1], [1, 1], [1, 1, 1, 1], 3),
        dw_loop_dil=conv(d["xf"], d["wf"], [1, 1], [2, 2], [2, 2, 2, 2], 3),
        dw_loop_5x5=conv(d["xt"], d["wt"], [1, 1], [1, 1], [2, 2, 2, 2], 4))
    save_cases(out, v, refs)


if __name__ == "__main__":
    main()
