"""PEFT's logits for the LoRA adapters TRAINED BY CALIBRA (issue #7: "an adapter trained here loads in peft").

`cargo run -p calibra-train --example lora_trained_adapter` trains two adapters on the tiny
ViTForImageClassification of crates/calibra-models/tests/fixtures/lora/base (made by lora_peft.py) and
writes them, with the evaluation images and calibra's own logits, to
crates/calibra-train/tests/fixtures/lora_trained/. This script loads each adapter the way a user would,
`ViTForImageClassification.from_pretrained(base)` + `PeftModel.from_pretrained(model, adapter_dir)` (peft
0.21.2, transformers 5.24.0), in eval mode, and writes PEFT's logits on the same images:

  lora_trained/peft_logits.safetensors:
      logits.adapter              [3, 4]   (q_proj, v_proj)
      logits.adapter_all_linear   [3, 4]   (q/k/v/o_proj, fc1, fc2)

It also checks that PEFT really applied the adapter (every LoRA module and the saved classifier were
loaded, with no missing or unexpected keys) and prints the largest difference from calibra's logits.
No randomness: re-running regenerates an identical file. Run:
  CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/lora_trained_adapter.py
"""

import os

import torch
from peft import PeftModel
from safetensors.torch import load_file, save_file
from transformers import ViTForImageClassification

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BASE = os.path.join(ROOT, "crates", "calibra-models", "tests", "fixtures", "lora", "base")
FIXTURE = os.path.join(ROOT, "crates", "calibra-train", "tests", "fixtures", "lora_trained")
VARIANTS = {
    "adapter": ["q_proj", "v_proj"],
    "adapter_all_linear": ["q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2"],
}


def main():
    torch.set_num_threads(1)
    ours = load_file(os.path.join(FIXTURE, "ours.safetensors"))
    pixel_values = ours["pixel_values"]
    out = {}
    for variant, targets in VARIANTS.items():
        base = ViTForImageClassification.from_pretrained(BASE).eval()
        with torch.no_grad():
            base_logits = base(pixel_values=pixel_values).logits.clone()
        model = PeftModel.from_pretrained(base, os.path.join(FIXTURE, variant)).eval()

        # PEFT must have wrapped exactly the targets in every layer and loaded the saved head.
        wrapped = sorted(n for n, _ in model.named_modules() if n.endswith(tuple(targets)) and
                         hasattr(model.get_submodule(n), "lora_A"))
        assert len(wrapped) == len(targets) * base.config.num_hidden_layers, wrapped
        saved_file = load_file(os.path.join(FIXTURE, variant, "adapter_model.safetensors"))
        head = model.base_model.model.classifier
        assert hasattr(head, "modules_to_save"), "classifier is not a modules_to_save wrapper"
        assert torch.equal(head.modules_to_save["default"].weight.detach(),
                           saved_file["base_model.model.classifier.weight"])
        for name in wrapped:
            key = "base_model.model." + name.removeprefix("base_model.model.") + ".lora_B.weight"
            b = model.get_submodule(name).lora_B["default"].weight.detach()
            assert torch.equal(b, saved_file[key]), key
            assert b.abs().max() > 0, f"{key} is zero: the adapter would be a no-op"

        with torch.no_grad():
            logits = model(pixel_values=pixel_values).logits.clone()
        out[f"logits.{variant}"] = logits.contiguous()
        print(f"{variant}: {len(wrapped)} LoRA modules; |peft - base| max "
              f"{(logits - base_logits).abs().max().item():.3f}; |peft - calibra| max "
              f"{(logits - ours[f'logits.{variant}']).abs().max().item():.2e}")
    save_file(out, os.path.join(FIXTURE, "peft_logits.safetensors"))


if __name__ == "__main__":
    main()
