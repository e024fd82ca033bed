"""Kiln from Python: compile a model with kilnc, run it with the C runtime.

    import kiln
    model = kiln.compile("model.onnx")            # kilnc --shared, then load
    outputs = model.run({"x": x})                 # dict of numpy arrays
    y = model(x)                                  # one input, one output
    model = kiln.load("build/model.so")           # an artifact compiled before
    step = kiln.compile_train("model.onnx", loss="loss", optimizer="adam", lr=1e-3)
    loss = step({"x": x, "labels": y})["loss"]; step.save_state("s.bin")
    model = kiln.compile(torch_module, example_inputs=(x,))   # via torch.onnx

The package is pure Python over the runtime's shared library
(libkiln_runtime.so, through ctypes). It finds that library and kilnc under
the install prefix in KILN_PREFIX, else in the build folder beside the
source tree this package was installed from (the ``build`` folder next to
``python/``), else on the library path and PATH. Errors raise
``kiln.KilnError`` with the runtime's or kilnc's message. CPU artifacts
only; CUDA artifacts run through kiln/runtime_cuda.h.
"""

from ._model import KilnError, Model, TrainingStep, compile, compile_train, load  # noqa: F401

__all__ = ["KilnError", "Model", "TrainingStep", "compile", "compile_train", "load"]
__version__ = "0.1.0"
