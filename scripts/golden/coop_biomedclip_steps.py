"""Golden vectors for CoOp / KgCoOp / ProGrad on the BERT text tower of a BiomedCLIP-style OpenCLIP
checkpoint (calibra_train::coop).

Run (venv with torch 2.15, open_clip_torch 3.3.0, timm, transformers 5.24; all offline):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/coop_biomedclip_steps.py

Reference: BiomedCoOp's CoOp on BiomedCLIP (Koleilat et al., CVPR 2025; its `CoOp_BiomedCLIP`
trainer): the prompt `"X X ... X name."` tokenised by open_clip's `HFTokenizer`, the BERT word
embeddings of it with the context vectors in place of the X's (`token_prefix = [CLS]`,
`token_suffix` = everything after the slots), fed to `text.transformer(inputs_embeds=...,
attention_mask=ids != pad)` (what its patched `encode_text(prompts, True, tokenized_prompts)` does),
the `[CLS]` row of the last hidden state, then `text.proj`; logits `exp(logit_scale) * cos`. That
re-expression is checked here against open_clip's `encode_text` on plain prompts. KgCoOp (w 8) and
ProGrad (lambda 1, T 1) as in scripts/golden/coop_steps.py, with the same SGD-momentum and Dassl
warmup-cosine.

On the tiny random BiomedCLIP-style model of crates/calibra-models/tests/fixtures/biomedclip/model
(made by encoders_biomedclip.py), fixed context init, image features and labels, a few full-batch
steps; writes the losses and the final context to
crates/calibra-train/tests/golden/coop_biomedclip_steps.json (float32).

Deterministic: fixed torch generators, one thread; re-running rewrites an identical file.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoders_biomedclip import FIX, build_model  # noqa: E402  (sets the offline hub cache)
from coop_family import ZS_TEMPLATE, f32, run_method, settings, write  # noqa: E402

import open_clip  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODEL = FIX / "model"
OUT = ROOT / "crates" / "calibra-train" / "tests" / "golden" / "coop_biomedclip_steps.json"

torch.set_num_threads(1)

CLASSNAMES = ["melanoma", "benign nevus", "basal cell carcinoma"]
PHRASE = "a photo of a"
N_CTX = 4
N_IMAGES = 8



def text_from_embeddings(model, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """HFTextEncoder.forward on input embeddings: BERT, the [CLS] row, text.proj."""
    out = model.text.transformer(inputs_embeds=x, attention_mask=mask.long())
    return model.text.proj(out.last_hidden_state[:, 0, :])


def main() -> None:
    model = build_model(MODEL)
    for p in model.parameters():
        p.requires_grad_(False)
    tok = open_clip.get_tokenizer(f"local-dir:{MODEL}")
    pad = model.text.config.pad_token_id
    emb = model.text.transformer.embeddings.word_embeddings
    d = emb.weight.shape[1]
    k = len(CLASSNAMES)

    # The re-expression of the text tower equals open_clip's encode_text on ids.
    zs_ids = tok([ZS_TEMPLATE.format(c) for c in CLASSNAMES])
    with torch.no_grad():
        direct = model.encode_text(zs_ids)
        again = text_from_embeddings(model, emb(zs_ids), zs_ids != pad)
    assert torch.allclose(direct, again, atol=1e-6), (direct - again).abs().max()

    # BiomedCoOp's prompts: "X X X X name." tokenised; the X's are one word piece each here.
    prompts = tok([" ".join(["X"] * N_CTX) + " " + name + "." for name in CLASSNAMES])
    x_id = tok.tokenizer.convert_tokens_to_ids("x")
    assert (prompts[:, 1 : 1 + N_CTX] == x_id).all(), prompts
    mask = prompts != pad
    with torch.no_grad():
        embedding = emb(prompts)
    prefix, suffix = embedding[:, :1], embedding[:, 1 + N_CTX :]

    # With the phrase as the context, the prompt is the plain prompt "a photo of a name.".
    phrase_ids = tok([PHRASE])[0]
    n_phrase = int((phrase_ids != pad).sum()) - 2
    with torch.no_grad():
        phrase_ctx = emb(phrase_ids[1 : 1 + n_phrase].unsqueeze(0)).expand(k, -1, -1)
        plain = tok([PHRASE + " " + name + "." for name in CLASSNAMES])
        x = torch.cat([emb(plain)[:, :1], phrase_ctx, emb(plain)[:, 1 + n_phrase :]], dim=1)
        phrase_features = text_from_embeddings(model, x, plain != pad)
        plain_features = model.encode_text(plain)
    assert torch.allclose(phrase_features, plain_features, atol=1e-6)

    g = torch.Generator().manual_seed(23)
    ctx0 = 0.02 * torch.randn(N_CTX, d, generator=g)
    p = direct.shape[1]
    image_features = torch.randn(N_IMAGES, p, generator=g)
    img = image_features / image_features.norm(dim=-1, keepdim=True)
    scale = model.logit_scale.exp()
    with torch.no_grad():
        zs_txt = direct / direct.norm(dim=-1, keepdim=True)
        zs_logits = scale * img @ zs_txt.t()
    labels = (zs_logits.argmax(dim=-1) + 1) % k  # disagree with zero-shot: ProGrad's gradients conflict

    def logits_and_text(ctx: torch.Tensor):
        x = torch.cat([prefix, ctx.unsqueeze(0).expand(k, -1, -1), suffix], dim=1)
        txt = text_from_embeddings(model, x, mask)
        txt = txt / txt.norm(dim=-1, keepdim=True)
        return scale * img @ txt.t(), txt

    def run(method: str) -> dict:
        return run_method(method, ctx0, logits_and_text, labels, zs_txt, zs_logits)

    result = {
        "source": "torch 2.15 float32, open_clip_torch 3.3.0 (BiomedCLIP-style CustomTextCLIP); "
        "scripts/golden/coop_biomedclip_steps.py",
        "classnames": CLASSNAMES,
        "phrase": PHRASE,
        "phrase_prompt_features": f32(plain_features),
        "prompt_ids": prompts.tolist(),
        "attended": mask.sum(dim=1).tolist(),
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
    print("projected", result["prograd"]["projected"], "attended", result["attended"])


if __name__ == "__main__":
    main()
