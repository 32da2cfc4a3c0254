"""Golden fixtures for the CLIP tokenizer, the CLIP / SigLIP towers, zero-shot and the CoOp prompt learner.

Run (venv with torch 2.15, transformers 5.24.0, tokenizers 0.23.3, safetensors):

    CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/encoders_clip.py

Writes, under crates/calibra-models/tests/fixtures/:
- tokenizer/hf/{tokenizer.json,tokenizer_config.json}: a tiny byte-level BPE vocabulary in CLIP's layout
  (256 byte symbols, the same 256 with `</w>`, the merges learned below, then <|startoftext|>,
  <|endoftext|>), saved by transformers' `CLIPTokenizer.save_pretrained`;
  tokenizer/bpe/{vocab.json,merges.txt}: the same vocabulary in the original CLIP file layout;
  tokenizer/golden.json: ids from `CLIPTokenizer` (loaded from both layouts, asserted identical) for a
  list of strings, unpadded and padded/truncated to 77 (`padding="max_length", truncation=True`).
- clip/{config.json,model.safetensors}: a tiny random `CLIPModel` (hidden 48, 3 layers, 3 heads, 30 px
  images with 6 px patches, projection 32, the tiny vocabulary); clip/golden.json: inputs and reference
  outputs (vision last hidden state, output of block 2, pooled, image_embeds; text the same;
  logits_per_image; the vision tower at 36x42 px with `interpolate_pos_encoding=True`), the zero-shot classifier (class names x the seven MVC-Bench templates, per-prompt
  features L2-normalised, averaged per class, renormalised, logits = exp(logit_scale) cos) and the CoOp
  prompt assembly for the class-token positions end / middle / front (KaiyangZhou/CoOp PromptLearner).
- siglip/{config.json,model.safetensors}: a tiny random `SiglipVisionModel` (attention-pool head);
  siglip/v4/model.safetensors: the same weights under transformers 4.x key names (`vision_model.` prefix),
  asserted to load in transformers 5.24 to the same outputs; siglip/golden.json: inputs and outputs
  (also at 36x42 px with `interpolate_pos_encoding=True`).

Deterministic: torch.manual_seed / fixed generators; re-running rewrites identical files.
Floats are written with 9 significant digits (float32 round-trips).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import (
    CLIPConfig,
    CLIPModel,
    CLIPTokenizer,
    SiglipVisionConfig,
    SiglipVisionModel,
)
from transformers.convert_slow_tokenizer import bytes_to_unicode

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures"

torch.set_num_threads(1)


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


# ------------------------------------------------------------------------------------------------
# 1. Tokenizer: learn a tiny BPE in CLIP's layout.
# ------------------------------------------------------------------------------------------------

CORPUS = """
a photo of a melanocytic nevus. a photo of a melanoma. a photo of a basal cell carcinoma.
a photo of a benign keratosis. a photo of a dermatofibroma. a photo of a vascular lesion.
a photo of an actinic keratosis. a photo of a retina with diabetic retinopathy.
a color fundus photograph showing diabetic retinopathy severity level as moderate.
classify diabetic retinopathy severity from this fundus photo of a normal eye.
you are classifying diabetic retinopathy on a fundus photo of a patient.
this pic illustrates diab retinopthy severty of a proliferative case. the dr level is mild.
a chest x-ray showing pneumonia. a chest x-ray with no finding. cardiomegaly, effusion, edema.
the patient is a photo of the skin lesion. a photo of the lesion on the skin of the patient.
this is a photo of a lesion. there is a photo of a benign lesion and a malignant lesion.
a photo of a big cat. a photo of a small dog. a photo of the scan. it's the patient's photo.
""" * 3 + "a photo of a " * 40

N_MERGES = 360


def learn_bpe(corpus: str, n_merges: int) -> list[tuple[str, str]]:
    """Classic BPE learning (Sennrich) over CLIP's byte-level words with `</w>` on the last symbol.

    Most frequent pair first; ties broken by the lexicographically smallest pair (deterministic)."""
    import regex as re  # shipped with transformers

    pat = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+""")
    b2u = bytes_to_unicode()
    words = collections.Counter()
    for w in pat.findall(corpus.lower()):
        chars = [b2u[b] for b in w.encode("utf-8")]
        chars[-1] += "</w>"
        words[tuple(chars)] += 1
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        new = collections.Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] += c
        words = new
    return merges


def build_tokenizer():
    merges = learn_bpe(CORPUS, N_MERGES)
    b2u = bytes_to_unicode()
    vocab: dict[str, int] = {}
    for ch in b2u.values():
        vocab[ch] = len(vocab)
    for ch in b2u.values():
        vocab[ch + "</w>"] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)

    hf_dir = FIX / "tokenizer" / "hf"
    bpe_dir = FIX / "tokenizer" / "bpe"
    for d in (hf_dir, bpe_dir):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    tok = CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=77)
    tok.save_pretrained(hf_dir)
    with open(bpe_dir / "vocab.json", "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(bpe_dir / "merges.txt", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    tok_hf = CLIPTokenizer.from_pretrained(hf_dir)
    tok_bpe = CLIPTokenizer.from_pretrained(bpe_dir)
    return tok_hf, tok_bpe, vocab


GOLDEN_STRINGS = [
    "a photo of a melanocytic nevus.",
    "A PHOTO of a Melanoma!!",
    "basal cell carcinoma, 3 lesions (12mm) at 10:45",
    "it's the patient's 2nd visit; they'll return. We've SEEN it. I'M sure. You're ok, I'd say",
    "  multiple   spaces\tand\nnewlines\r\n  ",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9",
    "cafe\u0301 (decomposed accent)",
    "\u039f\u0394\u039f\u03a3 \u03a3 final sigma",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "emoji \U0001f642\U0001fa7a test",
    "<|endoftext|> in the middle <|startoftext|>",
    "<|STARTOFTEXT|> upper-case special",
    "",
    "   ",
    "1234567890",
    "\u0130stanbul",
    "x-ray, ct-scan & mri/pet ... ??? !!!",
    "don't won't can't shouldn't",
    "a\u00a0b\u2003c",
    "\ufb01 ligature \u2460 circled",
    "'''s '' 's",
    "melanocytic nevus " * 30,
    "the quick brown fox jumps over the lazy dog " * 12,
]


def tokenizer_golden(tok_hf, tok_bpe, vocab):
    cases = []
    for s in GOLDEN_STRINGS:
        ids = tok_hf(s)["input_ids"]
        ids77 = tok_hf(s, padding="max_length", max_length=77, truncation=True)["input_ids"]
        assert ids == tok_bpe(s)["input_ids"], s
        assert ids77 == tok_bpe(s, padding="max_length", max_length=77, truncation=True)["input_ids"], s
        assert len(ids77) == 77
        cases.append(
            {
                "text": s,
                "ids": ids,
                "ids_77": ids77,
                "tokens": tok_hf.convert_ids_to_tokens(ids),
            }
        )
    dump(
        FIX / "tokenizer" / "golden.json",
        {
            "source": "transformers 5.24.0 CLIPTokenizer (tokenizers 0.23.3); ids_77: padding='max_length', "
            "max_length=77, truncation=True",
            "vocab_size": len(vocab),
            "bos_id": tok_hf.bos_token_id,
            "eos_id": tok_hf.eos_token_id,
            "pad_id": tok_hf.pad_token_id,
            "cases": cases,
        },
    )


# ------------------------------------------------------------------------------------------------
# 2. Tiny random CLIP.
# ------------------------------------------------------------------------------------------------


def perturb(model: torch.nn.Module, seed: int) -> None:
    """Break HF's symmetric inits (LayerNorm 1/0, zero biases) so a wrong mapping cannot hide."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "layer_norm" in name or "layrnorm" in name or "layernorm" in name:
                if name.endswith("weight"):
                    p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
                else:
                    p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            elif name.endswith("logit_scale"):
                p.fill_(2.3)
            elif name.endswith("class_embedding") or name.endswith("probe"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif "embedding" in name:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            elif p.dim() >= 2:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)


CLASSNAMES = ["melanocytic nevus", "melanoma", "basal cell carcinoma"]
# MVC-Bench (ashshaksharifdeen/MVC-Bench, prompt_variation_across_tmplate.py): the seven context phrases
# of its template-stability study, in the order listed there; the prompt is phrase + " " + class + "."
# (CoOp's ctx_init convention). Mirrored by calibra_models::clip::zero_shot::MVC_BENCH_TEMPLATES.
MVC_PHRASES = [
    "a photo of a",
    "a photo of a retina with",
    "a color fundus photograph showing diabetic retinopathy severity level as",
    "Classify diabetic retinopathy severity from this fundus photo of a",
    "You are classifying diabetic retinopathy on a fundus photo of a",
    "This pic illustrates diab retinopthy severty of a",
    "The DR level is",
]
TEXTS = ["a photo of a melanoma.", "it's a benign keratosis!", "x-ray 42", "the dr level is mild"]


def causal_mask(n: int) -> torch.Tensor:
    m = torch.full((n, n), torch.finfo(torch.float32).min)
    return torch.triu(m, diagonal=1)[None, None]


def text_from_embeddings(model: CLIPModel, prompts: torch.Tensor, eot_pos: torch.Tensor) -> torch.Tensor:
    """CoOp TextEncoder on HF modules: prompts + positional -> causal encoder -> final LN -> EOT row -> proj."""
    tm = model.text_model
    n = prompts.shape[1]
    x = prompts + tm.embeddings.position_embedding.weight[:n][None]
    x = tm.encoder(inputs_embeds=x, attention_mask=causal_mask(n)).last_hidden_state
    x = tm.final_layer_norm(x)
    x = x[torch.arange(x.shape[0]), eot_pos]
    return model.text_projection(x)


def clip_golden(tok) -> None:
    vocab_size = len(tok.get_vocab())
    torch.manual_seed(0)
    cfg = CLIPConfig(
        text_config=dict(
            vocab_size=vocab_size,
            hidden_size=48,
            intermediate_size=80,
            num_hidden_layers=3,
            num_attention_heads=3,
            max_position_embeddings=77,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=dict(
            hidden_size=48,
            intermediate_size=80,
            num_hidden_layers=3,
            num_attention_heads=3,
            image_size=30,
            patch_size=6,
        ),
        projection_dim=32,
        logit_scale_init_value=2.3,
    )
    cfg._attn_implementation = "eager"
    model = CLIPModel(cfg).eval()
    perturb(model, 1)
    out_dir = FIX / "clip"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    model.save_pretrained(out_dir)
    model = CLIPModel.from_pretrained(out_dir, attn_implementation="eager").eval()

    g = torch.Generator().manual_seed(2)
    pixel = torch.randn(2, 3, 30, 30, generator=g)
    enc = tok(TEXTS, padding=True)
    ids = torch.tensor(enc["input_ids"])
    with torch.no_grad():
        out = model(input_ids=ids, pixel_values=pixel, output_hidden_states=True)
        vo, to = out.vision_model_output, out.text_model_output
        img_feat = model.get_image_features(pixel_values=pixel).pooler_output
        txt_feat = model.get_text_features(input_ids=ids).pooler_output
        # CLIPModel.forward overwrites the towers' pooler_output with the projected features; the
        # towers' own pooled outputs (post_layernorm(CLS), EOT row) come from the towers directly.
        vis_pooled = model.vision_model(pixel_values=pixel).pooler_output
        txt_pooled = model.text_model(input_ids=ids).pooler_output
        assert torch.allclose(model.visual_projection(vis_pooled), img_feat, atol=1e-6)
        assert torch.allclose(model.text_projection(txt_pooled), txt_feat, atol=1e-6)

        # zero-shot: class names x MVC-Bench templates
        n_t = len(MVC_PHRASES)
        prompts = [f"{p} {c}." for c in CLASSNAMES for p in MVC_PHRASES]
        pid = torch.tensor(tok(prompts, padding="max_length", max_length=77, truncation=True)["input_ids"])
        feats = model.get_text_features(input_ids=pid).pooler_output
        feats = feats / feats.norm(dim=-1, keepdim=True)
        cls = feats.reshape(len(CLASSNAMES), n_t, -1).mean(dim=1)
        cls = cls / cls.norm(dim=-1, keepdim=True)
        img_n = img_feat / img_feat.norm(dim=-1, keepdim=True)
        zs_logits = model.logit_scale.exp() * img_n @ cls.t()
        # P1 alone
        f1 = feats.reshape(len(CLASSNAMES), n_t, -1)[:, 0]
        zs_p1 = model.logit_scale.exp() * img_n @ f1.t()

        coop = coop_golden(model, tok)

        # another resolution (36x42 px -> 6x7 patches): bicubic position interpolation
        pixel_hr = torch.randn(1, 3, 36, 42, generator=g)
        hr = model.vision_model(pixel_values=pixel_hr, interpolate_pos_encoding=True)

    dump(
        out_dir / "golden.json",
        {
            "source": "transformers 5.24.0 CLIPModel (eager attention), torch 2.15 float32",
            "pixel_values": f32(pixel),
            "input_ids": enc["input_ids"],
            "texts": TEXTS,
            "intermediate_block": 2,
            "vision_last_hidden_state": f32(vo.last_hidden_state),
            "vision_block_output": f32(vo.hidden_states[2]),
            "vision_pooled": f32(vis_pooled),
            "image_features": f32(img_feat),
            "image_embeds": f32(out.image_embeds),
            "text_last_hidden_state": f32(to.last_hidden_state),
            "text_block_output": f32(to.hidden_states[2]),
            "text_pooled": f32(txt_pooled),
            "text_features": f32(txt_feat),
            "text_embeds": f32(out.text_embeds),
            "logit_scale": f32(model.logit_scale),
            "logits_per_image": f32(out.logits_per_image),
            "interpolated": {
                "pixel_values": f32(pixel_hr),
                "last_hidden_state": f32(hr.last_hidden_state),
                "pooled": f32(hr.pooler_output),
            },
            "zero_shot": {
                "classnames": CLASSNAMES,
                "phrases": MVC_PHRASES,
                "prompt_rule": "phrase + ' ' + classname + '.'",
                "class_embeddings": f32(cls),
                "logits": f32(zs_logits),
                "logits_p1_only": f32(zs_p1),
            },
            "coop": coop,
        },
    )


def coop_golden(model: CLIPModel, tok) -> dict:
    """KaiyangZhou/CoOp trainers/coop.py PromptLearner, on the HF tiny CLIP."""
    emb = model.text_model.embeddings.token_embedding
    n_ctx, d = 4, emb.weight.shape[1]
    g = torch.Generator().manual_seed(3)
    ctx_unified = 0.02 * torch.randn(n_ctx, d, generator=g)
    ctx_csc = 0.02 * torch.randn(len(CLASSNAMES), n_ctx, d, generator=g)

    prompt_prefix = " ".join(["X"] * n_ctx)
    prompts = [prompt_prefix + " " + name + "." for name in CLASSNAMES]
    tokenized = torch.tensor(tok(prompts, padding="max_length", max_length=77, truncation=True)["input_ids"])
    name_lens = [len(tok(name, add_special_tokens=False)["input_ids"]) for name in CLASSNAMES]
    embedding = emb(tokenized)
    prefix, suffix = embedding[:, :1], embedding[:, 1 + n_ctx :]
    eot = tokenized.argmax(dim=-1)

    # sanity: feeding the plain token embeddings through the embedding path equals the ids path
    ref = model.get_text_features(input_ids=tokenized).pooler_output
    via = text_from_embeddings(model, embedding, eot)
    assert torch.allclose(ref, via, atol=1e-6), (ref - via).abs().max()

    def assemble(ctx: torch.Tensor, position: str) -> torch.Tensor:
        k = len(CLASSNAMES)
        if ctx.dim() == 2:
            ctx = ctx.unsqueeze(0).expand(k, -1, -1)
        if position == "end":
            return torch.cat([prefix, ctx, suffix], dim=1)
        rows = []
        half = n_ctx // 2
        for i in range(k):
            nl = name_lens[i]
            p_i, c_i, s_i = prefix[i : i + 1], suffix[i : i + 1, :nl], suffix[i : i + 1, nl:]
            x_i = ctx[i : i + 1]
            if position == "middle":
                rows.append(torch.cat([p_i, x_i[:, :half], c_i, x_i[:, half:], s_i], dim=1))
            else:
                rows.append(torch.cat([p_i, c_i, x_i, s_i], dim=1))
        return torch.cat(rows, dim=0)

    keep = 12  # rows after this are the shared padding embeddings; the features below cover all 77
    cases = {}
    for csc, ctx in (("unified", ctx_unified), ("csc", ctx_csc)):
        for pos in ("end", "middle", "front"):
            p = assemble(ctx, pos)
            assert p.shape == (len(CLASSNAMES), 77, d)
            cases[f"{csc}_{pos}"] = {
                "embeddings_head": f32(p[:, :keep]),
                "text_features": f32(text_from_embeddings(model, p, eot)),
            }

    # ctx init from a phrase: token embeddings of "a photo of a" at positions 1..1+n
    init_ids = torch.tensor(tok("a photo of a", padding="max_length", max_length=77)["input_ids"])
    n_init = len(tok("a photo of a", add_special_tokens=False)["input_ids"])
    ctx_init = emb(init_ids)[1 : 1 + n_init]
    return {
        "n_ctx": n_ctx,
        "classnames": CLASSNAMES,
        "tokenized": tokenized.tolist(),
        "name_lens": name_lens,
        "eot_positions": eot.tolist(),
        "ctx_unified": f32(ctx_unified),
        "ctx_csc": f32(ctx_csc),
        "rows_kept": keep,
        "cases": cases,
        "init_phrase": "a photo of a",
        "init_ctx": f32(ctx_init),
    }


# ------------------------------------------------------------------------------------------------
# 3. Tiny random SigLIP vision tower.
# ------------------------------------------------------------------------------------------------


def siglip_golden() -> None:
    torch.manual_seed(10)
    cfg = SiglipVisionConfig(
        hidden_size=48,
        intermediate_size=80,
        num_hidden_layers=3,
        num_attention_heads=3,
        image_size=30,
        patch_size=6,
    )
    cfg._attn_implementation = "eager"
    model = SiglipVisionModel(cfg).eval()
    perturb(model, 11)
    out_dir = FIX / "siglip"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    model.save_pretrained(out_dir)
    model = SiglipVisionModel.from_pretrained(out_dir, attn_implementation="eager").eval()
    g = torch.Generator().manual_seed(12)
    pixel = torch.randn(2, 3, 30, 30, generator=g)
    pixel_hr = torch.randn(1, 3, 36, 42, generator=g)
    with torch.no_grad():
        out = model(pixel_values=pixel, output_hidden_states=True)
        hr = model(pixel_values=pixel_hr, interpolate_pos_encoding=True)

    # transformers 4.x layout: every key under `vision_model.`; 5.24 must load it to the same outputs.
    v4 = out_dir / "v4"
    v4.mkdir()
    sd = load_file(out_dir / "model.safetensors")
    save_file({f"vision_model.{k}": v for k, v in sd.items()}, v4 / "model.safetensors", metadata={"format": "pt"})
    shutil.copy(out_dir / "config.json", v4 / "config.json")
    m4 = SiglipVisionModel.from_pretrained(v4, attn_implementation="eager").eval()
    with torch.no_grad():
        assert torch.equal(m4(pixel_values=pixel).pooler_output, out.pooler_output)
    os.remove(v4 / "config.json")  # the Rust test reuses ../config.json

    dump(
        out_dir / "golden.json",
        {
            "source": "transformers 5.24.0 SiglipVisionModel (eager attention), torch 2.15 float32",
            "pixel_values": f32(pixel),
            "intermediate_block": 2,
            "last_hidden_state": f32(out.last_hidden_state),
            "block_output": f32(out.hidden_states[2]),
            "pooled": f32(out.pooler_output),
            "interpolated": {
                "pixel_values": f32(pixel_hr),
                "last_hidden_state": f32(hr.last_hidden_state),
                "pooled": f32(hr.pooler_output),
            },
        },
    )


def main() -> None:
    tok_hf, tok_bpe, vocab = build_tokenizer()
    tokenizer_golden(tok_hf, tok_bpe, vocab)
    clip_golden(tok_hf)
    siglip_golden()


if __name__ == "__main__":
    main()
