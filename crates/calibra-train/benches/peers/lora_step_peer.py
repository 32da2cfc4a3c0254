"""PyTorch + peft CPU peer for benches/lora_step.rs: one LoRA training step of a ViT classifier.

Same work as the Rust bench: transformers 5.24.0 <Family>ForImageClassification (random init, 10 labels,
no hidden/attention dropout) wrapped by peft 0.21.2 LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05,
target_modules=["q_proj", "v_proj"], modules_to_save=["classifier"]); per step: forward, cross-entropy,
backward, clip_grad_norm_(1.0), AdamW(lr 2e-4, betas (0.9, 0.999), eps 1e-8, weight decay 0.01) step,
warmup + cosine schedule step. Batch 32 (or BATCH), torch.set_num_threads(2). The first step is a
warm-up; the median of the next STEPS steps is reported with the peak RSS (VmHWM) of this process.

Shapes: tiny = ViT with hidden 96, 4 layers, 3 heads, MLP 384, 32 px, patch 4; vitb = ViT-B/16 at 224 px;
dinov2b = Dinov2ForImageClassification, DINOv2-B/14 at 224 px; clipb = CLIPForImageClassification on a
CLIP ViT-B/16 vision tower (quick GELU); siglipb = SiglipForImageClassification on a SigLIP-B/16 vision
tower (no pooling head); the CLIP / SigLIP text towers are not built by these classes.
Attention: "sdpa" (transformers' default) or "eager".
Device: "cpu" (default; 2 threads) or "cuda" (the model and the batch on the GPU; each step ends with
torch.cuda.synchronize(), so its time is its whole work; peak GPU memory is printed too). Precision:
"fp32" (default; float32 matrix products without TF32, torch's default for them, and the patch
convolution likewise) or "bf16" (torch.autocast to bfloat16 around the forward pass and the loss: what a
torch user turns on for speed; calibra has no mixed precision).

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python \
     crates/calibra-train/benches/peers/lora_step_peer.py tiny|vitb|dinov2b|clipb|siglipb [STEPS] [sdpa|eager] \
     [cpu|cuda] [fp32|bf16] [BATCH]
"""

import sys
import time

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from transformers import (
    CLIPConfig,
    CLIPForImageClassification,
    Dinov2Config,
    Dinov2ForImageClassification,
    SiglipConfig,
    SiglipForImageClassification,
    ViTConfig,
    ViTForImageClassification,
    get_cosine_schedule_with_warmup,
)

BATCH = 32
CLASSES = 10
SHAPES = {
    "tiny": dict(hidden_size=96, num_hidden_layers=4, num_attention_heads=3, intermediate_size=384,
                 image_size=32, patch_size=4),
    "vitb": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                 image_size=224, patch_size=16),
}
B16 = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, image_size=224)
NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
TINY_TEXT = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
DEFAULT_STEPS = {"tiny": 20, "vitb": 3, "dinov2b": 3, "clipb": 3, "siglipb": 3}


def build(shape, attn):
    """The classifier of `shape` and its input side."""
    if shape in ("tiny", "vitb"):
        cfg = ViTConfig(num_labels=CLASSES, **NO_DROPOUT, **SHAPES[shape])
        cls = ViTForImageClassification
    elif shape == "dinov2b":
        cfg = Dinov2Config(num_labels=CLASSES, patch_size=14, mlp_ratio=4, layer_norm_eps=1e-6, **NO_DROPOUT, **B16)
        cls = Dinov2ForImageClassification
    elif shape == "clipb":
        vision = dict(patch_size=16, intermediate_size=3072, hidden_act="quick_gelu", **B16)
        cfg = CLIPConfig(vision_config=vision, text_config=TINY_TEXT, num_labels=CLASSES)
        cls = CLIPForImageClassification
    elif shape == "siglipb":
        vision = dict(patch_size=16, intermediate_size=3072, hidden_act="gelu_pytorch_tanh", vision_use_head=False, **B16)
        cfg = SiglipConfig(vision_config=vision, text_config=TINY_TEXT, num_labels=CLASSES)
        cls = SiglipForImageClassification
    else:
        sys.exit(f"shape must be one of {sorted(DEFAULT_STEPS)}, got {shape!r}")
    cfg._attn_implementation = attn
    side = getattr(cfg, "vision_config", cfg).image_size
    return cls(cfg), side


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    shape = sys.argv[1] if len(sys.argv) > 1 else "tiny"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_STEPS[shape]
    attn = sys.argv[3] if len(sys.argv) > 3 else "sdpa"
    device = torch.device(sys.argv[4] if len(sys.argv) > 4 else "cpu")
    precision = sys.argv[5] if len(sys.argv) > 5 else "fp32"
    batch = int(sys.argv[6]) if len(sys.argv) > 6 else BATCH
    if precision not in ("fp32", "bf16"):
        sys.exit(f"precision must be fp32 or bf16, got {precision!r}")
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cudnn.allow_tf32 = False  # float32 means float32: the patch convolution too
    torch.manual_seed(0)
    torch.set_num_threads(2)
    base, side = build(shape, attn)
    # transformers 5.x names the query / value projections q_proj / v_proj; some 5.x releases (5.17's
    # DINOv2) still call them query / value: target whichever this model has.
    names = {n.rsplit(".", 1)[-1] for n, _ in base.named_modules()}
    targets = ["q_proj", "v_proj"] if "q_proj" in names else ["query", "value"]
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=targets,
                      modules_to_save=["classifier"])
    model = get_peft_model(base, lora).to(device)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    total = steps + 1
    sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=max(1, total // 10), num_training_steps=total)
    g = torch.Generator().manual_seed(1)
    images = (torch.rand((batch, 3, side, side), generator=g) * 2 - 1).to(device)
    labels = (torch.arange(batch) % CLASSES).to(device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")

    times = []
    for step in range(total):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with autocast:
            logits = model(pixel_values=images).logits
            loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
        if step > 0:
            times.append(elapsed)
        assert torch.isfinite(loss)
    times.sort()
    median = times[len(times) // 2]
    n_lora = sum(1 for n, m in model.named_modules() if hasattr(m, "lora_A") and n.endswith(tuple(targets)))
    where = torch.cuda.get_device_name(device) if cuda else "2 threads"
    gpu_memory = f"; peak GPU memory {torch.cuda.max_memory_allocated(device) / 2**20:.0f} MiB" if cuda else ""
    print(f"torch {torch.__version__} + peft LoRA step {shape} ({n_lora} q/v modules, r 8, {attn} attention, "
          f"{precision}) batch {batch} ({where}): median {median:.3f} s/step, {batch / median:.2f} images/s "
          f"({steps} timed steps after 1 warm-up; min {times[0]:.3f} s, max {times[-1]:.3f} s); "
          f"peak RSS {peak_rss_mib():.0f} MiB{gpu_memory}")


if __name__ == "__main__":
    main()
