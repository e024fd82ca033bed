"""The zoo's models: what a user brings, made from packages at test time.

Every model is built from torchvision or transformers (PyPI) with random
weights (nothing is downloaded from a hub), or, for the classic ONNX zoo's
opset 7-9 style, written with onnx.helper. Each entry gives the example
inputs; zoo.py exports it with each exporter.

A torch entry is a function returning (module, inputs, names): module in
eval mode, inputs a tuple of tensors, names the ONNX input names.
"""

import numpy as np

SEED = 20261127


def _rng():
    return np.random.default_rng(SEED)


# --- torchvision -------------------------------------------------------------

def _reestimate_batchnorm(model, make_input, batches=3):
    """Random weights give BatchNorm statistics (mean 0, var 1) that do not
    match what the layers produce, so deep nets' outputs vanish or explode
    and a comparison means nothing. Re-estimate them on random data, as a
    calibration pass would, then return to eval mode."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the batches
    model.eval()
    for m in bns:  # only BatchNorm learns; dropout and detection heads stay in eval mode
        m.train()
    with torch.no_grad():
        for _ in range(batches):
            model(make_input(4))
    model.eval()


def _no_zero_matrices(model):
    """Libraries zero-initialize some weight matrices (torchvision's ViT
    classification head), which makes the model's output zero whatever the
    input, and a comparison of zeros checks nothing. Such matrices get small
    random values, as training would give them; biases and norms (1-D) stay."""
    import torch
    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)


def _vision(name, size=224, wrap=None, **kwargs):
    def build():
        import torch
        import torchvision
        torch.manual_seed(SEED)
        model = torchvision.models.get_model(name, weights=None, **kwargs)
        if wrap is not None:
            model = wrap(model)
        model.eval()
        _no_zero_matrices(model)
        make = lambda n: torch.randn(n, 3, size, size)
        _reestimate_batchnorm(model, make)
        return model, (make(1),), ["input"]
    return build


def _segmentation_output(model):
    import torch

    class Out(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]
    return Out(model)


def _detection_outputs(model):
    import torch

    class Out(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            d = self.m(list(x))[0]
            return d["boxes"], d["scores"], d["labels"]
    return Out(model)


VISION = {
    "resnet18": _vision("resnet18"),
    "resnet50": _vision("resnet50"),
    "resnext50_32x4d": _vision("resnext50_32x4d"),
    "wide_resnet50_2": _vision("wide_resnet50_2"),
    "densenet121": _vision("densenet121"),
    "inception_v3": _vision("inception_v3", size=299, init_weights=True, aux_logits=False),
    "googlenet": _vision("googlenet", init_weights=True, aux_logits=False),
    "squeezenet1_1": _vision("squeezenet1_1"),
    "shufflenet_v2_x1_0": _vision("shufflenet_v2_x1_0"),
    "mobilenet_v2": _vision("mobilenet_v2"),
    "mobilenet_v3_small": _vision("mobilenet_v3_small"),
    "mobilenet_v3_large": _vision("mobilenet_v3_large"),
    "mnasnet0_5": _vision("mnasnet0_5"),
    "efficientnet_b0": _vision("efficientnet_b0"),
    "efficientnet_v2_s": _vision("efficientnet_v2_s"),
    "regnet_y_400mf": _vision("regnet_y_400mf"),
    "convnext_tiny": _vision("convnext_tiny"),
    "vit_b_16": _vision("vit_b_16"),
    "swin_t": _vision("swin_t"),
    "maxvit_t": _vision("maxvit_t"),
    "vgg11_bn": _vision("vgg11_bn"),
    "fcn_resnet50": _vision("fcn_resnet50", wrap=_segmentation_output, weights_backbone=None, aux_loss=False),
    "deeplabv3_mobilenet_v3_large": _vision("deeplabv3_mobilenet_v3_large", wrap=_segmentation_output,
                                            weights_backbone=None, aux_loss=False),
    "lraspp_mobilenet_v3_large": _vision("lraspp_mobilenet_v3_large", wrap=_segmentation_output,
                                         weights_backbone=None),
    "ssdlite320_mobilenet_v3_large": _vision("ssdlite320_mobilenet_v3_large", size=320,
                                             wrap=_detection_outputs, weights_backbone=None),
}


# --- transformers --------------------------------------------------------------
# Small configurations (4 layers, width 256, vocabulary 1000): the same
# graph patterns as the full models at a fraction of the compile time.

SEQ = 32
SMALL = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
             vocab_size=1000, max_position_embeddings=128, attn_implementation="eager")


def _text_inputs(mask=True):
    import torch
    ids = torch.tensor(_rng().integers(3, 1000, size=(1, SEQ)), dtype=torch.int64)
    if not mask:
        return (ids,), ["input_ids"]
    attention = torch.ones(1, SEQ, dtype=torch.int64)
    attention[0, SEQ - 5:] = 0  # padding, so the mask matters
    return (ids, attention), ["input_ids", "attention_mask"]


class _FirstOutput:
    """Wraps a transformers model so the export has one output, the last
    hidden state; the inputs are passed by name (GPT-2's second positional
    parameter is past_key_values, not the mask)."""

    def __new__(cls, model, names, **call):
        import torch

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, *args):
                return self.m(**dict(zip(names, args)), return_dict=False, **call)[0]
        return M()


def _hf(make, inputs, **call):
    def build():
        import torch
        torch.manual_seed(SEED)
        args, names = inputs()
        model = _FirstOutput(make(), names, **call).eval()
        return model, args, names
    return build


def _bert():
    from transformers import BertConfig, BertModel
    return BertModel(BertConfig(**SMALL))


def _distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    return DistilBertModel(DistilBertConfig(dim=256, n_layers=4, n_heads=4, hidden_dim=1024, vocab_size=1000,
                                            max_position_embeddings=128, attn_implementation="eager"))


def _roberta():
    from transformers import RobertaConfig, RobertaModel
    return RobertaModel(RobertaConfig(**dict(SMALL, max_position_embeddings=130)))


def _gpt2():
    from transformers import GPT2Config, GPT2Model
    return GPT2Model(GPT2Config(n_embd=256, n_layer=4, n_head=4, vocab_size=1000, n_positions=128,
                                attn_implementation="eager"))


def _t5_encoder():
    from transformers import T5Config, T5EncoderModel
    return T5EncoderModel(T5Config(d_model=256, d_kv=64, d_ff=1024, num_layers=4, num_heads=4, vocab_size=1000,
                                   attn_implementation="eager"))


def _bart_encoder():
    from transformers import BartConfig, BartModel
    return BartModel(BartConfig(d_model=256, encoder_layers=4, decoder_layers=1, encoder_attention_heads=4,
                                decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024,
                                vocab_size=1000, max_position_embeddings=128,
                                attn_implementation="eager")).get_encoder()


def _vit():
    from transformers import ViTConfig, ViTModel
    return ViTModel(ViTConfig(**dict(SMALL, image_size=64, patch_size=8)), add_pooling_layer=False)


def _whisper_encoder():
    from transformers import WhisperConfig, WhisperModel
    return WhisperModel(WhisperConfig(d_model=256, encoder_layers=4, decoder_layers=1, encoder_attention_heads=4,
                                      decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024,
                                      num_mel_bins=80, max_source_positions=150, vocab_size=1000,
                                      pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                      decoder_start_token_id=1, attn_implementation="eager")).get_encoder()


def _wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    return Wav2Vec2Model(Wav2Vec2Config(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                        intermediate_size=1024, attn_implementation="eager"))


def _tensor(shape):
    def inputs():
        import torch
        return (torch.tensor(_rng().standard_normal(shape), dtype=torch.float32),), None
    return inputs


def _named(inputs, names):
    def f():
        args, _ = inputs()
        return args, names
    return f


def _causal(config_name, model_name, **extra):
    """A decoder of LLaMA's small shape: grouped-query attention, 8 query
    heads sharing 2 key/value heads; `extra` over it."""
    def make():
        import transformers
        config = getattr(transformers, config_name)(**dict(
            dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
                 num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128,
                 attn_implementation="eager"), **extra))
        return getattr(transformers, model_name)(config)
    return make


def _encoder(config_name, model_name, config=None, base=SMALL, **kwargs):
    """A transformers model of `base` sizes (BERT-like) with `config` over
    them; base None for the families whose sizes are per-stage lists."""
    def make():
        import transformers
        c = getattr(transformers, config_name)(**dict(base or {}, **(config or {})))
        return getattr(transformers, model_name)(c, **kwargs)
    return make


def _hf_vision(config_name, model_name, size=64, config=None, base=SMALL, **kwargs):
    return _hf(_encoder(config_name, model_name, config, base, **kwargs),
               _named(_tensor((1, 3, size, size)), ["pixel_values"]))


TRANSFORMERS = {
    "bert": _hf(_bert, _text_inputs),
    "distilbert": _hf(_distilbert, _text_inputs),
    "roberta": _hf(_roberta, _text_inputs),
    # GPT-2 and LLaMA get the attention mask too: without one, transformers
    # looks for packed sequences with torch.diff, which the TorchScript
    # exporter cannot export.
    "gpt2": _hf(_gpt2, _text_inputs, use_cache=False),
    "t5_encoder": _hf(_t5_encoder, _text_inputs),
    "bart_encoder": _hf(_bart_encoder, _text_inputs),
    "llama": _hf(_causal("LlamaConfig", "LlamaModel"), _text_inputs, use_cache=False),
    "hf_vit": _hf(_vit, _named(_tensor((1, 3, 64, 64)), ["pixel_values"])),
    "whisper_encoder": _hf(_whisper_encoder, _named(_tensor((1, 80, 300)), ["input_features"])),
    "wav2vec2": _hf(_wav2vec2, _named(_tensor((1, 16000)), ["input_values"])),
    "qwen2": _hf(_causal("Qwen2Config", "Qwen2Model"), _text_inputs, use_cache=False),
    "qwen3": _hf(_causal("Qwen3Config", "Qwen3Model", head_dim=32), _text_inputs, use_cache=False),
    "mistral": _hf(_causal("MistralConfig", "MistralModel", sliding_window=16), _text_inputs, use_cache=False),
    "phi3": _hf(_causal("Phi3Config", "Phi3Model", pad_token_id=0), _text_inputs, use_cache=False),
    "gemma": _hf(_causal("GemmaConfig", "GemmaModel", head_dim=32), _text_inputs, use_cache=False),
    "gemma2": _hf(_causal("Gemma2Config", "Gemma2Model", head_dim=32, sliding_window=16), _text_inputs,
                  use_cache=False),
    "opt": _hf(_encoder("OPTConfig", "OPTModel", dict(ffn_dim=1024, word_embed_proj_dim=256)), _text_inputs,
               use_cache=False),
    "bloom": _hf(_encoder("BloomConfig", "BloomModel", dict(n_layer=4, n_head=4)), _text_inputs, use_cache=False),
    "falcon": _hf(_encoder("FalconConfig", "FalconModel", dict(num_kv_heads=4, new_decoder_architecture=False)),
                  _text_inputs, use_cache=False),
    "gpt_neox": _hf(_encoder("GPTNeoXConfig", "GPTNeoXModel"), _text_inputs, use_cache=False),
    "albert": _hf(_encoder("AlbertConfig", "AlbertModel", dict(embedding_size=128)), _text_inputs),
    "deberta_v2": _hf(_encoder("DebertaV2Config", "DebertaV2Model"), _text_inputs),
    "electra": _hf(_encoder("ElectraConfig", "ElectraModel", dict(embedding_size=128)), _text_inputs),
    "mpnet": _hf(_encoder("MPNetConfig", "MPNetModel"), _text_inputs),
    "modernbert": _hf(_encoder("ModernBertConfig", "ModernBertModel",
                               dict(intermediate_size=512, global_attn_every_n_layers=2, local_attention=16,
                                    pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                                    sep_token_id=2)),
                      _text_inputs),
    "mobilevit": _hf_vision("MobileViTConfig", "MobileViTModel", size=64, config=dict(image_size=64)),
    "segformer": _hf_vision("SegformerConfig", "SegformerModel", size=64, base=None,
                            config=dict(depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 64, 128],
                                        num_attention_heads=[1, 2, 4, 8], decoder_hidden_size=64)),
    "clip_vision": _hf_vision("CLIPVisionConfig", "CLIPVisionModel", size=64,
                              config=dict(image_size=64, patch_size=8)),
    "convnextv2": _hf_vision("ConvNextV2Config", "ConvNextV2Model", size=64),
    "beit": _hf_vision("BeitConfig", "BeitModel", size=64, config=dict(image_size=64, patch_size=8,
                                                                       use_relative_position_bias=True)),
    "dinov2": _hf_vision("Dinov2Config", "Dinov2Model", size=64, config=dict(image_size=64, patch_size=8)),
    "swin_hf": _hf_vision("SwinConfig", "SwinModel", size=64, base=None,
                          config=dict(image_size=64, patch_size=4, embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                                      window_size=4)),
}

TORCH_MODELS = dict(VISION, **TRANSFORMERS)


# --- the classic ONNX zoo's style (opset 7-9), written with onnx.helper -------

def _init(name, shape, scale=None):
    from onnx import numpy_helper
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    scale = scale if scale is not None else (2.0 / fan_in) ** 0.5
    return numpy_helper.from_array((_rng_for(name).standard_normal(shape) * scale).astype(np.float32), name)


def _rng_for(name):
    return np.random.default_rng([SEED, sum(map(ord, name))])


def _classic(nodes, inits, x_shape, outputs, opset, name):
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("data", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(o, t, None) for o, t in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="kiln-zoo")
    model.ir_version = 4 if opset <= 9 else 7
    return model


def alexnet_lrn():
    """AlexNet/CaffeNet era (opset 7): Conv, Relu, LRN, MaxPool, Gemm with
    Dropout, Softmax."""
    from onnx import TensorProto, helper
    n = helper.make_node
    nodes = [
        n("Conv", ["data", "w1", "b1"], ["c1"], kernel_shape=[11, 11], strides=[4, 4], pads=[2, 2, 2, 2]),
        n("Relu", ["c1"], ["r1"]),
        n("LRN", ["r1"], ["l1"], size=5, alpha=1e-4, beta=0.75, bias=1.0),
        n("MaxPool", ["l1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2]),
        n("Conv", ["p1", "w2", "b2"], ["c2"], kernel_shape=[5, 5], pads=[2, 2, 2, 2], group=2),
        n("Relu", ["c2"], ["r2"]),
        n("LRN", ["r2"], ["l2"], size=5, alpha=1e-4, beta=0.75, bias=2.0),
        n("MaxPool", ["l2"], ["p2"], kernel_shape=[3, 3], strides=[2, 2]),
        n("Flatten", ["p2"], ["f"], axis=1),
        n("Gemm", ["f", "w3", "b3"], ["g1"], transB=1),
        n("Relu", ["g1"], ["r3"]),
        n("Dropout", ["r3"], ["d3"], ratio=0.5),
        n("Gemm", ["d3", "w4", "b4"], ["g2"], transB=1),
        n("Softmax", ["g2"], ["prob"]),
    ]
    inits = [_init("w1", (48, 3, 11, 11)), _init("b1", (48,), 0.01),
             _init("w2", (64, 24, 5, 5)), _init("b2", (64,), 0.01),
             _init("w3", (256, 64 * 13 * 13)), _init("b3", (256,), 0.01),
             _init("w4", (100, 256)), _init("b4", (100,), 0.01)]
    return _classic(nodes, inits, [1, 3, 224, 224], [("prob", TensorProto.FLOAT)], 7, "alexnet_lrn")


def squeezenet_dropout_mask():
    """SqueezeNet 1.0 style (opset 9): fire modules (Concat of 1x1 and 3x3
    expands), Dropout whose mask (float before opset 10) is a graph output,
    global average pool."""
    from onnx import TensorProto, helper
    n = helper.make_node
    nodes = [n("Conv", ["data", "w0", "b0"], ["c0"], kernel_shape=[7, 7], strides=[2, 2]),
             n("Relu", ["c0"], ["r0"]),
             n("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2])]
    inits = [_init("w0", (64, 3, 7, 7)), _init("b0", (64,), 0.01)]
    prev, cin = "p0", 64
    for i, (s, e) in enumerate([(16, 64), (16, 64), (32, 128)]):
        nodes += [n("Conv", [prev, f"sw{i}", f"sb{i}"], [f"s{i}"], kernel_shape=[1, 1]),
                  n("Relu", [f"s{i}"], [f"sr{i}"]),
                  n("Conv", [f"sr{i}", f"aw{i}", f"ab{i}"], [f"e1_{i}"], kernel_shape=[1, 1]),
                  n("Conv", [f"sr{i}", f"bw{i}", f"bb{i}"], [f"e3_{i}"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                  n("Concat", [f"e1_{i}", f"e3_{i}"], [f"cat{i}"], axis=1),
                  n("Relu", [f"cat{i}"], [f"fire{i}"])]
        inits += [_init(f"sw{i}", (s, cin, 1, 1)), _init(f"sb{i}", (s,), 0.01),
                  _init(f"aw{i}", (e, s, 1, 1)), _init(f"ab{i}", (e,), 0.01),
                  _init(f"bw{i}", (e, s, 3, 3)), _init(f"bb{i}", (e,), 0.01)]
        prev, cin = f"fire{i}", 2 * e
    nodes += [n("Dropout", [prev], ["drop", "mask"], ratio=0.5),
              n("Conv", ["drop", "wc", "bc"], ["conv10"], kernel_shape=[1, 1]),
              n("Relu", ["conv10"], ["r10"]),
              n("GlobalAveragePool", ["r10"], ["gap"]),
              n("Flatten", ["gap"], ["logits"], axis=1)]
    inits += [_init("wc", (100, cin, 1, 1)), _init("bc", (100,), 0.01)]
    return _classic(nodes, inits, [1, 3, 128, 128],
                    [("logits", TensorProto.FLOAT), ("mask", TensorProto.FLOAT)], 9, "squeezenet_dropout_mask")


def fpn_sum_upsample():
    """Feature-pyramid style (opset 9): Upsample with a scales input, Sum of
    three branches, BatchNormalization, Conv."""
    from onnx import TensorProto, helper, numpy_helper
    n = helper.make_node
    nodes = [n("Conv", ["data", "w0", "b0"], ["c0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("Relu", ["c0"], ["r0"]),
             n("MaxPool", ["r0"], ["half"], kernel_shape=[2, 2], strides=[2, 2]),
             n("Conv", ["half", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("Upsample", ["c1", "scales"], ["up"], mode="nearest"),
             n("Conv", ["r0", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
             n("Sum", ["up", "c2", "r0"], ["sum"]),
             n("BatchNormalization", ["sum", "g", "beta", "mean", "var"], ["bn"], epsilon=1e-5),
             n("Relu", ["bn"], ["out"])]
    inits = [_init("w0", (32, 3, 3, 3)), _init("b0", (32,), 0.01),
             _init("w1", (32, 32, 3, 3)), _init("b1", (32,), 0.01),
             _init("w2", (32, 32, 1, 1)), _init("b2", (32,), 0.01),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             numpy_helper.from_array((1 + 0.1 * _rng_for("g").standard_normal(32)).astype(np.float32), "g"),
             _init("beta", (32,), 0.1), _init("mean", (32,), 0.1),
             numpy_helper.from_array((1 + _rng_for("var").random(32)).astype(np.float32), "var")]
    return _classic(nodes, inits, [1, 3, 64, 64], [("out", TensorProto.FLOAT)], 9, "fpn_sum_upsample")


def batchnorm_spatial():
    """Opset 7 BatchNormalization with the `spatial` attribute (dropped in
    opset 9), Upsample with a scales attribute, AveragePool, Gemm."""
    from onnx import TensorProto, helper, numpy_helper
    n = helper.make_node
    nodes = [n("Conv", ["data", "w0", "b0"], ["c0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("BatchNormalization", ["c0", "g", "beta", "mean", "var"], ["bn"], epsilon=1e-3, spatial=1),
             n("Relu", ["bn"], ["r0"]),
             n("Upsample", ["r0"], ["up"], mode="nearest", scales=[1.0, 1.0, 2.0, 2.0]),
             n("AveragePool", ["up"], ["ap"], kernel_shape=[4, 4], strides=[4, 4]),
             n("Flatten", ["ap"], ["f"], axis=1),
             n("Gemm", ["f", "w1", "b1"], ["y"], transB=1)]
    inits = [_init("w0", (64, 3, 3, 3)), _init("b0", (64,), 0.01),
             numpy_helper.from_array((1 + 0.1 * _rng_for("g").standard_normal(64)).astype(np.float32), "g"),
             _init("beta", (64,), 0.1), _init("mean", (64,), 0.1),
             numpy_helper.from_array((1 + _rng_for("var").random(64)).astype(np.float32), "var"),
             _init("w1", (10, 64 * 16 * 16)), _init("b1", (10,), 0.01)]
    return _classic(nodes, inits, [1, 3, 32, 32], [("y", TensorProto.FLOAT)], 7, "batchnorm_spatial")


def inception_block_opset8():
    """GoogLeNet/Inception v1 style (opset 8): four branches concatenated,
    LRN, MaxPool with padding, AveragePool, Dropout, Gemm, Softmax."""
    from onnx import TensorProto, helper
    n = helper.make_node
    nodes = [n("Conv", ["data", "w0", "b0"], ["c0"], kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3]),
             n("Relu", ["c0"], ["r0"]),
             n("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1]),
             n("LRN", ["p0"], ["l0"], size=5, alpha=1e-4, beta=0.75),
             n("Conv", ["l0", "wa", "ba"], ["a"], kernel_shape=[1, 1]),
             n("Conv", ["l0", "wb1", "bb1"], ["b1"], kernel_shape=[1, 1]),
             n("Relu", ["b1"], ["rb1"]),
             n("Conv", ["rb1", "wb2", "bb2"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("Conv", ["l0", "wc1", "bc1"], ["c1"], kernel_shape=[1, 1]),
             n("Relu", ["c1"], ["rc1"]),
             n("Conv", ["rc1", "wc2", "bc2"], ["c"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
             n("MaxPool", ["l0"], ["dp"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
             n("Conv", ["dp", "wd", "bd"], ["d"], kernel_shape=[1, 1]),
             n("Concat", ["a", "b", "c", "d"], ["cat"], axis=1),
             n("Relu", ["cat"], ["rcat"]),
             n("AveragePool", ["rcat"], ["ap"], kernel_shape=[7, 7], strides=[7, 7]),
             n("Dropout", ["ap"], ["dr"], ratio=0.4),
             n("Flatten", ["dr"], ["f"], axis=1),
             n("Gemm", ["f", "wf", "bf"], ["g"], transB=1),
             n("Softmax", ["g"], ["prob"])]
    inits = [_init("w0", (64, 3, 7, 7)), _init("b0", (64,), 0.01),
             _init("wa", (32, 64, 1, 1)), _init("ba", (32,), 0.01),
             _init("wb1", (48, 64, 1, 1)), _init("bb1", (48,), 0.01),
             _init("wb2", (64, 48, 3, 3)), _init("bb2", (64,), 0.01),
             _init("wc1", (8, 64, 1, 1)), _init("bc1", (8,), 0.01),
             _init("wc2", (16, 8, 5, 5)), _init("bc2", (16,), 0.01),
             _init("wd", (16, 64, 1, 1)), _init("bd", (16,), 0.01),
             _init("wf", (100, 128 * 4 * 4)), _init("bf", (100,), 0.01)]
    return _classic(nodes, inits, [1, 3, 112, 112], [("prob", TensorProto.FLOAT)], 8, "inception_block_opset8")


# Where ONNX Runtime departs from the ONNX specification, the zoo compares
# with the specification instead (config name -> output -> reference maker):
# ORT's Dropout before opset 10 (its IdentityOp kernel) returns a mask of
# zeros in inference mode, while the mask marks the kept elements, and in
# inference mode every element is kept.
SPEC_REFERENCES = {
    "squeezenet_dropout_mask.classic": {"mask": lambda ort_value: np.ones_like(ort_value)},
}

CLASSIC = {
    "alexnet_lrn": alexnet_lrn,
    "squeezenet_dropout_mask": squeezenet_dropout_mask,
    "fpn_sum_upsample": fpn_sum_upsample,
    "batchnorm_spatial": batchnorm_spatial,
    "inception_block_opset8": inception_block_opset8,
}
