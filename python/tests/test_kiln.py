"""The kiln Python package against ONNX Runtime and numpy references.

Run by CTest's python.package (python/tests/check.sh) after `pip install`
of the package; the PyTorch test (test_torch.py) skips, saying so, where
torch is absent.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MLP = os.path.join(SRC, "examples", "mlp.onnx")


def mlp_input():
    return np.fromfile(os.path.join(SRC, "examples", "mlp_input.bin"), dtype=np.float32).reshape(1, 32)


def ort_run(path, feeds):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def test_compile_and_run_matches_onnxruntime():
    model = kiln.compile(MLP)
    assert [s.name for s in model.inputs] == ["input"]
    x = mlp_input()
    got = model.run({"input": x})
    want = ort_run(MLP, {"input": x})
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
    # One input, one output: the call form returns the array.
    np.testing.assert_array_equal(model(x), got["probabilities"])


def test_inputs_are_converted_and_checked():
    model = kiln.compile(MLP)
    x = mlp_input()
    # float64 and non-contiguous inputs are converted.
    wide = np.asfortranarray(x.astype(np.float64))
    np.testing.assert_array_equal(model(wide), model(x))
    with pytest.raises(kiln.KilnError, match=r"input 'input': expected shape \(1, 32\), found \(2, 32\)"):
        model(np.zeros((2, 32), np.float32))
    with pytest.raises(kiln.KilnError, match="has no input"):
        model.run({"input": x, "other": x})
    with pytest.raises(kiln.KilnError, match="no value for input 'input'"):
        model.run({})


def test_kilnc_options_and_errors():
    model = kiln.compile(MLP, no_fuse=True, memory_budget="64K")
    assert model(mlp_input()).shape == (1, 10)
    with pytest.raises(kiln.KilnError, match="cannot read|No such file|error"):
        kiln.compile("/nonexistent/model.onnx")
    with pytest.raises(kiln.KilnError, match="not a Kiln shared artifact|cannot load"):
        kiln.load(__file__)


def test_load_a_compiled_artifact(tmp_path):
    import subprocess
    from kiln import _paths
    prefix = str(tmp_path / "mlp")
    subprocess.run([_paths.kilnc(), MLP, "-o", prefix, "--shared"], check=True)
    model = kiln.load(prefix + ".so")
    assert isinstance(model, kiln.Model) and not isinstance(model, kiln.TrainingStep)
    x = mlp_input()
    np.testing.assert_allclose(model(x), ort_run(MLP, {"input": x})["probabilities"], rtol=1e-5, atol=1e-6)


def classifier(path):
    """Linear(4 -> 3) + SoftmaxCrossEntropyLoss, float32."""
    rng = np.random.default_rng(1)
    w = rng.normal(0, 0.5, size=(4, 3)).astype(np.float32)
    b = np.zeros(3, np.float32)
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["logits"], name="fc"),
         helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"], name="xent")],
        "clf",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 4]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [8])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return w, b


def test_training_step_against_numpy(tmp_path):
    path = str(tmp_path / "clf.onnx")
    w, b = classifier(path)
    step = kiln.compile_train(path, loss="loss", optimizer="sgd", lr=0.5)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=8).astype(np.int64)
    pw, pb = w.astype(np.float64), b.astype(np.float64)
    for _ in range(5):
        loss = step.run({"x": x, "labels": y})["loss"]
        # numpy float64: softmax cross entropy, mean over the batch, SGD.
        logits = x.astype(np.float64) @ pw + pb
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        want_loss = -np.log(p[np.arange(8), y]).mean()
        np.testing.assert_allclose(float(loss), want_loss, rtol=1e-5)
        d = p.copy()
        d[np.arange(8), y] -= 1
        d /= 8
        pw -= 0.5 * x.T.astype(np.float64) @ d
        pb -= 0.5 * d.sum(0)
    state = step.state()
    np.testing.assert_allclose(state["w"], pw, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(state["b"], pb, rtol=1e-4, atol=1e-6)
    # Saved and loaded into a fresh step: the same state, the same next loss.
    saved = str(tmp_path / "state.bin")
    step.save_state(saved)
    again = kiln.compile_train(path, loss="loss", optimizer="sgd", lr=0.5)
    again.load_state(saved)
    np.testing.assert_array_equal(again.state()["w"], state["w"])
    assert float(again(x, y)) == float(step(x, y))
    before = again.state()["w"]
    with pytest.raises(kiln.KilnError, match="is not a Kiln state file"):
        open(saved, "wb").write(b"abc")
        again.load_state(saved)
    np.testing.assert_array_equal(again.state()["w"], before)  # untouched


def test_symbolic_dimensions_pinned(tmp_path):
    path = str(tmp_path / "dyn.onnx")
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], "dyn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    with pytest.raises(kiln.KilnError, match="--dim batch=N"):
        kiln.compile(path)
    x = np.ones((6, 4), np.float32)
    for model in (kiln.compile(path, dims={"batch": 6}), kiln.compile(path, dim=["batch=6"])):
        assert model.inputs[0].shape == (6, 4)
        np.testing.assert_allclose(model(x), ort_run(path, {"x": x})["y"], rtol=1e-6)


def test_symbolic_dimensions_range(tmp_path):
    path = str(tmp_path / "dyn.onnx")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"], name="fc"),
                           helper.make_node("ReduceSum", ["m"], ["y"], name="sum", axes=[1], keepdims=0)], "dyn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 8
    onnx.save(m, path)
    # One artifact for every size in the ranges; the signature gives the bounds.
    model = kiln.compile(path, dims={"batch": "1..8", "seq": "2..16"})
    assert model.inputs[0].shape == (8, 16, 4)
    for shape in [(1, 2, 4), (5, 7, 4), (8, 16, 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        y = model(x)
        assert y.shape == (shape[0], 3)
        np.testing.assert_allclose(y, ort_run(path, {"x": x})["y"], rtol=1e-5, atol=1e-5)
    with pytest.raises(kiln.KilnError, match=r"dimension 'seq' \(axis 1\) is 17, outside its range 2..16"):
        model(np.zeros((1, 17, 4), np.float32))
    with pytest.raises(kiln.KilnError, match="expected shape"):
        model(np.zeros((1, 4), np.float32))
