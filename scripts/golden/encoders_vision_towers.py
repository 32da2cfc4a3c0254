"""Golden fixtures for the vision towers inside multimodal checkpoints, which `calibra convert
vision-tower` extracts: the SigLIP tower of a Gemma 3 checkpoint (MedGemma's layout:
`Gemma3ForConditionalGeneration`, `model_type` `gemma3`, the tower's `vision_config` a
`siglip_vision_model` without its pooling head), and the CLIP tower of transformers' LLaVA.

Run (venv with torch 2.15, transformers 5.24, safetensors):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_vision_towers.py

Writes, under crates/calibra-models/tests/fixtures/vision_towers/:
- gemma3-sharded/: a tiny random `Gemma3ForConditionalGeneration` (vision: 16 px, patch 4, width 32, 2 layers,
  2 heads, no head; text: width 16, 1 layer, vocabulary 300) as transformers 5.24's
  `save_pretrained(max_shard_size="20KB")` writes it: `config.json`, `model.safetensors.index.json`
  and its shards (the tower's tensors named `vision_tower.…`), plus the `preprocessor_config.json` of
  a `Gemma3ImageProcessor` (16 × 16, bilinear, mean = std = 0.5, pan-and-scan off).
- gemma3-legacy/: the same weights in one `model.safetensors` with the names transformers 4.50 wrote (the
  MedGemma release's layout): the tower under `vision_tower.vision_model.`, the decoder under
  `language_model.model.`; the script checks that transformers loads it with no missing or unexpected
  key and gives the same outputs.
- gemma3_golden.json: inputs (images already normalised, `[2, 3, 16, 16]`) and the tower's outputs,
  `model.model.vision_tower(pixel_values).last_hidden_state` and its mean over tokens (the feature a
  SigLIP tower without its head gives in calibra); `projected`, the image tokens after MedGemma's
  multimodal projector (`model.model.get_image_features(pixel_values).pooler_output`, `[2, 4, 16]`:
  average-pooled to `mm_tokens_per_image` = 4 tokens, Gemma RMSNorm, projection to the decoder's
  width), and `projected_mean`, their mean over tokens (calibra's feature with `--projector`).
- llava/: a tiny random `LlavaForConditionalGeneration` (transformers' LLaVA layout, a CLIP vision
  tower: 16 px, patch 4, width 32, 2 layers; a 1-layer Llama decoder) as `save_pretrained` writes it,
  with a `CLIPImageProcessor` config, and llava_golden.json: the same images through its tower,
  `last_hidden_state` and `pooler_output` (post-LayerNorm class token, calibra's CLIP feature).

Deterministic: fixed generators; re-running rewrites identical files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import (
    CLIPImageProcessor,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    Gemma3Config,
    Gemma3ForConditionalGeneration,
    Gemma3ImageProcessor,
    Gemma3TextConfig,
    SiglipVisionConfig,
)

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "vision_towers"

torch.set_num_threads(1)


def f32(t: torch.Tensor):
    t = t.detach().to(torch.float32)
    if t.dim() == 0:
        return float(f"{t.item():.9g}")
    return [f32(x) for x in t] if t.dim() > 1 else [float(f"{v:.9g}") for v in t.tolist()]


def randomise(model: torch.nn.Module, seed: int) -> None:
    """Every parameter random (LayerNorm weights around 1, biases small) so that each one matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and ("norm" in name) and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[-1] if p.dim() == 2 else p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)


def tower_outputs(model, images):
    with torch.no_grad():
        last = model.model.vision_tower(pixel_values=images).last_hidden_state
    return last


def main() -> None:
    vision = SiglipVisionConfig(
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=16,
        patch_size=4,
        vision_use_head=False,
    )
    text = Gemma3TextConfig(
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        vocab_size=300,
        max_position_embeddings=64,
        sliding_window=16,
    )
    cfg = Gemma3Config(
        text_config=text.to_dict(),
        vision_config=vision.to_dict(),
        mm_tokens_per_image=4,
        image_token_index=299,
        boi_token_index=297,
        eoi_token_index=298,
    )
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(cfg).eval()
    randomise(model, 5)

    if FIX.exists():
        shutil.rmtree(FIX)
    sharded = FIX / "gemma3-sharded"
    model.save_pretrained(sharded, max_shard_size="20KB")
    (sharded / "generation_config.json").unlink(missing_ok=True)
    processor = Gemma3ImageProcessor(size={"height": 16, "width": 16}, do_pan_and_scan=False)
    processor.save_pretrained(sharded)

    # transformers 4.50's names (the MedGemma release): one file, tower under vision_tower.vision_model.
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    state = {}
    for shard in sorted(set(index["weight_map"].values())):
        state.update(load_file(sharded / shard))
    legacy_state = {}
    for name, tensor in state.items():
        if name.startswith("vision_tower."):
            name = "vision_tower.vision_model." + name.removeprefix("vision_tower.")
        elif name.startswith("language_model."):
            name = "language_model.model." + name.removeprefix("language_model.")
        legacy_state[name] = tensor.contiguous()
    legacy = FIX / "gemma3-legacy"
    legacy.mkdir(parents=True)
    save_file(legacy_state, legacy / "model.safetensors", metadata={"format": "pt"})
    shutil.copy(sharded / "config.json", legacy / "config.json")
    shutil.copy(sharded / "preprocessor_config.json", legacy / "preprocessor_config.json")

    g = torch.Generator().manual_seed(17)
    images = torch.randn(2, 3, 16, 16, generator=g)
    last = tower_outputs(model, images)
    with torch.no_grad():
        # MedGemma's vision stack up to its generative interface: the tower, then
        # Gemma3MultiModalProjector (average pool to mm_tokens_per_image tokens, Gemma RMSNorm, projection).
        projected = model.model.get_image_features(pixel_values=images).pooler_output
    assert projected.shape == (2, 4, 16)
    for layout in (sharded, legacy):
        reloaded, info = Gemma3ForConditionalGeneration.from_pretrained(layout, output_loading_info=True)
        missing = [k for k in info["missing_keys"] if "vision" in k or k.startswith("model.")]
        assert not missing and not info["unexpected_keys"], (layout, info)
        again = tower_outputs(reloaded.eval(), images)
        assert torch.equal(again, last), layout

    golden = {
        "vision_config": json.loads((sharded / "config.json").read_text())["vision_config"],
        "images": f32(images),
        "last_hidden_state": f32(last),
        "mean_tokens": f32(last.mean(dim=1)),
        "projected": f32(projected),
        "projected_mean": f32(projected.mean(dim=1)),
    }
    with open(FIX / "gemma3_golden.json", "w") as f:
        json.dump(golden, f, separators=(",", ":"), ensure_ascii=True)
        f.write("\n")
    llava(images)
    print("wrote", FIX)


def llava(images: torch.Tensor) -> None:
    vision = CLIPVisionConfig(
        hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2, image_size=16, patch_size=4
    )
    text = LlamaConfig(
        hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
        vocab_size=300, max_position_embeddings=64,
    )
    cfg = LlavaConfig(vision_config=vision.to_dict(), text_config=text.to_dict(), image_token_index=299)
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(cfg).eval()
    randomise(model, 6)
    out = FIX / "llava"
    model.save_pretrained(out)
    (out / "generation_config.json").unlink(missing_ok=True)
    CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16}).save_pretrained(out)
    reloaded, info = LlavaForConditionalGeneration.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    with torch.no_grad():
        tower = reloaded.eval().model.vision_tower(pixel_values=images)
    golden = {
        "vision_config": json.loads((out / "config.json").read_text())["vision_config"],
        "last_hidden_state": f32(tower.last_hidden_state),
        "pooler_output": f32(tower.pooler_output),
    }
    with open(FIX / "llava_golden.json", "w") as f:
        json.dump(golden, f, separators=(",", ":"), ensure_ascii=True)
        f.write("\n")


if __name__ == "__main__":
    main()
