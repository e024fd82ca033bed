"""Writes the GPU pack's bench models as ONNX test folders.

  /usr/bin/python3 make_bench.py export SUITE     (PyTorch: the models, ONNX export)
  .venv/bin/python make_bench.py reference SUITE  (ONNX Runtime: the CPU reference)

export builds each model of packdata.MODELS at each batch with the pack's
values and writes SUITE/bench/<model>_b<batch>/model.onnx (PyTorch's
TorchScript exporter, opset 17, batch norms folded as exporters do) and
PyTorch's CPU output. reference runs the ONNX file with ONNX Runtime on the
CPU, checks it against PyTorch's output and that the output is neither
degenerate nor out of range, and writes test_data_set_0/input_0.pb and
output_0.pb, so the folder reads like an ONNX backend test (kiln-conformance
--pack compiles it into the pack).
"""

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import numpy as np  # noqa: E402

import packdata  # noqa: E402


def folders(suite):
    for name in packdata.MODELS:
        for batch in packdata.BATCHES:
            yield name, batch, os.path.join(suite, "bench", f"{name}_b{batch}")


def export(suite):
    import torch
    warnings.filterwarnings("ignore")
    for name, batch, folder in folders(suite):
        if os.path.exists(os.path.join(folder, "y_torch.npy")):
            continue
        os.makedirs(folder, exist_ok=True)
        model = packdata.build_model(name)
        x = torch.from_numpy(packdata.model_input(name, batch))
        with torch.no_grad():
            y = model(x)
        kw = dict(input_names=["x"], output_names=["y"], opset_version=17, do_constant_folding=True)
        try:
            torch.onnx.export(model, (x,), os.path.join(folder, "model.onnx"), dynamo=False, **kw)
        except TypeError:  # PyTorch before 2.5 has no dynamo argument
            torch.onnx.export(model, (x,), os.path.join(folder, "model.onnx"), **kw)
        np.save(os.path.join(folder, "y_torch.npy"), y.numpy())
        print(f"exported {name} batch {batch}", flush=True)


def reference(suite):
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    for name, batch, folder in folders(suite):
        data = os.path.join(folder, "test_data_set_0")
        if os.path.exists(os.path.join(data, "output_0.pb")):
            continue
        x = packdata.model_input(name, batch)
        session = ort.InferenceSession(os.path.join(folder, "model.onnx"),
                                       providers=["CPUExecutionProvider"])
        (y,) = session.run(None, {"x": x})
        y_torch = np.load(os.path.join(folder, "y_torch.npy"))
        if not np.allclose(y, y_torch, rtol=1e-3, atol=1e-4):
            sys.exit(f"make_bench.py: {name} batch {batch}: ONNX Runtime and PyTorch disagree "
                     f"(max abs difference {np.abs(y - y_torch).max():.3g})")
        spread = float(np.std(y))
        if not np.isfinite(y).all() or not 1e-3 < spread < 1e3:
            sys.exit(f"make_bench.py: {name} batch {batch}: degenerate output (std {spread:.3g})")
        os.makedirs(data, exist_ok=True)
        for what, value in (("input_0", x), ("output_0", y)):
            tensor = numpy_helper.from_array(value, "x" if what == "input_0" else "y")
            with open(os.path.join(data, what + ".pb"), "wb") as f:
                f.write(tensor.SerializeToString())
        onnx.checker.check_model(os.path.join(folder, "model.onnx"))
        print(f"reference {name} batch {batch}: output std {spread:.3g}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("export", "reference"):
        sys.exit(__doc__)
    {"export": export, "reference": reference}[sys.argv[1]](sys.argv[2])
