"""Parity of the shipped checkpoints/tiny-clip with transformers' CLIPModel and CLIPTokenizer.

Run (after `calibra pretrain --clip` has written checkpoints/tiny-clip):

    CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/tiny_clip_hf_check.py

Loads checkpoints/tiny-clip with `CLIPModel.from_pretrained` and `CLIPTokenizer.from_pretrained` (both the
tokenizer.json and the vocab.json + merges.txt layouts, asserted to give the same ids), and writes
tests/golden/tiny_clip_hf.json: the SHA-256 of the model.safetensors it read, `logit_scale`, the token ids
of a list of captions (unpadded and padded to 77), and for 4 fixed pixel tensors (a closed formula of the
flat index, already-normalised [4, 3, 32, 32] inputs) `get_image_features`, `get_text_features` and
`logits_per_image`. tests/cli_pretrain.rs recomputes them with calibra's ClipModel / ClipTokenizer and
compares within 1e-4. Deterministic.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import CLIPModel, CLIPTokenizer

ROOT = Path(__file__).resolve().parents[2]
CKPT = ROOT / "checkpoints" / "tiny-clip"
OUT = ROOT / "tests" / "golden" / "tiny_clip_hf.json"

CAPTIONS = [
    "a photo of a melanoma.",
    "a photo of a basal cell carcinoma.",
    "a dermoscopy image of a nevus.",
    "a photo of a 3.",
    "The DR level is 0.",
    "a chest x-ray showing Pleural Effusion.",
    "a photo of a No Finding.",
    "X X X X a photo of a vascular lesion.",
    "an unseen word: zebra!",
]

torch.set_num_threads(1)


def g9(t: torch.Tensor):
    t = t.detach().to(torch.float32)
    if t.dim() == 0:
        return float(f"{t.item():.9g}")
    return [g9(x) for x in t] if t.dim() > 1 else [float(f"{v:.9g}") for v in t.tolist()]


def main() -> None:
    sha = hashlib.sha256((CKPT / "model.safetensors").read_bytes()).hexdigest()
    model = CLIPModel.from_pretrained(CKPT).eval()
    tok = CLIPTokenizer.from_pretrained(CKPT)
    with tempfile.TemporaryDirectory() as d:
        for f in ["vocab.json", "merges.txt", "tokenizer_config.json"]:
            shutil.copy(CKPT / f, Path(d) / f)
        tok_files = CLIPTokenizer.from_pretrained(d)
        for c in CAPTIONS:
            assert tok(c)["input_ids"] == tok_files(c)["input_ids"], c
    ids = [tok(c)["input_ids"] for c in CAPTIONS]
    ids77 = [tok(c, padding="max_length", max_length=77, truncation=True)["input_ids"] for c in CAPTIONS]

    # Pixels by a closed formula (the Rust test rebuilds them): x[i] = (i·7919 mod 97) / 48 − 1 over the
    # flat row-major index i of [4, 3, 32, 32].
    n = 4 * 3 * 32 * 32
    pixels = torch.tensor([(i * 7919 % 97) / 48.0 - 1.0 for i in range(n)], dtype=torch.float32).reshape(4, 3, 32, 32)
    with torch.no_grad():
        image_features = model.get_image_features(pixel_values=pixels)
        text_input = torch.tensor(ids77)
        text_features = model.get_text_features(input_ids=text_input)
        out = model(input_ids=text_input, pixel_values=pixels)
    if not isinstance(image_features, torch.Tensor):  # transformers 5 may return an output object
        image_features = image_features.pooler_output
        text_features = text_features.pooler_output
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(
            {
                "source": "scripts/golden/tiny_clip_hf_check.py",
                "weights_sha256": sha,
                "logit_scale": g9(model.logit_scale),
                "captions": CAPTIONS,
                "ids": ids,
                "ids_77": ids77,
                "image_features": g9(image_features),
                "text_features": g9(text_features),
                "logits_per_image": g9(out.logits_per_image),
            },
            f,
            separators=(",", ":"),
        )
        f.write("\n")
    print(f"wrote {OUT} (weights {sha[:12]})")


if __name__ == "__main__":
    main()
