#!/usr/bin/env python3
"""Inputs and float64 references for approx_math.mlir.

    approx_math_reference.py OUTDIR

Each function gets 4096 f32 points over the range where its result is a
normal f32 (plus the ends where it overflows, underflows or saturates), and
the exact value from numpy/math in float64, rounded once to f32.
"""
import math
import os
import sys

import numpy as np

from save_cases import save_cases


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 4096
    # exp: normal results down to e^-87; overflow to inf above 88.72.
    e = np.linspace(-87.0, 88.0, n - 4).astype(np.float32)
    e = np.concatenate([e, np.float32([0.0, -0.0, 1e-8, -1e-8])])
    # log: 1e-37 .. 3e38 spread over the exponents, and 1 exactly.
    l = np.float32(10.0) ** np.linspace(-37.0, 38.0, n - 1).astype(np.float32)
    l = np.concatenate([l, np.float32([1.0])]).astype(np.float32)
    # tanh and sigmoid: small arguments (where tanh(x) ~ x) to saturation.
    t = np.concatenate([np.linspace(-20.0, 20.0, n - 6),
                        [1e-6, -1e-6, 1e-3, 0.0, 30.0, -30.0]]).astype(np.float32)
    # erf: to where it reaches +-1.
    r = np.concatenate([np.linspace(-6.0, 6.0, n - 4), [0.0, 1e-6, -1e-5, 5e-4]]).astype(np.float32)
    inputs = dict(e=e, l=l, t=t, r=r)
    d = {k: v.astype(np.float64) for k, v in inputs.items()}
    with np.errstate(over="ignore"):
        refs = dict(exp=np.exp(d["e"]), log=np.log(d["l"]), tanh=np.tanh(d["t"]),
                    erf=np.vectorize(math.erf)(d["r"]),
                    sigmoid=1.0 / (1.0 + np.exp(-d["t"])))
    save_cases(out, inputs, refs)


if __name__ == "__main__":
    main()
