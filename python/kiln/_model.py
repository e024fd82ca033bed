"""The runtime over ctypes: kiln/runtime.h's generic API."""

import ctypes
import os
import shutil
import subprocess
import tempfile

import numpy as np

from . import _paths


class KilnError(RuntimeError):
    """A failure of kilnc or of the runtime, with its message."""


# kiln/runtime.h: kiln_dtype_t values and the numpy dtypes that hold them.
_DTYPES = {1: np.float32, 2: np.float16, 4: np.float64, 5: np.int8, 6: np.int32, 7: np.int64,
           8: np.bool_, 9: np.uint8, 10: np.uint16, 11: np.uint32, 12: np.uint64, 13: np.int16}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("num_elements", ctypes.c_size_t),
                ("size_bytes", ctypes.c_size_t)]


class _StateInfo(ctypes.Structure):
    _fields_ = [("tensor", _TensorInfo), ("offset", ctypes.c_size_t), ("role", ctypes.c_int)]


class _DimInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("min", ctypes.c_int64), ("max", ctypes.c_int64),
                ("computed", ctypes.c_int)]


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


_lib = None


def _runtime():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(_paths.runtime_library())
        P, S, I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
        sig = {
            "kiln_last_error": (ctypes.c_char_p, []),
            "kiln_status_string": (ctypes.c_char_p, [I]),
            "kiln_model_open": (I, [P, ctypes.POINTER(P)]),
            "kiln_model_close": (None, [P]),
            "kiln_model_name": (ctypes.c_char_p, [P]),
            "kiln_model_is_cuda": (I, [P]),
            "kiln_model_num_inputs": (S, [P]),
            "kiln_model_num_outputs": (S, [P]),
            "kiln_model_input_info": (I, [P, S, ctypes.POINTER(_TensorInfo)]),
            "kiln_model_output_info": (I, [P, S, ctypes.POINTER(_TensorInfo)]),
            "kiln_model_arena_bytes": (S, [P]),
            "kiln_model_arena_alignment": (S, [P]),
            "kiln_model_num_state": (S, [P]),
            "kiln_model_state_info": (I, [P, S, ctypes.POINTER(_StateInfo)]),
            "kiln_model_state_bytes": (S, [P]),
            "kiln_model_state_alignment": (S, [P]),
            "kiln_model_init_state": (I, [P, P, S]),
            "kiln_model_save_state": (I, [P, P, S, ctypes.c_char_p]),
            "kiln_model_load_state": (I, [P, P, S, ctypes.c_char_p]),
            "kiln_model_set_num_threads": (I, [P, S]),
            "kiln_model_run": (I, [P, ctypes.POINTER(_Tensor), S, ctypes.POINTER(_Tensor), S, P, S]),
            "kiln_model_run_with_state": (I, [P, ctypes.POINTER(_Tensor), S, ctypes.POINTER(_Tensor), S,
                                              P, S, P, S]),
            "kiln_model_num_dims": (S, [P]),
            "kiln_model_dims_of_inputs": (I, [P, ctypes.POINTER(_Tensor), S, ctypes.POINTER(ctypes.c_int64)]),
            "kiln_model_output_shape": (I, [P, S, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)]),
            "kiln_model_dim_info": (I, [P, S, ctypes.POINTER(_DimInfo)]),
            "kiln_model_last_dims": (I, [P, ctypes.POINTER(ctypes.c_int64)]),
        }
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        _lib = lib
    return _lib


def _check(status, what):
    if status != 0:
        lib = _runtime()
        raise KilnError(f"{what}: {lib.kiln_status_string(status).decode()}: {lib.kiln_last_error().decode()}")


def _aligned(nbytes, alignment):
    """A zeroed byte buffer of nbytes at a multiple of alignment."""
    raw = np.zeros(max(nbytes, 1) + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start:start + max(nbytes, 1)]


class _Signature:
    def __init__(self, info):
        self.name = info.name.decode()
        self.code = info.dtype
        self.dtype = _DTYPES.get(info.dtype)
        self.shape = tuple(info.shape[i] for i in range(info.rank))
        self.size_bytes = info.size_bytes


class Model:
    """A loaded CPU artifact (kilnc --shared). Runs with its own arena; not
    for concurrent use from several threads (give each thread a Model)."""

    def __init__(self, path):
        lib = _runtime()
        path = os.path.abspath(path)
        try:
            self._so = ctypes.CDLL(path)
        except OSError as e:
            raise KilnError(f"cannot load {path}: {e}") from None
        try:
            entry = self._so.kiln_artifact_v1
        except AttributeError:
            raise KilnError(f"{path} is not a Kiln shared artifact (compile it with kilnc --shared)") from None
        entry.restype = ctypes.c_void_p
        self._artifact = entry()
        self._handle = ctypes.c_void_p()
        _check(lib.kiln_model_open(self._artifact, ctypes.byref(self._handle)), f"opening {path}")
        if lib.kiln_model_is_cuda(self._handle):
            self.close()
            raise KilnError(f"{path} is a CUDA artifact; the Python package runs CPU artifacts")
        self.path = path
        self.name = lib.kiln_model_name(self._handle).decode()
        self.inputs = [self._info(lib.kiln_model_input_info, i)
                       for i in range(lib.kiln_model_num_inputs(self._handle))]
        self.outputs = [self._info(lib.kiln_model_output_info, i)
                        for i in range(lib.kiln_model_num_outputs(self._handle))]
        self._arena = _aligned(lib.kiln_model_arena_bytes(self._handle),
                               max(lib.kiln_model_arena_alignment(self._handle), 64))
        # Symbolic dimensions (kilnc --dim NAME=LO..HI): a run takes its sizes
        # from the inputs' shapes; the signatures' shapes are the bounds.
        self._num_dims = lib.kiln_model_num_dims(self._handle)
        # Sizes the run computes from data (a NonZero's count): outputs come
        # back at the shapes the run's sizes give them.
        self._computed = False
        for d in range(self._num_dims):
            info = _DimInfo()
            _check(lib.kiln_model_dim_info(self._handle, d, ctypes.byref(info)), "reading the dimensions")
            self._computed |= bool(info.computed)

    def _info(self, fn, i):
        info = _TensorInfo()
        _check(fn(self._handle, i, ctypes.byref(info)), "reading the signature")
        return _Signature(info)

    def close(self):
        if getattr(self, "_handle", None):
            _runtime().kiln_model_close(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def set_num_threads(self, n):
        _check(_runtime().kiln_model_set_num_threads(self._handle, n), "setting the threads")

    def _views(self, feeds):
        """Input views; arrays converted (copied) only where not already
        contiguous arrays of the input's dtype."""
        if not isinstance(feeds, dict):
            raise KilnError("inputs are a dict of name -> array")
        unknown = set(feeds) - {s.name for s in self.inputs}
        if unknown:
            raise KilnError(f"model '{self.name}' has no input {sorted(unknown)}; "
                            f"its inputs are {[s.name for s in self.inputs]}")
        keep, views = [], (_Tensor * max(len(self.inputs), 1))()
        for i, sig in enumerate(self.inputs):
            if sig.name not in feeds:
                raise KilnError(f"no value for input '{sig.name}'")
            if sig.dtype is None:
                raise KilnError(f"input '{sig.name}' has a dtype numpy does not hold (kiln code {sig.code})")
            a = np.ascontiguousarray(feeds[sig.name], dtype=sig.dtype)
            # With symbolic dimensions the runtime checks the sizes.
            if a.shape != sig.shape and (not self._num_dims or a.ndim != len(sig.shape)):
                raise KilnError(f"input '{sig.name}': expected shape {sig.shape}, found {a.shape}")
            shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            keep += [a, shape]
            views[i] = _Tensor(sig.code, len(sig.shape), shape, a.ctypes.data)
        return keep, views

    def _outputs(self, inputs=None):
        """Output arrays and views: at the signature's shapes, or, for a model
        with symbolic dimensions, at the sizes the input views give."""
        dims = None
        if self._num_dims:
            dims = (ctypes.c_int64 * self._num_dims)()
            _check(_runtime().kiln_model_dims_of_inputs(self._handle, inputs, len(self.inputs), dims),
                   f"reading the sizes of '{self.name}'")
        arrays, keep, views = [], [], (_Tensor * max(len(self.outputs), 1))()
        for i, sig in enumerate(self.outputs):
            if sig.dtype is None:
                raise KilnError(f"output '{sig.name}' has a dtype numpy does not hold (kiln code {sig.code})")
            shape = (ctypes.c_int64 * max(len(sig.shape), 1))(*sig.shape)
            if dims is not None:
                _check(_runtime().kiln_model_output_shape(self._handle, i, dims, shape), "reading an output shape")
            a = np.empty(tuple(shape[d] for d in range(len(sig.shape))), dtype=sig.dtype)
            arrays.append(a)
            keep.append(shape)
            views[i] = _Tensor(sig.code, len(sig.shape), shape, a.ctypes.data)
        return arrays, keep, views

    def run(self, feeds):
        """Runs once; returns {output name: array}."""
        keep, inputs = self._views(feeds)
        arrays, keep_out, outputs = self._outputs(inputs)
        _check(self._call(inputs, outputs), f"running '{self.name}'")
        if self._computed:
            arrays = self._computed_outputs(arrays)
        return {sig.name: a for sig, a in zip(self.outputs, arrays)}

    def _computed_outputs(self, arrays):
        """Each output's leading elements, at the shape the last run's sizes
        give it (the rest of its buffer is unspecified)."""
        lib = _runtime()
        dims = (ctypes.c_int64 * self._num_dims)()
        _check(lib.kiln_model_last_dims(self._handle, dims), "reading the run's sizes")
        shaped = []
        for i, (sig, a) in enumerate(zip(self.outputs, arrays)):
            shape = (ctypes.c_int64 * max(len(sig.shape), 1))()
            _check(lib.kiln_model_output_shape(self._handle, i, dims, shape), "reading an output shape")
            shape = tuple(shape[d] for d in range(len(sig.shape)))
            shaped.append(a.reshape(-1)[:int(np.prod(shape))].reshape(shape).copy())
        return shaped

    def _call(self, inputs, outputs):
        return _runtime().kiln_model_run(self._handle, inputs, len(self.inputs), outputs, len(self.outputs),
                                         self._arena.ctypes.data, self._arena.nbytes)

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            raise KilnError(f"model '{self.name}' takes {len(self.inputs)} inputs, found {len(args)}")
        out = self.run({sig.name: a for sig, a in zip(self.inputs, args)})
        values = list(out.values())
        return values[0] if len(values) == 1 else tuple(values)


class TrainingStep(Model):
    """A training step (kilnc train --shared): each call runs one optimizer
    step on its batch and updates the state this object holds."""

    def __init__(self, path):
        super().__init__(path)
        lib = _runtime()
        if lib.kiln_model_num_state(self._handle) == 0:
            self.close()
            raise KilnError(f"{path} has no state (compile it with kilnc train)")
        self.state_bytes = lib.kiln_model_state_bytes(self._handle)
        self._state = _aligned(self.state_bytes, max(lib.kiln_model_state_alignment(self._handle), 64))
        _check(lib.kiln_model_init_state(self._handle, self._state.ctypes.data, self.state_bytes),
               "initializing the state")
        self._layout = []
        for i in range(lib.kiln_model_num_state(self._handle)):
            info = _StateInfo()
            _check(lib.kiln_model_state_info(self._handle, i, ctypes.byref(info)), "reading the state")
            self._layout.append((_Signature(info.tensor), info.offset))

    def _call(self, inputs, outputs):
        return _runtime().kiln_model_run_with_state(
            self._handle, inputs, len(self.inputs), outputs, len(self.outputs), self._state.ctypes.data,
            self.state_bytes, self._arena.ctypes.data, self._arena.nbytes)

    def state(self):
        """{state tensor name: a copy of its current value}."""
        return {sig.name: np.frombuffer(self._state[off:off + sig.size_bytes].tobytes(), dtype=sig.dtype)
                .reshape(sig.shape) for sig, off in self._layout}

    def save_state(self, path):
        """Writes the state to path as a Kiln state file (kiln-run's format:
        atomic, with the layout's fingerprint and a checksum)."""
        _check(_runtime().kiln_model_save_state(self._handle, self._state.ctypes.data, self._state.nbytes,
                                                os.fsencode(path)), "saving the state")

    def load_state(self, path):
        """Reads a state file saved for this model; refuses another model's
        or a damaged one, and then leaves the state as it was."""
        _check(_runtime().kiln_model_load_state(self._handle, self._state.ctypes.data, self._state.nbytes,
                                                os.fsencode(path)), "loading the state")


def _kilnc(args):
    p = subprocess.run([_paths.kilnc(), *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise KilnError((p.stderr or p.stdout).strip() or f"kilnc failed ({p.returncode})")


def _flags(options):
    """kilnc flags from keyword options: no_fuse=True -> --no-fuse,
    memory_budget="1M" -> --memory-budget=1M, a list repeats the flag
    (dim=["batch=4", "seq=128"]), and dims={"batch": 4} pins dimensions."""
    flags = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if key == "dims":
            flags += [f"--dim={name}={size}" for name, size in value.items()]
        elif value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            flags += [f"{flag}={v}" for v in value]
        elif value is not False and value is not None:
            flags.append(f"{flag}={value}")
    return flags


def _onnx_path(model, example_inputs, work):
    """A path to an ONNX file: the argument itself, or a torch.nn.Module
    exported with torch.onnx (its TorchScript exporter, opset 17)."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    try:
        import torch
    except ImportError:
        raise KilnError("kiln.compile takes an ONNX file, or a torch.nn.Module where torch is installed") from None
    if not isinstance(model, torch.nn.Module) or example_inputs is None:
        raise KilnError("kiln.compile(module, example_inputs=(x, ...)) for a torch.nn.Module")
    path = os.path.join(work, "model.onnx")
    kw = dict(opset_version=17, do_constant_folding=True,
              input_names=[f"input{i}" for i in range(len(example_inputs))])
    try:
        torch.onnx.export(model.eval(), tuple(example_inputs), path, dynamo=False, **kw)
    except TypeError:  # PyTorch before 2.5 has no dynamo argument
        torch.onnx.export(model.eval(), tuple(example_inputs), path, **kw)
    return path


def compile(model, example_inputs=None, target="cpu", **options):
    """Compiles an ONNX file (or a torch.nn.Module with example_inputs) with
    kilnc --shared and loads it. Keyword options are kilnc flags:
    compile("m.onnx", memory_budget="1M", no_fuse=True)."""
    if target != "cpu":
        raise KilnError("the Python package runs CPU artifacts (target='cpu')")
    work = tempfile.mkdtemp(prefix="kiln-")
    try:
        source = _onnx_path(model, example_inputs, work)
        prefix = os.path.join(work, "model")
        _kilnc([source, "-o", prefix, "--shared", *_flags(options)])
        return Model(prefix + ".so")
    finally:
        # The loaded .so stays mapped after its file is removed.
        shutil.rmtree(work, ignore_errors=True)


def compile_train(model, loss, optimizer="sgd", lr=0.01, **options):
    """kilnc train: one optimizer step over the loss output; returns a
    TrainingStep holding the parameters and the optimizer's state."""
    work = tempfile.mkdtemp(prefix="kiln-")
    try:
        prefix = os.path.join(work, "step")
        _kilnc(["train", os.fspath(model), f"--loss={loss}", f"--optimizer={optimizer}", f"--lr={lr!r}",
                "-o", prefix, "--shared", *_flags(options)])
        return TrainingStep(prefix + ".so")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load(path):
    """Loads a CPU artifact compiled before (kilnc --shared): a Model, or a
    TrainingStep for a training step."""
    m = Model(path)
    if _runtime().kiln_model_num_state(m._handle):
        m.close()
        return TrainingStep(path)
    return m
