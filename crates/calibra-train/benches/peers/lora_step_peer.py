"""PyTorch + peft CPU peer for benches/lora_step.rs: one LoRA training step of a ViT classifier.

Same work as the Rust bench: transformers 5.24.0 ViTForImageClassification (random init, 10 labels,
no hidden/attention dropout) wrapped by peft 0.21.2 LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05,
target_modules=["q_proj", "v_proj"], modules_to_save=["classifier"]); per step: forward, cross-entropy,
backward, clip_grad_norm_(1.0), AdamW(lr 2e-4, betas (0.9, 0.999), eps 1e-8, weight decay 0.01) step,
warmup + cosine schedule step. Batch 32, torch.set_num_threads(2). The first step is a warm-up; the
median of the next STEPS steps is reported with the peak RSS (VmHWM) of this process.

Shapes: tiny = hidden 96, 4 layers, 3 heads, MLP 384, 32 px, patch 4; vitb = ViT-B/16 at 224 px.
Attention: "sdpa" (transformers' default) or "eager".

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python \
     crates/calibra-train/benches/peers/lora_step_peer.py tiny|vitb [STEPS] [sdpa|eager]
"""

import sys
import time

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from transformers import ViTConfig, ViTForImageClassification, get_cosine_schedule_with_warmup

BATCH = 32
CLASSES = 10
SHAPES = {
    "tiny": dict(hidden_size=96, num_hidden_layers=4, num_attention_heads=3, intermediate_size=384,
                 image_size=32, patch_size=4),
    "vitb": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                 image_size=224, patch_size=16),
}
DEFAULT_STEPS = {"tiny": 20, "vitb": 3}


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
    torch.manual_seed(0)
    torch.set_num_threads(2)
    cfg = ViTConfig(num_labels=CLASSES, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **SHAPES[shape])
    cfg._attn_implementation = attn
    base = ViTForImageClassification(cfg)
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=["q_proj", "v_proj"],
                      modules_to_save=["classifier"])
    model = get_peft_model(base, lora)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    total = steps + 1
    sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=max(1, total // 10), num_training_steps=total)
    side = cfg.image_size
    g = torch.Generator().manual_seed(1)
    images = torch.rand((BATCH, 3, side, side), generator=g) * 2 - 1
    labels = torch.arange(BATCH) % CLASSES

    times = []
    for step in range(total):
        t0 = time.perf_counter()
        logits = model(pixel_values=images).logits
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        elapsed = time.perf_counter() - t0
        if step > 0:
            times.append(elapsed)
        assert torch.isfinite(loss)
    times.sort()
    median = times[len(times) // 2]
    n_lora = sum(1 for n, m in model.named_modules() if hasattr(m, "lora_A") and n.endswith(("q_proj", "v_proj")))
    print(f"torch {torch.__version__} + peft LoRA step {shape} ({n_lora} q/v modules, r 8, {attn} attention) "
          f"batch {BATCH} (2 threads): median {median:.3f} s/step, {BATCH / median:.2f} images/s "
          f"({steps} timed steps after 1 warm-up; min {times[0]:.3f} s, max {times[-1]:.3f} s); "
          f"peak RSS {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
