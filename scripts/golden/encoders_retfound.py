"""Golden fixtures for RETFound's MAE checkpoints, which `calibra convert retfound` turns into a timm
ViT directory (crates/calibra-models/src/timm/retfound.rs).

RETFound's model code is not on PyPI, so this script runs RETFound's own file: give the path of
`models_vit.py` from a clone of https://github.com/rmaphoh/RETFound_MAE (the fixtures were made at
commit 897d71c):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_retfound.py \\
        --retfound-models-vit /path/to/RETFound_MAE/models_vit.py

The reference is that file's `VisionTransformer` (timm's, subclassed) with the options its
`RETFound_mae` factory sets (`qkv_bias=True`, `norm_layer=partial(nn.LayerNorm, eps=1e-6)`), shrunk,
with `global_pool` on (RETFound's default: timm's `norm` deleted, a fresh `fc_norm` added) or off
(`--cls_token`); its `forward_features`; and the loading of `main_finetune.py` /
`latent_feature.ipynb`: `model.load_state_dict(checkpoint['model'], strict=False)`.

Writes, under crates/calibra-models/tests/fixtures/retfound/ (ViT width 32, patch 8, 32 px, depth 2,
4 heads, MLP 128: RETFound's ViT-L/16 shrunk):
- mae_pretrain.pth: an MAE pre-training checkpoint as MAE's and RETFound's `misc.save_model` writes
  it, `{"model": state_dict, "optimizer": ..., "epoch": 799, "scaler": ..., "args":
  argparse.Namespace(...)}`; the state dict has the encoder, its final `norm`, the MAE decoder
  (`mask_token`, `decoder_embed`, `decoder_pos_embed`, `decoder_blocks.0.*`, `decoder_norm`,
  `decoder_pred`), and no `fc_norm` or `head`.
- finetuned.pth: a RETFound model fine-tuned with global pooling, `{"model": state_dict, "epoch": 9}`:
  the encoder, its own `fc_norm` and a 3-class `head`, no `norm`.
- dinov2_teacher.pth: two tiny zero tensors under `teacher` with `backbone.` names, the layout of
  RETFound's DINOv2 releases, which the conversion refuses by name.
- golden.safetensors: `pixel_values` [2, 3, 32, 32] (already normalised) and RETFound's features of
  it: `pretrain_avg` (global pool: `fc_norm` freshly initialised, the checkpoint's `norm` ignored),
  `pretrain_token` (`--cls_token`), `finetuned_avg` (the checkpoint's `fc_norm`).

The script also checks that timm's own `VisionTransformer(global_pool='avg')` (resp. `'token'`), built
from the options `calibra convert retfound` writes and loaded with the weights it keeps, computes the
same features (within 1e-6): the conversion's claim, checked in Python.

Deterministic: fixed generators; re-running rewrites identical files.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from functools import partial
from pathlib import Path

import timm
import torch
import torch.nn as nn
from safetensors.torch import save_file
from timm.models.vision_transformer import Block

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "retfound"

torch.set_num_threads(1)

WIDTH, DEPTH, HEADS, PATCH, IMG, MLP_RATIO = 32, 2, 4, 8, 32, 4
DECODER_WIDTH = 16
# The encoder's size, as RETFound's VisionTransformer and timm's both take it.
VIT_SIZE = dict(
    img_size=IMG, patch_size=PATCH, embed_dim=WIDTH, depth=DEPTH, num_heads=HEADS, mlp_ratio=MLP_RATIO, qkv_bias=True
)


def load_retfound(path: Path):
    spec = importlib.util.spec_from_file_location("retfound_models_vit", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def retfound_mae(rf, global_pool: bool):
    """RETFound's `VisionTransformer` with its `RETFound_mae` options, at this script's size."""
    return rf.VisionTransformer(
        **VIT_SIZE,
        norm_layer=partial(nn.LayerNorm, eps=1e-6),
        num_classes=3,
        global_pool=global_pool,
    ).eval()


def retfound_features(model, x: torch.Tensor) -> torch.Tensor:
    """RETFound's `forward_features` ([B, 1, D] with global pooling, squeezed as its notebook does)."""
    return model.forward_features(x).reshape(x.shape[0], -1)


def randomise(named: dict, seed: int) -> dict:
    """Non-trivial values everywhere: norm weights near 1, everything else spread around 0."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, t in named.items():
        noise = torch.randn(t.shape, generator=g)
        if "norm" in name and name.endswith("weight"):
            out[name] = 1.0 + 0.2 * noise
        elif name in ("cls_token", "pos_embed", "mask_token", "decoder_pos_embed"):
            out[name] = 0.5 * noise
        else:
            out[name] = 0.2 * noise
    return out


def mae_decoder(seed: int) -> dict:
    """The tensors MAE's `MaskedAutoencoderViT` adds to the encoder (one decoder block)."""
    tokens = (IMG // PATCH) ** 2 + 1
    shapes = {
        "mask_token": (1, 1, DECODER_WIDTH),
        "decoder_pos_embed": (1, tokens, DECODER_WIDTH),
        "decoder_embed.weight": (DECODER_WIDTH, WIDTH),
        "decoder_embed.bias": (DECODER_WIDTH,),
        "decoder_norm.weight": (DECODER_WIDTH,),
        "decoder_norm.bias": (DECODER_WIDTH,),
        "decoder_pred.weight": (PATCH * PATCH * 3, DECODER_WIDTH),
        "decoder_pred.bias": (PATCH * PATCH * 3,),
    }
    block = Block(DECODER_WIDTH, 2, MLP_RATIO, qkv_bias=True, norm_layer=partial(nn.LayerNorm, eps=1e-6))
    for name, t in block.state_dict().items():
        shapes[f"decoder_blocks.0.{name}"] = tuple(t.shape)
    return randomise({n: torch.empty(s) for n, s in shapes.items()}, seed)


def timm_as_converted(state: dict, global_pool: str) -> torch.Tensor:
    """timm's own model from the options the conversion writes, with the weights it keeps."""
    model = timm.create_model(
        "vit_large_patch16_224",
        pretrained=False,
        **VIT_SIZE,
        global_pool=global_pool,
        num_classes=0,
    ).eval()
    model.load_state_dict(state, strict=True)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retfound-models-vit", type=Path, required=True, help="RETFound's models_vit.py")
    rf = load_retfound(parser.parse_args().retfound_models_vit)
    FIX.mkdir(parents=True, exist_ok=True)
    x = torch.randn(2, 3, IMG, IMG, generator=torch.Generator().manual_seed(11))

    # The pre-training checkpoint: the encoder with its final norm (a token-pooling timm ViT's
    # parameters, head excluded), plus the MAE decoder.
    encoder_names = {k: v for k, v in retfound_mae(rf, False).state_dict().items() if not k.startswith("head.")}
    encoder = randomise(encoder_names, 1)
    pretrain = {**encoder, **mae_decoder(2)}
    torch.save(
        {
            "model": pretrain,
            "optimizer": {"state": {}, "param_groups": [{"lr": 1.5e-4, "weight_decay": 0.05, "params": [0, 1]}]},
            "epoch": 799,
            "scaler": {"scale": 65536.0, "growth_factor": 2.0},
            "args": argparse.Namespace(model="mae_vit_large_patch16", mask_ratio=0.75, norm_pix_loss=True),
        },
        FIX / "mae_pretrain.pth",
    )

    golden = {"pixel_values": x}
    with torch.no_grad():
        for pool, name in [(True, "pretrain_avg"), (False, "pretrain_token")]:
            model = retfound_mae(rf, pool)
            msg = model.load_state_dict(pretrain, strict=False)
            expected_missing = {"head.weight", "head.bias"} | ({"fc_norm.weight", "fc_norm.bias"} if pool else set())
            assert set(msg.missing_keys) == expected_missing, msg.missing_keys
            golden[name] = retfound_features(model, x)

        # Fine-tuned with global pooling: its own fc_norm and head, no norm.
        finetuned_model = retfound_mae(rf, True)
        finetuned = randomise(dict(finetuned_model.state_dict()), 3)
        torch.save({"model": finetuned, "epoch": 9}, FIX / "finetuned.pth")
        assert not finetuned_model.load_state_dict(finetuned, strict=False).missing_keys
        golden["finetuned_avg"] = retfound_features(finetuned_model, x)

        # The conversion's claim: timm's own pooling options compute RETFound's features.
        kept = {k: v for k, v in encoder.items() if not k.startswith("norm.")}
        fresh = {"fc_norm.weight": torch.ones(WIDTH), "fc_norm.bias": torch.zeros(WIDTH)}
        checks = [
            (timm_as_converted({**kept, **fresh}, "avg"), golden["pretrain_avg"]),
            (timm_as_converted(encoder, "token"), golden["pretrain_token"]),
            (
                timm_as_converted({k: v for k, v in finetuned.items() if not k.startswith("head.")}, "avg"),
                golden["finetuned_avg"],
            ),
        ]
        for model, want in checks:
            got = model.forward_head(model.forward_features(x), pre_logits=True)
            assert torch.allclose(got, want, atol=1e-6), (got - want).abs().max()

    save_file({k: v.contiguous().to(torch.float32) for k, v in golden.items()}, FIX / "golden.safetensors")
    # RETFound_dinov2's release keeps its weights under `teacher` (main_finetune.py), named
    # `backbone.…`: two tiny tensors with those names, for the refusal test.
    torch.save(
        {"teacher": {"backbone.cls_token": torch.zeros(1, 1, 8), "backbone.patch_embed.proj.weight": torch.zeros(8, 3, 2, 2)}},
        FIX / "dinov2_teacher.pth",
    )
    for name in ["mae_pretrain.pth", "finetuned.pth", "dinov2_teacher.pth", "golden.safetensors"]:
        print(f"wrote {FIX / name} ({(FIX / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
