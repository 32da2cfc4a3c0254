"""Golden fixture for the SigLIP text tower, SigLIP's tokenizer and sigmoid zero-shot logits.

Run (venv with torch 2.15, transformers 5.24.0, sentencepiece 0.2.3, protobuf, safetensors):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/siglip_text.py

Writes crates/calibra-models/tests/fixtures/siglip_model/:
- spiece.model: a tiny SentencePiece Unigram model (vocabulary 80) trained here on a small prompt
  corpus with SigLIP's special-token layout (pad 0 `<pad>`, eos 1 `</s>`, unk 2 `<unk>`, no bos) and
  SentencePiece's default `nmt_nfkc` normalizer, as google/siglip-* ship (T5's layout);
- tokenizer_config.json etc.: `SiglipTokenizer(spiece.model, model_max_length=16)`.save_pretrained;
- config.json, model.safetensors: a tiny random `SiglipModel` (text: hidden 24, 2 layers, 2 heads,
  16 positions, head 24→32; vision: hidden 32, 2 layers, 30 px images, 6 px patches), every weight
  perturbed so LayerNorms and biases are not trivial, logit_scale / logit_bias nonzero;
- golden.json: token ids of `AutoTokenizer` (resolves to `SiglipTokenizer`) for a list of strings,
  unpadded and with `padding="max_length", truncation=True` (16 ids); text features
  (`get_text_features().pooler_output`) of the padded ids, image features, `logits_per_image`
  of `SiglipModel.forward` for 2 images x the class prompts, and the prompts' own ids.

Deterministic: fixed seeds; re-running rewrites identical files (spm training is single-threaded).
Floats are written with 9 significant digits (float32 round-trips).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import sentencepiece as spm
import torch
from transformers import AutoTokenizer, SiglipConfig, SiglipModel, SiglipTokenizer

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "siglip_model"
MAX_LEN = 16

torch.set_num_threads(1)

CORPUS = """
a photo of a melanocytic nevus. a photo of a melanoma. a photo of a basal cell carcinoma.
a photo of a benign keratosis. a photo of a dermatofibroma. a photo of a vascular lesion.
a photo of an actinic keratosis. a photo of a retina with diabetic retinopathy.
a color fundus photograph showing diabetic retinopathy severity level as moderate.
classify diabetic retinopathy severity from this fundus photo of a normal eye.
this is a dermoscopy image of a skin lesion. an image of a mole on the skin.
a chest x-ray showing pleural effusion. cafe naive resume of the patient.
""".strip().splitlines()

# Strings for the tokenizer golden: accents, CJK, emoji, punctuation, case, whitespace runs,
# underscores, digits, the SentencePiece underline itself, and one longer than the context.
STRINGS = [
    "a photo of a melanoma.",
    "A Photo of a MELANOMA!!!",
    "Café naïve résumé",
    "皮肤 病变 of a nevus",
    "🙂 lesion 🙂🙂",
    "  a\tphoto\n of   a  nevus  ",
    "basal_cell carcinoma (benign?) - 3 lesions, 12mm; [x-ray]",
    "ﬁbroma ＡＢＣ ①",
    "\u2581a photo",
    "no\u00a0break, zero\u200bwidth, ideographic\u3000space, e\u0301 combining",
    "Stra\u00dfe \u0130stanbul \u01c4 \u2167",
    "joiner\u200cnon\u200djoiner\ufeffbom\ufffdreplacement\u2028line\u1680ogham\u200emark",
    "",
    "a photo of a retina with diabetic retinopathy severity level as moderate on this fundus photograph",
]

CLASSNAMES = ["melanoma", "melanocytic nevus", "basal cell carcinoma"]
TEMPLATE = "a photo of a {}."


def f32(t: torch.Tensor):
    """Nested lists of floats with 9 significant digits (exact float32 round-trip)."""
    t = t.detach().to(torch.float32)
    if t.dim() == 0:
        return float(f"{t.item():.9g}")
    return [f32(x) for x in t] if t.dim() > 1 else [float(f"{v:.9g}") for v in t.tolist()]


def dump(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"), ensure_ascii=True)
        f.write("\n")


def train_spm(path: Path) -> None:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS),
        model_writer=model,
        model_type="unigram",
        vocab_size=80,
        character_coverage=1.0,
        normalization_rule_name="nmt_nfkc",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        pad_piece="<pad>",
        eos_piece="</s>",
        unk_piece="<unk>",
        num_threads=1,
        seed_sentencepiece_size=1000,
        minloglevel=2,
    )
    path.write_bytes(model.getvalue())


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    train_spm(OUT / "spiece.model")
    SiglipTokenizer(str(OUT / "spiece.model"), model_max_length=MAX_LEN).save_pretrained(OUT)
    tok = AutoTokenizer.from_pretrained(OUT)
    assert type(tok).__name__ == "SiglipTokenizer", type(tok)

    torch.manual_seed(31)
    cfg = SiglipConfig(
        text_config=dict(
            vocab_size=tok.vocab_size,
            hidden_size=24,
            intermediate_size=40,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=MAX_LEN,
            projection_size=32,
        ),
        vision_config=dict(
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=30,
            patch_size=6,
        ),
    )
    model = SiglipModel(cfg).eval()
    g = torch.Generator().manual_seed(32)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))
        model.logit_scale.fill_(2.3)
        model.logit_bias.fill_(-1.7)
    model.save_pretrained(OUT)
    model = SiglipModel.from_pretrained(OUT, attn_implementation="eager").eval()

    unpadded = [tok(s)["input_ids"] for s in STRINGS]
    padded = tok(STRINGS, padding="max_length", truncation=True, max_length=MAX_LEN)["input_ids"]
    prompts = [TEMPLATE.format(c) for c in CLASSNAMES]
    prompt_ids = tok(prompts, padding="max_length", truncation=True, max_length=MAX_LEN, return_tensors="pt")
    pixel = torch.randn(2, 3, 30, 30, generator=torch.Generator().manual_seed(33))
    with torch.no_grad():
        text_features = model.get_text_features(input_ids=torch.tensor(padded)).pooler_output
        out = model(input_ids=prompt_ids["input_ids"], pixel_values=pixel)
        image_features = model.get_image_features(pixel_values=pixel).pooler_output

    dump(
        OUT / "golden.json",
        {
            "source": "transformers 5.24.0 SiglipModel / SiglipTokenizer (sentencepiece 0.2.3), torch 2.15 float32",
            "max_length": MAX_LEN,
            "strings": STRINGS,
            "ids": unpadded,
            "padded_ids": padded,
            "text_features": f32(text_features),
            "classnames": CLASSNAMES,
            "template": TEMPLATE,
            "prompt_ids": prompt_ids["input_ids"].tolist(),
            "pixel_values": f32(pixel),
            "image_features": f32(image_features),
            "prompt_text_features": f32(out.text_embeds),
            "logits_per_image": f32(out.logits_per_image),
            "logit_scale": f32(model.logit_scale[0]),
            "logit_bias": f32(model.logit_bias[0]),
        },
    )


if __name__ == "__main__":
    main()
