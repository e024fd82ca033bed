"""The bench models as exporters write them (issue 25's model set): torchvision
and transformers models with random weights, and nn.TransformerEncoder,
exported by the TorchScript exporter or the current one.

The builders and the export are the model zoo's (test/zoo/models.py,
test/zoo/zoo.py's export), so a bench model is a zoo configuration named
the zoo's way, MODEL.EXPORTER; the few models the zoo does not have at the
bench's sizes (the encoder, BERT at sequence 128, GPT-2 at its small
configuration) are built here.

Runs in the project's venv (scripts/setup.sh --bench: PyTorch 2.x,
torchvision, transformers). Per model, OUTDIR/NAME/ gets model.onnx,
inputs.json (the input names, in order), one NAME.npy per input,
y_torch.npy (PyTorch eager's output for them) and state.pt (the weights,
so bench/torch2_time.py rebuilds the same module).

Usage: .venv/bin/python bench/exported.py OUTDIR [NAME...]
"""

import importlib.util
import json
import os
import sys

ZOO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test", "zoo")


def _load_zoo_models():
    """test/zoo/models.py, as `zoo_models`: bench/models.py is `models` in
    the processes that import both (bench/torch2_time.py)."""
    spec = importlib.util.spec_from_file_location("zoo_models", os.path.join(ZOO, "models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


zoo_models = _load_zoo_models()

# In the order the bench reports them.
EXPORTED = [
    "resnet18.ts17",         # torchvision, BatchNorm folded by the exporter
    "resnet50.ts17",
    "mobilenet_v2.ts17-bn",  # BatchNormalization kept
    "efficientnet_b0.ts17",
    "convnext_tiny.ts17",
    "encoder.ts14",          # nn.TransformerEncoder: decomposed LayerNorm, erf GELU (its
                             # attention needs opset 14 for the TorchScript exporter)
    "encoder.dynamo18",      # the same through the current exporter
    "bert_s128.dynamo",      # 4 layers, hidden 256, sequence 128
    "gpt2_small.dynamo",     # GPT-2 small (12 layers, 768 wide), sequence 128
]

SEQ = 128


def _encoder():
    """Two nn.TransformerEncoderLayer (d 256, 4 heads, GELU), batch first, as
    issue 25 measured it; no dropout at inference."""
    import torch
    torch.manual_seed(zoo_models.SEED)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = torch.tensor(zoo_models._rng().standard_normal((1, SEQ, 256)), dtype=torch.float32)
    return model, (x,), ["x"]


def _text_inputs():
    """Token ids and an attention mask whose last 8 positions are padding."""
    import torch
    ids = torch.tensor(zoo_models._rng().integers(3, 1000, size=(1, SEQ)), dtype=torch.int64)
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    mask[0, SEQ - 8:] = 0
    return (ids, mask), ["input_ids", "attention_mask"]


def _bert():
    from transformers import BertConfig, BertModel
    return BertModel(BertConfig(**dict(zoo_models.SMALL, max_position_embeddings=SEQ)))


def _gpt2_small():
    from transformers import GPT2Config, GPT2Model
    return GPT2Model(GPT2Config(attn_implementation="eager"))


BUILDERS = {
    "encoder": _encoder,
    "bert_s128": zoo_models._hf(_bert, _text_inputs),
    "gpt2_small": zoo_models._hf(_gpt2_small, _text_inputs, use_cache=False),
}


def builder(name):
    """The zoo-style builder of a bench model: () -> (module, inputs, names)."""
    model = name.rsplit(".", 1)[0]
    return BUILDERS.get(model) or zoo_models.TORCH_MODELS[model]


def module(name):
    """The eval-mode torch module of a bench model, before its weights are
    loaded (bench/torch2_time.py loads state.pt into it)."""
    return builder(name)()[0]


def tolerance(expected):
    """(rtol, atol) for comparing an output with PyTorch's: elementwise
    |y - ref| <= atol + rtol |ref|, with atol scaled to the output's largest
    magnitude, since random-weight models reach tens or hundreds."""
    import numpy as np
    return 1e-3, max(1e-4, 1e-4 * float(np.max(np.abs(expected))))


def build(name, out):
    import numpy as np
    import torch
    import warnings
    warnings.filterwarnings("ignore")
    # zoo.export imports the zoo's models as `models`; this process (bench/
    # exported.py's main) has no other module of that name.
    sys.modules["models"] = zoo_models
    sys.path.insert(0, ZOO)
    import zoo
    for key, make in BUILDERS.items():
        zoo_models.TORCH_MODELS.setdefault(key, make)
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    model, args, names = builder(name)()
    feeds = zoo.export(name, os.path.join(folder, "model.onnx"), (model, args, names))
    with torch.no_grad():
        y = model(*args)
    for key, value in feeds.items():
        np.save(os.path.join(folder, f"{key}.npy"), value)
    np.save(os.path.join(folder, "y_torch.npy"), y.detach().numpy())
    torch.save(model.state_dict(), os.path.join(folder, "state.pt"))
    with open(os.path.join(folder, "inputs.json"), "w") as f:
        json.dump(list(feeds), f)


def main():
    out = sys.argv[1]
    for name in sys.argv[2:] or EXPORTED:
        if not os.path.exists(os.path.join(out, name, "state.pt")):
            print(f"exporting {name}", flush=True)
            build(name, out)


if __name__ == "__main__":
    main()
