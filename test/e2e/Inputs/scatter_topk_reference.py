#!/usr/bin/env python3
"""Inputs and numpy references for scatter_topk.mlir.

    scatter_topk_reference.py OUTDIR

Writes OUTDIR/NAME.npy for inputs and OUTDIR/ref_NAME.npy for the expected
outputs, computed with plain Python loops from the ops' definitions: updates
apply in order (duplicates combine), negative indices count from the end,
out-of-range indices are skipped; top-k sorts by value, ties by lower index.
"""
import os
import sys

import numpy as np


def scatter(data, indices, updates, combine):
    out = data.copy()
    n = out.shape[0]
    for i, u in zip(indices, updates):
        i = i + n if i < 0 else i
        if 0 <= i < n:
            out[i] = combine(out[i], u)
    return out


def topk(x, k, largest):
    vals, idxs = [], []
    for row in x:
        order = sorted(range(len(row)),
                       key=lambda j: (-row[j] if largest else row[j], j))[:k]
        vals.append([row[j] for j in order])
        idxs.append(order)
    return np.array(vals, x.dtype), np.array(idxs, np.int64)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    d = np.array([1, 2, 3, 4, 5, 6], np.float32)
    # A duplicate (1 twice), a negative index (-1 is 5), out of range (6, -7).
    i = np.array([1, -1, 1, 6, -7], np.int64)
    u = np.array([10, 20, 30, 40, 50], np.float32)
    di = np.array([1, -2, 3, 4, 5, 6], np.int32)
    ui = np.array([3, -4, 5, 7, 8], np.int32)
    x = np.array([[1, 5, 5, 2, 5], [0, -1, 3, 3, 2], [9, 8, 7, 6, 5]],
                 np.float32)
    xi = np.array([[4, 1, 1, 0], [-3, 7, -3, 2]], np.int32)
    top, topi = topk(x, 3, True)
    low, lowi = topk(xi, 2, False)
    arrays = dict(d=d, i=i, u=u, di=di, ui=ui, x=x, xi=xi)
    refs = dict(
        none=scatter(d, i, u, lambda a, b: b),
        add=scatter(d, i, u, lambda a, b: a + b),
        mul=scatter(di, i, ui, lambda a, b: a * b),
        max=scatter(di, i, ui, max),
        min=scatter(d, i, u, min),
        top=top, topi=topi, low=low, lowi=lowi)
    for k, v in arrays.items():
        np.save(os.path.join(out, k + ".npy"), v)
    for k, v in refs.items():
        np.save(os.path.join(out, "ref_" + k + ".npy"), v)


if __name__ == "__main__":
    main()
