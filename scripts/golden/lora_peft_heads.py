"""Golden fixtures for the fine-tuning classifier's head (issue #17 item 2, "Heads that match transformers").

calibra's `EncoderClassifier` classifies the feature each family's transformers 5.24
`<Family>ForImageClassification` feeds its `classifier` (calibra `Encoder::classification_feature`),
so that a LoRA adapter + head saved by calibra (`save_adapted`, head in `modules_to_save =
["classifier"]`) loads with

    model = <Family>ForImageClassification.from_pretrained(base, num_labels=K)
    model = PeftModel.from_pretrained(model, adapter_dir)

and gives calibra's logits, and an adapter made with peft on that model loads in calibra
(`load_adapted_lora`) and gives peft's logits. Families and their tiny bases (all float32, eager
attention):

  vit               crates/calibra-models/tests/fixtures/lora/base             ViTForImageClassification, K = 4
  dinov2            crates/calibra-models/tests/fixtures/dinov2                Dinov2ForImageClassification, K = 3
  dinov2_registers  crates/calibra-models/tests/fixtures/lora_families/dinov2_registers/base
                                                                               Dinov2WithRegistersForImageClassification
  clip              crates/calibra-models/tests/fixtures/lora_families/clip/base (a CLIPModel)
                                                                               CLIPForImageClassification
  vit_mae           crates/calibra-models/tests/fixtures/vit_mae (a ViTMAEModel)  ViTForImageClassification
  siglip            lora_heads/siglip_base, made here: a joint SiglipModel (vision_use_head = True).
                    SiglipForImageClassification.from_pretrained on a SiglipVisionModel checkpoint
                    loads NONE of its weights (it expects SiglipModel's `vision_model.` names under a
                    SiglipConfig), so the base must be a SiglipModel checkpoint, as google/siglip-* are.

Writes into crates/calibra-train/tests/fixtures/lora_heads/:
  siglip_base/{config.json,model.safetensors}
  <family>/golden.safetensors          pixel_values [2, 3, S, S]; peft_made_logits [2, K];
                                       peft_made_classifier_input [2, d_cls] (what the classifier got,
                                       captured with a forward hook)
  <family>/peft_made/adapter_*         peft's adapter: random NON-ZERO factors, rsLoRA, the classifier
                                       (random) in modules_to_save
  heads.json                           per family: class, base, K, classifier in_features, and the
                                       classifier input checked against its definition

The other direction: `--calibra-made DIR` takes the adapters calibra made and saved
(`CALIBRA_HEADS_WRITE_DIR=DIR cargo test --workspace --test lora_heads`, which writes DIR/<family>/
with `save_adapted`, plus calibra's logits), copies each into <family>/calibra_made/, loads it into
peft as above and writes peft's logits beside it (peft_logits.safetensors), printing the largest
difference from calibra's. The Rust test re-creates the adapter byte for byte before matching.

Deterministic (fixed seeds, PYTHONHASHSEED=0). Run, in this order:
  CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/lora_peft_heads.py
  CALIBRA_HEADS_WRITE_DIR=/tmp/heads cargo test --workspace --test lora_heads
  scripts/golden/venv.sh python scripts/golden/lora_peft_heads.py --calibra-made /tmp/heads
"""

import json
import os
import shutil
import sys

# peft writes target_modules (a set) in iteration order, which depends on string hashing.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import (
    CLIPForImageClassification,
    Dinov2ForImageClassification,
    Dinov2WithRegistersForImageClassification,
    SiglipConfig,
    SiglipForImageClassification,
    SiglipModel,
    ViTForImageClassification,
)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Paths relative to the repository root, so the adapters' `base_model_name_or_path` names no machine.
os.chdir(ROOT)
MODELS = os.path.join("crates", "calibra-models", "tests", "fixtures")
OUT = os.path.join("crates", "calibra-train", "tests", "fixtures", "lora_heads")
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)

# family -> (transformers class, base directory, K)
FAMILIES = {
    "vit": (ViTForImageClassification, os.path.join(MODELS, "lora", "base"), 4),
    "dinov2": (Dinov2ForImageClassification, os.path.join(MODELS, "dinov2"), 3),
    "dinov2_registers": (
        Dinov2WithRegistersForImageClassification,
        os.path.join(MODELS, "lora_families", "dinov2_registers", "base"),
        3,
    ),
    "clip": (CLIPForImageClassification, os.path.join(MODELS, "lora_families", "clip", "base"), 3),
    "siglip": (SiglipForImageClassification, os.path.join(OUT, "siglip_base"), 3),
    # A ViTMAEModel checkpoint (model_type vit_mae): transformers has no ViTMAEForImageClassification;
    # MAE is fine-tuned as a ViTForImageClassification, which loads the MAE encoder's weights.
    "vit_mae": (ViTForImageClassification, os.path.join(MODELS, "vit_mae"), 3),
}

# peft's adapters: rsLoRA on names every family has; `fc2` also reaches SigLIP's pooling-head MLP
# (wrapped, but the classifier never runs the head).
PEFT_MADE = dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "fc2"], use_rslora=True, modules_to_save=["classifier"])


def randomise(model, seed, only=None):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if only is not None and not only(name):
                continue
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if ("norm" in name or "lambda1" in name) and name.endswith(("weight", "lambda1")):
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.2 * noise)


def lora_or_head(name):
    return "lora_" in name or "modules_to_save" in name


def save_adapter(peft_model, path):
    peft_model.save_pretrained(path)
    readme = os.path.join(path, "README.md")
    if os.path.exists(readme):
        os.remove(readme)  # a model-card template; not part of the format


def image_size(base):
    with open(os.path.join(base, "config.json")) as f:
        c = json.load(f)
    return c.get("vision_config", c)["image_size"]


def pixels(seed, size):
    g = torch.Generator().manual_seed(seed)
    return torch.randn((2, 3, size, size), generator=g, dtype=torch.float32)


def classifier_model(family):
    """`<Family>ForImageClassification.from_pretrained(base, num_labels=K)`, checked to load every
    base weight (only the classifier may be missing)."""
    cls, base, k = FAMILIES[family]
    model, info = cls.from_pretrained(base, num_labels=k, attn_implementation="eager", output_loading_info=True)
    missing = set(info["missing_keys"]) - {"classifier.weight", "classifier.bias"}
    assert not missing, (family, sorted(missing)[:5])
    assert not info["mismatched_keys"], (family, info["mismatched_keys"])
    return model.eval()


def logits_and_input(model, x):
    """Logits, and the tensor the classifier received (forward hook)."""
    seen = {}
    head = model.base_model.model.classifier if isinstance(model, PeftModel) else model.classifier
    def capture(module, args, out):
        seen["input"] = args[0].detach().clone()  # returns None: a hook's return value replaces the output

    hook = head.register_forward_hook(capture)
    with torch.no_grad():
        logits = model(pixel_values=x).logits.detach().clone()
    hook.remove()
    return logits, seen["input"]


def expected_input(family, model, x):
    """The classifier input by its definition in modeling_<family>.py, from the backbone's
    `last_hidden_state`, to check the hook captured what the README states."""
    inner = model.base_model.model if isinstance(model, PeftModel) else model
    with torch.no_grad():
        if family in ("vit", "vit_mae"):
            h = inner.vit(pixel_values=x).last_hidden_state
            return h[:, 0, :]
        if family == "dinov2":
            h = inner.dinov2(pixel_values=x).last_hidden_state
            return torch.cat([h[:, 0], h[:, 1:].mean(dim=1)], dim=1)
        if family == "dinov2_registers":
            h = inner.dinov2_with_registers(pixel_values=x).last_hidden_state
            r = inner.config.num_register_tokens
            return torch.cat([h[:, 0], h[:, 1 + r :].mean(dim=1)], dim=1)
        if family == "clip":
            h = inner.vision_model(pixel_values=x).last_hidden_state  # before post_layernorm
            return h[:, 1:, :].mean(dim=1)
        if family == "siglip":
            h = inner.vision_model(pixel_values=x).last_hidden_state  # after post_layernorm
            return h.mean(dim=1)
    raise ValueError(family)


def siglip_base():
    out = os.path.join(OUT, "siglip_base")
    config = SiglipConfig(
        vision_config=dict(**TINY, image_size=28, patch_size=7, vision_use_head=True),
        text_config=dict(**TINY, vocab_size=100, max_position_embeddings=16),
    )
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = SiglipModel(config).eval()
    randomise(model, 31)
    model.save_pretrained(out)


def peft_made(family, seed):
    out = os.path.join(OUT, family)
    cls, base, k = FAMILIES[family]
    x = pixels(seed, image_size(base))
    model = get_peft_model(classifier_model(family), LoraConfig(**PEFT_MADE)).eval()
    randomise(model, seed + 1, only=lora_or_head)
    save_adapter(model, os.path.join(out, "peft_made"))
    logits, seen = logits_and_input(model, x)
    assert logits.shape == (2, k), (family, logits.shape)
    want = expected_input(family, model, x)
    d = (seen - want).abs().max().item()
    assert d < 1e-6, (family, d)
    # The adapter reloads onto a fresh model to the same logits (what a user does).
    again = PeftModel.from_pretrained(classifier_model(family), os.path.join(out, "peft_made")).eval()
    d_reload = (logits_and_input(again, x)[0] - logits).abs().max().item()
    assert d_reload < 1e-6, (family, d_reload)
    n_b = [n for n, p in model.named_parameters() if "lora_B" in n]
    assert n_b and all(p.abs().max() > 0 for n, p in model.named_parameters() if "lora_B" in n)
    save_file(
        {"pixel_values": x, "peft_made_logits": logits, "peft_made_classifier_input": seen.contiguous()},
        os.path.join(out, "golden.safetensors"),
    )
    head = model.base_model.model.classifier.modules_to_save["default"]
    return {
        "class": cls.__name__,
        "base": base,
        "num_labels": k,
        "classifier_in_features": head.in_features,
        "hidden_size": getattr(model.base_model.model.config, "vision_config", model.base_model.model.config).hidden_size,
        "classifier input == definition (max |diff|)": d,
        "lora modules": len(n_b),
    }


def calibra_made(rust_dir):
    for family in FAMILIES:
        src = os.path.join(rust_dir, family)
        dst = os.path.join(OUT, family, "calibra_made")
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        os.makedirs(dst)
        for f in ["adapter_config.json", "adapter_model.safetensors"]:
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
        g = load_file(os.path.join(OUT, family, "golden.safetensors"))
        model = PeftModel.from_pretrained(classifier_model(family), dst).eval()
        assert all(p.abs().max() > 0 for n, p in model.named_parameters() if "lora_B" in n), family
        saved = load_file(os.path.join(dst, "adapter_model.safetensors"))
        head = model.base_model.model.classifier
        assert torch.equal(head.modules_to_save["default"].weight.detach(), saved["base_model.model.classifier.weight"])
        logits, _ = logits_and_input(model, g["pixel_values"])
        assert logits.shape == (2, FAMILIES[family][2]), (family, logits.shape)
        save_file({"logits": logits}, os.path.join(dst, "peft_logits.safetensors"))
        ours = load_file(os.path.join(src, "calibra_logits.safetensors"))["logits"]
        n_lora = sum(1 for n, _ in model.named_parameters() if "lora_B" in n)
        print(f"{family}: {n_lora} LoRA modules; max |peft - calibra| logits {(logits - ours).abs().max().item():.2e}")


def main():
    torch.set_num_threads(1)
    if len(sys.argv) == 3 and sys.argv[1] == "--calibra-made":
        calibra_made(sys.argv[2])
        return
    os.makedirs(OUT, exist_ok=True)
    for entry in ["siglip_base", *FAMILIES]:
        path = os.path.join(OUT, entry)
        if os.path.isdir(path):
            # keep calibra_made/ (from the later step) across a re-run
            for sub in os.listdir(path):
                if sub != "calibra_made":
                    p = os.path.join(path, sub)
                    shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    siglip_base()
    facts = {}
    for i, family in enumerate(FAMILIES):
        facts[family] = peft_made(family, 100 + 10 * i)
    with open(os.path.join(OUT, "heads.json"), "w") as f:
        json.dump(facts, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(facts, indent=1))


if __name__ == "__main__":
    main()
