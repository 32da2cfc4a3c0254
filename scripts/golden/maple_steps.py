"""Golden vectors for MaPLe (multi-modal prompt learning) on the tiny CLIP (calibra_train::coop::maple).

Run (venv with torch 2.15, transformers 5.24.0):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/maple_steps.py

Reference: Khattak et al., CVPR 2023, muzairkhattak/multimodal-prompt-learning trainers/maple.py
(MultiModalPromptLearner, TextEncoder, CustomCLIP) and clip/model.py (ResidualAttentionBlock_MaPLe,
VisionTransformer_MaPLe), re-expressed on transformers' CLIPModel modules (the tiny fixture is an HF
checkpoint):

- text: the prompt "a photo of a {class}." is embedded; its tokens 1 .. 1+n_ctx are replaced by the
  learned `ctx` (initialised from the embeddings of the first n_ctx tokens of the phrase), positions
  are added, and before block i (1 <= i < depth) the same rows are replaced by the deep text prompt
  `compound_prompts_text[i-1]`; final LayerNorm, EOT row, text projection;
- vision: the patch + class embeddings with positions, then `proj(ctx)` appended as n_ctx extra
  tokens, pre-LayerNorm, and before block i (1 <= i < depth) the last n_ctx rows are replaced by
  `compound_prompt_projections[i-1](compound_prompts_text[i-1])`; post-LayerNorm of the class token,
  visual projection;
- logits = exp(logit_scale) * l2n(image) @ l2n(text).T; cross-entropy; torch.optim.SGD (momentum,
  dampening 0, weight decay added to the gradient) on every prompt-learner parameter, Dassl's
  constant-warmup cosine stepped per epoch (one full-batch step per epoch here).

The reference runs in fp16 (its default PREC); this script and calibra run float32. The reference
clones one Linear for all compound projections (`_get_clones` deep-copies a single layer), so they
start equal; here every parameter and the images start from a fixed formula (`wave`, at the
reference init's scale), which the Rust test evaluates too, so both sides start from the same values.

Writes crates/calibra-train/tests/golden/maple_steps.json. Deterministic (no random numbers, one
thread); re-running rewrites an identical file.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import CLIPModel, CLIPTokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoders_clip import CLASSNAMES, causal_mask  # noqa: E402

FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures"
OUT = ROOT / "crates" / "calibra-train" / "tests" / "golden" / "maple_steps.json"

torch.set_num_threads(1)

N_CTX = 2
DEPTH = 3  # the tiny CLIP has 3 blocks per tower (the reference default 9 needs >= 9)
CTX_INIT = "a photo of a"
N_IMAGES = 6
STEPS = 3
# Larger than MaPLe's lr 0.0035 so that every parameter visibly moves within 3 steps.
LR = 0.5
MOMENTUM = 0.9
WEIGHT_DECAY = 5e-4
WARMUP_EPOCHS = 1
WARMUP_LR = 0.05


def f32(t: torch.Tensor):
    t = t.detach().to(torch.float32)
    if t.dim() == 0:
        return float(f"{t.item():.9g}")
    return [f32(x) for x in t] if t.dim() > 1 else [float(f"{v:.9g}") for v in t.tolist()]


def dassl_lr(epoch: int) -> float:
    if epoch < WARMUP_EPOCHS:
        return WARMUP_LR
    return LR * 0.5 * (1 + math.cos(math.pi * (epoch - WARMUP_EPOCHS) / STEPS))


def wave(shape, amplitude: float, phase: float) -> torch.Tensor:
    """amplitude * sin(0.7 * j + phase) over the flat index j, computed in float64, then float32.

    The fixed values every parameter starts from and the images (the Rust test computes the same
    formula, so the fixture need not store them)."""
    n = math.prod(shape)
    j = torch.arange(n, dtype=torch.float64)
    return (amplitude * torch.sin(0.7 * j + phase)).to(torch.float32).reshape(shape)


def main() -> None:
    model = CLIPModel.from_pretrained(FIX / "clip", attn_implementation="eager").eval()
    for p in model.parameters():
        p.requires_grad_(False)
    tok = CLIPTokenizer.from_pretrained(FIX / "tokenizer" / "hf")
    tm, vm = model.text_model, model.vision_model
    emb = tm.embeddings.token_embedding
    dt = emb.weight.shape[1]
    dv = vm.config.hidden_size
    k = len(CLASSNAMES)

    # MultiModalPromptLearner.__init__ (ctx_init given and n_ctx <= 4)
    phrase_ids = torch.tensor(tok([CTX_INIT], padding="max_length", max_length=77)["input_ids"])
    with torch.no_grad():
        ctx0 = emb(phrase_ids)[0, 1 : 1 + N_CTX].clone()
    # nn.Linear's init is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the deep text prompts N(0, 0.02^2); the
    # compound projections start equal (the reference clones one Linear).
    bound = 1.0 / math.sqrt(dt)
    proj_w0, proj_b0 = wave((dv, dt), bound, 0.1), wave((dv,), bound, 0.2)
    deep_text0 = [wave((N_CTX, dt), 0.02, 1.0 + i) for i in range(DEPTH - 1)]
    deep_w0 = [wave((dv, dt), bound, 0.3) for _ in range(DEPTH - 1)]
    deep_b0 = [wave((dv,), bound, 0.4) for _ in range(DEPTH - 1)]
    images = wave((N_IMAGES, 3, 30, 30), 1.0, 0.5)
    labels = torch.arange(N_IMAGES) % k

    prompts = [CTX_INIT + " " + name + "." for name in CLASSNAMES]
    tokenized = torch.tensor(tok(prompts, padding="max_length", max_length=77, truncation=True)["input_ids"])
    with torch.no_grad():
        embedding = emb(tokenized)
    prefix, suffix = embedding[:, :1], embedding[:, 1 + N_CTX :]
    eot = (tokenized == tok.eos_token_id).int().argmax(dim=-1)

    ctx = torch.nn.Parameter(ctx0.clone())
    proj_w, proj_b = torch.nn.Parameter(proj_w0.clone()), torch.nn.Parameter(proj_b0.clone())
    deep_text = [torch.nn.Parameter(t.clone()) for t in deep_text0]
    deep_w = [torch.nn.Parameter(t.clone()) for t in deep_w0]
    deep_b = [torch.nn.Parameter(t.clone()) for t in deep_b0]
    params = [ctx, proj_w, proj_b, *deep_text, *deep_w, *deep_b]

    def text_features():
        x = torch.cat([prefix, ctx.unsqueeze(0).expand(k, -1, -1), suffix], dim=1)
        n = x.shape[1]
        x = x + tm.embeddings.position_embedding.weight[:n][None]
        mask = causal_mask(n)
        for i, layer in enumerate(tm.encoder.layers):
            if 1 <= i < DEPTH:
                deep = deep_text[i - 1].unsqueeze(0).expand(k, -1, -1)
                x = torch.cat([x[:, :1], deep, x[:, 1 + N_CTX :]], dim=1)
            x = layer(x, mask)
        x = tm.final_layer_norm(x)
        return model.text_projection(x[torch.arange(k), eot])

    def image_features():
        b = images.shape[0]
        x = vm.embeddings(images)  # patches + class token + positions, no LayerNorm
        shared = F.linear(ctx, proj_w, proj_b)
        x = torch.cat([x, shared.unsqueeze(0).expand(b, -1, -1)], dim=1)
        x = vm.pre_layrnorm(x)
        for i, layer in enumerate(vm.encoder.layers):
            if 1 <= i < DEPTH:
                deep = F.linear(deep_text[i - 1], deep_w[i - 1], deep_b[i - 1])
                x = torch.cat([x[:, : x.shape[1] - N_CTX], deep.unsqueeze(0).expand(b, -1, -1)], dim=1)
            x = layer(x, None)
        return model.visual_projection(vm.post_layernorm(x[:, 0]))

    scale = model.logit_scale.exp()

    def logits():
        img = image_features()
        txt = text_features()
        img = img / img.norm(dim=-1, keepdim=True)
        txt = txt / txt.norm(dim=-1, keepdim=True)
        return scale * img @ txt.t()

    with torch.no_grad():
        logits0 = logits()
        text0 = text_features()
        image0 = image_features()

    opt = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY, dampening=0.0)
    losses = []
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = dassl_lr(step)
        loss = F.cross_entropy(logits(), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))

    result = {
        "source": "torch 2.15 float32, transformers 5.24.0 CLIPModel; scripts/golden/maple_steps.py",
        "classnames": CLASSNAMES,
        "n_ctx": N_CTX,
        "depth": DEPTH,
        "ctx_init": CTX_INIT,
        "init": "wave(): proj (0.1, 0.2), deep_text (1+i), deep weight/bias (0.3, 0.4), images (0.5)",
        "ctx_init_values": f32(ctx0),
        "image_shape": list(images.shape),
        "labels": labels.tolist(),
        "text_features": f32(text0),
        "image_features": f32(image0),
        "logits": f32(logits0),
        "steps": STEPS,
        "lr": LR,
        "momentum": MOMENTUM,
        "weight_decay": WEIGHT_DECAY,
        "warmup_epochs": WARMUP_EPOCHS,
        "warmup_lr": WARMUP_LR,
        "losses": losses,
        "final": {
            "ctx": f32(ctx),
            "proj_weight": f32(proj_w),
            "proj_bias": f32(proj_b),
            "deep_text": [f32(t) for t in deep_text],
            "deep_weight": [f32(t) for t in deep_w],
            "deep_bias": [f32(t) for t in deep_b],
        },
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, separators=(",", ":")) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: losses {losses}")


if __name__ == "__main__":
    main()
