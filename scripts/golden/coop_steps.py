"""Golden vectors for CoOp / KgCoOp / ProGrad training steps (calibra_train::coop).

Run (venv with torch 2.15, transformers 5.24.0):

    CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/coop_steps.py

Reference: KaiyangZhou/CoOp trainers/coop.py (PromptLearner, TextEncoder, CustomCLIP), Dassl's SGD
(torch.optim.SGD with momentum, dampening 0, nesterov False, weight decay added to the gradient) and
its constant-warmup cosine schedule stepped once per epoch; the CoOp runs with CE, ZS-Norm and the
zero-shot range penalty (Bala93/CLIPCalib, spec A5: they take the zero-shot logits of the same batch),
and with class-specific context at the class-token position "middle"; KgCoOp (htyao89/KgCoOp trainers/kgcoop.py:
CE + w * (1 - mean_k cos(w_k, w_k^clip)), w = 8); ProGrad (Dassl fork prograd_backward_and_update with
ProGradLoss(T): the CE gradient is projected onto the normal plane of the KL gradient when they conflict).

On the tiny random CLIPModel of crates/calibra-models/tests/fixtures/clip (made by encoders_clip.py),
with a fixed context init, fixed image features and labels, the script runs a few full-batch steps
(one step per epoch, so the order of the batch does not matter) and writes the loss of every step and
the final context to crates/calibra-train/tests/golden/coop_steps.json. float32, as the Rust side.

Deterministic: fixed torch generators, one thread; re-running rewrites an identical file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import CLIPModel, CLIPTokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from coop_family import (  # noqa: E402
    LR,
    MOMENTUM,
    STEPS,
    WARMUP_EPOCHS,
    WARMUP_LR,
    WEIGHT_DECAY,
    ZS_TEMPLATE,
    dassl_lr,
    f32,
    run_method,
)
from encoders_clip import CLASSNAMES, text_from_embeddings  # noqa: E402

FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures"
OUT = ROOT / "crates" / "calibra-train" / "tests" / "golden" / "coop_steps.json"

torch.set_num_threads(1)

N_CTX = 4
N_IMAGES = 8


def main() -> None:
    model = CLIPModel.from_pretrained(FIX / "clip", attn_implementation="eager").eval()
    for p in model.parameters():
        p.requires_grad_(False)
    tok = CLIPTokenizer.from_pretrained(FIX / "tokenizer" / "hf")
    emb = model.text_model.embeddings.token_embedding
    d = emb.weight.shape[1]
    k = len(CLASSNAMES)

    g = torch.Generator().manual_seed(11)
    ctx0 = 0.02 * torch.randn(N_CTX, d, generator=g)
    p = model.text_projection.weight.shape[0]
    image_features = torch.randn(N_IMAGES, p, generator=g)
    ctx0_csc = 0.02 * torch.randn(k, N_CTX, d, generator=torch.Generator().manual_seed(12))

    prompts = [" ".join(["X"] * N_CTX) + " " + name + "." for name in CLASSNAMES]
    tokenized = torch.tensor(tok(prompts, padding="max_length", max_length=77, truncation=True)["input_ids"])
    with torch.no_grad():
        embedding = emb(tokenized)
    prefix, suffix = embedding[:, :1], embedding[:, 1 + N_CTX :]
    eot = tokenized.argmax(dim=-1)
    name_lens = [len(tok(name, add_special_tokens=False)["input_ids"]) for name in CLASSNAMES]

    scale = model.logit_scale.exp()
    img = image_features / image_features.norm(dim=-1, keepdim=True)
    zs_ids = torch.tensor(
        tok([ZS_TEMPLATE.format(c) for c in CLASSNAMES], padding="max_length", max_length=77, truncation=True)[
            "input_ids"
        ]
    )
    with torch.no_grad():
        zs_txt = model.get_text_features(input_ids=zs_ids).pooler_output
        zs_txt = zs_txt / zs_txt.norm(dim=-1, keepdim=True)
        zs_logits = scale * img @ zs_txt.t()
    # Labels that disagree with the zero-shot prediction, so that ProGrad's CE and KL gradients conflict.
    labels = (zs_logits.argmax(dim=-1) + 1) % k

    def assemble(ctx: torch.Tensor, position: str) -> torch.Tensor:
        """CoOp PromptLearner.forward for class_token_position end / middle."""
        if ctx.dim() == 2:
            ctx = ctx.unsqueeze(0).expand(k, -1, -1)
        if position == "end":
            return torch.cat([prefix, ctx, suffix], dim=1)
        half, rows = N_CTX // 2, []
        for i in range(k):
            nl = name_lens[i]
            x_i = ctx[i : i + 1]
            rows.append(
                torch.cat(
                    [prefix[i : i + 1], x_i[:, :half], suffix[i : i + 1, :nl], x_i[:, half:], suffix[i : i + 1, nl:]],
                    dim=1,
                )
            )
        return torch.cat(rows, dim=0)

    def task_loss(name: str, logits: torch.Tensor) -> torch.Tensor:
        if name == "ce":
            return F.cross_entropy(logits, labels)
        zs_lo = zs_logits.min(dim=1, keepdim=True).values
        zs_hi = zs_logits.max(dim=1, keepdim=True).values
        if name == "zs_norm":  # CLIPCalib adapters_zs_norm (eps 1e-12 guard, spec A5)
            lo = logits.min(dim=1, keepdim=True).values
            hi = logits.max(dim=1, keepdim=True).values
            z = (logits - lo) / (hi - lo + 1e-12) * (zs_hi - zs_lo) + zs_lo
            return F.cross_entropy(z, labels)
        if name == "range_penalty":  # CLIPCalib adapters_zs_pen, lambda 10
            pen = F.relu(logits - zs_hi).mean() + F.relu(zs_lo - logits).mean()
            return F.cross_entropy(logits, labels) + 10.0 * pen
        raise ValueError(name)

    def logits_and_text(ctx: torch.Tensor, position: str = "end"):
        x = assemble(ctx, position)
        txt = text_from_embeddings(model, x, eot)
        txt = txt / txt.norm(dim=-1, keepdim=True)
        return scale * img @ txt.t(), txt

    def run(method: str, loss_name: str = "ce", init: torch.Tensor = ctx0, position: str = "end") -> dict:
        return run_method(
            method,
            init,
            lambda ctx: logits_and_text(ctx, position),
            labels,
            zs_txt,
            zs_logits,
            task_loss=lambda logits: task_loss(loss_name, logits),
        )

    result = {
        "source": "torch 2.15 float32, transformers 5.24.0 CLIPModel; scripts/golden/coop_steps.py",
        "classnames": CLASSNAMES,
        "n_ctx": N_CTX,
        "ctx_init": f32(ctx0),
        "image_features": f32(image_features),
        "labels": labels.tolist(),
        "zero_shot_template": ZS_TEMPLATE,
        "steps": STEPS,
        "lr": LR,
        "momentum": MOMENTUM,
        "weight_decay": WEIGHT_DECAY,
        "warmup_epochs": WARMUP_EPOCHS,
        "warmup_lr": WARMUP_LR,
        "lr_per_step": [dassl_lr(s) for s in range(STEPS)],
        "zero_shot_logits": f32(zs_logits),
        "coop": run("coop"),
        "kgcoop": run("kgcoop"),
        "prograd": run("prograd"),
        "zs_norm": run("coop", "zs_norm"),
        "range_penalty": run("coop", "range_penalty"),
        "ctx_init_csc": f32(ctx0_csc),
        "csc_middle": run("coop", "ce", ctx0_csc, "middle"),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(result, f, separators=(",", ":"))
        f.write("\n")
    c0 = ctx0.norm().item()
    for m in ("coop", "kgcoop", "prograd", "zs_norm", "range_penalty"):
        last = torch.tensor(result[m]["ctx_final"])
        print(m, "losses", result[m]["losses"], "|ctx-ctx0|/|ctx0|", ((last - ctx0).norm() / c0).item())
    last = torch.tensor(result["csc_middle"]["ctx_final"])
    print("csc_middle losses", result["csc_middle"]["losses"], ((last - ctx0_csc).norm() / ctx0_csc.norm()).item())
    print("projected", result["prograd"]["projected"])


if __name__ == "__main__":
    main()
