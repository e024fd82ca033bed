#!/usr/bin/env python3
"""Inputs and float64 numpy references for matmul_shapes.mlir.

    matmul_reference.py OUTDIR

Writes OUTDIR/NAME.npy (f32 inputs) and OUTDIR/ref_NAME.npy (the products
computed in float64 from the same f32 values, then rounded to f32).
"""
import os
import sys

import numpy as np

from save_cases import save_cases


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    shapes = dict(x1=(1, 784), x64=(64, 784), w=(784, 512), a=(37, 53), b=(53, 29),
                  p=(3, 17, 33), q=(3, 33, 65), r=(33, 65),
                  qa=(2, 40, 64), ka=(2, 48, 64), kb=(2, 37, 64),
                  v=(37, 1, 784), wt=(96, 784))
    v = {k: rng.uniform(-0.5, 0.5, s).astype(np.float32) for k, s in shapes.items()}
    d = {k: x.astype(np.float64) for k, x in v.items()}
    refs = dict(y1=d["x1"] @ d["w"], y64=d["x64"] @ d["w"], ab=d["a"] @ d["b"],
                pq=d["p"] @ d["q"], pr=d["p"] @ d["r"],
                qk=d["qa"] @ d["ka"].transpose(0, 2, 1),
                qk37=d["qa"] @ d["kb"].transpose(0, 2, 1),
                kt=d["ka"].transpose(0, 2, 1),
                vw=d["v"] @ d["w"], vwt=d["v"] @ d["wt"].T)
    save_cases(out, v, refs)


if __name__ == "__main__":
    main()
