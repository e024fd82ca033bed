#!/usr/bin/env python3
"""Inputs and numpy references for core_ops_f32.mlir and core_ops_mixed.mlir.

    core_ops_reference.py OUTDIR

Writes OUTDIR/{f32,mixed}/NAME.npy for inputs and ref_NAME.npy for the
expected outputs, computed with numpy (math.erf for erf) from the ops'
definitions, never with Kiln.
"""
import math
import os
import sys

import numpy as np


def save(d, prefix, arrays):
    os.makedirs(d, exist_ok=True)
    for k, v in arrays.items():
        np.save(os.path.join(d, prefix + k + ".npy"), np.ascontiguousarray(v))


def f32_case(d):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 4)) * 3).astype(np.float32)
    x[0, 0], x[1, 1] = 2.5, -0.5  # round half to even, sign of a fraction
    y = np.array([1.5, -2.0, 3.0, 0.75], np.float32)
    i = np.array([2, -3], np.int64)  # a negative index counts from the end
    erf = np.vectorize(math.erf)
    e = erf(np.sin(np.abs(x))).astype(np.float32)
    m2 = np.minimum(np.maximum(e, np.floor(x)), np.round(x))
    rem = np.fmod(m2, y)
    c = x < y
    sel = np.where(c, x, rem)
    save(d, "", dict(x=x, y=y, i=i))
    save(d, "ref_", dict(
        math=rem, cmp=c, sel=sel, cast=x.astype(np.int32),
        cat=np.concatenate([x, sel], 1), slice=x[2::-2, 3::-2], gather=x[[2, 0]],
        argmax=np.argmax(x, 1)[:, None], bcast=np.broadcast_to(y, (2, 3, 4)),
        sign=np.sign(x), argmin=x.shape[0] - 1 - np.argmin(x[::-1], 0),
        pow=np.abs(x) ** y))


def mixed_case(d):
    a = np.array([[7, -7, 300, 0, -5], [12, 5, -1, 2, 9]], np.int32)
    b = np.array([3, 3, -7, 5, 2], np.int32)
    h = np.array([[0.5, -1, 2, 0.1, -3], [1, 1.5, -0.25, 0, 0.75]], np.float16)
    m = np.array([[1, 0, 1, 0, 0], [0, 1, 1, 0, 1]], bool)
    s = np.sin(np.tanh(h.astype(np.float32))).astype(np.float16)
    # bf16 keeps the top 16 bits of an f32, rounded to nearest even.
    bits = s.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    save(d, "", dict(a=a, b=b, h=h, m=m))
    save(d, "ref_", dict(
        ipow=a * a, irem=np.fmod(a, b).astype(np.int32), bits=~((a & b) ^ a),
        logic=(~m) | (a > b), hmath=s,
        tobf16=bits.astype(np.uint32).view(np.float32), view=a[:, 1::2],
        fromi1=m.astype(np.float32), toi1=a != 0, trunc=a.astype(np.int8),
        iabs=np.abs(a)))


if __name__ == "__main__":
    f32_case(os.path.join(sys.argv[1], "f32"))
    mixed_case(os.path.join(sys.argv[1], "mixed"))
