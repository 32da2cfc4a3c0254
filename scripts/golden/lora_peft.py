"""Golden fixtures for calibra's LoRA layers and PEFT adapter IO (issue #7).

Builds a TINY randomly initialised `ViTForImageClassification` (transformers 5.24.0) and wraps it with
peft 0.21.2 `LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
modules_to_save=["classifier"])`. peft initialises B = 0 (the adapter would be a no-op), so every LoRA
factor and the saved classifier are then overwritten with seeded random values: the adapter really
changes the logits, and a transposed or swapped factor cannot pass unnoticed.

Writes into crates/calibra-models/tests/fixtures/lora/:
  base/config.json, base/model.safetensors       -- the base model (`save_pretrained`)
  adapter/adapter_config.json, adapter_model.safetensors -- the adapter (`PeftModel.save_pretrained`)
  golden.safetensors:
      pixel_values      [2, 3, 30, 30]
      base_logits       logits of the base model alone
      adapted_logits    logits of the PeftModel (eval mode)
      merged_logits     logits after `merge_and_unload()` (must equal adapted_logits up to rounding)

Deterministic (fixed seeds). Run:
  CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/lora_peft.py
"""

import os
import shutil

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import save_file
from transformers import ViTConfig, ViTForImageClassification

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "crates", "calibra-models", "tests", "fixtures", "lora")


def randomise(model, seed, only=None):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if only is not None and not only(name):
                continue
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if "layernorm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.2 * noise)


def main():
    torch.manual_seed(0)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    config = ViTConfig(
        hidden_size=48,
        num_hidden_layers=3,
        num_attention_heads=3,
        intermediate_size=96,
        image_size=30,
        patch_size=6,
        num_labels=4,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    base = ViTForImageClassification(config).eval()
    randomise(base, 1)
    base.save_pretrained(os.path.join(OUT, "base"))

    g = torch.Generator().manual_seed(2)
    pixel_values = torch.randn((2, 3, 30, 30), generator=g, dtype=torch.float32)
    with torch.no_grad():
        base_logits = base(pixel_values=pixel_values).logits.clone()

    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        target_modules=["q_proj", "v_proj"],
        modules_to_save=["classifier"],
    )
    peft_model = get_peft_model(base, lora).eval()
    randomise(peft_model, 3, only=lambda n: "lora_" in n or "modules_to_save" in n)
    peft_model.save_pretrained(os.path.join(OUT, "adapter"))
    readme = os.path.join(OUT, "adapter", "README.md")
    if os.path.exists(readme):
        os.remove(readme)  # a model-card template; not part of the format
    with torch.no_grad():
        adapted_logits = peft_model(pixel_values=pixel_values).logits.clone()

    # Reload from disk to make sure the files alone reproduce the logits.
    fresh = ViTForImageClassification.from_pretrained(os.path.join(OUT, "base")).eval()
    reloaded = PeftModel.from_pretrained(fresh, os.path.join(OUT, "adapter")).eval()
    with torch.no_grad():
        reloaded_logits = reloaded(pixel_values=pixel_values).logits
        assert torch.allclose(reloaded_logits, adapted_logits, atol=1e-6)
        merged = reloaded.merge_and_unload()
        merged_logits = merged(pixel_values=pixel_values).logits.clone()

    save_file(
        {
            "pixel_values": pixel_values.contiguous(),
            "base_logits": base_logits.contiguous(),
            "adapted_logits": adapted_logits.contiguous(),
            "merged_logits": merged_logits.contiguous(),
        },
        os.path.join(OUT, "golden.safetensors"),
    )
    print("adapted - base max |d| =", (adapted_logits - base_logits).abs().max().item())
    print("merged - adapted max |d| =", (merged_logits - adapted_logits).abs().max().item())


if __name__ == "__main__":
    main()
