#!/usr/bin/env python3
"""Finite-difference checks of every gradient rule, end to end.

    gradient_check.py [--f32] OUTDIR [CASE...]

For each case: a small float64 kiln function computing y = f(params, inputs)
is written to OUTDIR/NAME.mlir with loss = sum(y * c), c a fixed random
cotangent (so each rule is checked against a full vector-Jacobian product,
not only against a vector of ones). `kilnc grad` compiles it, kiln-run runs
it, and the gradients it returns are compared with central finite
differences of an independent numpy implementation of f, never with the code
under test. Prints one line per case ("NAME: ok" or "NAME: MISMATCH ...") and
exits 1 if any case failed. kilnc and kiln-run are taken from PATH.

With --f32 the per-op cases are compiled in float32 instead (inputs rounded
to float32, finite differences still in float64 on the rounded inputs) and
compared with float32 tolerances: the rules are the same, this checks the
float32 code generation of the backward graphs that real models use.
"""
import os
import subprocess
import sys

import math

import numpy as np

RNG = np.random.default_rng(7)


def erf(x):
    return np.vectorize(math.erf)(x)


def mlir_type(shape, dtype="f64"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


F32 = False  # --f32: compile the per-op cases in float32


class Case:
    """`args`: (name, array, role) with role "param" (differentiated),
    "input" (a float input) or "index" (an integer input). `body`: kiln ops
    that read the argument names as %NAME and define %y. `fn`: numpy f."""

    def __init__(self, name, args, body, fn, h=1e-6, rtol=1e-6, atol=1e-8):
        self.name, self.args, self.body, self.fn = name, args, body, fn
        self.h, self.rtol, self.atol = h, rtol, atol


def uniform(shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


def away_from_zero(shape, lo=0.5, hi=2.0):
    return uniform(shape, lo, hi) * RNG.choice([-1.0, 1.0], size=shape)


def unary(name, op, fn, lo=-1.0, hi=1.0, shape=(3, 4)):
    t = mlir_type(shape)
    return Case(name, [("x", uniform(shape, lo, hi), "param")],
                f"%y = kiln.{op} %x : {t}", fn)


def binary(name, op, fn, ls, rs, lhs=None, rhs=None):
    ys = np.broadcast_shapes(ls, rs)
    lhs = uniform(ls) if lhs is None else lhs
    rhs = uniform(rs) if rhs is None else rhs
    return Case(name, [("a", lhs, "param"), ("b", rhs, "param")],
                f"%y = kiln.{op} %a, %b : {mlir_type(ls)}, {mlir_type(rs)} -> {mlir_type(ys)}",
                fn)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax_xent(logits, onehot):
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    p = e / e.sum(axis=1, keepdims=True)
    return -(np.log(p) * onehot).sum(axis=1).mean()


def slice_np(x, starts, strides, shape):
    idx = tuple(np.arange(s, s + n * st, st) if n else np.arange(0)
                for s, st, n in zip(starts, strides, shape))
    return x[np.ix_(*idx)]


def gather_np(data, idx, axis):
    d = data.shape[axis]
    idx = np.clip(np.where(idx < 0, idx + d, idx), 0, d - 1)
    return np.take(data, idx, axis=axis)


def scatter_np(data, idx, upd, add):
    """kiln.scatter on 1-D operands: negative indices wrap, out-of-range
    ones are skipped, updates apply in order (the last write wins)."""
    out = data.copy()
    for j, p in enumerate(idx):
        p = p + len(data) if p < 0 else p
        if 0 <= p < len(data):
            out[p] = out[p] + upd[j] if add else upd[j]
    return out


def topk_np(x, k):
    """The k largest of each row, largest first (ties: lower index first)."""
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(x, order, axis=1)


def conv_np(x, w, strides, dil, pads, group):
    k = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[k + i]) for i in range(k)])
    m, cg = w.shape[:2]
    kernel = w.shape[2:]
    out = [(xp.shape[2 + i] - dil[i] * (kernel[i] - 1) - 1) // strides[i] + 1 for i in range(k)]
    y = np.zeros((x.shape[0], m, *out))
    mg = m // group
    for g in range(group):
        xs, ws = xp[:, g * cg:(g + 1) * cg], w[g * mg:(g + 1) * mg]
        for kk in np.ndindex(*kernel):
            sl = tuple(slice(kk[i] * dil[i], kk[i] * dil[i] + (out[i] - 1) * strides[i] + 1, strides[i])
                       for i in range(k))
            patch = xs[(slice(None), slice(None)) + sl]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch,
                                                   ws[(slice(None), slice(None)) + kk])
    return y


def pool_np(x, kind, kernel, strides, dil, pads):
    k = x.ndim - 2
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[k + i]) for i in range(k)],
                constant_values=fill)
    out = [(xp.shape[2 + i] - dil[i] * (kernel[i] - 1) - 1) // strides[i] + 1 for i in range(k)]
    windows = []
    for kk in np.ndindex(*kernel):
        sl = tuple(slice(kk[i] * dil[i], kk[i] * dil[i] + (out[i] - 1) * strides[i] + 1, strides[i])
                   for i in range(k))
        windows.append(xp[(slice(None), slice(None)) + sl])
    w = np.stack(windows)
    return w.max(axis=0) if kind == "max" else w.sum(axis=0)


def conv_case(name, xs, ws, strides, dil, pads, group):
    x, w = uniform(xs), uniform(ws)
    ys = conv_np(x, w, strides, dil, pads, group).shape
    return Case(name, [("x", x, "param"), ("w", w, "param")],
                f"%y = kiln.conv %x, %w strides = {list(strides)} dilations = {list(dil)} "
                f"pads = {list(pads)} group = {group} : {mlir_type(xs)}, {mlir_type(ws)} -> {mlir_type(ys)}",
                lambda x, w: conv_np(x, w, strides, dil, pads, group))


def pool_case(name, kind, xs, kernel, strides, dil, pads):
    x = uniform(xs)
    ys = pool_np(x, kind, kernel, strides, dil, pads).shape
    return Case(name, [("x", x, "param")],
                f"%y = kiln.pool {kind} %x kernel = {list(kernel)} strides = {list(strides)} "
                f"dilations = {list(dil)} pads = {list(pads)} : {mlir_type(xs)} -> {mlir_type(ys)}",
                lambda x: pool_np(x, kind, kernel, strides, dil, pads))


def cases():
    c = []
    # Elementwise binary, with broadcasting on both sides.
    c.append(binary("add", "add", np.add, (3, 4), (4,)))
    c.append(binary("sub", "sub", np.subtract, (3, 1), (1, 4)))
    c.append(binary("mul", "mul", np.multiply, (2, 3, 4), (3, 1)))
    c.append(binary("div", "div", np.divide, (3, 4), (4,), rhs=away_from_zero((4,))))
    c.append(binary("max", "max", np.maximum, (3, 4), (4,)))
    c.append(binary("min", "min", np.minimum, (3, 4), (3, 1)))
    c.append(binary("pow", "pow", np.power, (3, 4), (4,),
                    lhs=uniform((3, 4), 0.5, 2.0), rhs=uniform((4,), -2.0, 2.0)))
    c.append(binary("rem", "rem", np.fmod, (3, 4), (4,),
                    lhs=uniform((3, 4), -3.0, 3.0), rhs=away_from_zero((4,), 0.7, 1.3)))
    # Elementwise unary.
    c.append(unary("neg", "neg", np.negative))
    c.append(unary("exp", "exp", np.exp))
    c.append(unary("log", "log", np.log, 0.5, 2.0))
    c.append(unary("sqrt", "sqrt", np.sqrt, 0.5, 2.0))
    c.append(unary("tanh", "tanh", np.tanh, -2.0, 2.0))
    c.append(unary("sigmoid", "sigmoid", sigmoid, -3.0, 3.0))
    c.append(Case("relu", [("x", away_from_zero((3, 4), 0.1, 1.0), "param")],
                  "%y = kiln.relu %x : tensor<3x4xf64>", lambda x: np.maximum(x, 0.0)))
    c.append(unary("erf", "erf", erf, -2.0, 2.0))
    c.append(Case("reciprocal", [("x", away_from_zero((3, 4)), "param")],
                  "%y = kiln.reciprocal %x : tensor<3x4xf64>", lambda x: 1.0 / x))
    c.append(Case("abs", [("x", away_from_zero((3, 4), 0.1, 1.0), "param")],
                  "%y = kiln.abs %x : tensor<3x4xf64>", np.abs))
    c.append(unary("sin", "sin", np.sin, -3.0, 3.0))
    c.append(unary("cos", "cos", np.cos, -3.0, 3.0))
    c.append(unary("tan", "tan", np.tan))
    c.append(unary("sinh", "sinh", np.sinh))
    c.append(unary("cosh", "cosh", np.cosh))
    c.append(unary("asin", "asin", np.arcsin, -0.9, 0.9))
    c.append(unary("acos", "acos", np.arccos, -0.9, 0.9))
    c.append(unary("atan", "atan", np.arctan, -2.0, 2.0))
    c.append(unary("asinh", "asinh", np.arcsinh, -2.0, 2.0))
    c.append(unary("acosh", "acosh", np.arccosh, 1.2, 3.0))
    c.append(unary("atanh", "atanh", np.arctanh, -0.9, 0.9))
    # Piecewise constant: zero gradient away from the jumps.
    off_grid = uniform((3, 4), 0.1, 0.4) + RNG.integers(-3, 3, (3, 4))
    for op, fn in [("floor", np.floor), ("ceil", np.ceil), ("round", np.round),
                   ("sign", np.sign)]:
        c.append(Case(op, [("x", off_grid, "param")], f"%y = kiln.{op} %x : tensor<3x4xf64>", fn))
    # Matrix products: plain, batched, and with either side broadcast.
    for name, ls, rs in [("matmul", (3, 4), (4, 5)),
                         ("matmul_batched", (2, 3, 4), (2, 4, 5)),
                         ("matmul_bcast_rhs", (2, 3, 4), (4, 5)),
                         ("matmul_bcast_lhs", (3, 4), (2, 4, 5)),
                         ("matmul_bcast_batch", (2, 1, 3, 4), (3, 4, 2))]:
        ys = np.broadcast_shapes(ls[:-2], rs[:-2]) + (ls[-2], rs[-1])
        c.append(Case(name, [("a", uniform(ls), "param"), ("b", uniform(rs), "param")],
                      f"%y = kiln.matmul %a, %b : {mlir_type(ls)}, {mlir_type(rs)} -> {mlir_type(ys)}",
                      np.matmul))
    # Reductions.
    x = uniform((2, 3, 4))
    c.append(Case("reduce_sum", [("x", x, "param")],
                  "%y = kiln.reduce_sum %x axes = [1] : tensor<2x3x4xf64> -> tensor<2x4xf64>",
                  lambda x: x.sum(axis=1)))
    c.append(Case("reduce_sum_keepdims", [("x", x, "param")],
                  "%y = kiln.reduce_sum %x axes = [0, 2] keepdims : tensor<2x3x4xf64> -> tensor<1x3x1xf64>",
                  lambda x: x.sum(axis=(0, 2), keepdims=True)))
    c.append(Case("reduce_mean", [("x", x, "param")],
                  "%y = kiln.reduce_mean %x axes = [0, 2] : tensor<2x3x4xf64> -> tensor<3xf64>",
                  lambda x: x.mean(axis=(0, 2))))
    c.append(Case("reduce_max", [("x", x, "param")],
                  "%y = kiln.reduce_max %x axes = [2] : tensor<2x3x4xf64> -> tensor<2x3xf64>",
                  lambda x: x.max(axis=2)))
    c.append(Case("reduce_min", [("x", x, "param")],
                  "%y = kiln.reduce_min %x axes = [0, 1] keepdims : tensor<2x3x4xf64> -> tensor<1x1x4xf64>",
                  lambda x: x.min(axis=(0, 1), keepdims=True)))
    c.append(Case("reduce_prod", [("x", away_from_zero((2, 3, 4)), "param")],
                  "%y = kiln.reduce_prod %x axes = [1] : tensor<2x3x4xf64> -> tensor<2x4xf64>",
                  lambda x: x.prod(axis=1)))
    # Shape ops and data movement.
    c.append(Case("reshape", [("x", x, "param")],
                  "%y = kiln.reshape %x : tensor<2x3x4xf64> -> tensor<6x4xf64>",
                  lambda x: x.reshape(6, 4)))
    c.append(Case("transpose", [("x", x, "param")],
                  "%y = kiln.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf64> -> tensor<4x2x3xf64>",
                  lambda x: x.transpose(2, 0, 1)))
    c.append(Case("broadcast", [("x", uniform((3, 1)), "param")],
                  "%y = kiln.broadcast %x : tensor<3x1xf64> -> tensor<2x3x4xf64>",
                  lambda x: np.broadcast_to(x, (2, 3, 4))))
    c.append(Case("concat", [("a", uniform((2, 3)), "param"), ("b", uniform((2, 2)), "param")],
                  "%y = kiln.concat %a, %b, %a axis = 1 : tensor<2x3xf64>, tensor<2x2xf64>, tensor<2x3xf64> -> tensor<2x8xf64>",
                  lambda a, b: np.concatenate([a, b, a], axis=1)))
    for name, shape, starts, strides, out in [
            ("slice", (4, 6), (1, 2), (1, 1), (2, 3)),
            ("slice_strided", (5, 7), (0, 1), (2, 3), (3, 2)),
            ("slice_negative", (4, 6), (3, 5), (-1, -2), (3, 3))]:
        c.append(Case(name, [("x", uniform(shape), "param")],
                      f"%y = kiln.slice %x starts = {list(starts)} strides = {list(strides)} : "
                      f"{mlir_type(shape)} -> {mlir_type(out)}",
                      lambda x, s=starts, st=strides, o=out: slice_np(x, s, st, o)))
    idx = np.array([[2, -1], [0, 2], [2, 1]], dtype=np.int64)
    c.append(Case("gather", [("d", uniform((2, 4, 3)), "param"), ("i", idx, "index")],
                  "%y = kiln.gather %d, %i axis = 1 : tensor<2x4x3xf64>, tensor<3x2xi64> -> tensor<2x3x2x3xf64>",
                  lambda d, i: gather_np(d, i, 1)))
    # Duplicates (positions 2 and 5 twice), a negative and an out-of-range
    # index: with `none` only the last writer of a position gets a gradient.
    sidx = np.array([2, 5, -3, 2, 9, 5, 0], dtype=np.int64)
    for name, red, add_ in [("scatter_none", "none", False), ("scatter_add", "add", True)]:
        c.append(Case(name, [("d", uniform((8,)), "param"), ("i", sidx, "index"),
                             ("u", uniform((7,)), "param")],
                      f"%y = kiln.scatter {red} %d, %i, %u : tensor<8xf64>, tensor<7xi64>, "
                      "tensor<7xf64> -> tensor<8xf64>",
                      lambda d, i, u, a=add_: scatter_np(d, i, u, a)))
    c.append(Case("topk", [("x", uniform((3, 6)), "param")],
                  "%y, %yi = kiln.topk %x k = 3 : tensor<3x6xf64> -> tensor<3x3xf64>, tensor<3x3xi64>",
                  lambda x: topk_np(x, 3)))
    c.append(Case("cast", [("x", uniform((3, 4)), "param")],
                  "%f = kiln.cast %x : tensor<3x4xf64> -> tensor<3x4xf32>\n"
                  "  %y = kiln.cast %f : tensor<3x4xf32> -> tensor<3x4xf64>",
                  lambda x: x.astype(np.float32).astype(np.float64),
                  h=1e-2, rtol=1e-5, atol=1e-6))
    c.append(Case("select", [("a", uniform((3, 4)), "param"), ("b", uniform((4,)), "param"),
                             ("t", uniform((3, 4)), "input")],
                  "%m = kiln.cmp lt, %t, %b : tensor<3x4xf64>, tensor<4xf64> -> tensor<3x4xi1>\n"
                  "  %y = kiln.select %m, %a, %b : tensor<3x4xi1>, tensor<3x4xf64>, tensor<4xf64> -> tensor<3x4xf64>",
                  lambda a, b, t: np.where(t < b, a, b)))
    # Convolution and pooling.
    c.append(conv_case("conv2d", (2, 3, 5, 5), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1))
    c.append(conv_case("conv2d_strided_dilated", (1, 2, 7, 6), (3, 2, 2, 3), (2, 1), (2, 1),
                       (0, 1, 1, 0), 1))
    c.append(conv_case("conv1d_grouped", (2, 4, 6), (6, 2, 3), (2,), (1,), (1, 2), 2))
    c.append(conv_case("conv2d_depthwise", (1, 3, 4, 5), (3, 1, 2, 2), (1, 2), (1, 1), (0, 0, 1, 1), 3))
    # Strided without dilation: the input gradient by phases (one stride-1
    # transposed convolution per position modulo the strides), including
    # phases without taps (1x1 at stride 2, a 2-wide kernel at stride 3),
    # odd sizes, asymmetric padding and groups.
    c.append(conv_case("conv2d_s2", (2, 3, 8, 8), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1))
    c.append(conv_case("conv2d_s2_1x1", (1, 3, 6, 7), (2, 3, 1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1))
    c.append(conv_case("conv2d_s3_odd", (1, 2, 7, 8), (3, 2, 2, 3), (3, 2), (1, 1), (0, 1, 2, 0), 1))
    c.append(conv_case("conv2d_s2_grouped", (1, 4, 5, 6), (6, 2, 3, 2), (2, 2), (1, 1), (1, 0, 0, 1), 2))
    c.append(pool_case("maxpool", "max", (1, 2, 5, 5), (2, 2), (2, 2), (1, 1), (0, 1, 0, 1)))
    c.append(pool_case("maxpool_overlap", "max", (2, 1, 4, 4), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)))
    c.append(pool_case("sumpool", "sum", (1, 2, 6, 5), (3, 2), (2, 1), (1, 2), (1, 0, 1, 1)))
    c.append(pool_case("sumpool_s2", "sum", (1, 2, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1, 1, 0)))
    # Compositions: a two-layer MLP with softmax cross-entropy (the importer's
    # softmax decomposition), and a layer norm with a gelu.
    onehot = np.eye(3)[[0, 2, 1, 2]]
    c.append(Case(
        "mlp_xent",
        [("x", uniform((4, 5)), "input"), ("w1", uniform((5, 6)), "param"),
         ("b1", uniform((6,)), "param"), ("w2", uniform((6, 3)), "param"),
         ("b2", uniform((3,)), "param"), ("t", onehot, "input")],
        """%h0 = kiln.matmul %x, %w1 : tensor<4x5xf64>, tensor<5x6xf64> -> tensor<4x6xf64>
  %h1 = kiln.add %h0, %b1 : tensor<4x6xf64>, tensor<6xf64> -> tensor<4x6xf64>
  %h = kiln.relu %h1 : tensor<4x6xf64>
  %z0 = kiln.matmul %h, %w2 : tensor<4x6xf64>, tensor<6x3xf64> -> tensor<4x3xf64>
  %z = kiln.add %z0, %b2 : tensor<4x3xf64>, tensor<3xf64> -> tensor<4x3xf64>
  %m = kiln.reduce_max %z axes = [1] keepdims : tensor<4x3xf64> -> tensor<4x1xf64>
  %s = kiln.sub %z, %m : tensor<4x3xf64>, tensor<4x1xf64> -> tensor<4x3xf64>
  %e = kiln.exp %s : tensor<4x3xf64>
  %n = kiln.reduce_sum %e axes = [1] keepdims : tensor<4x3xf64> -> tensor<4x1xf64>
  %p = kiln.div %e, %n : tensor<4x3xf64>, tensor<4x1xf64> -> tensor<4x3xf64>
  %lp = kiln.log %p : tensor<4x3xf64>
  %tl = kiln.mul %lp, %t : tensor<4x3xf64>, tensor<4x3xf64> -> tensor<4x3xf64>
  %r = kiln.reduce_sum %tl axes = [1] : tensor<4x3xf64> -> tensor<4xf64>
  %mr = kiln.reduce_mean %r axes = [0] : tensor<4xf64> -> tensor<f64>
  %y = kiln.neg %mr : tensor<f64>""",
        lambda x, w1, b1, w2, b2, t: softmax_xent(
            np.maximum(x @ w1 + b1, 0.0) @ w2 + b2, t)))

    def layernorm_gelu(x, g, b):
        mu = x.mean(axis=1, keepdims=True)
        d = x - mu
        var = (d * d).mean(axis=1, keepdims=True)
        n = d / np.sqrt(var + 1e-5) * g + b
        return 0.5 * n * (1.0 + erf(n / np.sqrt(2.0)))
    c.append(Case(
        "layernorm_gelu",
        [("x", uniform((3, 5)), "param"), ("g", uniform((5,)), "param"),
         ("bb", uniform((5,)), "param")],
        """%mu = kiln.reduce_mean %x axes = [1] keepdims : tensor<3x5xf64> -> tensor<3x1xf64>
  %d = kiln.sub %x, %mu : tensor<3x5xf64>, tensor<3x1xf64> -> tensor<3x5xf64>
  %dd = kiln.mul %d, %d : tensor<3x5xf64>, tensor<3x5xf64> -> tensor<3x5xf64>
  %var = kiln.reduce_mean %dd axes = [1] keepdims : tensor<3x5xf64> -> tensor<3x1xf64>
  %eps = kiln.constant dense<1.0e-05> : tensor<f64>
  %ve = kiln.add %var, %eps : tensor<3x1xf64>, tensor<f64> -> tensor<3x1xf64>
  %sd = kiln.sqrt %ve : tensor<3x1xf64>
  %nrm = kiln.div %d, %sd : tensor<3x5xf64>, tensor<3x1xf64> -> tensor<3x5xf64>
  %sc = kiln.mul %nrm, %g : tensor<3x5xf64>, tensor<5xf64> -> tensor<3x5xf64>
  %n = kiln.add %sc, %bb : tensor<3x5xf64>, tensor<5xf64> -> tensor<3x5xf64>
  %r2 = kiln.constant dense<0.70710678118654752> : tensor<f64>
  %ns = kiln.mul %n, %r2 : tensor<3x5xf64>, tensor<f64> -> tensor<3x5xf64>
  %er = kiln.erf %ns : tensor<3x5xf64>
  %one = kiln.constant dense<1.0> : tensor<f64>
  %e1 = kiln.add %er, %one : tensor<3x5xf64>, tensor<f64> -> tensor<3x5xf64>
  %half = kiln.constant dense<0.5> : tensor<f64>
  %hn = kiln.mul %n, %half : tensor<3x5xf64>, tensor<f64> -> tensor<3x5xf64>
  %y = kiln.mul %hn, %e1 : tensor<3x5xf64>, tensor<3x5xf64> -> tensor<3x5xf64>""",
        layernorm_gelu))
    return c


def as_f32(case):
    """The case in float32: body types, and float inputs rounded."""
    args = [(n, v if role == "index" else v.astype(np.float32).astype(np.float64), role)
            for n, v, role in case.args]
    return Case(case.name, args, case.body.replace("f64", "f32"), case.fn,
                h=max(case.h, 1e-4), rtol=2e-3, atol=2e-4)


def write_case(case, folder):
    os.makedirs(folder, exist_ok=True)
    fdt, npdt = ("f32", np.float32) if F32 else ("f64", np.float64)
    args = []
    for name, value, role in case.args:
        dtype = "i64" if role == "index" else fdt
        args.append(f'%{name}: {mlir_type(value.shape, dtype)} {{kiln.name = "{name}"}}')
        np.save(os.path.join(folder, name + ".npy"),
                value if role == "index" else value.astype(npdt))
    params = [a for a in case.args if a[2] == "param"]
    y = case.fn(*[v for _, v, _ in case.args])
    y = np.asarray(y, dtype=np.float64)
    cot = RNG.uniform(-1.0, 1.0, size=y.shape).astype(npdt).astype(np.float64)
    np.save(os.path.join(folder, "c.npy"), cot.astype(npdt))
    axes = list(range(y.ndim))
    yt = mlir_type(y.shape, fdt)
    text = (f"func.func @main({', '.join(args)}, %c: {yt} {{kiln.name = \"c\"}})\n"
            f"    -> (tensor<{fdt}> {{kiln.name = \"loss\"}}) {{\n"
            f"  {case.body}\n"
            f"  %yc = kiln.mul %y, %c : {yt}, {yt} -> {yt}\n"
            f"  %loss = kiln.reduce_sum %yc axes = {axes} : {yt} -> tensor<{fdt}>\n"
            f"  return %loss : tensor<{fdt}>\n}}\n")
    path = os.path.join(folder, case.name + ".mlir")
    with open(path, "w") as f:
        f.write(text)
    return path, params, cot


def finite_differences(case, cot):
    values = {n: v.copy() for n, v, _ in case.args}
    names = [n for n, _, _ in case.args]

    def loss():
        y = np.asarray(case.fn(*[values[n] for n in names]), dtype=np.float64)
        return float((y * cot).sum())

    grads = {}
    for name, _, role in case.args:
        if role != "param":
            continue
        v = values[name]
        g = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            old = v[i]
            v[i] = old + case.h
            up = loss()
            v[i] = old - case.h
            down = loss()
            v[i] = old
            g[i] = (up - down) / (2 * case.h)
        grads[name] = g
    return grads


def check(case, root):
    folder = os.path.join(root, case.name)
    path, params, cot = write_case(case, folder)
    prefix = os.path.join(folder, "grad")
    wrt = ",".join(n for n, _, _ in params)
    run = subprocess.run(["kilnc", "grad", path, "--loss=loss", f"--wrt={wrt}",
                          "-o", prefix, "--shared"], capture_output=True, text=True)
    if run.returncode != 0:
        return f"kilnc failed: {run.stderr.strip()}"
    inputs = [f"--input={n}={os.path.join(folder, n + '.npy')}" for n, _, _ in case.args]
    inputs.append(f"--input=c={os.path.join(folder, 'c.npy')}")
    out = os.path.join(folder, "out")
    run = subprocess.run(["kiln-run", prefix + ".so", *inputs, "--output-dir", out],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return f"kiln-run failed: {run.stderr.strip()}"
    expected = finite_differences(case, cot)
    problems = []
    for name, _, _ in params:
        got = np.load(os.path.join(out, f"grad.{name}.npy"))
        want = expected[name]
        if got.shape != want.shape:
            problems.append(f"grad.{name}: shape {got.shape}, expected {want.shape}")
            continue
        err = np.abs(got - want)
        bound = case.atol + case.rtol * np.abs(want)
        if not np.all(err <= bound):
            worst = np.unravel_index(np.argmax(err - bound), err.shape)
            where = [int(i) for i in worst]
            problems.append(f"grad.{name}{where}: {float(got[worst])!r}, finite "
                            f"differences give {float(want[worst])!r}")
    return "; ".join(problems)


def save_onnx_model(root, name, nodes, inputs, inits, outputs, opset=17):
    """Writes ROOT/NAME/model.onnx (float64 outputs) and returns its path."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    types = {np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.int64): TensorProto.INT64,
             np.dtype(np.bool_): TensorProto.BOOL}
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, types[v.dtype], list(v.shape)) for n, v in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.DOUBLE, list(shape)) for n, shape in outputs],
        initializer=[numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    return path


def check_onnx_model(root, name, nodes, inputs, inits, outputs, fn, opset=17):
    """`kilnc grad` on an ONNX model: the initializers become inputs named
    like them and their gradients outputs named grad.<initializer>. `inputs`
    and `inits` map names to arrays (float64, or int64/bool for inputs);
    `fn(**inputs, **inits)` is the numpy loss; `outputs` (name, shape) come
    first with the loss."""
    path = save_onnx_model(root, name, nodes, inputs, inits, outputs, opset)
    folder = os.path.dirname(path)
    prefix = os.path.join(folder, "grad")
    run = subprocess.run(["kilnc", "grad", path, f"--loss={outputs[0][0]}", "-o", prefix,
                          "--shared"], capture_output=True, text=True)
    if run.returncode != 0:
        return f"kilnc failed: {run.stderr.strip()}"
    values = {**inputs, **inits}
    for n, v in values.items():
        np.save(os.path.join(folder, n + ".npy"), v)
    # Integer initializers stay constants; float ones become inputs.
    args = [f"--input={n}={os.path.join(folder, n + '.npy')}" for n in values
            if n not in inits or values[n].dtype == np.float64]
    out = os.path.join(folder, "out")
    run = subprocess.run(["kiln-run", prefix + ".so", *args, "--output-dir", out],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return f"kiln-run failed: {run.stderr.strip()}"
    names = list(values)
    params = [n for n, v in inits.items() if v.dtype == np.float64]
    case = Case(name, [(n, v, "param" if n in params else "input") for n, v in values.items()],
                "", lambda *a: fn(**dict(zip(names, a))))
    expected = finite_differences(case, np.float64(1.0))
    problems = []
    loss, want_loss = float(np.load(os.path.join(out, outputs[0][0] + ".npy"))), fn(**values)
    if abs(loss - want_loss) > 1e-10 * max(1.0, abs(want_loss)):
        problems.append(f"loss {loss!r}, expected {want_loss!r}")
    for n in params:
        got, want = np.load(os.path.join(out, f"grad.{n}.npy")), expected[n]
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-8):
            err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
            problems.append(f"grad.{n}: max abs error {err}")
    return "; ".join(problems)


def onnx_mlp_model():
    from onnx import helper
    x, t = uniform((4, 3)), uniform((4, 2))
    inits = {"w1": uniform((3, 5)), "b1": uniform((5,)), "w2": uniform((5, 2)),
             "shape": np.array([4, 2], dtype=np.int64)}
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h0"], name="fc1"),
             helper.make_node("Tanh", ["h0"], ["h"], name="act"),
             helper.make_node("MatMul", ["h", "w2"], ["z0"], name="fc2"),
             helper.make_node("Reshape", ["z0", "shape"], ["z"], name="keep"),
             helper.make_node("Sub", ["z", "t"], ["d"], name="err"),
             helper.make_node("Mul", ["d", "d"], ["sq"], name="square"),
             helper.make_node("ReduceMean", ["sq"], ["loss"], name="mse", keepdims=0)]

    def fn(x, t, w1, b1, w2, shape):
        d = np.tanh(x @ w1 + b1) @ w2 - t
        return (d * d).mean()
    return dict(name="onnx_mlp", nodes=nodes, inputs={"x": x, "t": t}, inits=inits,
                outputs=[("loss", []), ("z", [4, 2])], fn=fn)


def check_onnx_mlp(root):
    return check_onnx_model(root, **onnx_mlp_model())


def const(helper, name, value):
    from onnx import numpy_helper
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(value), name))


def log_softmax(z):
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


def transformer_block(S=4, D=8, H=2, V=10, F=16):
    """A pre-norm transformer block with tied embeddings: Gather, LayerNorm,
    multi-head causal attention (Where, Softmax), Gelu, LogSoftmax. The
    embedding table gets gradients from both the gather and the logits.
    The batch reshapes through -1, so a symbolic batch works too
    (dims_training_check.py). Returns the nodes, the initializers and the
    numpy loss of the inputs `ids` [B, S] and one-hot `target` [B, S, V]."""
    from onnx import helper
    dh = D // H
    inits = {"E": uniform((V, D)), "P": uniform((S, D)), "gamma": uniform((D,), 0.5, 1.5),
             "beta": uniform((D,)), "Wq": uniform((D, D)), "Wk": uniform((D, D)),
             "Wv": uniform((D, D)), "Wo": uniform((D, D)), "W1": uniform((D, F)),
             "W2": uniform((F, D))}
    mask = np.tril(np.ones((S, S), dtype=bool))
    mk = helper.make_node
    nodes = [
        const(helper, "heads", np.array([-1, S, H, dh], dtype=np.int64)),
        const(helper, "flat", np.array([-1, S, D], dtype=np.int64)),
        const(helper, "scale", np.array(1.0 / np.sqrt(dh))),
        const(helper, "mask", mask),
        const(helper, "neg", np.array(-1e9)),
        const(helper, "last", np.array([-1], dtype=np.int64)),
        mk("Gather", ["E", "ids"], ["emb"], name="embed", axis=0),
        mk("Add", ["emb", "P"], ["h"], name="pos"),
        mk("LayerNormalization", ["h", "gamma", "beta"], ["n"], name="ln", axis=-1, epsilon=1e-5,
           stash_type=11),  # statistics in float64 (the default is float32)
        mk("MatMul", ["n", "Wq"], ["q0"], name="q"),
        mk("MatMul", ["n", "Wk"], ["k0"], name="k"),
        mk("MatMul", ["n", "Wv"], ["v0"], name="v"),
        mk("Reshape", ["q0", "heads"], ["q1"], name="qh"),
        mk("Reshape", ["k0", "heads"], ["k1"], name="kh"),
        mk("Reshape", ["v0", "heads"], ["v1"], name="vh"),
        mk("Transpose", ["q1"], ["q2"], name="qt", perm=[0, 2, 1, 3]),
        mk("Transpose", ["k1"], ["k2"], name="kt", perm=[0, 2, 3, 1]),
        mk("Transpose", ["v1"], ["v2"], name="vt", perm=[0, 2, 1, 3]),
        mk("MatMul", ["q2", "k2"], ["s0"], name="scores"),
        mk("Mul", ["s0", "scale"], ["s1"], name="scaled"),
        mk("Where", ["mask", "s1", "neg"], ["s2"], name="causal"),
        mk("Softmax", ["s2"], ["a"], name="softmax", axis=-1),
        mk("MatMul", ["a", "v2"], ["o0"], name="attend"),
        mk("Transpose", ["o0"], ["o1"], name="ot", perm=[0, 2, 1, 3]),
        mk("Reshape", ["o1", "flat"], ["o2"], name="merge"),
        mk("MatMul", ["o2", "Wo"], ["o3"], name="out"),
        mk("Add", ["h", "o3"], ["h2"], name="residual1"),
        mk("MatMul", ["h2", "W1"], ["f0"], name="ff1"),
        mk("Gelu", ["f0"], ["f1"], name="gelu"),
        mk("MatMul", ["f1", "W2"], ["f2"], name="ff2"),
        mk("Add", ["h2", "f2"], ["h3"], name="residual2"),
        mk("Transpose", ["E"], ["Et"], name="tied", perm=[1, 0]),
        mk("MatMul", ["h3", "Et"], ["logits"], name="unembed"),
        mk("LogSoftmax", ["logits"], ["lp"], name="logsoftmax", axis=-1),
        mk("Mul", ["lp", "target"], ["picked"], name="pick"),
        mk("ReduceSum", ["picked", "last"], ["nll0"], name="nll", keepdims=0),
        mk("ReduceMean", ["nll0"], ["nll1"], name="mean", keepdims=0),
        mk("Neg", ["nll1"], ["loss"], name="loss")]

    def fn(ids, target, E, P, gamma, beta, Wq, Wk, Wv, Wo, W1, W2):
        B = ids.shape[0]
        h = E[ids] + P
        mu = h.mean(-1, keepdims=True)
        var = ((h - mu) ** 2).mean(-1, keepdims=True)
        # ONNX stores epsilon as a float32 attribute.
        n = (h - mu) / np.sqrt(var + float(np.float32(1e-5))) * gamma + beta

        def heads(t):
            return t.reshape(B, S, H, dh).transpose(0, 2, 1, 3)
        q, k, v = heads(n @ Wq), heads(n @ Wk), heads(n @ Wv)
        s = np.where(mask, q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh), -1e9)
        a = np.exp(log_softmax(s))
        h2 = h + (a @ v).transpose(0, 2, 1, 3).reshape(B, S, D) @ Wo
        f = h2 @ W1
        h3 = h2 + (0.5 * f * (1.0 + erf(f / np.sqrt(2.0)))) @ W2
        return -(log_softmax(h3 @ E.T) * target).sum(-1).mean()
    return nodes, inits, fn


def onnx_transformer_model():
    B, S, V = 2, 4, 10
    ids = RNG.integers(0, V, (B, S)).astype(np.int64)
    target = np.eye(V)[RNG.integers(0, V, (B, S))]
    nodes, inits, fn = transformer_block(S=S, V=V)
    return dict(name="onnx_transformer", nodes=nodes, inputs={"ids": ids, "target": target},
                inits=inits, outputs=[("loss", [])], fn=fn, opset=20)


def check_onnx_transformer(root):
    return check_onnx_model(root, **onnx_transformer_model())


def onnx_cnn_model():
    """Conv + BatchNormalization (training mode: batch statistics) + Relu +
    MaxPool + Conv + AveragePool + Gemm + SoftmaxCrossEntropyLoss. The
    running mean and variance are initializers too: their gradient is 0."""
    from onnx import helper
    x = uniform((2, 1, 6, 6))
    labels = np.array([2, 0], dtype=np.int64)
    inits = {"W1": uniform((3, 1, 3, 3)), "B1": uniform((3,)), "S": uniform((3,), 0.5, 1.5),
             "Bn": uniform((3,)), "Rm": uniform((3,)), "Rv": uniform((3,), 0.5, 1.5),
             "W2": uniform((4, 3, 2, 2)), "W3": uniform((4, 3)), "B3": uniform((3,))}
    mk = helper.make_node
    nodes = [
        mk("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        mk("BatchNormalization", ["c1", "S", "Bn", "Rm", "Rv"], ["n1"], name="bn1",
           training_mode=1, epsilon=1e-3),
        mk("Relu", ["n1"], ["r1"], name="relu1"),
        mk("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        mk("Conv", ["p1", "W2"], ["c2"], name="conv2"),
        mk("AveragePool", ["c2"], ["p2"], name="pool2", kernel_shape=[2, 2]),
        mk("Flatten", ["p2"], ["f"], name="flatten"),
        mk("Gemm", ["f", "W3", "B3"], ["logits"], name="fc"),
        mk("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"], name="xent")]

    def fn(x, labels, W1, B1, S, Bn, Rm, Rv, W2, W3, B3):
        c1 = conv_np(x, W1, (1, 1), (1, 1), (1, 1, 1, 1), 1) + B1.reshape(1, 3, 1, 1)
        mean = c1.mean(axis=(0, 2, 3), keepdims=True)
        var = ((c1 - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
        eps = float(np.float32(1e-3))  # a float32 attribute
        n1 = (c1 - mean) / np.sqrt(var + eps) * S.reshape(1, 3, 1, 1) + Bn.reshape(1, 3, 1, 1)
        r1 = np.maximum(n1, 0.0)
        p1 = pool_np(r1, "max", (2, 2), (2, 2), (1, 1), (0, 0, 0, 0))
        c2 = conv_np(p1, W2, (1, 1), (1, 1), (0, 0, 0, 0), 1)
        p2 = pool_np(c2, "sum", (2, 2), (1, 1), (1, 1), (0, 0, 0, 0)) / 4.0
        logits = p2.reshape(2, -1) @ W3 + B3
        return -log_softmax(logits)[np.arange(2), labels].mean()
    return dict(name="onnx_cnn", nodes=nodes, inputs={"x": x, "labels": labels}, inits=inits,
                outputs=[("loss", [])], fn=fn, opset=15)


def check_onnx_cnn(root):
    return check_onnx_model(root, **onnx_cnn_model())


def main():
    global F32
    argv = sys.argv[1:]
    if argv and argv[0] == "--f32":
        F32 = True
        argv = argv[1:]
    # Anything else that looks like an option is a mistake, not a folder to
    # write into.
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
    root, only = argv[0], set(argv[1:])
    failed = 0
    if F32:
        # A float32 round trip through a cast is the identity: nothing to test.
        checks = [(c.name, lambda c=c: check(as_f32(c), root))
                  for c in cases() if c.name != "cast"]
    else:
        checks = [(c.name, lambda c=c: check(c, root)) for c in cases()]
        checks += [("onnx_mlp", lambda: check_onnx_mlp(root)),
                   ("onnx_transformer", lambda: check_onnx_transformer(root)),
                   ("onnx_cnn", lambda: check_onnx_cnn(root))]
    for name, run in checks:
        if only and name not in only:
            continue
        problem = run()
        if problem:
            failed += 1
            print(f"{name}: MISMATCH {problem}")
        else:
            print(f"{name}: ok")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
