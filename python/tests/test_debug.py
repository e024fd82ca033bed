"""kiln.debug.compare_nodes and `python -m kiln.debug`: every node's result
against ONNX Runtime, and the first one outside the tolerance."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln.debug


def chain_model(path):
    """x -> Relu -> MatMul (64x64 weight) -> Add -> Tanh: only the MatMul
    changes when products compute in bf16."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w"], ["m"], name="mm"),
         helper.make_node("Add", ["m", "b"], ["a"], name="add"),
         helper.make_node("Tanh", ["a"], ["y"], name="tanh")],
        "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what onnxruntime 1.23 reads
    onnx.save(model, path)
    return {"x": rng.standard_normal((4, 64)).astype(np.float32)}


def test_all_nodes_agree(tmp_path):
    path = str(tmp_path / "chain.onnx")
    feeds = chain_model(path)
    report = kiln.debug.compare_nodes(path, feeds)
    assert [r.node for r in report.results] == ["relu", "mm", "add", "tanh"]
    assert report.first_bad is None, report.text()
    assert "all within the tolerance" in report.text()


def test_first_bad_node_is_where_the_difference_starts(tmp_path):
    # bf16 products: the MatMul is the first node off, its input exact.
    path = str(tmp_path / "chain.onnx")
    feeds = chain_model(path)
    report = kiln.debug.compare_nodes(path, feeds, rtol=1e-5, atol=1e-6, precision="bf16")
    bad = report.first_bad
    assert bad is not None and bad.node == "mm" and bad.op_type == "MatMul", report.text()
    assert bad.max_rel > 1e-4
    assert dict(bad.input_errors)["r"] == 0.0
    assert report.results[0].ok  # the Relu before it


def test_command_line(tmp_path):
    path = str(tmp_path / "chain.onnx")
    feeds = chain_model(path)
    np.save(tmp_path / "x.npy", feeds["x"])
    cmd = [sys.executable, "-m", "kiln.debug", path, "--input", f"x={tmp_path / 'x.npy'}",
           "--rtol", "1e-5", "--atol", "1e-6", "--precision=bf16"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 2, out.stderr
    assert "first outside the tolerance: mm (MatMul)" in out.stdout
    assert "input 'r': relative 0" in out.stdout
    out = subprocess.run(cmd[:-5], capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stdout + out.stderr
    bad = subprocess.run(cmd[:4] + ["--no-such-flag"], capture_output=True, text=True, env=dict(os.environ))
    assert bad.returncode == 1 and "error:" in bad.stderr


def test_more_results_than_one_artifact_holds(tmp_path, monkeypatch):
    """A model with more node results than the runtime opens as outputs
    (256 with the inputs) is compiled as several copies; here the limit is
    lowered to 3, so each copy exposes one result, and the bf16 product is
    still the one named."""
    monkeypatch.setattr(kiln.debug, "MAX_TENSORS", 3)
    path = str(tmp_path / "chain.onnx")
    feeds = chain_model(path)
    report = kiln.debug.compare_nodes(path, feeds, rtol=1e-5, atol=1e-6, precision="bf16")
    assert [r.node for r in report.results] == ["relu", "mm", "add", "tanh"]
    assert report.first_bad is not None and report.first_bad.node == "mm", report.text()
    assert len(list(tmp_path.iterdir())) == 1  # the copies lived in a temporary folder
