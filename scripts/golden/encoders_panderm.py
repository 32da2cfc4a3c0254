"""Golden fixtures for PanDerm's checkpoints, which `calibra convert panderm` turns into a timm ViT
directory (crates/calibra-models/src/timm/panderm.rs).

PanDerm's model code is not on PyPI, so this script runs PanDerm's own file: give the path of
`classification/models/modeling_finetune.py` from a clone of https://github.com/SiyuanYan1/PanDerm
(the fixtures were made at commit 97e09d0):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_panderm.py \\
        --panderm-modeling /path/to/PanDerm/classification/models/modeling_finetune.py

The reference is that file's `VisionTransformer` as `panderm_large_patch16_224()` builds it
(`qkv_bias=True`, LayerNorm eps 1e-6, LayerScale `init_values` 0.1, sin-cos `pos_embed`,
`lin_probe=True` with the standard linear probe), shrunk (width 32, patch 8, depth 2, 4 heads, MLP
128), loaded as PanDerm's `builder.py` loads `PanDerm_Large_LP` (`{k.replace("encoder.", ""): v}`,
`load_state_dict(strict=False)`), and its feature `forward_features(x, is_train=False)`.

Writes, under crates/calibra-models/tests/fixtures/panderm/:
- checkpoint.pth: the model's state dict as a CAE pre-training save names it, every name under
  `encoder.`, with names PanDerm's ViT does not have (a CAE regressor block, a teacher copy of a
  block, `encoder.mask_token`, a `lp_bn` head: PanDerm's strict=False load ignores them), 32 px input
  (4x4 patches), `pos_embed` included.
- no_pos_embed.pth: the same weights at PanDerm's native 224 px with patch 16 (14x14 patches), without
  `pos_embed`: PanDerm's model then uses its own sin-cos embedding.
- golden.safetensors: `pixel_values` [2, 3, 32, 32] and `features` [2, 32] for checkpoint.pth;
  `features_224` [1, 32] for no_pos_embed.pth on the image `x[0, c, h, w] = sin(0.01·(97·c + 13·h +
  7·w))` (computed in the test, not stored); `pos_embed_224` [1, 197, 32], PanDerm's sin-cos table.

Every parameter is random (LayerScale and the q/v biases included), so each mapping is exercised.
Deterministic (fixed seeds): re-running rewrites identical files.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from functools import partial
from pathlib import Path

import torch
import torch.nn as nn
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "panderm"

torch.set_num_threads(1)


def load_panderm(path: Path):
    spec = importlib.util.spec_from_file_location("panderm_modeling_finetune", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its @register_model looks the module up
    spec.loader.exec_module(module)
    return module


def build(pm, img_size: int, patch: int):
    """`panderm_large_patch16_224()`'s options at this script's size."""
    return pm.VisionTransformer(
        img_size=img_size,
        patch_size=patch,
        embed_dim=32,
        depth=2,
        num_heads=4,
        mlp_ratio=4,
        qkv_bias=True,
        norm_layer=partial(nn.LayerNorm, eps=1e-6),
    ).eval()


def randomise(named: dict, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, t in named.items():
        noise = torch.randn(t.shape, generator=g)
        if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "norm.weight":
            out[name] = 1.0 + 0.2 * noise
        elif "gamma" in name:
            out[name] = 0.5 + 0.3 * noise
        elif name in ("cls_token", "pos_embed"):
            out[name] = 0.5 * noise
        else:
            out[name] = 0.2 * noise
    return out


def panderm_load(pm, state: dict, img_size: int, patch: int):
    """PanDerm's builder for PanDerm_Large_LP: rename, then load with strict=False."""
    model = build(pm, img_size, patch)
    renamed = {k.replace("encoder.", ""): v for k, v in state.items()}
    msg = model.load_state_dict(renamed, strict=False)
    assert set(msg.missing_keys) <= {"head.weight", "head.bias", "pos_embed"}, msg.missing_keys
    return model


def formula_image(size: int) -> torch.Tensor:
    c, h, w = torch.meshgrid(torch.arange(3.0), torch.arange(float(size)), torch.arange(float(size)), indexing="ij")
    return torch.sin(0.01 * (97.0 * c + 13.0 * h + 7.0 * w)).unsqueeze(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--panderm-modeling", type=Path, required=True, help="PanDerm's modeling_finetune.py")
    pm = load_panderm(parser.parse_args().panderm_modeling)
    FIX.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(0)  # the model's own initialisation (overwritten below)
    model = build(pm, 32, 8)
    weights = randomise({k: v for k, v in model.state_dict().items() if not k.startswith("head.")}, 21)
    extras = randomise(
        {
            "regressor_and_decoder.blocks.0.norm1.weight": torch.empty(32),
            "teacher.blocks.0.attn.qkv.weight": torch.empty(96, 32),
            "mask_token": torch.empty(1, 1, 32),
            "lp_bn.running_mean": torch.empty(32),
        },
        22,
    )
    state = {f"encoder.{k}": v for k, v in weights.items()}
    state.update({k if k.startswith(("regressor", "teacher")) else f"encoder.{k}": v for k, v in extras.items()})
    torch.save(state, FIX / "checkpoint.pth")

    # The same blocks at 224 px, patch 16, without pos_embed (PanDerm's sin-cos table is used).
    model_224 = build(pm, 224, 16)
    weights_224 = randomise(
        {k: v for k, v in model_224.state_dict().items() if not k.startswith("head.") and k != "pos_embed"}, 23
    )
    torch.save({f"encoder.{k}": v for k, v in weights_224.items()}, FIX / "no_pos_embed.pth")

    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(24))
    with torch.no_grad():
        loaded = panderm_load(pm, state, 32, 8)
        loaded_224 = panderm_load(pm, {f"encoder.{k}": v for k, v in weights_224.items()}, 224, 16)
        golden = {
            "pixel_values": x,
            "features": loaded.forward_features(x, is_train=False),
            "features_224": loaded_224.forward_features(formula_image(224), is_train=False),
            "pos_embed_224": loaded_224.pos_embed.detach(),
        }
    assert golden["features"].shape == (2, 32) and golden["features_224"].shape == (1, 32)
    assert torch.all(golden["pos_embed_224"][0, 0] == 0)
    assert not math.isnan(float(golden["features_224"].sum()))
    save_file({k: v.contiguous().to(torch.float32) for k, v in golden.items()}, FIX / "golden.safetensors")
    for name in ["checkpoint.pth", "no_pos_embed.pth", "golden.safetensors"]:
        print(f"wrote {FIX / name} ({(FIX / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
