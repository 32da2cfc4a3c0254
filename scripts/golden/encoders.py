"""Golden fixtures for calibra-models' ViT / DeiT / DINOv2 encoders (issue #6).

Builds TINY randomly initialised Hugging Face models (transformers 5.24.0, torch CPU, eager
attention, float32) with non-trivial configs, saves each with `save_pretrained` into
crates/calibra-models/tests/fixtures/<family>/, and writes reference outputs next to it.

Per family directory:
  config.json, model.safetensors  -- `save_pretrained` output. NOTE: transformers 5.24 writes the
                                     4.x key names (encoder.layer.N.attention.attention.query...)
                                     even though its in-memory modules use 5.x names.
  v5/config.json, v5/model.safetensors -- the same weights under the 5.x in-memory names
                                     (`model.state_dict()`), prefixed as a task model would be
                                     (`vit.` / `deit.` / `dinov2.`) plus a `classifier.*` head, to
                                     test prefix stripping and the ignore list.
  golden.safetensors               -- inputs and reference outputs:
      pixel_values            [2, 3, 30, 30]
      last_hidden_state       final tokens after the last LayerNorm
      pooler_output           (ViT/DeiT: tanh pooler; DINOv2: CLS after LayerNorm)
      hidden_states.2         output of block 2 (HF hidden_states[2], before the final LayerNorm)
      pixel_values_interp     [2, 3, 42, 36]  (7x6 patch grid: non-square, other resolution)
      last_hidden_state_interp  output with interpolate_pos_encoding=True (ViT/DeiT) / default (DINOv2)

Deterministic: fixed seeds; re-running regenerates identical tensors.
Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/encoders.py
"""

import json
import os
import shutil

import torch
from safetensors.torch import save_file
from transformers import (
    DeiTConfig,
    DeiTModel,
    Dinov2Config,
    Dinov2Model,
    Dinov2WithRegistersConfig,
    Dinov2WithRegistersModel,
    ViTConfig,
    ViTModel,
)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FIXTURES = os.path.join(ROOT, "crates", "calibra-models", "tests", "fixtures")

COMMON = dict(
    hidden_size=48,
    num_hidden_layers=3,
    num_attention_heads=3,
    image_size=30,
    patch_size=6,
    num_channels=3,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


def randomise(model, seed):
    """Overwrite every parameter with non-trivial random values (norm scales around 1,
    everything else N(0, 0.2^2)), so that zero biases / unit scales cannot hide a bug."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if ("norm" in name or "layernorm" in name) and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * noise)
            elif name.endswith("lambda1"):
                p.copy_(0.5 + 0.2 * noise)
            else:
                p.copy_(0.2 * noise)


def write_family(name, model, prefix, interp_kwargs, extra_dir=None):
    out_dir = os.path.join(FIXTURES, name) if extra_dir is None else os.path.join(FIXTURES, name, extra_dir)
    if os.path.isdir(out_dir):
        for entry in ("config.json", "model.safetensors", "golden.safetensors", "v5"):
            path = os.path.join(out_dir, entry)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
    os.makedirs(out_dir, exist_ok=True)
    model.eval()
    model.save_pretrained(out_dir)

    g = torch.Generator().manual_seed(1234)
    pixels = torch.randn(2, 3, 30, 30, generator=g)
    pixels_interp = torch.randn(2, 3, 42, 36, generator=g)
    with torch.no_grad():
        out = model(pixel_values=pixels, output_hidden_states=True)
        n_layers = model.config.num_hidden_layers
        assert len(out.hidden_states) == n_layers + 1, len(out.hidden_states)
        golden = {
            "pixel_values": pixels,
            "last_hidden_state": out.last_hidden_state,
            "pooler_output": out.pooler_output,
            "hidden_states.2": out.hidden_states[2],
        }
        if interp_kwargs is not None:
            out_i = model(pixel_values=pixels_interp, **interp_kwargs)
            golden["pixel_values_interp"] = pixels_interp
            golden["last_hidden_state_interp"] = out_i.last_hidden_state
    save_file({k: v.contiguous() for k, v in golden.items()}, os.path.join(out_dir, "golden.safetensors"))

    # 5.x in-memory names, as a task model would prefix them, plus a classifier head.
    v5_dir = os.path.join(out_dir, "v5")
    os.makedirs(v5_dir, exist_ok=True)
    shutil.copy(os.path.join(out_dir, "config.json"), os.path.join(v5_dir, "config.json"))
    state = {f"{prefix}{k}": v.contiguous() for k, v in model.state_dict().items()}
    gh = torch.Generator().manual_seed(99)
    state["classifier.weight"] = torch.randn(5, model.config.hidden_size, generator=gh)
    state["classifier.bias"] = torch.randn(5, generator=gh)
    save_file(state, os.path.join(v5_dir, "model.safetensors"), metadata={"format": "pt"})
    print(name if extra_dir is None else f"{name}/{extra_dir}", "->", out_dir, sorted(golden))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)

    vit_cfg = ViTConfig(**COMMON, intermediate_size=80, hidden_act="gelu", layer_norm_eps=1e-12, qkv_bias=True)
    vit_cfg._attn_implementation = "eager"
    vit = ViTModel(vit_cfg, add_pooling_layer=True)
    randomise(vit, 10)
    write_family("vit", vit, "vit.", {"interpolate_pos_encoding": True})

    deit_cfg = DeiTConfig(**COMMON, intermediate_size=80, hidden_act="gelu", layer_norm_eps=1e-12, qkv_bias=True)
    deit_cfg._attn_implementation = "eager"
    deit = DeiTModel(deit_cfg, add_pooling_layer=True)
    randomise(deit, 20)
    write_family("deit", deit, "deit.", {"interpolate_pos_encoding": True})

    dino_cfg = Dinov2Config(**COMMON, mlp_ratio=3, hidden_act="gelu", layer_norm_eps=1e-6, layerscale_value=0.7)
    dino_cfg._attn_implementation = "eager"
    dino = Dinov2Model(dino_cfg)
    randomise(dino, 30)
    write_family("dinov2", dino, "dinov2.", {})

    reg_cfg = Dinov2WithRegistersConfig(
        **COMMON, mlp_ratio=3, hidden_act="gelu", layer_norm_eps=1e-6, layerscale_value=0.7, num_register_tokens=2
    )
    reg_cfg._attn_implementation = "eager"
    reg = Dinov2WithRegistersModel(reg_cfg)
    randomise(reg, 40)
    # HF resizes register-model position embeddings with antialias=True; calibra refuses that
    # case, so no interpolation reference is written for it.
    write_family("dinov2", reg, "dinov2_with_registers.", None, extra_dir="registers")


if __name__ == "__main__":
    main()
