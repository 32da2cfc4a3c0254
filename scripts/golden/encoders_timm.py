"""Golden fixtures for calibra-models' timm ViT loader (issue #17 item 3).

Two outputs:

1. crates/calibra-models/src/timm/architectures.json -- the keyword arguments each registered timm
   ViT / DeiT entrypoint (`vit_*`, `deit_*`, `deit3_*`) hands to its model builder, captured by
   calling the entrypoint with the builder replaced by a recorder (no model is built). Callables
   (norm / act layers) are written as names calibra knows ("layernorm" = timm's LayerNorm, eps 1e-6;
   "torch.nn.LayerNorm" = eps 1e-5; "layernorm(eps=X)" = a LayerNorm partial with that eps; "gelu", "gelu_tanh", "quick_gelu"); any other callable becomes
   "unsupported:<name>" and the Rust loader refuses it by option name. Entrypoints that do not go
   through `_create_vision_transformer` / `_create_deit` are not listed (calibra refuses them).

2. crates/calibra-models/tests/fixtures/timm/<variant>/ -- TINY random timm models (embed_dim 32,
   depth 2, img 32, patch 8) saved with timm's own `save_for_hf(..., safe_serialization=True)`
   (config.json with architecture / num_classes / num_features / model_args / pretrained_cfg, plus
   model.safetensors), re-created from that directory with `timm.create_model("local-dir:<dir>",
   pretrained=True)`, and golden.safetensors holding:
      pixel_values  [2, 3, 32, 32]
      features      forward_head(forward_features(x), pre_logits=True)   (the probe feature)
      last          forward_features(x)                                  (after `norm`)
      block0        forward_intermediates(x, indices=[0], norm=False, output_fmt="NLC",
                    return_prefix_tokens=True): prefix tokens ‖ patch tokens of block 0's output

   and preprocess/: a small PNG plus the tensor timm's eval transform makes of it
   (`resolve_data_config(model=...)` + `create_transform(**cfg)`), for the token variant's
   pretrained_cfg (input 32, bicubic, crop_pct 0.9, center).

Deterministic (fixed seeds). Run: /work/pyenv/peers/bin/python scripts/golden/encoders_timm.py
(timm, torch, torchvision, safetensors, pillow as in scripts/golden/requirements.txt).
"""

import functools
import inspect
import json
import os
import shutil

import numpy as np
import timm
import timm.models.deit as deit_mod
import timm.models.vision_transformer as vit_mod
import torch
import torch.nn as nn
from PIL import Image
from safetensors.torch import save_file
from timm.data import create_transform, resolve_data_config
from timm.layers import LayerNorm as TimmLayerNorm
from timm.layers import Mlp, PatchEmbed
from timm.layers.activations import GELUTanh, QuickGELU
from timm.models._hub import save_for_hf

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FIXTURES = os.path.join(ROOT, "crates", "calibra-models", "tests", "fixtures", "timm")
TABLE = os.path.join(ROOT, "crates", "calibra-models", "src", "timm", "architectures.json")


# ---------------------------------------------------------------- architecture table
class _Captured(Exception):
    pass


def _describe(key, value):
    """A JSON value for a captured keyword argument."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [_describe(key, v) for v in value]
    if isinstance(value, functools.partial):
        inner = _describe(key, value.func)
        if key == "norm_layer" and inner in ("layernorm", "torch.nn.LayerNorm") and set(value.keywords) == {"eps"}:
            return f"layernorm(eps={value.keywords['eps']!r})"
        return f"unsupported:partial({getattr(value.func, '__name__', value.func)}, {value.keywords})"
    if value is TimmLayerNorm:
        return "layernorm"
    if value is nn.LayerNorm:
        return "torch.nn.LayerNorm"
    if value is nn.GELU:
        return "gelu"
    if value is GELUTanh:
        return "gelu_tanh"
    if value is QuickGELU:
        return "quick_gelu"
    # the builder's defaults, passed explicitly by a few entrypoints
    if (key, value) in (("block_fn", vit_mod.Block), ("mlp_layer", Mlp), ("embed_layer", PatchEmbed)):
        return None
    return f"unsupported:{getattr(value, '__name__', repr(value))}"


def architecture_table():
    captured = {}

    def recorder(variant, pretrained=False, **kwargs):
        captured["variant"] = variant
        captured["kwargs"] = kwargs
        raise _Captured()

    def deit_recorder(variant, pretrained=False, distilled=False, **kwargs):
        kwargs = dict(kwargs)
        if distilled:
            kwargs["distilled"] = True
        return recorder(variant, pretrained, **kwargs)

    def refuse_build(*args, **kwargs):
        raise RuntimeError("an entrypoint tried to build a model")

    saved = (vit_mod._create_vision_transformer, deit_mod._create_deit, vit_mod.build_model_with_cfg, deit_mod.build_model_with_cfg)
    vit_mod._create_vision_transformer = recorder
    deit_mod._create_deit = deit_recorder
    vit_mod.build_model_with_cfg = deit_mod.build_model_with_cfg = refuse_build
    table = {}
    try:
        names = sorted(set(timm.list_models(["vit_*", "deit_*", "deit3_*"])))
        for name in names:
            captured.clear()
            fn = timm.models.model_entrypoint(name)
            src = inspect.getsource(fn)
            if "_create_vision_transformer(" not in src and "_create_deit(" not in src:
                continue  # another builder (hybrid, relpos, ...): not listed, never built
            try:
                fn(pretrained=False)
            except _Captured:
                pass
            except Exception:  # another builder (hybrid, relpos, ...): not listed
                continue
            if "kwargs" not in captured:
                continue
            args = {}
            for k, v in sorted(captured["kwargs"].items()):
                d = _describe(k, v)
                if d is not None:
                    args[k] = d
            table[name] = args
    finally:
        (vit_mod._create_vision_transformer, deit_mod._create_deit, vit_mod.build_model_with_cfg,
         deit_mod.build_model_with_cfg) = saved
    os.makedirs(os.path.dirname(TABLE), exist_ok=True)
    with open(TABLE, "w") as f:
        json.dump({"timm_version": timm.__version__, "architectures": table}, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"{len(table)} architectures -> {TABLE}")


# ---------------------------------------------------------------- fixtures
TINY = dict(embed_dim=32, depth=2, num_heads=2, img_size=32, patch_size=8, num_classes=5)

VARIANTS = {
    # plain ViT, CLS-token pooling, final norm
    "token": ("vit_tiny_patch16_224", {}),
    # no class token, mean of patch tokens, fc_norm (None -> on for 'avg'), no qkv bias
    "avg_fc_norm": ("vit_tiny_patch16_224", dict(global_pool="avg", class_token=False, qkv_bias=False)),
    # 4 register tokens, position embeddings only on patches
    "reg4": ("vit_tiny_patch16_224", dict(reg_tokens=4, no_embed_class=True)),
    # DeiT-3: LayerScale (init_values) and no_embed_class from the architecture's defaults
    "deit3_layerscale": ("deit3_small_patch16_224", {}),
    # CLIP-style: pre_norm (norm_pre, no patch bias), torch LayerNorm eps 1e-5, quick_gelu, avg pool with
    # an explicit fc_norm=False, pooling including the prefix token
    "clip_prenorm": (
        "vit_base_patch16_clip_quickgelu_224",
        dict(global_pool="avg", fc_norm=False, pool_include_prefix=True),
    ),
}


def randomise(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or "norm" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("gamma"):
                p.copy_(0.5 + 0.5 * torch.rand(p.shape, generator=g))
            else:
                scale = 0.3 if p.dim() > 1 else 0.1
                p.copy_(scale * torch.randn(p.shape, generator=g))


def make_fixtures():
    if os.path.isdir(FIXTURES):
        shutil.rmtree(FIXTURES)
    for seed, (variant, (arch, extra)) in enumerate(VARIANTS.items()):
        torch.manual_seed(seed)
        model = timm.create_model(arch, pretrained=False, **TINY, **extra).eval()
        randomise(model, 100 + seed)
        out = os.path.join(FIXTURES, variant)
        save_for_hf(model, out, safe_serialization=True)
        # timm's own reload of the directory is the reference (checks the config round-trips)
        ref = timm.create_model(f"local-dir:{out}", pretrained=True).eval()
        for (n1, p1), (n2, p2) in zip(model.state_dict().items(), ref.state_dict().items()):
            assert n1 == n2 and torch.equal(p1, p2), n1
        x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(7 + seed))
        with torch.no_grad():
            last = ref.forward_features(x)
            features = ref.forward_head(last, pre_logits=True)
            inter = ref.forward_intermediates(
                x, indices=[0], norm=False, output_fmt="NLC", intermediates_only=True, return_prefix_tokens=True
            )[0]
            spatial, prefix = inter if isinstance(inter, tuple) else (inter, None)
            block0 = spatial if prefix is None else torch.cat([prefix, spatial], dim=1)
            assert torch.allclose(ref(x), model(x))
        save_file(
            {
                "pixel_values": x.contiguous(),
                "features": features.contiguous(),
                "last": last.contiguous(),
                "block0": block0.contiguous(),
            },
            os.path.join(out, "golden.safetensors"),
        )
        print(variant, arch, tuple(features.shape), sorted(json.load(open(os.path.join(out, "config.json")))["model_args"]))
        if variant == "token":
            make_preprocess_fixture(ref, os.path.join(FIXTURES, "preprocess"))


def make_preprocess_fixture(model, out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    # smooth gradients plus noise: bicubic implementations agree closely on smooth content
    h, w = 45, 61  # odd sizes: resize to shorter side 35 (= floor(32 / 0.9)), then a non-square crop
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([127 + 100 * np.sin(xx / 9.0), 127 + 100 * np.cos(yy / 7.0), (xx + yy) * 2.0], axis=-1)
    img = np.clip(base + rng.normal(0, 6, size=base.shape), 0, 255).astype(np.uint8)
    Image.fromarray(img).save(os.path.join(out, "image.png"))
    cfg = resolve_data_config(model=model)
    tf = create_transform(**cfg, is_training=False)
    with Image.open(os.path.join(out, "image.png")) as im:
        t = tf(im.convert("RGB"))
    save_file({"pixel_values": t.unsqueeze(0).contiguous()}, os.path.join(out, "golden.safetensors"))
    with open(os.path.join(out, "data_config.json"), "w") as f:
        json.dump({k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()}, f, indent=2)
        f.write("\n")
    print("preprocess", cfg, tuple(t.shape), str(tf).replace("\n", " "))


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    architecture_table()
    make_fixtures()
