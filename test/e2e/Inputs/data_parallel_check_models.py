"""The MLP regression of the data-parallel tests (data_parallel_check.py,
data_parallel_cuda_check.py): MatMul, Add, Relu, MatMul, Add and a mean
squared error, with named nodes (fc1 ... mean) so profiles name them."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

I, H, O = 16, 32, 4
FLOAT, DOUBLE = TensorProto.FLOAT, TensorProto.DOUBLE


def make_model(path, batch, dtype):
    rng = np.random.default_rng(0)
    np_type = np.float64 if dtype == TensorProto.DOUBLE else np.float32
    inits = [
        numpy_helper.from_array((rng.standard_normal((I, H)) * 0.3).astype(np_type), "w1"),
        numpy_helper.from_array((rng.standard_normal(H) * 0.1).astype(np_type), "b1"),
        numpy_helper.from_array((rng.standard_normal((H, O)) * 0.3).astype(np_type), "w2"),
        numpy_helper.from_array((rng.standard_normal(O) * 0.1).astype(np_type), "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
        helper.make_node("Relu", ["h1"], ["h"], name="relu"),
        helper.make_node("MatMul", ["h", "w2"], ["y0"], name="fc2"),
        helper.make_node("Add", ["y0", "b2"], ["y"], name="fc2_bias"),
        helper.make_node("Sub", ["y", "t"], ["d"], name="error"),
        helper.make_node("Mul", ["d", "d"], ["d2"], name="square"),
        helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0, name="mean"),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", dtype, [batch, I]),
         helper.make_tensor_value_info("t", dtype, [batch, O])],
        [helper.make_tensor_value_info("loss", dtype, [])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {i.name: numpy_helper.to_array(i).astype(np.float64) for i in inits}
