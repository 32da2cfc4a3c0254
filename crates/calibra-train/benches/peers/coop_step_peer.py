"""PyTorch peer of crates/calibra-train/benches/coop_step.rs: one CoOp step (KaiyangZhou/CoOp
PromptLearner + TextEncoder on transformers' CLIP text tower, CE, SGD momentum 0.9, weight decay 5e-4)
on CPU with 2 threads, batch 32 of cached image features, K = 5, 16 context tokens, for the tiny
fixture CLIP and a ViT-B/16-shaped text tower (random weights). Prints the median step time and
images/s; run on the same machine as the Rust bench and record the ratio:

    CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python \
        crates/calibra-train/benches/peers/coop_step_peer.py

Env: COOP_BENCH_STEPS (default 6; the first step is a warm-up and not counted).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import CLIPConfig, CLIPModel, CLIPTokenizer

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "scripts" / "golden"))
from encoders_clip import text_from_embeddings  # noqa: E402

FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures"
BATCH, N_CTX = 32, 16
CLASSES = ["melanocytic nevus", "melanoma", "basal cell carcinoma", "benign keratosis", "dermatofibroma"]

torch.set_num_threads(2)


def bench(name: str, model: CLIPModel, tok, steps: int) -> None:
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    emb = model.text_model.embeddings.token_embedding
    d = emb.weight.shape[1]
    dim = model.text_projection.weight.shape[0]
    prompts = [" ".join(["X"] * N_CTX) + " " + c + "." for c in CLASSES]
    ids = torch.tensor(tok(prompts, padding="max_length", max_length=77, truncation=True)["input_ids"])
    with torch.no_grad():
        e = emb(ids)
    prefix, suffix, eot = e[:, :1], e[:, 1 + N_CTX :], ids.argmax(-1)
    ctx = torch.nn.Parameter(0.02 * torch.randn(N_CTX, d, generator=torch.Generator().manual_seed(0)))
    opt = torch.optim.SGD([ctx], lr=0.002, momentum=0.9, weight_decay=5e-4)
    x = (torch.arange(BATCH * dim) * 7919 % 1009).float().reshape(BATCH, dim) / 1009.0 - 0.5
    x = x / x.norm(dim=-1, keepdim=True)
    y = torch.arange(BATCH) % len(CLASSES)
    scale = model.logit_scale.exp()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        p = torch.cat([prefix, ctx.unsqueeze(0).expand(len(CLASSES), -1, -1), suffix], dim=1)
        t = text_from_embeddings(model, p, eot)
        t = t / t.norm(dim=-1, keepdim=True)
        loss = F.cross_entropy(scale * x @ t.t(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    med = statistics.median(sorted(times[1:]))
    print(
        f"torch CPU CoOp step [{name}] batch {BATCH}, K {len(CLASSES)}, n_ctx {N_CTX}: "
        f"median {med:.4f} s/step, {BATCH / med:.1f} images/s ({len(times) - 1} steps)"
    )


def main() -> None:
    steps = max(2, int(os.environ.get("COOP_BENCH_STEPS", "6")))
    tok = CLIPTokenizer.from_pretrained(FIX / "tokenizer" / "hf")
    tiny = CLIPModel.from_pretrained(FIX / "clip", attn_implementation="eager")
    bench("tiny", tiny, tok, steps)
    cfg = CLIPConfig(
        text_config=dict(
            vocab_size=49408, hidden_size=512, intermediate_size=2048, num_hidden_layers=12,
            num_attention_heads=8, max_position_embeddings=77,
        ),
        vision_config=dict(hidden_size=64, intermediate_size=64, num_hidden_layers=1, num_attention_heads=1,
                           image_size=32, patch_size=16),
        projection_dim=512,
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    bench("vit-b16", CLIPModel(cfg), tok, steps)


if __name__ == "__main__":
    main()
