"""Models of the ai.onnx.preview.training ops for test/Import/training-ops.test.

Writes into the folder given as the only argument: valid and invalid
optimizer and Gradient nodes, and for `gradient_mlp.onnx` its inputs and the
expected gradients, computed with numpy in float64 from the closed-form
derivative (independent of kiln's gradient rules).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

TRAINING = "ai.onnx.preview.training"


def scalar(name, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, [])


def vec(name, n, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, [n])


def save(out, name, nodes, inputs, outputs, opsets=((TRAINING, 1),)):
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, name + ".onnx"))


def optimizer(out, name, op, n_groups, attrs, n=1, sizes=None, opsets=((TRAINING, 1),),
              r_shape=(), t_elem=TensorProto.INT64):
    """An optimizer node over `n` tensors: R, T, then n_groups lists."""
    sizes = sizes or [[3] * n for _ in range(n_groups)]
    letters = "XGVH"[:n_groups] if n_groups == 4 else ("XGV" if op == "Momentum" else "XGH")
    names = [[f"{letters[g]}{i}" for i in range(len(sizes[g]))] for g in range(n_groups)]
    inputs = [helper.make_tensor_value_info("R", TensorProto.FLOAT, list(r_shape)),
              scalar("T", t_elem)]
    for g in range(n_groups):
        inputs += [vec(nm, s) for nm, s in zip(names[g], sizes[g])]
    outs = [f"{nm}_new" for g in [0] + list(range(2, n_groups)) for nm in names[g]]
    node = helper.make_node(op, [i.name for i in inputs], outs, name="opt",
                            domain=TRAINING, **attrs)
    save(out, name, [node], inputs, [vec(o, 3) for o in outs], opsets)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mom = dict(alpha=0.9, beta=0.1, norm_coefficient=0.01, mode="standard")
    optimizer(out, "momentum", "Momentum", 3, mom)
    optimizer(out, "adam", "Adam", 4, dict(alpha=0.9, beta=0.999, epsilon=1e-8))
    optimizer(out, "adagrad", "Adagrad", 3, dict(decay_factor=0.1))
    optimizer(out, "bad_momentum_mode", "Momentum", 3, dict(mom, mode="fancy"))
    optimizer(out, "bad_momentum_no_alpha", "Momentum", 3,
              {k: v for k, v in mom.items() if k != "alpha"})
    optimizer(out, "bad_adam_shapes", "Adam", 4, {}, sizes=[[3], [3], [4], [3]])
    optimizer(out, "bad_adam_rate", "Adam", 4, {}, r_shape=(1,))
    optimizer(out, "bad_adagrad_count", "Adagrad", 3, {}, t_elem=TensorProto.INT32)
    optimizer(out, "bad_training_opset", "Adagrad", 3, {}, opsets=((TRAINING, 2),))
    optimizer(out, "bad_no_training_import", "Adagrad", 3, {}, opsets=(("", 17),))
    # Adam's four lists over 5 tensors do not divide evenly.
    inputs = [scalar("R"), scalar("T", TensorProto.INT64)] + [vec(f"t{i}", 3) for i in range(5)]
    node = helper.make_node("Adam", [i.name for i in inputs], ["a", "b"], name="opt",
                            domain=TRAINING)
    save(out, "bad_adam_uneven", [node], inputs, [vec("a", 3), vec("b", 3)])
    # A default-domain node in a model that imports only the training domain.
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    save(out, "bad_no_default_import", [node], [vec("x", 3)], [vec("y", 3)])

    # Gradient of a small network, y = sum(tanh(x @ W) * c), w.r.t. x and W.
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    w_info = helper.make_tensor_value_info("W", TensorProto.FLOAT, [3, 4])
    c_info = helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
        helper.make_node("Tanh", ["h"], ["t"], name="tanh"),
        helper.make_node("Mul", ["t", "c"], ["m"], name="scale"),
        helper.make_node("ReduceSum", ["m"], ["y"], name="sum", keepdims=0),
        helper.make_node("Gradient", ["x", "W", "c"], ["dx", "dW"], name="grad",
                         domain=TRAINING, xs=["x", "W"], zs=["c"], y="y"),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, []),
               helper.make_tensor_value_info("dx", TensorProto.FLOAT, [2, 3]),
               helper.make_tensor_value_info("dW", TensorProto.FLOAT, [3, 4])]
    save(out, "gradient_mlp", nodes, [x_info, w_info, c_info], outputs,
         opsets=(("", 17), (TRAINING, 1)))
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    c = rng.standard_normal(4).astype(np.float32)
    t = np.tanh(x.astype(np.float64) @ w.astype(np.float64))
    dh = (1 - t * t) * c.astype(np.float64)
    for name, value in [("x", x), ("W", w), ("c", c),
                        ("ref_y", np.float32((t * c).sum())),
                        ("ref_dx", dh @ w.astype(np.float64).T),
                        ("ref_dW", x.astype(np.float64).T @ dh)]:
        np.save(os.path.join(out, name + ".npy"), np.asarray(value, np.float32))
    # y names a value no node computed.
    nodes[-1] = helper.make_node("Gradient", ["x", "W"], ["dx", "dW"], name="grad",
                                 domain=TRAINING, xs=["x", "W"], y="nowhere")
    save(out, "bad_gradient_y", nodes, [x_info, w_info, c_info], outputs,
         opsets=(("", 17), (TRAINING, 1)))


if __name__ == "__main__":
    main()
