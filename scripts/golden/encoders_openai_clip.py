"""Golden fixtures for OpenAI-CLIP `.pt` state dicts (the format of CheXzero's released checkpoints:
`torch.save(model.state_dict(), path)` of OpenAI's `clip.model.CLIP`), which `calibra convert
openai-clip` turns into a native OpenCLIP directory.

Run (venv with torch 2.15, open_clip_torch 3.3.0):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_openai_clip.py

Writes, under crates/calibra-models/tests/fixtures/openai_clip/:
- state_dict.pt: a tiny random CLIP in OpenAI's layout (open_clip's native `CLIP` has OpenAI's
  parameter names; `quick_gelu=True`; vision 8 px, patch 4, width 64, 1 layer; text width 64,
  1 layer, context length 8, vocabulary 64, embed 16; OpenAI's head width 64, so one head each),
  with OpenAI's partial float16 cast (`convert_weights_to_fp16`: matrices, convolutions and
  projections float16, layer norms and embeddings float32), saved as `torch.save` writes it by
  default (the ZIP container).
- legacy_nested.pt: the same weights as a DDP training script saves them, `{"state_dict":
  {"module." + name: tensor}, "epoch": 7}`, the names including the three integer entries OpenAI's
  JIT state dicts carry (`input_resolution`, `context_length`, `vocab_size`), in the legacy (pre-1.6)
  container.
- golden.json: inputs (images already normalised; token ids, EOT the largest id of each row) and
  the outputs of open_clip's own loader for OpenAI checkpoints,
  `open_clip.load_openai_model(path, precision="fp32", device="cpu")`: `encode_image`,
  `encode_text` (not normalised) and `logit_scale.exp() * normalize(img) @ normalize(txt).T`, for
  each of the two files (they must agree), plus the configuration open_clip infers from the shapes.

Deterministic: fixed generators; re-running rewrites identical files, except legacy_nested.pt, whose
container names each storage by its memory address (the legacy format does): its bytes differ from run
to run, its tensors and golden outputs do not.
"""

from __future__ import annotations

import json
from pathlib import Path

import open_clip
import torch
import torch.nn.functional as F
from open_clip.model import CLIP, convert_weights_to_fp16

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "openai_clip"

torch.set_num_threads(1)

CFG = {
    "embed_dim": 16,
    "quick_gelu": True,
    "vision_cfg": {"image_size": 8, "patch_size": 4, "width": 64, "layers": 1},
    "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 64, "heads": 1, "layers": 1},
}


def f32(t: torch.Tensor):
    t = t.detach().to(torch.float32)
    if t.dim() == 0:
        return float(f"{t.item():.9g}")
    return [f32(x) for x in t] if t.dim() > 1 else [float(f"{v:.9g}") for v in t.tolist()]


def randomise(model: torch.nn.Module, seed: int) -> None:
    """Every parameter random (LayerNorm weights around 1, biases small) so that each one matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "logit_scale":
                p.copy_(torch.tensor(2.5, dtype=p.dtype).reshape(p.shape))
            elif p.dim() == 1 and ("ln" in name or "norm" in name) and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[-1] if p.dim() == 2 else p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)


def outputs(path: Path, images: torch.Tensor, ids: torch.Tensor) -> dict:
    model = open_clip.load_openai_model(str(path), precision="fp32", device="cpu")
    model.eval()
    with torch.no_grad():
        img = model.encode_image(images)
        txt = model.encode_text(ids)
        logits = model.logit_scale.exp() * F.normalize(img, dim=-1) @ F.normalize(txt, dim=-1).T
    return {
        "image_features": f32(img),
        "text_features": f32(txt),
        "logit_scale": f32(model.logit_scale.reshape(())),
        "logits": f32(logits),
    }


def main() -> None:
    FIX.mkdir(parents=True, exist_ok=True)
    model = CLIP(**CFG)
    randomise(model, 3)
    convert_weights_to_fp16(model)  # OpenAI's partial cast
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    torch.save(state, FIX / "state_dict.pt")

    extras = {
        "input_resolution": torch.tensor(CFG["vision_cfg"]["image_size"]),
        "context_length": torch.tensor(CFG["text_cfg"]["context_length"]),
        "vocab_size": torch.tensor(CFG["text_cfg"]["vocab_size"]),
    }
    nested = {"module." + k: v for k, v in {**state, **extras}.items()}
    torch.save({"state_dict": nested, "epoch": 7}, FIX / "legacy_nested.pt", _use_new_zipfile_serialization=False)

    g = torch.Generator().manual_seed(13)
    images = torch.randn(2, 3, 8, 8, generator=g)
    rows = []
    for length in (3, 8, 5):
        body = torch.randint(1, 60, (length - 2,), generator=g).tolist()
        rows.append([62] + body + [63] + [0] * (8 - length))
    ids = torch.tensor(rows)

    golden = {
        "open_clip_version": open_clip.__version__,
        "config": CFG,
        "images": f32(images),
        "ids": ids.tolist(),
        "dtypes": {k: str(v.dtype).removeprefix("torch.") for k, v in sorted(state.items())},
        "state_dict": outputs(FIX / "state_dict.pt", images, ids),
    }
    # The legacy file drops the DDP prefix only through open_clip's fallback for a nested
    # "state_dict"; its outputs must equal the plain file's.
    golden["legacy_nested"] = outputs(FIX / "legacy_nested.pt", images, ids)
    with open(FIX / "golden.json", "w") as f:
        json.dump(golden, f, separators=(",", ":"), ensure_ascii=True)
        f.write("\n")
    print("wrote", FIX)


if __name__ == "__main__":
    main()
