"""The GPU pack's bench models and their data, the same on every machine.

The pack carries compiled CUDA artifacts, not weights: the machine that
checks them rebuilds each PyTorch model (bench/models.py) and its input with
`fill`, an integer hash of the tensor's name and element index computed in
numpy's uint64 arithmetic, so the values are bit-identical on any numpy and
PyTorch version. Weights are ternary ({-1, 0, 1} times a power of two that
keeps activations near unit scale) and batch norms have unit gain and
variance + eps == 1, so the exporter's batch-norm folding stays exact and
the artifacts (which hold the folded weights) compress well enough to
travel; inputs are a fine grid in [-2, 2). Timing does not depend on the
values.
"""

import math

import numpy as np

# (model of bench/models.py, input shape without the batch, batches)
MODELS = {
    "mlp": ("mlp_b1", (784,)),
    "resnet18": ("resnet18", (3, 224, 224)),
    "mobilenetv2": ("mobilenetv2", (3, 224, 224)),
    "transformer": ("transformer", (128, 256)),
}
BATCHES = (1, 32)


def _fnv1a(text):
    h = 1469598103934665603
    for b in text.encode():
        h = ((h ^ b) * 1099511628211) % (1 << 64)
    return h


def _hash(name, n):
    """n pseudo-random uint64s for `name` (splitmix64 of the index)."""
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(_fnv1a(name))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def ternary(name, shape):
    """Weights: {-1, 0, 1} * 2^-e, 2^-e about sqrt(1.5 / fan_in)."""
    n = int(np.prod(shape))
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    scale = 2.0 ** round(math.log2(math.sqrt(1.5 / fan_in)))
    v = (_hash(name, n) % np.uint64(3)).astype(np.int64) - 1
    return (v * scale).astype(np.float32).reshape(shape)


def coarse(name, shape, step=1 / 16, levels=5):
    """Biases and shifts: small multiples of `step` around 0."""
    n = int(np.prod(shape))
    v = (_hash(name, n) % np.uint64(levels)).astype(np.int64) - levels // 2
    return (v * step).astype(np.float32).reshape(shape)


def model_input(name, batch):
    shape = (batch,) + MODELS[name][1]
    n = int(np.prod(shape))
    v = (_hash("input/" + name, n) % np.uint64(128)).astype(np.int64) - 64
    return (v / 32.0).astype(np.float32).reshape(shape)


def fill_module(model):
    """Sets every parameter and buffer of a bench model (torch imported by
    the caller) from its name."""
    import torch
    eps_var = None
    with torch.no_grad():
        for mod_name, m in model.named_modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                if isinstance(m, torch.nn.BatchNorm2d):
                    # running_var + eps == 1 in float32: the folded scale is 1.
                    eps_var = np.float32(1) - np.float32(m.eps)
                    assert np.float32(eps_var) + np.float32(m.eps) == np.float32(1)
                    m.running_var.fill_(float(eps_var))
                    m.running_mean.copy_(torch.from_numpy(coarse(mod_name + ".running_mean",
                                                                 tuple(m.running_mean.shape))))
                m.weight.fill_(1.0)
                m.bias.copy_(torch.from_numpy(coarse(mod_name + ".bias", tuple(m.bias.shape))))
                continue
            for p_name, p in m.named_parameters(recurse=False):
                full = mod_name + "." + p_name
                shape = tuple(p.shape)
                p.copy_(torch.from_numpy(ternary(full, shape) if p.dim() > 1 else coarse(full, shape)))
    return model


def build_model(name):
    """The PyTorch model `name` with the pack's values (bench/models.py must
    be importable as `models`)."""
    import models
    cls, _ = models.MODELS[MODELS[name][0]]
    return fill_module(cls().eval())
