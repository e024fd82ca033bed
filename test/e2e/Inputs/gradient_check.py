#!/usr/bin/env python3
"""Finite-difference checks of every gradient rule, end to end.

    gradient_check.py OUTDIR [CASE...]

For each case: a small float64 kiln function computing y = f(params, inputs)
is written to OUTDIR/NAME.mlir with loss = sum(y * c), c a fixed random
cotangent (so each rule is checked against a full vector-Jacobian product,
not only against a vector of ones). `kilnc grad` compiles it, kiln-run runs
it, and the gradients it returns are compared with central finite
differences of an independent numpy implementation of f, never with the code
under test. Prints one line per case ("NAME: ok" or "NAME: MISMATCH ...") and
exits 1 if any case failed. kilnc and kiln-run are taken from PATH.
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
    c.append(Case("floor", [("x", uniform((3, 4), 0.1, 0.9) + RNG.integers(-3, 3, (3, 4)), "param")],
                  "%y = kiln.floor %x : tensor<3x4xf64>", np.floor))
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
    c.append(pool_case("maxpool", "max", (1, 2, 5, 5), (2, 2), (2, 2), (1, 1), (0, 1, 0, 1)))
    c.append(pool_case("maxpool_overlap", "max", (2, 1, 4, 4), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)))
    c.append(pool_case("sumpool", "sum", (1, 2, 6, 5), (3, 2), (2, 1), (1, 2), (1, 0, 1, 1)))
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


def write_case(case, folder):
    os.makedirs(folder, exist_ok=True)
    args = []
    for name, value, role in case.args:
        dtype = "i64" if role == "index" else "f64"
        args.append(f'%{name}: {mlir_type(value.shape, dtype)} {{kiln.name = "{name}"}}')
        np.save(os.path.join(folder, name + ".npy"), value)
    params = [a for a in case.args if a[2] == "param"]
    y = case.fn(*[v for _, v, _ in case.args])
    y = np.asarray(y, dtype=np.float64)
    cot = RNG.uniform(-1.0, 1.0, size=y.shape)
    np.save(os.path.join(folder, "c.npy"), cot)
    axes = list(range(y.ndim))
    yt = mlir_type(y.shape)
    text = (f"func.func @main({', '.join(args)}, %c: {yt} {{kiln.name = \"c\"}})\n"
            f"    -> (tensor<f64> {{kiln.name = \"loss\"}}) {{\n"
            f"  {case.body}\n"
            f"  %yc = kiln.mul %y, %c : {yt}, {yt} -> {yt}\n"
            f"  %loss = kiln.reduce_sum %yc axes = {axes} : {yt} -> tensor<f64>\n"
            f"  return %loss : tensor<f64>\n}}\n")
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


def check_onnx(root):
    """`kilnc grad` on an ONNX model: the initializers become inputs named
    like them and their gradients outputs named grad.<initializer>."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder = os.path.join(root, "onnx_mlp")
    os.makedirs(folder, exist_ok=True)
    x, t = uniform((4, 3)), uniform((4, 2))
    w1, b1, w2 = uniform((3, 5)), uniform((5,)), uniform((5, 2))
    inits = {"w1": w1, "b1": b1, "w2": w2}
    D = TensorProto.DOUBLE
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h0"], name="fc1"),
             helper.make_node("Tanh", ["h0"], ["h"], name="act"),
             helper.make_node("MatMul", ["h", "w2"], ["z"], name="fc2"),
             helper.make_node("Sub", ["z", "t"], ["d"], name="err"),
             helper.make_node("Mul", ["d", "d"], ["sq"], name="square"),
             helper.make_node("ReduceMean", ["sq"], ["loss"], name="mse", keepdims=0)]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", D, [4, 3]),
         helper.make_tensor_value_info("t", D, [4, 2])],
        [helper.make_tensor_value_info("loss", D, []),
         helper.make_tensor_value_info("z", D, [4, 2])],
        initializer=[numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(folder, "mlp.onnx")
    onnx.save(model, path)

    def fn(x, t, w1, b1, w2):
        d = np.tanh(x @ w1 + b1) @ w2 - t
        return (d * d).mean()
    prefix = os.path.join(folder, "grad")
    run = subprocess.run(["kilnc", "grad", path, "--loss=loss", "-o", prefix, "--shared"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return f"kilnc failed: {run.stderr.strip()}"
    values = {"x": x, "t": t, **inits}
    for n, v in values.items():
        np.save(os.path.join(folder, n + ".npy"), v)
    inputs = [f"--input={n}={os.path.join(folder, n + '.npy')}" for n in values]
    out = os.path.join(folder, "out")
    run = subprocess.run(["kiln-run", prefix + ".so", *inputs, "--output-dir", out],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return f"kiln-run failed: {run.stderr.strip()}"
    case = Case("onnx_mlp", [("x", x, "input"), ("t", t, "input"), ("w1", w1, "param"),
                             ("b1", b1, "param"), ("w2", w2, "param")], "", fn)
    expected = finite_differences(case, np.float64(1.0))
    problems = []
    loss = np.load(os.path.join(out, "loss.npy"))
    if abs(float(loss) - fn(x, t, w1, b1, w2)) > 1e-12:
        problems.append(f"loss {float(loss)!r}, expected {fn(x, t, w1, b1, w2)!r}")
    for name in inits:
        got, want = np.load(os.path.join(out, f"grad.{name}.npy")), expected[name]
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-8):
            problems.append(f"grad.{name}: {got!r}, finite differences give {want!r}")
    return "; ".join(problems)


def main():
    root = sys.argv[1]
    only = set(sys.argv[2:])
    failed = 0
    for case in cases() + [None]:
        if case is None:
            if only and "onnx_mlp" not in only:
                continue
            problem = check_onnx(root)
            name = "onnx_mlp"
        else:
            if only and case.name not in only:
                continue
            problem = check(case, root)
            name = case.name
        if problem:
            failed += 1
            print(f"{name}: MISMATCH {problem}")
        else:
            print(f"{name}: ok")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
