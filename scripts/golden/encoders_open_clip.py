"""Golden fixtures for native OpenCLIP checkpoints (ViT vision tower + native text transformer) and
open_clip's `SimpleTokenizer`.

Run (venv with torch 2.15, open_clip_torch 3.3.0, ftfy, safetensors):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_open_clip.py

Writes, under crates/calibra-models/tests/fixtures/open_clip/:
- gelu/{open_clip_config.json,open_clip_model.safetensors}: a tiny random `open_clip.model.CLIP`
  (`quick_gelu: false`, nn.GELU; vision 32 px, patch 8, width 16, 2 layers, 2 heads; text width 8,
  2 layers, 2 heads, the real 49408-token vocabulary and context length 77), weights stored in float16
  (the reference outputs below are computed from the float16-rounded weights, so both sides read the
  same numbers), in the hub layout open_clip writes (`push_to_hf_hub.save_for_hf`: `model_cfg` +
  `preprocess_cfg`, the state dict as is). No tokenizer files: open_clip uses its bundled BPE.
- quickgelu/{open_clip_config.json,open_clip_model.safetensors}: a tiny random `CustomTextCLIP`
  (`quick_gelu: true`, `custom_text: true`: text weights under `text.`), text vocabulary 512 and
  context length 16 (ids are synthetic, EOT = the largest id of each row), float32 weights.
- */golden.json: inputs (images already normalised, token ids) and outputs of open_clip:
  `encode_image`, `encode_text` (not normalised) and the zero-shot logits
  `logit_scale.exp() * normalize(img) @ normalize(txt).T`.
- preprocess.safetensors: each fixture's eval transform (open_clip's `image_transform_v2`,
  `is_train=False`, from the reloaded model's `preprocess_cfg`) applied to
  crates/calibra-models/tests/fixtures/timm/preprocess/image.png.
- tokenizer.json: token ids of `open_clip.get_tokenizer("local-dir:<gelu fixture>")` (a
  `SimpleTokenizer`, context length 77, zero padding) and of `SimpleTokenizer.encode` (content ids)
  for golden strings, plus the same strings at context length 16; `known_gaps` lists strings whose
  cleaning calibra does not reproduce (ftfy's mojibake repair, HTML named entities beyond the basic
  ones), with open_clip's ids, so a test can show that they differ.

Deterministic: fixed generators; re-running rewrites identical files.
Floats are written with 9 significant digits (float32 round-trips).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import open_clip
import torch
import torch.nn.functional as F
from open_clip.model import CLIP, CustomTextCLIP
from open_clip.tokenizer import SimpleTokenizer
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "open_clip"

torch.set_num_threads(1)


def f32(t: torch.Tensor):
    t = t.detach().to(torch.float32)
    if t.dim() == 0:
        return float(f"{t.item():.9g}")
    return [f32(x) for x in t] if t.dim() > 1 else [float(f"{v:.9g}") for v in t.tolist()]


def dump(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"), ensure_ascii=True)
        f.write("\n")


def randomise(model: torch.nn.Module, seed: int) -> None:
    """Every parameter random (LayerNorm weights around 1, biases small) so that each one matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "logit_scale":
                p.copy_(torch.tensor(2.3 + 0.1 * seed, dtype=p.dtype).reshape(p.shape))
            elif p.dim() == 1 and ("ln" in name or "norm" in name) and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[-1] if p.dim() == 2 else p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)


def save_hub_layout(model, model_cfg: dict, preprocess_cfg: dict, out: Path, half: bool) -> None:
    """`open_clip_config.json` + `open_clip_model.safetensors` as `save_for_hf` writes them."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if half:
        state = {k: v.to(torch.float16) for k, v in state.items()}
    save_file(state, out / "open_clip_model.safetensors")
    with open(out / "open_clip_config.json", "w") as f:
        json.dump({"model_cfg": model_cfg, "preprocess_cfg": preprocess_cfg}, f, indent=2)
        f.write("\n")


def reload(out: Path):
    """Loads the fixture back through open_clip's own hub-directory path (`local-dir:`)."""
    model = open_clip.create_model(f"local-dir:{out}", precision="fp32")
    model.eval()
    return model


def golden_outputs(model, images: torch.Tensor, ids: torch.Tensor) -> dict:
    with torch.no_grad():
        img = model.encode_image(images)
        txt = model.encode_text(ids)
        logits = model.logit_scale.exp() * F.normalize(img, dim=-1) @ F.normalize(txt, dim=-1).T
    return {
        "images": f32(images),
        "ids": ids.tolist(),
        "image_features": f32(img),
        "text_features": f32(txt),
        "logit_scale": f32(model.logit_scale.reshape(())),
        "logits": f32(logits),
    }


GELU_CFG = {
    "embed_dim": 16,
    "quick_gelu": False,
    "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 16, "layers": 2, "head_width": 8, "mlp_ratio": 2.0},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 8, "heads": 2, "layers": 2, "mlp_ratio": 4.0},
}
GELU_PREPROCESS = {
    "mean": [0.48145466, 0.4578275, 0.40821073],
    "std": [0.26862954, 0.26130258, 0.27577711],
    "interpolation": "bicubic",
    "resize_mode": "shortest",
}

QUICK_CFG = {
    "embed_dim": 12,
    "quick_gelu": True,
    "custom_text": True,
    "vision_cfg": {"image_size": 24, "patch_size": 6, "width": 24, "layers": 3, "head_width": 8, "mlp_ratio": 3.0},
    "text_cfg": {"context_length": 16, "vocab_size": 512, "width": 16, "heads": 4, "layers": 2, "mlp_ratio": 2.0},
}
QUICK_PREPROCESS = {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5], "interpolation": "bilinear", "resize_mode": "squash"}

PROMPTS = [
    "a photo of a melanoma.",
    "a photo of a benign keratosis.",
    "a chest x-ray showing pneumonia",
]


def build_gelu(tok: SimpleTokenizer) -> None:
    out = FIX / "gelu"
    model = CLIP(**GELU_CFG)
    randomise(model, 1)
    save_hub_layout(model, GELU_CFG, GELU_PREPROCESS, out, half=True)
    model = reload(out)  # float16-rounded weights, as calibra reads them
    g = torch.Generator().manual_seed(11)
    images = torch.randn(3, 3, 32, 32, generator=g)
    ids = tok(PROMPTS)
    golden = golden_outputs(model, images, ids)
    golden["prompts"] = PROMPTS
    dump(out / "golden.json", golden)


def build_quickgelu() -> None:
    out = FIX / "quickgelu"
    model = CustomTextCLIP(**{k: v for k, v in QUICK_CFG.items() if k != "custom_text"})
    randomise(model, 2)
    save_hub_layout(model, QUICK_CFG, QUICK_PREPROCESS, out, half=False)
    model = reload(out)
    assert isinstance(model, CustomTextCLIP)
    g = torch.Generator().manual_seed(12)
    images = torch.randn(2, 3, 24, 24, generator=g)
    rows = []
    for length in (5, 16, 9):
        body = torch.randint(1, 400, (length - 2,), generator=g).tolist()
        row = [510] + body + [511] + [0] * (16 - length)
        rows.append(row)
    ids = torch.tensor(rows)
    dump(out / "golden.json", golden_outputs(model, images, ids))


TOKENIZER_STRINGS = [
    "a photo of a melanocytic nevus.",
    "A PHOTO of a Melanoma!!",
    "basal cell carcinoma, 3 lesions (12mm) at 10:45",
    "it's the patient's 2nd visit; they'll return. We've SEEN it. I'M sure. You're ok, I'd say",
    "  multiple   spaces\tand\nnewlines\r\n  ",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9",
    "cafe\u0301 (decomposed accent)",
    "\u039f\u0394\u039f\u03a3 \u03a3 final sigma",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8 \u4e2d\u6587\u6587\u672c",
    "emoji \U0001f642\U0001fa7a test \U0001f468\u200d\u2695\ufe0f",
    "<start_of_text> and <end_of_text> are special, <|endoftext|> is not",
    "(<end_of_text>) glued to punctuation",
    "",
    "   ",
    "1234567890",
    "\u0130stanbul",
    "x-ray, ct-scan & mri/pet ... ??? !!!",
    "don't won't can't shouldn't",
    "a\u00a0b\u2003c\u3000d",
    "\ufb01 ligature \ufb03 and \u0133",
    "\u201ccurly\u201d \u2018quotes\u2019",
    "\uff26\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 \uff11\uff12\uff13",
    "fish &amp; chips &lt;3 &quot;q&quot; &#39;s &#x41;",
    "&amp;amp; double-escaped",
    "zero\u200bwidth and soft\u00adhyphen",
    "ctrl\x07chars\x1b[31mred\x1b[0m",
    "tab\there\x0bvt\x0cff",
    "'''s '' 's",
    "melanocytic nevus " * 30,
    "the quick brown fox jumps over the lazy dog " * 12,
]

# Cleaning that calibra does not reproduce (see crates/calibra-models/src/open_clip_text.rs).
KNOWN_GAPS = [
    "caf\u00c3\u00a9 mojibake",  # ftfy repairs UTF-8 read as Latin-1
    "&eacute;t&eacute; named entity",  # HTML5 named entities beyond amp/lt/gt/quot/apos/nbsp
]


def tokenizer_golden() -> None:
    tok = open_clip.get_tokenizer(f"local-dir:{FIX / 'gelu'}")
    assert isinstance(tok, SimpleTokenizer) and tok.context_length == 77
    cases = []
    for s in TOKENIZER_STRINGS:
        cases.append(
            {
                "text": s,
                "content": tok.encode(s),
                "ids_77": tok([s])[0].tolist(),
                "ids_16": tok([s], context_length=16)[0].tolist(),
            }
        )
    gaps = [{"text": s, "ids_77": tok([s])[0].tolist()} for s in KNOWN_GAPS]
    dump(
        FIX / "tokenizer.json",
        {
            "open_clip_version": open_clip.__version__,
            "sot": tok.sot_token_id,
            "eot": tok.eot_token_id,
            "vocab_size": tok.vocab_size,
            "cases": cases,
            "known_gaps": gaps,
        },
    )


def preprocess_golden() -> None:
    """Each fixture's eval transform (`image_transform_v2(model preprocess_cfg, is_train=False)`)
    applied to the timm fixture's 61x45 PNG: `preprocess.safetensors`, one `[3, size, size]` tensor per
    fixture name."""
    from PIL import Image
    from open_clip.transform import PreprocessCfg, image_transform_v2

    image = Image.open(FIX.parent / "timm" / "preprocess" / "image.png").convert("RGB")
    out = {}
    for name in ("gelu", "quickgelu"):
        model = reload(FIX / name)
        cfg = PreprocessCfg(**model.visual.preprocess_cfg)
        out[name] = image_transform_v2(cfg, is_train=False)(image).contiguous()
    save_file(out, FIX / "preprocess.safetensors")


def main() -> None:
    tok = SimpleTokenizer(context_length=77)
    build_gelu(tok)
    build_quickgelu()
    tokenizer_golden()
    preprocess_golden()
    print("wrote", FIX)


if __name__ == "__main__":
    main()
