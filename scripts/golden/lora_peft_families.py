"""Golden fixtures for LoRA on every Hugging Face family calibra loads (issue #17), made with peft.

For DINOv2 with registers, CLIP (vision tower, and the text tower in the joint CLIPModel) and SigLIP
vision, builds a TINY seeded random transformers 5.24.0 model (hidden 32, 2 layers, 28 px images with
7 px patches), saves the base model in the Hugging Face layout, wraps the model a user would fine-tune
(`<Family>ForImageClassification`, or `CLIPModel` for the text tower) with peft 0.21.2, overwrites every
LoRA factor with seeded random NON-ZERO values (peft starts B at 0, which would hide a transposed or
swapped factor), saves the adapter, and records what the adapted encoder outputs, through peft.

Each family exercises some of PEFT's matching rules, so calibra's copy of them is checked against
peft's choices (the set of wrapped modules is the set of keys in the adapter):
  dinov2_registers  list targets on all six projections, `exclude_modules`, `rank_pattern`,
                    `alpha_pattern`, rsLoRA (scale alpha / sqrt(r))
  clip              vision: a regex string target (full match); joint CLIPModel: list targets with
                    `layers_to_transform` + `layers_pattern` on both towers, rsLoRA
  siglip            list targets reaching the attention-pooling head's MLP (`head.mlp.fc1/fc2`),
                    `modules_to_save` (the classifier), rsLoRA

Writes into crates/calibra-models/tests/fixtures/lora_families/:
  <family>/base/{config.json,model.safetensors}           the base model (`save_pretrained`)
  <family>/adapter*/{adapter_config.json,adapter_model.safetensors}   (`PeftModel.save_pretrained`)
  <family>/golden.safetensors                               inputs and outputs, base and adapted
  matching_rules.json                                       peft's check_target_module_exists on
                                                            configs chosen to separate its rules
  peft_lora_config_defaults.json                            `LoraConfig().to_dict()` (the options
                                                            calibra accepts only at their default)
  multihead_attention.json                                  what peft does with SigLIP's pooling-head
                                                            nn.MultiheadAttention (see check_mha)

The other direction, twice. `--calibra-made DIR` takes the adapters calibra made itself (apply_lora,
seeded A, a deterministic non-zero B; written by the Rust test under DIR/calibra_made/ when
CALIBRA_LORA_WRITE_DIR=DIR), copies them into lora_families/calibra_made/, loads each into peft on the
transformers model and saves peft's outputs beside it (peft_outputs.safetensors), which the Rust test
then matches. `--check-rust DIR` loads the adapters that calibra wrote
(`CALIBRA_LORA_WRITE_DIR=DIR cargo test --workspace --test lora_families`) into peft on the same
base models and compares peft's outputs with the golden ones; the result is written to
lora_families/rust_written_check.json.

Deterministic (fixed seeds). Run, in this order:
  CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/lora_peft_families.py
  CALIBRA_LORA_WRITE_DIR=/tmp/lora cargo test --workspace --test lora_families   # writes calibra's adapters
  scripts/golden/venv.sh python scripts/golden/lora_peft_families.py --calibra-made /tmp/lora
  scripts/golden/venv.sh python scripts/golden/lora_peft_families.py --check-rust /tmp/lora
"""

import json
import os
import shutil
import sys

# peft keeps target_modules as a set and writes it in iteration order, which depends on string hashing:
# fix the hash seed so the adapter_config.json files are the same on every run.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import (
    CLIPConfig,
    CLIPForImageClassification,
    CLIPModel,
    Dinov2WithRegistersConfig,
    Dinov2WithRegistersForImageClassification,
    Dinov2WithRegistersModel,
    SiglipConfig,
    SiglipForImageClassification,
    SiglipVisionConfig,
    SiglipVisionModel,
)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "crates", "calibra-models", "tests", "fixtures", "lora_families")
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
IMAGE = dict(image_size=28, patch_size=7)


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


def save_adapter(peft_model, path):
    peft_model.save_pretrained(path)
    readme = os.path.join(path, "README.md")
    if os.path.exists(readme):
        os.remove(readme)  # a model-card template; not part of the format


def pixels(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn((2, 3, 28, 28), generator=g, dtype=torch.float32)


def tower_outputs(tower, prefix, **inputs):
    with torch.no_grad():
        out = tower(**inputs)
    return {
        f"{prefix}last_hidden_state": out.last_hidden_state.contiguous().clone(),
        f"{prefix}pooled": out.pooler_output.contiguous().clone(),
    }


def lora_only(name):
    return "lora_" in name or "modules_to_save" in name


def wrapped(peft_model):
    return sorted(n[len("base_model.model.") : -len(".lora_A")] for n, _ in peft_model.named_modules() if n.endswith(".lora_A"))


# ------------------------------------------------------------------------------------------------


def dinov2_registers():
    out = os.path.join(OUT, "dinov2_registers")
    config = Dinov2WithRegistersConfig(
        **TINY, **IMAGE, num_register_tokens=2, layerscale_value=0.7, num_labels=3, attn_implementation="eager"
    )
    torch.manual_seed(0)
    base = Dinov2WithRegistersModel(config).eval()
    randomise(base, 1)
    base.save_pretrained(os.path.join(out, "base"))
    x = pixels(2)
    golden = {"pixel_values": x, **tower_outputs(base, "base_", pixel_values=x)}

    cls = Dinov2WithRegistersForImageClassification(config).eval()
    cls.dinov2_with_registers.load_state_dict(base.state_dict())
    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2"],
        exclude_modules=["layer.0.mlp.fc1"],
        rank_pattern={"o_proj": 2},
        alpha_pattern={"fc2": 3},
        use_rslora=True,
        modules_to_save=["classifier"],
    )
    model = get_peft_model(cls, lora).eval()
    randomise(model, 3, only=lora_only)
    save_adapter(model, os.path.join(out, "adapter"))
    golden.update(tower_outputs(model.base_model.model.dinov2_with_registers, "adapted_", pixel_values=x))

    # The same adapter as PEFT writes it for the standalone Dinov2WithRegistersModel.
    standalone = LoraConfig(
        r=4,
        lora_alpha=8,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2"],
        exclude_modules=["layer.0.mlp.fc1"],
        rank_pattern={"o_proj": 2},
        alpha_pattern={"fc2": 3},
        use_rslora=True,
    )
    plain = Dinov2WithRegistersModel(config).eval()
    plain.load_state_dict(base.state_dict())
    alone = get_peft_model(plain, standalone)
    copy_factors(model, alone, "dinov2_with_registers.")
    save_adapter(alone, os.path.join(out, "adapter_standalone"))
    check = tower_outputs(alone.eval(), "", pixel_values=x)
    assert torch.allclose(check["pooled"], golden["adapted_pooled"], atol=1e-6)
    finish(out, golden, wrapped(model))


def copy_factors(src, dst, strip):
    """Copy every LoRA factor of `src` into `dst`, whose module names lack the prefix `strip`."""
    src_params = dict(src.named_parameters())
    with torch.no_grad():
        for name, p in dst.named_parameters():
            if "lora_" not in name:
                continue
            inner = name[len("base_model.model.") :]
            p.copy_(src_params[f"base_model.model.{strip}{inner}"])


def clip():
    out = os.path.join(OUT, "clip")
    config = CLIPConfig(
        vision_config=dict(**TINY, **IMAGE),
        text_config=dict(
            **TINY, vocab_size=100, max_position_embeddings=16, bos_token_id=98, eos_token_id=99, pad_token_id=1
        ),
        projection_dim=16,
        num_labels=3,
    )
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    base = CLIPModel(config).eval()
    randomise(base, 11)
    base.save_pretrained(os.path.join(out, "base"))
    x = pixels(12)
    ids = torch.tensor([[98, 5, 17, 33, 99, 1, 1, 1], [98, 40, 2, 61, 70, 12, 99, 1]])
    golden = {"pixel_values": x, "input_ids": ids.to(torch.int64)}
    golden.update(tower_outputs(base.vision_model, "base_vision_", pixel_values=x))
    golden.update(tower_outputs(base.text_model, "base_text_", input_ids=ids))

    # Vision tower, as CLIPForImageClassification names it; a regex string target.
    cls = CLIPForImageClassification(config).eval()
    cls.vision_model.load_state_dict(base.vision_model.state_dict())
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=r".*\.self_attn\.(q_proj|v_proj|out_proj)", modules_to_save=["classifier"])
    model = get_peft_model(cls, lora).eval()
    randomise(model, 13, only=lora_only)
    save_adapter(model, os.path.join(out, "adapter_vision"))
    golden.update(tower_outputs(model.base_model.model.vision_model, "vision_adapted_vision_", pixel_values=x))
    vision_wrapped = wrapped(model)

    # Both towers of CLIPModel; list targets restricted to block 1 by layers_to_transform.
    joint = CLIPModel(config).eval()
    joint.load_state_dict(base.state_dict())
    lora = LoraConfig(
        r=4,
        lora_alpha=6,
        target_modules=["q_proj", "out_proj", "fc2"],
        layers_to_transform=[1],
        layers_pattern="layers",
        use_rslora=True,
    )
    model = get_peft_model(joint, lora).eval()
    randomise(model, 14, only=lora_only)
    save_adapter(model, os.path.join(out, "adapter_joint"))
    inner = model.base_model.model
    golden.update(tower_outputs(inner.vision_model, "joint_adapted_vision_", pixel_values=x))
    golden.update(tower_outputs(inner.text_model, "joint_adapted_text_", input_ids=ids))
    finish(out, golden, {"adapter_vision": vision_wrapped, "adapter_joint": wrapped(model)})


def siglip():
    out = os.path.join(OUT, "siglip")
    vision = SiglipVisionConfig(**TINY, **IMAGE, vision_use_head=True)
    vision._attn_implementation = "eager"
    torch.manual_seed(0)
    base = SiglipVisionModel(vision).eval()
    randomise(base, 21)
    base.save_pretrained(os.path.join(out, "base"))
    x = pixels(22)
    golden = {"pixel_values": x, **tower_outputs(base, "base_", pixel_values=x)}

    config = SiglipConfig(vision_config=vision.to_dict(), text_config=dict(**TINY, vocab_size=100), num_labels=3)
    config._attn_implementation = "eager"
    cls = SiglipForImageClassification(config).eval()
    missing = cls.vision_model.load_state_dict(base.state_dict(), strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys
    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        target_modules=["q_proj", "v_proj", "fc1", "fc2"],
        use_rslora=True,
        modules_to_save=["classifier"],
    )
    model = get_peft_model(cls, lora).eval()
    randomise(model, 23, only=lora_only)
    save_adapter(model, os.path.join(out, "adapter"))
    inner = model.base_model.model.vision_model
    golden.update(tower_outputs(inner, "adapted_", pixel_values=x))
    names = wrapped(model)
    assert "vision_model.head.mlp.fc1" in names, names

    plain = SiglipVisionModel(vision).eval()
    plain.load_state_dict(base.state_dict())
    standalone = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "fc1", "fc2"], use_rslora=True)
    alone = get_peft_model(plain, standalone)
    copy_factors(model, alone, "vision_model.")
    save_adapter(alone, os.path.join(out, "adapter_standalone"))
    check = tower_outputs(alone.eval(), "", pixel_values=x)
    assert torch.allclose(check["pooled"], golden["adapted_pooled"], atol=1e-6)
    finish(out, golden, names)
    check_mha(vision)


def check_mha(vision):
    """What peft does with SigLIP's pooling-head `nn.MultiheadAttention` (recorded for calibra's refusal)."""
    facts = {}
    torch.manual_seed(0)
    x = pixels(22)
    base = SiglipVisionModel(vision).eval()
    randomise(base, 21)
    with torch.no_grad():
        ref = base(pixel_values=x).pooler_output.clone()

    # 1. Targeting the MHA's out_proj (a Linear subclass): peft wraps it, but MHA never calls its forward.
    def fresh():
        m = SiglipVisionModel(vision).eval()
        m.load_state_dict(base.state_dict())
        return m

    m = get_peft_model(fresh(), LoraConfig(r=2, target_modules=["out_proj"]))
    randomise(m, 5, only=lambda n: "lora_" in n)
    with torch.no_grad():
        d = (m(pixel_values=x).pooler_output - ref).abs().max().item()
    facts["target out_proj"] = {
        "wrapped": [n for n in wrapped(m) if "head" in n],
        "max |pooled change| from random non-zero factors on head.attention.out_proj only": None,
    }
    m2 = get_peft_model(fresh(), LoraConfig(r=2, target_modules=["head.attention.out_proj"]))
    randomise(m2, 5, only=lambda n: "lora_" in n)
    with torch.no_grad():
        d2 = (m2(pixel_values=x).pooler_output - ref).abs().max().item()
    facts["target out_proj"]["max |pooled change| from random non-zero factors on head.attention.out_proj only"] = d2
    facts["target out_proj"]["max |pooled change| with self_attn.out_proj wrapped too"] = d

    # 2. Targeting the MHA itself: peft's lora.MultiheadAttention (in_proj branch merged before each
    # forward, plus a lora.Linear on out_proj).
    m3 = get_peft_model(fresh(), LoraConfig(r=2, target_modules=["head.attention"]))
    facts["target head.attention"] = {
        "module type": type(m3.base_model.model.head.attention).__module__ + "." + type(m3.base_model.model.head.attention).__name__,
        "lora tensors": sorted(n for n, _ in m3.named_parameters() if "lora_" in n),
    }
    with open(os.path.join(OUT, "multihead_attention.json"), "w") as f:
        json.dump(facts, f, indent=2, sort_keys=True)
        f.write("\n")
    print("nn.MultiheadAttention:", json.dumps(facts, indent=1))


def finish(out, golden, names):
    save_file({k: v.contiguous() for k, v in golden.items()}, os.path.join(out, "golden.safetensors"))
    with open(os.path.join(out, "wrapped.json"), "w") as f:
        json.dump(names, f, indent=2, sort_keys=True)
        f.write("\n")


def defaults():
    d = LoraConfig(target_modules=["q_proj"]).to_dict()
    d = {k: (sorted(v) if isinstance(v, set) else v) for k, v in d.items()}
    with open(os.path.join(OUT, "peft_lora_config_defaults.json"), "w") as f:
        json.dump(d, f, indent=2, sort_keys=True)
        f.write("\n")


def matching_rules():
    """peft's `check_target_module_exists` on configs and module names chosen to separate its rules;
    calibra's `LoraConfig::wraps` must agree on each (tests/lora_families.rs)."""
    from peft.tuners.tuners_utils import check_target_module_exists

    cases = [
        (dict(target_modules=["classifier", "q_proj"], modules_to_save=["classifier"]), ["classifier", "vit.layers.0.attention.q_proj"]),
        (dict(target_modules=["vit.layers.1.attention.q_proj", "v_proj"], layers_to_transform=[0]), ["vit.layers.1.attention.q_proj", "vit.layers.1.attention.v_proj", "vit.layers.0.attention.v_proj"]),
        (dict(target_modules=["fc1"], layers_to_transform=1), ["vision_model.encoder.layers.1.mlp.fc1", "vision_model.head.mlp.fc1", "vision_model.encoder.layers.0.mlp.fc1"]),
        (dict(target_modules=["fc1"], layers_to_transform=[0]), ["a.blocks.0.experts.3.fc1", "a.blocks.3.experts.0.fc1"]),
        (dict(target_modules=["q_proj"], layers_to_transform=[1], layers_pattern="lay(er|ers)"), ["layer.1.attention.q_proj", "dinov2.encoder.layer.1.attention.q_proj", "dinov2.encoder.layer.0.attention.q_proj"]),
        (dict(target_modules=["q_proj"], layers_to_transform=[1], layers_pattern=["blocks", "layers"]), ["vit.layers.1.attention.q_proj", "x.blocks.1.q_proj", "x.stages.1.q_proj"]),
        (dict(target_modules=["q_proj"], layers_to_transform=[]), ["vit.layers.5.attention.q_proj"]),
        (dict(target_modules=["q_proj"], exclude_modules=r".*layers\.0\..*"), ["vit.layers.0.attention.q_proj", "vit.layers.10.attention.q_proj"]),
        (dict(target_modules=["q_proj", "fc2"], exclude_modules=["layers.1.mlp.fc2"]), ["vit.layers.1.mlp.fc2", "vit.layers.11.mlp.fc2", "xlayers.1.mlp.fc2"]),
        (dict(target_modules=r"vision_model\..*(q_proj|fc1)"), ["vision_model.encoder.layers.0.self_attn.q_proj", "text_model.encoder.layers.0.self_attn.q_proj", "vision_model.head.mlp.fc1", "vision_model.encoder.layers.0.self_attn.q_proj.x"]),
        (dict(target_modules=["attention.q_proj"]), ["vit.layers.0.attention.q_proj", "vit.layers.0.self_attention.q_proj"]),
    ]
    out = []
    for kwargs, keys in cases:
        config = LoraConfig(**kwargs)
        as_json = {k: (sorted(v) if isinstance(v, set) else v) for k, v in kwargs.items()}
        for key in keys:
            r = check_target_module_exists(config, key)
            wraps = bool(r) and type(r).__name__ != "_ExcludedModule"
            out.append({"config": as_json, "module": key, "peft_wraps": wraps})
    with open(os.path.join(OUT, "matching_rules.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


# ------------------------------------------------------------------------------------------------


def check_rust(rust_dir):
    """Load calibra-written adapters into peft and compare peft's outputs with the golden ones."""
    results = {}
    cases = [
        ("dinov2_registers/adapter", lambda: dinov2_cls(), lambda m, g: tower_outputs(m.base_model.model.dinov2_with_registers, "", pixel_values=g["pixel_values"]), "adapted_"),
        ("clip/adapter_vision", lambda: clip_cls(), lambda m, g: tower_outputs(m.base_model.model.vision_model, "", pixel_values=g["pixel_values"]), "vision_adapted_vision_"),
        ("clip/adapter_joint", lambda: CLIPModel.from_pretrained(os.path.join(OUT, "clip", "base"), attn_implementation="eager").eval(), lambda m, g: {**tower_outputs(m.base_model.model.vision_model, "vision_", pixel_values=g["pixel_values"]), **tower_outputs(m.base_model.model.text_model, "text_", input_ids=g["input_ids"])}, "joint_adapted_"),
        ("siglip/adapter", lambda: siglip_cls(), lambda m, g: tower_outputs(m.base_model.model.vision_model, "", pixel_values=g["pixel_values"]), "adapted_"),
    ]
    for name, make, run, prefix in cases:
        family = name.split("/")[0]
        g = load_file(os.path.join(OUT, family, "golden.safetensors"))
        path = os.path.join(rust_dir, name)
        model = PeftModel.from_pretrained(make(), path).eval()
        got = run(model, g)
        diffs = {k: (got[k] - g[prefix + k]).abs().max().item() for k in got}
        peft_files = sorted(os.listdir(os.path.join(OUT, name)))
        theirs = load_file(os.path.join(OUT, name, "adapter_model.safetensors"))
        ours = load_file(os.path.join(path, "adapter_model.safetensors"))
        results[name] = {
            "loads in PeftModel.from_pretrained": True,
            "max |output - golden|": diffs,
            "same tensor names as peft's adapter": sorted(ours) == sorted(theirs),
            "tensors equal to peft's": all(torch.equal(ours[k], theirs[k]) for k in theirs if k in ours),
            "files": peft_files,
        }
        assert max(diffs.values()) < 1e-5, (name, diffs)
    with open(os.path.join(OUT, "rust_written_check.json"), "w") as f:
        json.dump(results, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(results, indent=1))


def dinov2_cls():
    config = Dinov2WithRegistersConfig.from_pretrained(os.path.join(OUT, "dinov2_registers", "base"), num_labels=3)
    config._attn_implementation = "eager"
    return Dinov2WithRegistersForImageClassification.from_pretrained(os.path.join(OUT, "dinov2_registers", "base"), config=config).eval()


def clip_cls():
    return CLIPForImageClassification.from_pretrained(os.path.join(OUT, "clip", "base"), num_labels=3, attn_implementation="eager").eval()


def siglip_cls():
    vision = SiglipVisionConfig.from_pretrained(os.path.join(OUT, "siglip", "base"))
    config = SiglipConfig(vision_config=vision.to_dict(), text_config=dict(**TINY, vocab_size=100), num_labels=3)
    config._attn_implementation = "eager"
    cls = SiglipForImageClassification(config).eval()
    cls.vision_model.load_state_dict(SiglipVisionModel.from_pretrained(os.path.join(OUT, "siglip", "base")).state_dict())
    return cls


def calibra_made(rust_dir):
    """peft's outputs with the adapters calibra made (factors chosen in Rust, see the Rust test
    `adapters_made_here_give_the_same_outputs_in_peft`): copied into the fixtures with
    peft_outputs.safetensors beside each."""
    cases = [
        ("dinov2_registers", "dinov2_registers", dinov2_cls, lambda m, g: tower_outputs(m.base_model.model.dinov2_with_registers, "", pixel_values=g["pixel_values"])),
        ("clip_vision", "clip", clip_cls, lambda m, g: tower_outputs(m.base_model.model.vision_model, "", pixel_values=g["pixel_values"])),
        ("clip_joint", "clip", lambda: CLIPModel.from_pretrained(os.path.join(OUT, "clip", "base"), attn_implementation="eager").eval(), lambda m, g: {**tower_outputs(m.base_model.model.vision_model, "vision_", pixel_values=g["pixel_values"]), **tower_outputs(m.base_model.model.text_model, "text_", input_ids=g["input_ids"])}),
        ("siglip", "siglip", siglip_cls, lambda m, g: tower_outputs(m.base_model.model.vision_model, "", pixel_values=g["pixel_values"])),
    ]
    for case, family, make, run in cases:
        src = os.path.join(rust_dir, "calibra_made", case)
        dst = os.path.join(OUT, "calibra_made", case)
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
        g = load_file(os.path.join(OUT, family, "golden.safetensors"))
        model = PeftModel.from_pretrained(make(), dst).eval()
        n_lora = sum(1 for n, _ in model.named_parameters() if "lora_B" in n)
        got = run(model, g)
        save_file({k: v.contiguous() for k, v in got.items()}, os.path.join(dst, "peft_outputs.safetensors"))
        print(case, "lora modules:", n_lora, "outputs:", sorted(got))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--calibra-made":
        calibra_made(sys.argv[2])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--check-rust":
        check_rust(sys.argv[2])
        return
    # calibra_made/ and rust_written_check.json come from the two later steps; keep them.
    os.makedirs(OUT, exist_ok=True)
    for entry in ["dinov2_registers", "clip", "siglip"]:
        if os.path.isdir(os.path.join(OUT, entry)):
            shutil.rmtree(os.path.join(OUT, entry))
    defaults()
    matching_rules()
    dinov2_registers()
    clip()
    siglip()


if __name__ == "__main__":
    main()
