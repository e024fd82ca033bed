#!/usr/bin/env python3
"""Models with If nodes, as exporters write them, for check_models.py.

    make_control_flow_models.py OUTDIR

- if_runtime_true / if_runtime_false: one model, a condition that is a
  graph input (known only at run time), run with each value. The branches
  read the enclosing graph's weights (2,048 elements: too large to be
  folded away) and have a Constant node and an initializer of their own;
  both give [4, 32] and a scalar.
- if_static: the condition is computed from a static shape (Equal(Shape(x)[0],
  4)), so it is known at compile time; the branches give different shapes,
  which only the branch taken decides.
- if_sizes_differ_true / if_sizes_differ_false: a run-time condition whose
  branches give [4, 64] and [64, 4]: each size is computed at run time
  (decision 0031), bounded by 64.
- if_nested: an If inside a branch, both conditions run-time inputs.
- loop_constant / loop_shape_trip: a Loop of 3 iterations whose trip count
  is a Constant or Shape(x)[0] - 1, a carried state through a weight, the
  iteration number read, the states stacked as a scan output.
- scan_rnn: an RNN as a Scan over axis 1, a second scan input read
  backwards, scan outputs on axis 1 and reversed on axis 0.

Also writes, for the error checks of control-flow.test (not run here):
if_ranks_differ.onnx (a run-time condition, branches of different ranks)
if_leak.onnx (a node after the If reads a name defined in a branch) and
loop_runtime_trip.onnx (a trip count that is a graph input) and
loop_too_long.onnx (100,000 iterations: too many to unroll).

Writes OUTDIR/NAME.onnx with ONNX Runtime's outputs for its inputs
(OUTDIR/NAME/input_K.npy, output_K.npy).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper, numpy_helper

rng = np.random.default_rng(11)
F, B, I64 = T.FLOAT, T.BOOL, T.INT64
vi = helper.make_tensor_value_info


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(value), name))


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0] + "_" + op.lower(), **attrs)


def weight(name, shape):
    return numpy_helper.from_array(rng.normal(0, 0.2, shape).astype(np.float32), name)


def branch(name, nodes, outputs, inits=()):
    return helper.make_graph(nodes, name, [], [vi(o, F, None) for o in outputs], list(inits))


def runtime_if():
    then_g = branch("then", [
        node("MatMul", ["x", "w1"], ["t_mm"]), const("t_half", np.float32(0.5)),
        node("Mul", ["t_mm", "t_half"], ["t_scaled"]), node("Add", ["t_scaled", "t_bias"], ["t_y"]),
        node("Relu", ["t_y"], ["t_out"]), node("ReduceSum", ["x"], ["t_sum"], keepdims=0)],
        ["t_out", "t_sum"], [weight("t_bias", (32,))])
    else_g = branch("else", [
        node("MatMul", ["x", "w2"], ["e_mm"]), node("Sigmoid", ["e_mm"], ["e_out"]),
        node("ReduceMax", ["x"], ["e_max"], keepdims=0)], ["e_out", "e_max"])
    nodes = [node("If", ["flag"], ["y", "s"], then_branch=then_g, else_branch=else_g),
             node("Add", ["y", "y"], ["z"])]
    graph = helper.make_graph(nodes, "if_runtime", [vi("x", F, [4, 64]), vi("flag", B, [])],
                              [vi("z", F, [4, 32]), vi("s", F, [])],
                              [weight("w1", (64, 32)), weight("w2", (64, 32))])
    return graph


def static_if():
    then_g = branch("then", [const("shape_a", np.array([2, 128], np.int64)),
                             node("Reshape", ["h", "shape_a"], ["a"])], ["a"])
    else_g = branch("else", [node("Neg", ["h"], ["b"])], ["b"])
    nodes = [node("MatMul", ["x", "w1"], ["h"]),
             node("Shape", ["x"], ["shape"]), const("zero", np.array(0, np.int64)),
             node("Gather", ["shape", "zero"], ["n"], axis=0), const("four", np.array(4, np.int64)),
             node("Equal", ["n", "four"], ["is4"]),
             node("If", ["is4"], ["y"], then_branch=then_g, else_branch=else_g)]
    return helper.make_graph(nodes, "if_static", [vi("x", F, [4, 64])], [vi("y", F, [2, 128])],
                             [weight("w1", (64, 64))])


def nested_if():
    inner_then = branch("inner_then", [node("Tanh", ["h"], ["it"])], ["it"])
    inner_else = branch("inner_else", [node("Sigmoid", ["h"], ["ie"])], ["ie"])
    then_g = branch("then", [node("MatMul", ["x", "w1"], ["h"]),
                             node("If", ["inner"], ["ti"], then_branch=inner_then,
                                  else_branch=inner_else)], ["ti"])
    else_g = branch("else", [node("MatMul", ["x", "w2"], ["eh"])], ["eh"])
    nodes = [node("If", ["outer"], ["y"], then_branch=then_g, else_branch=else_g)]
    return helper.make_graph(nodes, "if_nested",
                             [vi("x", F, [4, 64]), vi("outer", B, []), vi("inner", B, [])],
                             [vi("y", F, [4, 32])], [weight("w1", (64, 32)), weight("w2", (64, 32))])


def differ_if(else_shape):
    """A run-time If: Neg(x) [4, 64] or x reshaped to `else_shape`."""
    return helper.make_graph(
        [node("If", ["flag"], ["y"], then_branch=branch("then", [node("Neg", ["x"], ["a"])], ["a"]),
              else_branch=branch("else", [const("shape", np.array(else_shape, np.int64)),
                                          node("Reshape", ["x", "shape"], ["b"])], ["b"]))],
        "if_differ", [vi("x", F, [4, 64]), vi("flag", B, [])],
        [vi("y", F, ["rows", "cols"][:len(else_shape)])])


def loop_model(trip_from_shape):
    """A Loop of 3 iterations (M a Constant, or Shape(x)[0] - 1 as
    TorchScript writes it), a carried [4, 32] state through a 32x32 weight
    and the iteration number, the states stacked as a scan output."""
    body = helper.make_graph([
        node("Identity", ["cond_in"], ["cond_out"]),
        node("MatMul", ["h_in", "wl"], ["l_mm"]),
        node("Cast", ["i"], ["i_f"], to=F),
        node("Add", ["l_mm", "i_f"], ["l_sum"]),
        node("Tanh", ["l_sum"], ["h_out"]),
        node("Identity", ["h_out"], ["h_scan"])], "body",
        [vi("i", I64, []), vi("cond_in", B, []), vi("h_in", F, [4, 32])],
        [vi("cond_out", B, []), vi("h_out", F, [4, 32]), vi("h_scan", F, [4, 32])])
    if trip_from_shape:
        trip = [node("Shape", ["x"], ["shape"]), const("zero", np.array(0, np.int64)),
                node("Gather", ["shape", "zero"], ["n"], axis=0), const("one", np.array(1, np.int64)),
                node("Sub", ["n", "one"], ["m"])]
    else:
        trip = [const("m", np.array(3, np.int64))]
    nodes = trip + [const("true", np.array(True)), node("MatMul", ["x", "w0"], ["h0"]),
                    node("Loop", ["m", "true", "h0"], ["h", "hs"], body=body)]
    return helper.make_graph(nodes, "loop", [vi("x", F, [4, 64])],
                             [vi("h", F, [4, 32]), vi("hs", F, [3, 4, 32])],
                             [weight("w0", (64, 32)), weight("wl", (32, 32))])


def scan_model():
    """An RNN as a Scan over axis 1 of x [4, 5, 16]: h' = tanh(x_t Wx + h Wh),
    a second scan input read backwards, the outputs stacked on axis 1 and
    in reverse on axis 0."""
    body = helper.make_graph([
        node("MatMul", ["x_t", "wx"], ["s_x"]), node("MatMul", ["h_in", "wh"], ["s_h"]),
        node("Add", ["s_x", "s_h"], ["s_sum"]), node("Add", ["s_sum", "r_t"], ["s_all"]),
        node("Tanh", ["s_all"], ["h_out"]), node("Identity", ["h_out"], ["y_t"]),
        node("Neg", ["h_out"], ["z_t"])], "body",
        [vi("h_in", F, [4, 32]), vi("x_t", F, [4, 16]), vi("r_t", F, [4, 32])],
        [vi("h_out", F, [4, 32]), vi("y_t", F, [4, 32]), vi("z_t", F, [4, 32])])
    nodes = [node("Scan", ["h0", "x", "r"], ["h", "y", "z"], body=body, num_scan_inputs=2,
                  scan_input_axes=[1, 0], scan_input_directions=[0, 1],
                  scan_output_axes=[1, 0], scan_output_directions=[0, 1])]
    return helper.make_graph(nodes, "scan",
                             [vi("h0", F, [4, 32]), vi("x", F, [4, 5, 16]), vi("r", F, [5, 4, 32])],
                             [vi("h", F, [4, 32]), vi("y", F, [4, 5, 32]), vi("z", F, [5, 4, 32])],
                             [weight("wx", (16, 32)), weight("wh", (32, 32))])


def save(out, name, graph, feeds, check=True):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name + ".onnx")
    onnx.save(model, path)
    if feeds is None:
        return
    os.makedirs(os.path.join(out, name), exist_ok=True)
    for k, (key, value) in enumerate(feeds.items()):
        np.save(os.path.join(out, name, f"input_{k}.npy"), value)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, y in enumerate(session.run(None, feeds)):
        np.save(os.path.join(out, name, f"output_{k}.npy"), y)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x = rng.normal(0, 1, (4, 64)).astype(np.float32)
    for value in (True, False):
        save(out, f"if_runtime_{str(value).lower()}", runtime_if(), {"x": x, "flag": np.array(value)})
    save(out, "if_static", static_if(), {"x": x})
    for outer, inner in ((True, False), (False, True), (True, True)):
        save(out, f"if_nested_{int(outer)}{int(inner)}", nested_if(),
             {"x": x, "outer": np.array(outer), "inner": np.array(inner)})
    save(out, "loop_constant", loop_model(False), {"x": x})
    save(out, "loop_shape_trip", loop_model(True), {"x": x})
    save(out, "scan_rnn", scan_model(), {"h0": rng.normal(0, 1, (4, 32)).astype(np.float32),
                                         "x": rng.normal(0, 1, (4, 5, 16)).astype(np.float32),
                                         "r": rng.normal(0, 1, (5, 4, 32)).astype(np.float32)})
    for value in (True, False):
        save(out, f"if_sizes_differ_{str(value).lower()}", differ_if([64, 4]),
             {"x": x, "flag": np.array(value)})
    # Errors (kilnc only).
    save(out + "/errors", "if_ranks_differ", differ_if([256]), None, check=False)
    leak = helper.make_graph(
        [node("If", ["flag"], ["y"], then_branch=branch("then", [node("Neg", ["x"], ["a"])], ["a"]),
              else_branch=branch("else", [node("Abs", ["x"], ["b"])], ["b"])),
         node("Add", ["y", "a"], ["z"])],
        "if_leak", [vi("x", F, [4, 64]), vi("flag", B, [])], [vi("z", F, [4, 64])])
    save(out + "/errors", "if_leak", leak, None, check=False)
    runtime_trip = loop_model(False)
    del runtime_trip.node[0]
    runtime_trip.input.append(vi("m", I64, []))
    save(out + "/errors", "loop_runtime_trip", runtime_trip, None)
    too_long = loop_model(False)
    too_long.node[0].CopyFrom(const("m", np.array(100000, np.int64)))
    save(out + "/errors", "loop_too_long", too_long, None, check=False)


if __name__ == "__main__":
    main()
