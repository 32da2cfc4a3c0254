"""What the CoOp-family golden scripts on other text towers share (coop_siglip_steps.py,
coop_biomedclip_steps.py; coop_steps.py takes its settings from here too): the SGD-momentum and
Dassl warmup-cosine settings of the steps, and the steps of CoOp, KgCoOp and ProGrad.

The steps follow the references as coop_steps.py documents them: CoOp minimises CE; KgCoOp adds
8 * (1 - mean_k cos(w_k, w_k^zs)) (htyao89/KgCoOp); ProGrad (lambda 1, T 1) projects the CE
gradient off the KL-to-zero-shot gradient when they conflict (BeierZhu/Prompt-align).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

STEPS = 4
# Larger than CoOp's defaults so that every term visibly moves the context within 4 steps:
# a wrong dampening (burn's default is 0.1) or weight-decay form would show up far above 1e-4.
LR = 0.5
MOMENTUM = 0.9
WEIGHT_DECAY = 0.1
WARMUP_EPOCHS = 1
WARMUP_LR = 0.05
ZS_TEMPLATE = "a photo of a {}."
METHODS = ("coop", "kgcoop", "prograd")


def f32(t: torch.Tensor):
    """Nested lists of floats with 9 significant digits (exact float32 round-trip)."""
    t = t.detach().to(torch.float32)
    if t.dim() == 0:
        return float(f"{t.item():.9g}")
    return [f32(x) for x in t] if t.dim() > 1 else [float(f"{v:.9g}") for v in t.tolist()]


def dassl_lr(epoch: int) -> float:
    """Dassl ConstantWarmupScheduler(CosineAnnealingLR(T_max=max_epoch)) as used by CoOp."""
    if epoch < WARMUP_EPOCHS:
        return WARMUP_LR
    return LR * 0.5 * (1 + math.cos(math.pi * (epoch - WARMUP_EPOCHS) / STEPS))


def settings() -> dict:
    """The step settings, as the golden files record them."""
    return {
        "zero_shot_template": ZS_TEMPLATE,
        "steps": STEPS,
        "lr": LR,
        "momentum": MOMENTUM,
        "weight_decay": WEIGHT_DECAY,
        "warmup_epochs": WARMUP_EPOCHS,
        "warmup_lr": WARMUP_LR,
    }


def sgd(ctx: torch.nn.Parameter) -> torch.optim.SGD:
    return torch.optim.SGD([ctx], lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY, dampening=0.0, nesterov=False)


def run_method(
    method: str,
    ctx0: torch.Tensor,
    logits_and_text: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    labels: torch.Tensor,
    zs_txt: torch.Tensor,
    zs_logits: torch.Tensor,
    task_loss: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> dict:
    """STEPS full-batch steps of `method` from `ctx0`: every step's loss and the final context.
    `task_loss(logits)` is the method's loss term (default: cross-entropy on `labels`)."""
    if task_loss is None:
        task_loss = lambda logits: F.cross_entropy(logits, labels)  # noqa: E731
    ctx = torch.nn.Parameter(ctx0.clone())
    opt = sgd(ctx)
    losses, projected = [], []
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = dassl_lr(step)
        logits, txt = logits_and_text(ctx)
        ce = task_loss(logits)
        opt.zero_grad()
        if method == "coop":
            loss = ce
            loss.backward()
        elif method == "kgcoop":
            score = F.cosine_similarity(txt, zs_txt, dim=1, eps=1e-7)
            loss = ce + 8.0 * (1.0 - score.mean())
            loss.backward()
        elif method == "prograd":
            loss = ce
            tea = F.softmax(zs_logits, dim=-1)
            kl = (-tea * F.log_softmax(logits, dim=-1)).sum(1).mean()
            kl.backward(retain_graph=True)
            b = ctx.grad.clone()
            opt.zero_grad()
            ce.backward()
            a = ctx.grad.clone()
            b_unit = b / torch.linalg.norm(b)
            dot = torch.dot(a.flatten(), b_unit.flatten())
            projected.append(bool(dot < 0))
            if dot < 0:
                ctx.grad = a - dot * b_unit
        else:
            raise ValueError(method)
        losses.append(float(loss.item()))
        opt.step()
    out = {"losses": losses, "ctx_final": f32(ctx)}
    if method == "prograd":
        out["projected"] = projected
    return out


def write(out: Path, result: dict, ctx0: torch.Tensor) -> None:
    """Writes `result` (compact JSON) and prints how far each method moved the context."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, separators=(",", ":"))
        f.write("\n")
    for m in METHODS:
        if m in result:
            last = torch.tensor(result[m]["ctx_final"])
            print(m, "losses", result[m]["losses"], "|ctx-ctx0|/|ctx0|", ((last - ctx0).norm() / ctx0.norm()).item())
