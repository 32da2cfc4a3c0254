"""Golden vectors for CLIP's symmetric contrastive loss with multi-positive targets
(crates/calibra-train/src/pretrain_clip/contrastive.rs).

Run:

    CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/clip_contrastive.py

Reference: OpenAI CLIP / open_clip `ClipLoss`: (F.cross_entropy(L, arange) + F.cross_entropy(L.T, arange)) / 2.
Multi-positive variant: pairs with identical captions are positives of each other and the targets are
uniform over them; torch's `F.cross_entropy` with probability targets in both directions:
    P[i, j] = captions[i] == captions[j];  Q = P / P.sum(1);  Q' = P.T / P.T.sum(1)
    loss = (F.cross_entropy(L, Q) + F.cross_entropy(L.T, Q')) / 2
With distinct captions the multi-positive form is asserted equal to the index-target CLIP loss.
Writes crates/calibra-train/tests/golden/clip_contrastive.json: per case the logits (row-major), the
caption ids, the loss and d loss / d logits (torch autograd, float64 then written with 9 significant
digits). Deterministic (torch.Generator seeded).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "calibra-train" / "tests" / "golden" / "clip_contrastive.json"


def loss_of(logits: torch.Tensor, captions: list[int]) -> torch.Tensor:
    c = torch.tensor(captions)
    p = (c[:, None] == c[None, :]).to(logits.dtype)
    q = p / p.sum(1, keepdim=True)
    q_t = p.T / p.T.sum(1, keepdim=True)
    return (F.cross_entropy(logits, q) + F.cross_entropy(logits.T, q_t)) / 2


def g9(values) -> list[float]:
    return [float(f"{v:.9g}") for v in values]


def main() -> None:
    gen = torch.Generator().manual_seed(20261130)
    cases = []
    specs = [
        ("distinct captions (plain CLIP loss)", [0, 1, 2, 3, 4, 5], 10.0),
        ("two classes, duplicated captions", [0, 1, 0, 1, 1, 0], 14.3),
        ("one duplicate pair", [3, 7, 7, 1, 9], 5.0),
        ("all identical", [2, 2, 2, 2], 20.0),
        ("mixed, larger scale", [0, 1, 2, 0, 1, 2, 3, 3], 100.0),
    ]
    for name, captions, scale in specs:
        b = len(captions)
        img = F.normalize(torch.randn(b, 8, generator=gen, dtype=torch.float64), dim=1)
        txt = F.normalize(torch.randn(b, 8, generator=gen, dtype=torch.float64), dim=1)
        # Pull each caption's pair together a little so the loss is not at chance.
        txt = F.normalize(txt + 0.8 * img, dim=1)
        logits = (scale * img @ txt.T).detach()
        # Round-trip through float32 so Rust starts from the same values.
        logits = logits.to(torch.float32).to(torch.float64).requires_grad_(True)
        loss = loss_of(logits, captions)
        if len(set(captions)) == b:
            arange = torch.arange(b)
            plain = (F.cross_entropy(logits, arange) + F.cross_entropy(logits.T, arange)) / 2
            assert torch.allclose(plain, loss, rtol=1e-12, atol=1e-12), (plain, loss)
        (grad,) = torch.autograd.grad(loss, logits)
        cases.append(
            {
                "name": name,
                "b": b,
                "captions": captions,
                "logits": g9(logits.detach().flatten().tolist()),
                "loss": float(f"{loss.item():.9g}"),
                "grad": g9(grad.flatten().tolist()),
            }
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"source": "scripts/golden/clip_contrastive.py", "torch": torch.__version__, "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
