"""Golden vectors for CoOp / KgCoOp / ProGrad on SigLIP's text tower (calibra_train::coop).

Run (venv with torch 2.15, transformers 5.24.0, sentencepiece):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/coop_siglip_steps.py

No reference implementation of CoOp on SigLIP exists; this script states the port calibra makes
(calibra_models::clip::prompt_text) in torch and checks it from transformers' side:

- a class prompt is `[ctx_1 .. ctx_n, tokens(name + "."), </s>, <pad> ...]` padded to the context
  length (SigLIP has no start token, so the context takes the first n positions; SigLIP's tokenizer
  canonicalises the text, dropping the "."), embedded with the frozen token embedding; the text
  feature is SigLIP's own: positions added, the encoder without a mask, final LayerNorm, `head` of
  the last position (transformers' SiglipTextTransformer re-expressed on input embeddings, checked
  here against `get_text_features` on ids);
- with the context set to the embeddings of "a photo of a", the prompt's feature equals
  `get_text_features` of "a photo of a {name}." tokenised normally (checked here, and written for the
  Rust side to check the same);
- logits are SigLIP's: `exp(logit_scale) * cos + logit_bias`; CE, KgCoOp's cosine term (w 8) and
  ProGrad's projected gradient (lambda 1, T 1) as in scripts/golden/coop_steps.py, with the same
  SGD-momentum and Dassl warmup-cosine.

On the tiny random SiglipModel of crates/calibra-models/tests/fixtures/siglip_model (made by
siglip_text.py), fixed context init, image features and labels, a few full-batch steps; writes the
losses and the final context to crates/calibra-train/tests/golden/coop_siglip_steps.json (float32).

Deterministic: fixed torch generators, one thread; re-running rewrites an identical file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from transformers import AutoTokenizer, SiglipModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coop_family import ZS_TEMPLATE, f32, run_method, settings, write  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "siglip_model"
OUT = ROOT / "crates" / "calibra-train" / "tests" / "golden" / "coop_siglip_steps.json"

torch.set_num_threads(1)

CLASSNAMES = ["melanoma", "melanocytic nevus", "skin lesion"]
PHRASE = "a photo of a"
N_CTX = 4
N_IMAGES = 8


def text_from_embeddings(model: SiglipModel, x: torch.Tensor) -> torch.Tensor:
    """SiglipTextTransformer.forward from input embeddings: positions, encoder, LN, head(last)."""
    tm = model.text_model
    h = tm.embeddings(inputs_embeds=x)
    h = tm.encoder(inputs_embeds=h).last_hidden_state
    h = tm.final_layer_norm(h)
    return tm.head(h[:, -1, :])


def main() -> None:
    model = SiglipModel.from_pretrained(FIX, attn_implementation="eager").eval()
    for p in model.parameters():
        p.requires_grad_(False)
    tok = AutoTokenizer.from_pretrained(FIX)
    length = tok.model_max_length
    pad, eos = tok.pad_token_id, tok.eos_token_id
    emb = model.text_model.embeddings.token_embedding
    d = emb.weight.shape[1]
    k = len(CLASSNAMES)

    def padded(texts):
        return torch.tensor(tok(texts, padding="max_length", max_length=length, truncation=True)["input_ids"])

    # The re-expression of the text tower equals transformers' own on ids.
    zs_ids = padded([ZS_TEMPLATE.format(c) for c in CLASSNAMES])
    with torch.no_grad():
        direct = model.get_text_features(input_ids=zs_ids).pooler_output
        again = text_from_embeddings(model, emb(zs_ids))
    assert torch.allclose(direct, again, atol=1e-6), (direct - again).abs().max()

    def slotted(n: int, name: str) -> list[int]:
        content = tok(name + ".", add_special_tokens=False)["input_ids"]
        ids = [pad] * n + content + [eos]
        assert len(ids) <= length
        return ids + [pad] * (length - len(ids))

    phrase_ids = tok(PHRASE, add_special_tokens=False)["input_ids"]
    n_phrase = len(phrase_ids)
    with torch.no_grad():
        phrase_ctx = emb(torch.tensor([phrase_ids]))  # [1, n, d]
        suffix_p = emb(torch.tensor([slotted(n_phrase, c) for c in CLASSNAMES]))[:, n_phrase:]
        x = torch.cat([phrase_ctx.expand(k, -1, -1), suffix_p], dim=1)
        phrase_features = text_from_embeddings(model, x)
    assert torch.allclose(phrase_features, direct, atol=1e-5), (phrase_features - direct).abs().max()

    prompts = torch.tensor([slotted(N_CTX, c) for c in CLASSNAMES])
    with torch.no_grad():
        suffix = emb(prompts)[:, N_CTX:]

    g = torch.Generator().manual_seed(21)
    ctx0 = 0.02 * torch.randn(N_CTX, d, generator=g)
    p = model.text_model.head.weight.shape[0]
    image_features = torch.randn(N_IMAGES, p, generator=g)
    img = image_features / image_features.norm(dim=-1, keepdim=True)
    scale, bias = model.logit_scale.exp(), model.logit_bias
    with torch.no_grad():
        zs_txt = direct / direct.norm(dim=-1, keepdim=True)
        zs_logits = scale * img @ zs_txt.t() + bias
    labels = (zs_logits.argmax(dim=-1) + 1) % k  # disagree with zero-shot: ProGrad's gradients conflict

    def logits_and_text(ctx: torch.Tensor):
        x = torch.cat([ctx.unsqueeze(0).expand(k, -1, -1), suffix], dim=1)
        txt = text_from_embeddings(model, x)
        txt = txt / txt.norm(dim=-1, keepdim=True)
        return scale * img @ txt.t() + bias, txt

    def run(method: str) -> dict:
        return run_method(method, ctx0, logits_and_text, labels, zs_txt, zs_logits)

    result = {
        "source": "torch 2.15 float32, transformers 5.24.0 SiglipModel; scripts/golden/coop_siglip_steps.py",
        "classnames": CLASSNAMES,
        "phrase": PHRASE,
        "phrase_prompt_features": f32(phrase_features),
        "prompt_ids": prompts.tolist(),
        "n_ctx": N_CTX,
        "ctx_init": f32(ctx0),
        "image_features": f32(image_features),
        "labels": labels.tolist(),
        "zero_shot_logits": f32(zs_logits),
        **settings(),
        "coop": run("coop"),
        "kgcoop": run("kgcoop"),
        "prograd": run("prograd"),
    }
    write(OUT, result, ctx0)
    print("projected", result["prograd"]["projected"], "prompt ids", prompts.tolist())


if __name__ == "__main__":
    main()
