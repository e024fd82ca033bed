#!/usr/bin/env python3
"""Exports three models with symbolic dimensions as a torch user would
(issue 22's done criteria), random weights, into OUT:

    make_torch_dim_models.py OUT

- mlp.onnx: Linear-ReLU-Linear-ReLU-Linear, dynamic batch;
- cnn.onnx: two convolutions with BatchNorm (eval) and ReLU, a max pool,
  a global average pool and a Linear, dynamic batch;
- encoder.onnx: nn.TransformerEncoder (2 layers, width 64, 4 heads),
  dynamic batch and sequence.

Each is exported by the current exporter (torch.onnx.export with
dynamo=True, opset 18) with torch.export.Dim names batch and seq, so the
inputs declare those `dim_param`s. Exits 77 (skipped) without torch.
"""
import os
import sys
import warnings

try:
    import torch
    from torch import nn
except ImportError:
    print("torch is not installed: skipped")
    sys.exit(77)


def export(model, example, dims, path):
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), path, dynamo=True, opset_version=18,
                          input_names=["x"], output_names=["y"],
                          dynamic_shapes=({i: d for i, d in dims.items()},),
                          external_data=False, verbose=False)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("seq", min=2, max=128)

    mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    export(mlp, torch.randn(4, 32), {0: batch}, os.path.join(out, "mlp.onnx"))

    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        for m in cnn.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    export(cnn, torch.randn(2, 3, 16, 16), {0: batch}, os.path.join(out, "cnn.onnx"))

    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    export(encoder, torch.randn(2, 8, 64), {0: batch, 1: seq}, os.path.join(out, "encoder.onnx"))


if __name__ == "__main__":
    main()
