"""Golden fixtures for LoRA on timm ViT checkpoints, both ways against peft 0.21.2 + timm 1.0.31
(issue #17 item 1, "LoRA on timm ViT").

PEFT on a timm `VisionTransformer` sees timm's module names: `blocks.{i}.attn.qkv` (ONE Linear
d -> 3d, so ONE lora_A [r, d] and ONE lora_B [3d, r]), `blocks.{i}.attn.proj`, `blocks.{i}.mlp.fc1`,
`blocks.{i}.mlp.fc2`, and the classifier `head` (trained whole, `modules_to_save=["head"]`). calibra
loads `qkv` split into q/k/v and adapts it with one fused branch; these fixtures check that the
adapters move between the two unchanged. A user loads a calibra adapter with

    model = timm.create_model("local-dir:<base>", pretrained=True, num_classes=K)
    model = PeftModel.from_pretrained(model, adapter_dir)

Bases: the tiny random timm fixtures of encoders_timm.py (embed_dim 32, depth 2, 2 heads, img 32,
patch 8), read, never written, from crates/calibra-models/tests/fixtures/timm/:
  token        CLS pooling, final `norm`
  avg_fc_norm  no class token, mean of patch tokens, `fc_norm`, no qkv bias

Cases (each with K = 3 classes, a new head: timm drops the base's 5-class head when num_classes
differs, and the adapter carries the head):
  token_qkv     token,        r 4, alpha 8, ["qkv", "fc2"]
  avg_rslora    avg_fc_norm,  rsLoRA r 4, alpha 6, ["qkv", "attn.proj", "fc1"], rank_pattern
                {"attn.proj": 2}, alpha_pattern {"qkv": 3}, layers_to_transform [1] with
                layers_pattern "blocks"
  token_regex   token,        r 2, alpha 4, target regex `blocks\\.\\d+\\.(attn\\.qkv|mlp\\.fc1)`,
                exclude_modules ["blocks.0.mlp.fc1"], rsLoRA

Writes crates/calibra-models/tests/fixtures/lora_timm/<case>/:
  peft_made/adapter_config.json, adapter_model.safetensors   peft's adapter (random NON-ZERO A and
                                     B, random head), from `save_pretrained`
  golden.safetensors                 pixel_values [2, 3, 32, 32]; peft_made_logits [2, 3];
                                     head_input [2, 32] (what timm's head received, forward hook)
  wrapped.json                       the module names peft wrapped

The other direction: `--calibra-made DIR` takes the adapters calibra wrote (`CALIBRA_TIMM_WRITE_DIR=DIR
cargo test --workspace --test lora_timm_heads`: `save_adapted` of a LoRA classifier on each base with
a deterministic non-zero B, plus calibra's logits), copies each into <case>/calibra_made/, loads it
as above and writes peft's logits beside it (peft_logits.safetensors), printing the largest
difference from calibra's. The Rust test re-creates the adapter byte for byte before matching.

Deterministic (fixed seeds, PYTHONHASHSEED=0). Run, in this order:
  CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/lora_peft_timm.py
  CALIBRA_TIMM_WRITE_DIR=/tmp/timm-lora cargo test --workspace --test lora_timm_heads
  CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/lora_peft_timm.py --calibra-made /tmp/timm-lora
"""

import json
import os
import shutil
import sys

# peft writes target_modules (a set) in iteration order, which depends on string hashing.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])

import timm
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Paths relative to the repository root, so nothing written names a machine.
os.chdir(ROOT)
BASES = os.path.join("crates", "calibra-models", "tests", "fixtures", "timm")
OUT = os.path.join("crates", "calibra-models", "tests", "fixtures", "lora_timm")
K = 3

# case -> (base, peft LoraConfig keyword arguments, seed)
CASES = {
    "token_qkv": ("token", dict(r=4, lora_alpha=8, target_modules=["qkv", "fc2"]), 200),
    "avg_rslora": (
        "avg_fc_norm",
        dict(
            r=4,
            lora_alpha=6,
            target_modules=["qkv", "attn.proj", "fc1"],
            use_rslora=True,
            rank_pattern={"attn.proj": 2},
            alpha_pattern={"qkv": 3},
            layers_to_transform=[1],
            layers_pattern="blocks",
        ),
        210,
    ),
    "token_regex": (
        "token",
        dict(
            r=2,
            lora_alpha=4,
            target_modules=r"blocks\.\d+\.(attn\.qkv|mlp\.fc1)",
            exclude_modules=["blocks.0.mlp.fc1"],
            use_rslora=True,
        ),
        220,
    ),
}


def base_model(base):
    """timm's own load of the base directory with a fresh K-class head; every other weight loaded."""
    model = timm.create_model(f"local-dir:{os.path.join(BASES, base)}", pretrained=True, num_classes=K)
    ref = timm.create_model(f"local-dir:{os.path.join(BASES, base)}", pretrained=True)
    for (n1, p1), (n2, p2) in zip(model.state_dict().items(), ref.state_dict().items()):
        assert n1 == n2, (n1, n2)
        if not n1.startswith("head."):
            assert torch.equal(p1, p2), n1
    return model.eval()


def randomise(model, seed):
    """Random non-zero LoRA factors and head (a fresh adapter has B = 0 and would prove nothing)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "lora_" in name or "modules_to_save" in name:
                p.copy_(0.3 * torch.randn(p.shape, generator=g, dtype=torch.float32))


def logits_and_head_input(model, x):
    seen = {}
    inner = model.base_model.model if isinstance(model, PeftModel) else model

    def capture(module, args, out):
        seen["input"] = args[0].detach().clone()

    hook = inner.head.register_forward_hook(capture)
    with torch.no_grad():
        logits = model(x).detach().clone()
    hook.remove()
    return logits, seen["input"]


def save_adapter(peft_model, path):
    peft_model.save_pretrained(path)
    readme = os.path.join(path, "README.md")
    if os.path.exists(readme):
        os.remove(readme)  # a model-card template; not part of the format


def wrapped_names(model):
    return sorted(
        n.removeprefix("base_model.model.") for n, m in model.named_modules() if hasattr(m, "lora_A") and len(m.lora_A)
    )


def peft_made(case):
    base, kwargs, seed = CASES[case]
    out = os.path.join(OUT, case)
    x = torch.randn((2, 3, 32, 32), generator=torch.Generator().manual_seed(seed), dtype=torch.float32)
    model = get_peft_model(base_model(base), LoraConfig(**kwargs, modules_to_save=["head"])).eval()
    randomise(model, seed + 1)
    wrapped = wrapped_names(model)
    assert wrapped, case
    # The fused qkv is ONE A [r, d] and ONE B [3d, r].
    for name in wrapped:
        m = model.base_model.model.get_submodule(name)
        a, b = m.lora_A["default"].weight, m.lora_B["default"].weight
        assert a.shape[1] == m.in_features and b.shape[0] == m.out_features, (name, a.shape, b.shape)
    save_adapter(model, os.path.join(out, "peft_made"))
    logits, head_input = logits_and_head_input(model, x)
    assert logits.shape == (2, K), logits.shape
    # timm's head reads forward_head(forward_features(x), pre_logits=True).
    inner = model.base_model.model
    with torch.no_grad():
        want = inner.forward_head(inner.forward_features(x), pre_logits=True)
    assert (want - head_input).abs().max().item() < 1e-6, case
    # The adapter reloads onto a fresh model to the same logits (what a user does).
    again = PeftModel.from_pretrained(base_model(base), os.path.join(out, "peft_made")).eval()
    assert wrapped_names(again) == wrapped, case
    d_reload = (logits_and_head_input(again, x)[0] - logits).abs().max().item()
    assert d_reload < 1e-6, (case, d_reload)
    with torch.no_grad():
        bare = base_model(base)
        bare.head.load_state_dict(inner.head.modules_to_save["default"].state_dict())
        effect = (bare(x) - logits).abs().max().item()
    assert effect > 0.05, (case, effect)
    save_file(
        {"pixel_values": x, "peft_made_logits": logits, "head_input": head_input.contiguous()},
        os.path.join(out, "golden.safetensors"),
    )
    with open(os.path.join(out, "wrapped.json"), "w") as f:
        json.dump(wrapped, f, indent=1)
        f.write("\n")
    print(f"{case}: {len(wrapped)} LoRA modules {wrapped}; |adapted - head-only| max {effect:.3f}")


def calibra_made(rust_dir):
    for case, (base, _, _) in CASES.items():
        src = os.path.join(rust_dir, case)
        if not os.path.isdir(src):
            continue
        dst = os.path.join(OUT, case, "calibra_made")
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        os.makedirs(dst)
        for f in ["adapter_config.json", "adapter_model.safetensors"]:
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
        g = load_file(os.path.join(OUT, case, "golden.safetensors"))
        model = PeftModel.from_pretrained(base_model(base), dst).eval()
        saved = load_file(os.path.join(dst, "adapter_model.safetensors"))
        wrapped = wrapped_names(model)
        assert wrapped, case
        for name in wrapped:
            m = model.base_model.model.get_submodule(name)
            b = m.lora_B["default"].weight.detach()
            assert torch.equal(b, saved[f"base_model.model.{name}.lora_B.weight"]), name
            assert b.abs().max() > 0, name
        head = model.base_model.model.head
        assert torch.equal(head.modules_to_save["default"].weight.detach(), saved["base_model.model.head.weight"])
        logits, _ = logits_and_head_input(model, g["pixel_values"])
        save_file({"logits": logits}, os.path.join(dst, "peft_logits.safetensors"))
        ours = load_file(os.path.join(src, "calibra_logits.safetensors"))["logits"]
        print(f"{case}: calibra-made adapter, {len(wrapped)} LoRA modules; max |peft - calibra| logits "
              f"{(logits - ours).abs().max().item():.2e}")


def main():
    torch.set_num_threads(1)
    if len(sys.argv) == 3 and sys.argv[1] == "--calibra-made":
        calibra_made(sys.argv[2])
        return
    os.makedirs(OUT, exist_ok=True)
    for case in CASES:
        path = os.path.join(OUT, case)
        if os.path.isdir(path):
            # keep calibra_made/ (from the later step) across a re-run
            for sub in os.listdir(path):
                if sub != "calibra_made":
                    p = os.path.join(path, sub)
                    shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    for case in CASES:
        peft_made(case)


if __name__ == "__main__":
    main()
