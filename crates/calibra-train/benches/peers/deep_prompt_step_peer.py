"""PyTorch peer of crates/calibra-train/benches/deep_prompt_step.rs: one MaPLe, PromptSRC or HiCroPL step on
CPU with 2 threads, on a ViT-B/16 CLIP with random weights (transformers CLIPModel, sdpa attention),
batch 32 of 224-px images, K = 5, the references' settings (MaPLe: 2 context tokens, depth 9;
PromptSRC: 4 + 4 tokens, depth 9, text/image L1 weights 25/10, KL to the frozen logits), SGD momentum
0.9, weight decay 5e-4; HiCroPL: 16 tokens, depth 12, cross layer 6, the prompt mapping before the
forward pass, fused features, distillation weight 12, Adam eps 1e-3. The prompt assembly and the
deep-prompt forward are those of scripts/golden/maple_steps.py, promptsrc_steps.py and
hicropl_steps.py (which check calibra's numbers); this script only times them. Run on the same machine as the Rust bench:

    python3 benches/peers/harness.py deep-prompt-step

Env: DEEP_PROMPT_BENCH_STEPS (default 3; the first step is a warm-up and not counted),
DEEP_PROMPT_BENCH_METHODS (default maple,promptsrc; add hicropl).
"""

from __future__ import annotations

import math
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
from encoders_clip import causal_mask  # noqa: E402
from hicropl_steps import Learner as HiCroPLLearner  # noqa: E402

FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures"
BATCH, SIDE = 32, 224
CLASSES = ["melanocytic nevus", "melanoma", "basal cell carcinoma", "benign keratosis", "dermatofibroma"]

torch.set_num_threads(2)


def model_and_tokenizer():
    cfg = CLIPConfig(
        text_config=dict(vocab_size=49408, hidden_size=512, intermediate_size=2048, num_hidden_layers=12,
                         num_attention_heads=8, max_position_embeddings=77),
        vision_config=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                           image_size=SIDE, patch_size=16),
        projection_dim=512,
    )
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = CLIPModel(cfg).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, CLIPTokenizer.from_pretrained(FIX / "tokenizer" / "hf")


def step_fn(method: str, model: CLIPModel, tok):
    tm, vm = model.text_model, model.vision_model
    emb = tm.embeddings.token_embedding
    dt, dv, k = emb.weight.shape[1], vm.config.hidden_size, len(CLASSES)
    m_t, m_v, depth = {"maple": (2, 2, 9), "promptsrc": (4, 4, 9), "hicropl": (16, 16, 12)}[method]
    # HiCroPL's 16 tokens are more than 4: the reference starts them at random after an "X" prefix.
    phrase = " ".join(["X"] * m_t) if method == "hicropl" else "a photo of a"
    ids = torch.tensor(tok([phrase + " " + c + "." for c in CLASSES], padding="max_length", max_length=77,
                           truncation=True)["input_ids"])
    with torch.no_grad():
        e = emb(ids)
        ctx0 = emb(torch.tensor(tok([phrase], padding="max_length", max_length=77)["input_ids"]))[0, 1:1 + m_t]
    prefix, suffix = e[:, :1], e[:, 1 + m_t:]
    eot = (ids == tok.eos_token_id).int().argmax(dim=-1)
    g = torch.Generator().manual_seed(0)
    ctx = torch.nn.Parameter(ctx0.clone())
    deep_text = [torch.nn.Parameter(0.02 * torch.randn(m_t, dt, generator=g)) for _ in range(depth - 1)]
    if method == "hicropl":
        learner = HiCroPLLearner(ctx0, dv, depth, 6)  # cross layer 6; values from the golden's `wave`
        ctx, deep_text = learner.cross_prompts_text[0], list(learner.cross_prompts_text[1:])
        vision_ctx, deep_vision = learner.cross_prompts_visual[0], list(learner.cross_prompts_visual[1:])
        with torch.no_grad():  # the teacher text features (one template here; set-up, not timed)
            fixed = F.normalize(model.get_text_features(input_ids=ids).pooler_output, dim=-1)
        opt = torch.optim.Adam(learner.parameters(), lr=0.0025, eps=1e-3, weight_decay=5e-4)
    elif method == "maple":
        proj = torch.nn.Linear(dt, dv)
        deep_proj = torch.nn.ModuleList([torch.nn.Linear(dt, dv) for _ in range(depth - 1)])
        params = [ctx, *deep_text, *proj.parameters(), *deep_proj.parameters()]
    else:
        vision_ctx = torch.nn.Parameter(0.02 * torch.randn(m_v, dv, generator=g))
        deep_vision = [torch.nn.Parameter(0.02 * torch.randn(m_v, dv, generator=g)) for _ in range(depth - 1)]
        params = [ctx, *deep_text, vision_ctx, *deep_vision]
        with torch.no_grad():  # PromptSRC's frozen template-averaged text features (set-up, not timed)
            fixed = model.get_text_features(input_ids=ids).pooler_output
            fixed = fixed / fixed.norm(dim=-1, keepdim=True)
    if method != "hicropl":
        opt = torch.optim.SGD(params, lr=0.0035, momentum=0.9, weight_decay=5e-4)
    n = BATCH * 3 * SIDE * SIDE
    images = ((torch.arange(n) * 7919 % 1009).float() / 1009.0 - 0.5).reshape(BATCH, 3, SIDE, SIDE)
    labels = torch.arange(BATCH) % k
    scale = model.logit_scale.exp()
    mask = causal_mask(77)

    def text_features():
        x = torch.cat([prefix, ctx.unsqueeze(0).expand(k, -1, -1), suffix], dim=1)
        x = x + tm.embeddings.position_embedding.weight[:77][None]
        for i, layer in enumerate(tm.encoder.layers):
            if 1 <= i < depth:
                x = torch.cat([x[:, :1], deep_text[i - 1].unsqueeze(0).expand(k, -1, -1), x[:, 1 + m_t:]], dim=1)
            x = layer(x, mask)
        return model.text_projection(tm.final_layer_norm(x)[torch.arange(k), eot])

    def image_features():
        if method == "maple":
            first, deep = proj(ctx), [p(t) for p, t in zip(deep_proj, deep_text)]
        else:
            first, deep = vision_ctx, deep_vision
        x = vm.embeddings(images)
        x = torch.cat([x, first.unsqueeze(0).expand(BATCH, -1, -1)], dim=1)
        x = vm.pre_layrnorm(x)
        for i, layer in enumerate(vm.encoder.layers):
            if 1 <= i < depth:
                x = torch.cat([x[:, : x.shape[1] - m_v], deep[i - 1].unsqueeze(0).expand(BATCH, -1, -1)], dim=1)
            x = layer(x, None)
        return model.visual_projection(vm.post_layernorm(x[:, 0]))

    def step():
        if method == "hicropl":
            learner.map()
        img = F.normalize(image_features(), dim=-1)
        txt = F.normalize(text_features(), dim=-1)
        if method == "hicropl":
            with torch.no_grad():
                zs_img = F.normalize(model.get_image_features(pixel_values=images).pooler_output, dim=-1)
            img = F.normalize(img + zs_img, dim=-1)
            txt = F.normalize(txt + fixed, dim=-1)
        logits = scale * img @ txt.t()
        loss = F.cross_entropy(logits, labels)
        if method == "hicropl":
            cos = torch.nn.CosineSimilarity(dim=1, eps=1e-7)
            loss = loss + 12.0 * ((1 - cos(txt, fixed).mean()) + (1 - cos(img, zs_img).mean()))
        if method == "promptsrc":
            with torch.no_grad():
                zs_img = F.normalize(model.get_image_features(pixel_values=images).pooler_output, dim=-1)
                zs_logits = scale * zs_img @ fixed.t()
            loss = loss + 25.0 * F.l1_loss(txt, fixed) + 10.0 * F.l1_loss(img, zs_img)
            loss = loss + F.kl_div(F.log_softmax(logits, 1), F.log_softmax(zs_logits, 1), reduction="sum",
                                   log_target=True) / logits.numel()
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def main() -> None:
    steps = max(2, int(os.environ.get("DEEP_PROMPT_BENCH_STEPS", "3")))
    model, tok = model_and_tokenizer()
    for method in os.environ.get("DEEP_PROMPT_BENCH_METHODS", "maple,promptsrc").split(","):
        step = step_fn(method, model, tok)
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        med = statistics.median(sorted(times[1:]))
        print(
            f"torch CPU deep-prompt step [{method}] ViT-B/16 224 px, batch {BATCH}, K {len(CLASSES)}: "
            f"median {med:.4f} s/step, {BATCH / med:.2f} images/s ({len(times) - 1} steps)"
        )


if __name__ == "__main__":
    main()
