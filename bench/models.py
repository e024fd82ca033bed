"""Builds the benchmark model set in PyTorch and writes, per model, the ONNX
file Kiln and ONNX Runtime compile, a frozen TorchScript module for the
PyTorch timing, one input and PyTorch's output for it.

Runs on Debian's Python (/usr/bin/python3, which has python3-torch); the
rest of the harness (bench/run.py) runs in the project's venv.

Usage: /usr/bin/python3 bench/models.py OUTDIR [NAME...]
"""

import math
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


# --- MLP -------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(784, 512)
        self.l2 = nn.Linear(512, 512)
        self.l3 = nn.Linear(512, 10)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


# --- ResNet-18 -------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --- MobileNetV2 -----------------------------------------------------------

def conv_bn(cin, cout, k, stride, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6())
    return layers


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = []
        if expand != 1:
            layers += conv_bn(cin, hidden, 1, 1)
        layers += conv_bn(hidden, hidden, 3, stride, groups=hidden)
        layers += conv_bn(hidden, cout, 1, 1, act=False)
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        layers = conv_bn(3, 32, 3, 2)
        cin = 32
        for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2),
                           (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                           (6, 320, 1, 1)]:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += conv_bn(cin, 1280, 1, 1)
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, classes)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.fc(torch.flatten(x, 1))


# --- Transformer encoder ---------------------------------------------------
# Written out (not nn.TransformerEncoderLayer) so that every framework sees
# the same plain ops: no fused fast path in PyTorch, nothing ONNX export
# cannot express.

class EncoderLayer(nn.Module):
    def __init__(self, d=256, heads=4, ff=1024):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.n1 = nn.LayerNorm(d)
        self.f1 = nn.Linear(d, ff)
        self.f2 = nn.Linear(ff, d)
        self.n2 = nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        h, hd = self.heads, d // self.heads
        q, k, v = self.qkv(x).reshape(b, s, 3, h, hd).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.n1(x + self.proj(y))
        return self.n2(x + self.f2(F.gelu(self.f1(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(EncoderLayer(), EncoderLayer())

    def forward(self, x):
        return self.layers(x)


MODELS = {
    "mlp_b1": (MLP, (1, 784)),
    "mlp_b64": (MLP, (64, 784)),
    "resnet18": (ResNet18, (1, 3, 224, 224)),
    "mobilenetv2": (MobileNetV2, (1, 3, 224, 224)),
    "transformer": (Encoder, (1, 128, 256)),
}


def randomize_norms(model, gen):
    """Non-trivial batch-norm statistics, so folding them is exercised."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)


def build(name, out):
    cls, shape = MODELS[name]
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = cls().eval()
    with torch.no_grad():
        randomize_norms(model, gen)
        x = torch.randn(*shape, generator=gen)
        y = model(x)
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        torch.onnx.export(model, (x,), os.path.join(folder, "model.onnx"),
                          input_names=["x"], output_names=["y"],
                          opset_version=17, do_constant_folding=True)
        frozen = torch.jit.freeze(torch.jit.trace(model, (x,)))
        frozen.save(os.path.join(folder, "model.pt"))
        # The weights for bench/torch2_time.py, which rebuilds the module in
        # PyTorch 2.x from PyPI (eager, torch.compile, AOTInductor).
        torch.save(model.state_dict(), os.path.join(folder, "state.pt"))
        np.save(os.path.join(folder, "x.npy"), x.numpy())
        np.save(os.path.join(folder, "y_torch.npy"), y.numpy())


def main():
    # Shapes are fixed per model, which is what tracing warns about.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    out = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    for name in names:
        if not os.path.exists(os.path.join(out, name, "state.pt")):
            build(name, out)


if __name__ == "__main__":
    main()
