"""A torch.compile backend: ``torch.compile(model, backend="kiln")``.

TorchDynamo hands the backend each captured FX graph with example inputs.
The backend exports the graph with torch.onnx (the TorchScript exporter,
opset 17), compiles it with kilnc for those exact shapes and dtypes, and
returns a function that runs the artifact on CPU tensors (zero-copy for
contiguous inputs) and returns torch tensors.

It compiles inference graphs. A graph runs eagerly (``gm.forward``),
with one warning saying why, when:

- it must be differentiable (grad mode on and a parameter or input that
  requires grad: use ``torch.no_grad()`` or ``torch.inference_mode()``),
- an input is not a CPU tensor of a dtype Kiln takes (e.g. a SymInt from
  ``dynamic=True``, a CUDA tensor),
- the export or kilnc fails (the message is in the warning).

A call with shapes other than the compiled ones also runs eagerly (Dynamo
normally recompiles first). ``kiln.torch_backend.stats`` counts compiled
and eager graphs and calls. The name "kiln" is registered through the
package's ``torch_dynamo_backends`` entry point and again when this module
is imported.
"""

import os
import shutil
import tempfile
import warnings

from . import _model

stats = {"compiled_graphs": 0, "eager_graphs": 0, "kiln_calls": 0, "eager_calls": 0}

_DTYPES = None


def _dtypes():
    global _DTYPES
    if _DTYPES is None:
        import torch
        _DTYPES = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                   torch.int16, torch.int8, torch.uint8, torch.bool}
    return _DTYPES


def _eager(gm, why):
    warnings.warn(f"kiln backend: running this graph eagerly: {why}", stacklevel=3)
    stats["eager_graphs"] += 1

    def run(*args):
        stats["eager_calls"] += 1
        return gm.forward(*args)
    return run


def _needs_grad(gm, inputs):
    import torch
    if not torch.is_grad_enabled():
        return False
    return any(p.requires_grad for p in gm.parameters()) or any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in inputs)


def kiln_backend(gm, example_inputs, **kilnc_options):
    """The backend function: (torch.fx.GraphModule, example inputs) -> a
    callable. kilnc options as in kiln.compile (e.g. no_fuse=True) can be
    bound with functools.partial."""
    import torch

    inputs = list(example_inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            return _eager(gm, f"input {i} is a {type(x).__name__}, not a tensor (static shapes only)")
        if x.device.type != "cpu" or x.dtype not in _dtypes() or x.is_sparse:
            return _eager(gm, f"input {i} is a {x.dtype} tensor on {x.device}; Kiln runs CPU tensors here")
    if _needs_grad(gm, inputs):
        return _eager(gm, "the graph must be differentiable (grad mode is on and something requires grad); "
                          "run under torch.no_grad() or torch.inference_mode()")

    with torch.no_grad():
        probe = gm(*inputs)
    single = isinstance(probe, torch.Tensor)
    outputs = [probe] if single else list(probe)
    if not outputs or not all(isinstance(o, torch.Tensor) for o in outputs):
        return _eager(gm, "the graph returns something other than tensors")

    work = tempfile.mkdtemp(prefix="kiln-dynamo-")
    try:
        path = os.path.join(work, "graph.onnx")
        names = [f"input{i}" for i in range(len(inputs))]
        out_names = [f"output{i}" for i in range(len(outputs))]
        try:
            with torch.no_grad():
                torch.onnx.export(gm, tuple(inputs), path, dynamo=False, opset_version=17,
                                  input_names=names, output_names=out_names, do_constant_folding=True)
        except Exception as e:  # noqa: BLE001 - any exporter failure means: run eagerly
            return _eager(gm, f"torch.onnx could not export it: {type(e).__name__}: {e}")
        prefix = os.path.join(work, "graph")
        try:
            _model._kilnc([path, "-o", prefix, "--shared", *_model._flags(kilnc_options)])
            model = _model.Model(prefix + ".so")
        except _model.KilnError as e:
            return _eager(gm, f"kilnc: {str(e).splitlines()[0] if str(e) else e}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # The exporter drops inputs the graph does not read; feed by name.
    used = [int(s.name[len("input"):]) for s in model.inputs]
    shapes = [tuple(x.shape) for x in inputs]
    dtypes = [x.dtype for x in inputs]
    stats["compiled_graphs"] += 1

    def run(*args):
        if len(args) != len(inputs) or any(
                not isinstance(a, torch.Tensor) or tuple(a.shape) != s or a.dtype != d or a.device.type != "cpu"
                for a, s, d in zip(args, shapes, dtypes)):
            stats["eager_calls"] += 1
            return gm.forward(*args)
        feeds = {f"input{i}": args[i].detach().contiguous().numpy() for i in used}
        result = model.run(feeds)
        stats["kiln_calls"] += 1
        tensors = tuple(torch.from_numpy(result[n]) for n in out_names)
        return tensors[0] if single else tensors

    run.kiln_model = model
    return run


def register():
    """Registers the backend under the name "kiln" (idempotent)."""
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:
        return
    if "kiln" not in list_backends(exclude_tags=()):
        register_backend(name="kiln")(kiln_backend)


register()
