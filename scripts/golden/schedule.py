"""Golden vectors for calibra-train's optimiser-side utilities:

1. learning-rate schedules
   - transformers `get_cosine_schedule_with_warmup` (stepped per optimiser step);
   - Dassl `build_lr_scheduler` cosine + constant warmup (CoOp family), stepped per epoch. Dassl is not
     a dependency: its `ConstantWarmupScheduler` (KaiyangZhou/Dassl.pytorch dassl/optim/lr_scheduler.py,
     ~20 lines) is reproduced below around torch's own `CosineAnnealingLR`;
2. global-norm gradient clipping: torch `clip_grad_norm_` on a tiny 2-layer MLP (weights, input,
   targets, the gradients before/after clipping and the total norm), float64 and float32.

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/schedule.py
Writes crates/calibra-train/tests/fixtures/schedule.json and grad_clip.json. Deterministic.
"""

import json
import os

import numpy as np
import torch
from torch.optim.lr_scheduler import CosineAnnealingLR, _LRScheduler
from transformers import get_cosine_schedule_with_warmup

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "calibra-train", "tests", "fixtures")


class _BaseWarmupScheduler(_LRScheduler):
    # Dassl.pytorch dassl/optim/lr_scheduler.py (the `verbose` argument, removed from torch, dropped).
    def __init__(self, optimizer, successor, warmup_epoch, last_epoch=-1):
        self.successor = successor
        self.warmup_epoch = warmup_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        raise NotImplementedError

    def step(self, epoch=None):
        if self.last_epoch >= self.warmup_epoch:
            self.successor.step(epoch)
            self._last_lr = self.successor.get_last_lr()
        else:
            super().step(epoch)


class ConstantWarmupScheduler(_BaseWarmupScheduler):
    def __init__(self, optimizer, successor, warmup_epoch, cons_lr, last_epoch=-1):
        self.cons_lr = cons_lr
        super().__init__(optimizer, successor, warmup_epoch, last_epoch)

    def get_lr(self):
        if self.last_epoch >= self.warmup_epoch:
            return self.successor.get_last_lr()
        return [self.cons_lr for _ in self.base_lrs]


def dummy_optimizer(lr):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))], lr=lr)


def hf_schedule(peak, warmup, total, cycles, steps):
    opt = dummy_optimizer(peak)
    sched = get_cosine_schedule_with_warmup(opt, warmup, total, num_cycles=cycles)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def dassl_schedule(base, max_epoch, warmup, cons_lr):
    opt = dummy_optimizer(base)
    sched = CosineAnnealingLR(opt, float(max_epoch))
    if warmup > 0:
        sched = ConstantWarmupScheduler(opt, sched, warmup, cons_lr)
    lrs = []
    for _ in range(max_epoch):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def schedules():
    hf = []
    for peak, warmup, total, cycles, steps in [
        (2e-4, 10, 100, 0.5, 105),
        (1e-3, 0, 40, 0.5, 45),
        (5e-5, 7, 7, 0.5, 10),
        (3e-4, 4, 30, 1.0, 32),
        (1e-2, 1, 1, 0.5, 4),
    ]:
        hf.append(
            {
                "peak_lr": peak,
                "warmup_steps": warmup,
                "total_steps": total,
                "num_cycles": cycles,
                "lr": hf_schedule(peak, warmup, total, cycles, steps),
            }
        )
    dassl = []
    for base, max_epoch, warmup, cons in [(0.002, 50, 1, 1e-5), (0.01, 10, 2, 1e-5), (0.002, 8, 0, 1e-5)]:
        dassl.append(
            {
                "base_lr": base,
                "max_epoch": max_epoch,
                "warmup_epochs": warmup,
                "warmup_lr": cons,
                "lr": dassl_schedule(base, max_epoch, warmup, cons),
            }
        )
    return {"generator": "scripts/golden/schedule.py", "transformers_cosine": hf, "dassl_constant_warmup_cosine": dassl}


def grad_clip():
    rng = np.random.default_rng(7)
    w1 = rng.normal(0.0, 0.7, size=(6, 4))  # torch layout [out, in]
    b1 = rng.normal(0.0, 0.3, size=6)
    w2 = rng.normal(0.0, 0.7, size=(3, 6))
    b2 = rng.normal(0.0, 0.3, size=3)
    x = rng.normal(0.0, 1.5, size=(5, 4))
    y = [0, 2, 1, 2, 0]
    cases = []
    for dtype, name in [(torch.float64, "f64"), (torch.float32, "f32")]:
        for max_norm in [0.05, 0.5, 100.0]:
            params = [torch.tensor(a, dtype=torch.float64).to(dtype).requires_grad_(True) for a in (w1, b1, w2, b2)]
            xt = torch.tensor(x, dtype=torch.float64).to(dtype)
            hidden = torch.tanh(xt @ params[0].T + params[1])
            logits = hidden @ params[2].T + params[3]
            loss = torch.nn.functional.cross_entropy(logits, torch.tensor(y))
            loss.backward()
            before = [p.grad.detach().clone().reshape(-1).tolist() for p in params]
            total = torch.nn.utils.clip_grad_norm_(params, max_norm)
            after = [p.grad.detach().reshape(-1).tolist() for p in params]
            cases.append(
                {
                    "dtype": name,
                    "max_norm": max_norm,
                    "total_norm": float(total.item()),
                    "grads_before": before,
                    "grads_after": after,
                }
            )
    return {
        "generator": "scripts/golden/schedule.py",
        "model": "logits = tanh(x @ w1.T + b1) @ w2.T + b2; loss = cross_entropy(logits, y)",
        "w1": w1.reshape(-1).tolist(),
        "b1": b1.tolist(),
        "w2": w2.reshape(-1).tolist(),
        "b2": b2.tolist(),
        "x": x.reshape(-1).tolist(),
        "y": y,
        "cases": cases,
    }


def main():
    os.makedirs(FIXTURES, exist_ok=True)
    for name, doc in [("schedule.json", schedules()), ("grad_clip.json", grad_clip())]:
        path = os.path.join(FIXTURES, name)
        with open(path, "w") as fh:
            json.dump(doc, fh, separators=(",", ":"))
            fh.write("\n")
        print(f"wrote {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
