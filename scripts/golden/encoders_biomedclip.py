"""Golden fixtures for BiomedCLIP-style OpenCLIP checkpoints: a timm ViT trunk (open_clip's
`TimmModel`), a Hugging Face BERT text tower (open_clip's `HFTextEncoder`) and the BERT WordPiece
tokenizer (`BertTokenizerFast`, through open_clip's `HFTokenizer`).

Run (venv with torch, open_clip_torch 3.3.0, timm, transformers 5.24, safetensors; all offline):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_biomedclip.py

Writes, under crates/calibra-models/tests/fixtures/biomedclip/:
- model/: a tiny random `CustomTextCLIP` in the hub layout BiomedCLIP ships
  (`microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224`): `open_clip_config.json` (BiomedCLIP's
  `model_cfg` with `hf_model_name` / `hf_tokenizer_name` the real BiomedBERT name, only the sizes
  reduced), `open_clip_model.safetensors` (float32), and the tokenizer files: `vocab.txt` (a small
  uncased vocabulary written here) and what `BertTokenizerFast.save_pretrained` writes
  (`tokenizer.json`, `tokenizer_config.json`). open_clip tokenises a `local-dir:` checkpoint with the
  tokenizer files of that directory (`factory.get_tokenizer`).
- hub/: a Hugging Face hub cache holding only the BERT `config.json` of the text tower under the
  BiomedBERT name (`models--microsoft--BiomedNLP-BiomedBERT-base-uncased-abstract`): open_clip's
  `HFTextEncoder` reads the BERT configuration with `AutoConfig.from_pretrained(hf_model_name)`, and
  this script reloads the fixture with `HF_HUB_CACHE` pointing there (offline).
- trunk_model_args.json: the keyword arguments this script adds to open_clip's
  `timm.create_model("vit_base_patch16_224")` call to make the trunk tiny. open_clip passes none
  (`TimmModel` builds the trunk from its name alone; `vision_cfg.image_size` only sets the
  preprocessing size), so a real BiomedCLIP trunk is timm's `vit_base_patch16_224` as is; the tests
  give these arguments to calibra's loader as the trunk's `model_args`.
- avg_linear/: the same layout with the other options calibra implements: `timm_pool` "avg"
  (open_clip's default: the trunk's `global_pool` reset to a mean over the patch tokens, its final
  norm unchanged), `timm_proj_bias` true, `hf_proj_type` "linear".
- model/golden.json, avg_linear/golden.json: inputs (normalised images, prompts, open_clip's token
  ids) and open_clip's outputs:
  the trunk's feature (`visual.trunk(x)`: timm's pooled, normed class token, what `calibra features`
  reads), `encode_image`, `encode_text` (not normalised), `logits = logit_scale.exp() * normalize(img) @
  normalize(txt).T`, and a zero-shot head (class names x templates: normalise, average, renormalise,
  as calibra's `ZeroShotClassifier`) with its logits.
- tokenizer.json: for golden strings (accents, CJK, emoji, control characters, punctuation, long
  words, truncation), `BertTokenizerFast(text).input_ids` (no cleaning, no padding) and open_clip's
  `HFTokenizer` ids (its `whitespace` cleaning, padded / truncated to the context length).

Deterministic: fixed generators; re-running rewrites identical files.
Floats are written with 9 significant digits (float32 round-trips).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "biomedclip"
HUB = FIX / "hub"
BERT_NAME = "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract"
REVISION = "0" * 40

# Offline, with the fixture's hub cache (set before transformers / huggingface_hub are imported).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_CACHE"] = str(HUB)

import open_clip  # noqa: E402
import open_clip.timm_model  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import BertConfig, BertTokenizerFast  # noqa: E402

torch.set_num_threads(1)

TRUNK = "vit_base_patch16_224"
TRUNK_ARGS = {"img_size": 32, "patch_size": 8, "embed_dim": 16, "depth": 2, "num_heads": 2, "mlp_ratio": 2.0}
CONTEXT = 20

MODEL_CFG = {
    "embed_dim": 12,
    "vision_cfg": {
        "timm_model_name": TRUNK,
        "timm_model_pretrained": False,
        "timm_pool": "",
        "timm_proj": "linear",
        "image_size": 32,
    },
    "text_cfg": {
        "hf_model_name": BERT_NAME,
        "hf_tokenizer_name": BERT_NAME,
        "hf_proj_type": "mlp",
        "hf_pooler_type": "cls_last_hidden_state_pooler",
        "context_length": CONTEXT,
    },
}
PREPROCESS_CFG = {
    "mean": [0.48145466, 0.4578275, 0.40821073],
    "std": [0.26862954, 0.26130258, 0.27577711],
}

BERT_CFG = dict(
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=24,
    max_position_embeddings=32,
    type_vocab_size=2,
    hidden_act="gelu",
    layer_norm_eps=1e-12,
    pad_token_id=0,
)

# A small uncased WordPiece vocabulary: specials, single characters (so most words split into
# pieces), whole words and `##` continuations, some CJK and accent-stripped letters.
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789.,;:!?'\"()-/&%+=<>[]#@*_")
WORDS = [
    "a", "photo", "of", "the", "an", "image", "showing", "chest", "x", "ray", "melanoma", "benign",
    "mal", "##ign", "##ant", "##oma", "##s", "##ed", "##ing", "##er", "tumor", "lesion", "cell",
    "carcinoma", "basal", "nevus", "pneumonia", "normal", "histopathology", "patch", "cafe", "naive",
    "resume", "it", "is", "not", "don", "t", "scan", "ct", "mri", "pet", "and", "with", "in", "on",
    "##a", "##b", "##c", "##d", "##e", "##i", "##l", "##m", "##n", "##o", "##r", "##t", "##u", "##y",
    "##ia", "##tic", "##cy", "##ma", "##no", "##to", "##ph", "##st", "##ol", "##og",
    "日", "本", "語", "中", "文", "한", "국", "어", "ο", "δ", "σ", "é",
]


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
                p.copy_(torch.tensor(2.6, dtype=p.dtype).reshape(p.shape))
            elif p.dim() == 1 and ("norm" in name.lower()) and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[-1] if p.dim() == 2 else p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)


def vocabulary() -> list[str]:
    vocab = []
    for t in SPECIALS + CHARS + WORDS + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]:
        if t not in vocab:
            vocab.append(t)
    return vocab


def write_hub_config(vocab_size: int) -> None:
    """The BERT config.json in a hub-cache snapshot under the BiomedBERT name."""
    if HUB.exists():
        shutil.rmtree(HUB)
    repo = HUB / ("models--" + BERT_NAME.replace("/", "--"))
    snap = repo / "snapshots" / REVISION
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    BertConfig(vocab_size=vocab_size, **BERT_CFG).save_pretrained(snap)


def tiny_trunk_create_model():
    """open_clip's `timm.create_model`, with TRUNK_ARGS added for the trunk (only)."""
    real = open_clip.timm_model.timm.create_model

    def create(name, *args, **kwargs):
        assert name == TRUNK, name
        return real(name, *args, **dict(kwargs, **TRUNK_ARGS))

    return real, create


def build_model(out: Path, **kwargs):
    """`create_model("local-dir:<out>")` with the tiny trunk (loads `open_clip_model.safetensors` when
    present)."""
    real, create = tiny_trunk_create_model()
    open_clip.timm_model.timm.create_model = create
    try:
        model = open_clip.create_model(f"local-dir:{out}", precision="fp32", **kwargs)
    finally:
        open_clip.timm_model.timm.create_model = real
    model.eval()
    return model


PROMPTS = [
    "a photo of a melanoma.",
    "An image showing a BENIGN lesion",
    "chest x-ray: pneumonia",
    "histopathology patch of basal cell carcinoma with a very long description that is truncated",
]
CLASSNAMES = ["melanoma", "benign nevus", "basal cell carcinoma"]
TEMPLATES = ["a photo of a {}.", "an image showing {}"]

TOKENIZER_STRINGS = [
    "a photo of a melanoma.",
    "A PHOTO of a Melanoma!!",
    "basal cell carcinoma, 3 lesions (12mm) at 10:45",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9",
    "cafe\u0301 (decomposed accent)",
    "\u039f\u0394\u039f\u03a3 \u03a3",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8 \u4e2d\u6587\u6587\u672c",
    "emoji \U0001f642\U0001fa7a test \U0001f468\u200d\u2695\ufe0f",
    "  multiple   spaces\tand\nnewlines\r\n  ",
    "ctrl\x07chars\x00nul\x1b[31mred",
    "zero\u200bwidth and soft\u00adhyphen",
    "x-ray, ct-scan & mri/pet ... ??? !!!",
    "don't won't can't",
    "\u00bfqu\u00e9? \u00a1s\u00ed! \u2014 \u2013 \u2026 \u00ab\u00bb \u201ccurly\u201d",
    "$100 ^caret^ `tick` ~tilde~ |pipe|",
    "[CLS] [SEP] [PAD] [UNK] [MASK] are special; [cls] is not",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101,
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "",
    "   ",
    "1234567890",
    "\u0130stanbul",
    "\uff26\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 \uff11\uff12\uff13",
    "fish &amp; chips &lt;3",
    "tumor " * 40,
]


def zero_shot(model, tok, images) -> dict:
    with torch.no_grad():
        per_class = []
        for name in CLASSNAMES:
            ids = tok([t.format(name) for t in TEMPLATES])
            f = F.normalize(model.encode_text(ids), dim=-1).mean(0)
            per_class.append(F.normalize(f, dim=-1))
        w = torch.stack(per_class)
        img = F.normalize(model.encode_image(images), dim=-1)
        logits = model.logit_scale.exp() * img @ w.T
    return {"classnames": CLASSNAMES, "templates": TEMPLATES, "class_embeddings": f32(w), "logits": f32(logits)}


def build_fixture(out: Path, model_cfg: dict, vocab: list[str], seed: int) -> None:
    """One checkpoint directory (config, random weights, tokenizer files) and its golden.json."""
    out.mkdir(parents=True)
    # The tokenizer files of the checkpoint directory: vocab.txt (one token a line) and what
    # save_pretrained writes (tokenizer.json, tokenizer_config.json), as BiomedCLIP ships them.
    (out / "vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}).save_pretrained(out)
    with open(out / "open_clip_config.json", "w") as f:
        json.dump({"model_cfg": model_cfg, "preprocess_cfg": PREPROCESS_CFG}, f, indent=2)
        f.write("\n")
    # Build from the config (random weights), randomise, save, reload through open_clip.
    model = build_model(out, pretrained_text=False)
    randomise(model, seed)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, out / "open_clip_model.safetensors")
    model = build_model(out)
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), f"{k} was not reloaded"

    tok = open_clip.get_tokenizer(f"local-dir:{out}")
    assert tok.context_length == CONTEXT, tok.context_length
    g = torch.Generator().manual_seed(10 + seed)
    images = torch.randn(3, 3, 32, 32, generator=g)
    ids = tok(PROMPTS)
    with torch.no_grad():
        trunk = model.visual.trunk(images)
        img = model.encode_image(images)
        txt = model.encode_text(ids)
        logits = model.logit_scale.exp() * F.normalize(img, dim=-1) @ F.normalize(txt, dim=-1).T
    golden = {
        "images": f32(images),
        "prompts": PROMPTS,
        "ids": ids.tolist(),
        "trunk_features": f32(trunk),
        "image_features": f32(img),
        "text_features": f32(txt),
        "logit_scale": f32(model.logit_scale.reshape(())),
        "logits": f32(logits),
        "zero_shot": zero_shot(model, tok, images),
    }
    dump(out / "golden.json", golden)


def main() -> None:
    if FIX.exists():
        shutil.rmtree(FIX)
    FIX.mkdir(parents=True)
    vocab = vocabulary()
    write_hub_config(len(vocab))
    dump(FIX / "trunk_model_args.json", TRUNK_ARGS)
    # BiomedCLIP's own options, and the alternatives calibra implements: timm_pool "avg" (open_clip's
    # default), a biased head.proj, hf_proj_type "linear".
    build_fixture(FIX / "model", MODEL_CFG, vocab, 7)
    other = json.loads(json.dumps(MODEL_CFG))
    other["vision_cfg"].update({"timm_pool": "avg", "timm_proj_bias": True})
    other["text_cfg"]["hf_proj_type"] = "linear"
    build_fixture(FIX / "avg_linear", other, vocab, 8)

    out = FIX / "model"
    tok = open_clip.get_tokenizer(f"local-dir:{out}")
    bert = BertTokenizerFast.from_pretrained(str(out))
    cases = []
    for s in TOKENIZER_STRINGS:
        cases.append({"text": s, "bert_ids": bert(s).input_ids, "open_clip_ids": tok([s])[0].tolist()})
    dump(FIX / "tokenizer.json", {"context_length": CONTEXT, "cases": cases})
    print("wrote", FIX)


if __name__ == "__main__":
    main()
