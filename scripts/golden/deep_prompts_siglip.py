"""Golden vectors for the deep-prompt methods on SigLIP: MaPLe, PromptSRC (independent V-L prompts)
and HiCroPL on the tiny random SiglipModel (calibra_models::siglip_deep_prompts,
calibra_train::coop::{maple, promptsrc, hicropl}).

Run (venv with torch 2.15, transformers 5.24.0, sentencepiece):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/deep_prompts_siglip.py

No reference implementation of deep prompts on SigLIP exists (the methods' code is CLIP-only). This
script states calibra's port in torch on transformers' `SiglipModel` (eager attention, float32, eval
mode, frozen) and keeps every rule of the CLIP scripts maple_steps.py, promptsrc_steps.py and
hicropl_steps.py (parameter init, objectives, optimisers, schedules; their `wave`, `f32`, `templates`,
`dassl_lr`, step settings and HiCroPL's `Learner` are imported from them), changing only what SigLIP's
towers force:

- text prompt: the SigLIP tokenizer's ids of "{phrase} {name}." padded to the context length 16 as
  coop_siglip_steps.py pads prompts (`padding="max_length"`: `[tokens.., </s>, <pad>..]`), embedded
  with the frozen token embedding. SigLIP has no start token, so the first-layer context `ctx` [m, dt]
  takes rows 0 .. m (CLIP's scripts use rows 1 .. 1+m, after <|startoftext|>). `ctx` starts as the
  embeddings of the first m ids of the tokenised phrase "a photo of a" (which are also the prompt's
  first m ids, so the initial prompt is the phrase prompt itself);
- deep text: x = embeds + positions; before block i (1 <= i < depth_text) rows 0 .. m are replaced by
  deep_text[i-1] (all classes); the blocks run without an attention mask (SigLIP's text tower has none);
  final LayerNorm; feature = `text_model.head` of the last position (SigLIP pools position L-1, as
  `get_text_features` does);
- deep vision: x = `vision_model.embeddings(images)` (patches + positions; SigLIP has neither a class
  token nor a pre-LayerNorm), then the shared prompts [m, dv] appended after the n patch tokens; before
  block i (1 <= i < depth_vision) rows n .. n+m are replaced by deep_vision[i-1]; after the last block
  the prompt rows are DROPPED (x[:, :n]), then post-LayerNorm and `vision_model.head`, the
  attention-pooling head, which so pools the patch tokens only (CLIP reads its class token, a row that
  exists without prompts; SigLIP's head reads every row, so the prompts act through attention inside
  the blocks only);
  with the prompt machinery removed (m = 0) both deep forwards are checked here to equal
  `get_text_features` / `get_image_features` (max |diff| <= 1e-6, written under "checks");
- logits are SigLIP's: exp(logit_scale) * l2n(image) @ l2n(text).T + logit_bias; the losses take them
  through softmax cross-entropy (and, for PromptSRC, softmax KL), as CoOp on SigLIP does;
- frozen text features (PromptSRC's textual diversity, HiCroPL's teacher): for each of the 60 templates
  of calibra_models::clip::PROMPTSRC_TEMPLATES filled with the class name, the tokenizer's ids with
  `padding="max_length", max_length=16, truncation=True` (calibra's `zero_shot_ids`: the first 15
  pieces, then </s>; 82 of the 180 template/class prompts are longer and truncated, see "checks") ->
  `get_text_features`; PromptSRC: mean of the raw features over templates, then l2n; HiCroPL: l2n each,
  mean, l2n. Frozen image features: l2n(`get_image_features`). PromptSRC's zero-shot logits:
  exp(logit_scale) * l2n(image_zs) @ fixed.T + logit_bias.

Sections (keys as in the CLIP scripts' JSON files, so the Rust tests reuse their readers per section):

- "maple": n_ctx 2, depth 2 (the fixture has 2 blocks per tower); the shared vision prompts are
  proj(ctx), the deep vision prompts deep_proj[i](deep_text[i]); parameter values as maple_steps.py
  (proj weight wave(0.1) and bias wave(0.2) at 1/sqrt(dt), deep_text[i] wave(0.02, 1+i), deep weight
  wave(0.3) / bias wave(0.4)); first forward, then 3 full-batch SGD steps with maple_steps.py's
  settings: losses and every parameter's final value;
- "promptsrc": n_ctx_text 2, n_ctx_vision 3, depth_text 2, depth_vision 2, promptsrc_steps.py's init
  (deep_text wave(0.02, 1+i), vision_ctx wave(0.02, 2), deep_vision wave(0.02, 3+i)), objective
  weights, SGD and Gaussian prompt aggregation (gpa_mean 2, gpa_std 1);
- "hicropl": n_ctx 2, depth 2, cross_layer 1, heads 4, lambda 12, hicropl_steps.py's `Learner` (its
  init list by parameter name) and Adam settings; fusion, distillation and the `.data` mapping as
  there, SigLIP's logit bias added to the logits. depth 2 admits only cross layer 1, so there is no
  second-cross-layer case.

Images: wave((6, 3, 30, 30), 1, 0.5); labels arange(6) % 3 over coop_siglip_steps.py's class names.

Writes crates/calibra-train/tests/golden/deep_prompts_siglip.json. Deterministic (no random numbers,
one thread); re-running rewrites an identical file.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoTokenizer, SiglipModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hicropl_steps  # noqa: E402
import maple_steps  # noqa: E402
import promptsrc_steps  # noqa: E402
from coop_siglip_steps import CLASSNAMES, FIX, text_from_embeddings  # noqa: E402
from hicropl_steps import Learner, l2n  # noqa: E402
from maple_steps import f32, wave  # noqa: E402
from promptsrc_steps import templates  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "calibra-train" / "tests" / "golden" / "deep_prompts_siglip.json"

torch.set_num_threads(1)

PHRASE = "a photo of a"
N_IMAGES = 6
IMAGE_SIZE = 30

MAPLE_N_CTX = 2
MAPLE_DEPTH = 2

SRC_N_CTX_TEXT = 2
SRC_N_CTX_VISION = 3
SRC_DEPTH_TEXT = 2
SRC_DEPTH_VISION = 2

HC_N_CTX = 2
HC_DEPTH = 2
HC_CROSS_LAYER = 1
HC_HEADS = 4
HC_LAMBD = 12.0


class Port:
    """The frozen SigLIP fixture, its tokenizer and calibra's deep-prompt forwards on it."""

    def __init__(self) -> None:
        model = SiglipModel.from_pretrained(FIX, attn_implementation="eager", dtype=torch.float32).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        self.model = model
        self.tok = AutoTokenizer.from_pretrained(FIX)
        self.length = self.tok.model_max_length
        self.tm, self.vm = model.text_model, model.vision_model
        self.emb = self.tm.embeddings.token_embedding
        self.dt = self.emb.weight.shape[1]
        self.dv = self.vm.config.hidden_size
        self.scale = model.logit_scale.exp()
        self.bias = model.logit_bias
        self.k = len(CLASSNAMES)

    def padded(self, texts: list[str]) -> torch.Tensor:
        """calibra's `zero_shot_ids` (and the class prompts, which all fit): pad/truncate to 16."""
        enc = self.tok(texts, padding="max_length", max_length=self.length, truncation=True)
        return torch.tensor(enc["input_ids"])

    def phrase_ctx(self, m: int) -> torch.Tensor:
        phrase_ids = self.tok(PHRASE, add_special_tokens=False)["input_ids"]
        assert len(phrase_ids) >= m, f"{PHRASE!r} has {len(phrase_ids)} tokens, fewer than n_ctx {m}"
        with torch.no_grad():
            return self.emb(torch.tensor(phrase_ids[:m])).clone()

    def prompt_ids(self) -> torch.Tensor:
        texts = [f"{PHRASE} {name}." for name in CLASSNAMES]
        for t in texts:
            n = len(self.tok(t)["input_ids"])
            assert n <= self.length, f"class prompt {t!r} needs {n} > {self.length} tokens"
        return self.padded(texts)

    def text(self, embeds: torch.Tensor, ctx: torch.Tensor, deep: list[torch.Tensor]) -> torch.Tensor:
        """Text features [k, p] of prompt embeddings [k, L, dt] (no positions): rows 0 .. m are `ctx`,
        replaced by deep[i-1] before block i (1 <= i <= len(deep))."""
        k, m = embeds.shape[0], ctx.shape[0]
        x = torch.cat([ctx.unsqueeze(0).expand(k, -1, -1), embeds[:, m:]], dim=1)
        n = x.shape[1]
        x = x + self.tm.embeddings.position_embedding.weight[:n][None]
        for i, layer in enumerate(self.tm.encoder.layers):
            if 1 <= i <= len(deep):
                x = torch.cat([deep[i - 1].unsqueeze(0).expand(k, -1, -1), x[:, m:]], dim=1)
            x = layer(x, None)
        x = self.tm.final_layer_norm(x)
        return self.tm.head(x[:, -1])

    def image(self, images: torch.Tensor, shared: torch.Tensor, deep: list[torch.Tensor]) -> torch.Tensor:
        """Image features [b, p]: `shared` [m, dv] appended after the n patch tokens, rows n .. n+m
        replaced by deep[i-1] before block i; the prompt rows dropped before post-LN and the head."""
        x = self.vm.embeddings(images)
        b, n = x.shape[0], x.shape[1]
        x = torch.cat([x, shared.unsqueeze(0).expand(b, -1, -1)], dim=1)
        for i, layer in enumerate(self.vm.encoder.layers):
            if 1 <= i <= len(deep):
                x = torch.cat([x[:, :n], deep[i - 1].unsqueeze(0).expand(b, -1, -1)], dim=1)
            x = layer(x, None)
        x = self.vm.post_layernorm(x[:, :n])
        return self.vm.head(x)

    def logits(self, img: torch.Tensor, txt: torch.Tensor) -> torch.Tensor:
        return self.scale * l2n(img) @ l2n(txt).t() + self.bias

    def frozen_text(self, temps: list[str]) -> torch.Tensor:
        """[k, T, p]: the frozen text features of every class in every template."""
        with torch.no_grad():
            return torch.stack(
                [self.model.get_text_features(input_ids=self.padded([t.replace("{}", c) for c in CLASSNAMES])).pooler_output for t in temps],
                dim=1,
            )


def checks(port: Port, images: torch.Tensor, prompt_ids: torch.Tensor, temps: list[str]) -> dict:
    """The re-expressed towers with no prompts equal transformers' own; the truncation count."""
    tok = port.tok
    empty_t, empty_v = torch.zeros(0, port.dt), torch.zeros(0, port.dv)
    with torch.no_grad():
        text_diff = 0.0
        for ids in [prompt_ids] + [port.padded([t.replace("{}", c) for c in CLASSNAMES]) for t in temps]:
            want = port.model.get_text_features(input_ids=ids).pooler_output
            got = port.text(port.emb(ids), empty_t, [])
            again = text_from_embeddings(port.model, port.emb(ids))
            text_diff = max(text_diff, (got - want).abs().max().item(), (again - want).abs().max().item())
        want = port.model.get_image_features(pixel_values=images).pooler_output
        got = port.image(images, empty_v, [])
        image_diff = (got - want).abs().max().item()
    assert text_diff <= 1e-6, text_diff
    assert image_diff <= 1e-6, image_diff

    # truncation=True keeps the first L-1 pieces and then </s> (what calibra's encode_padded does)
    truncated, templates_truncated = 0, set()
    for t in temps:
        for c in CLASSNAMES:
            text = t.replace("{}", c)
            content = tok(text, add_special_tokens=False)["input_ids"]
            row = port.padded([text])[0].tolist()
            want = content[: port.length - 1] + [tok.eos_token_id]
            want += [tok.pad_token_id] * (port.length - len(want))
            assert row == want, (text, row, want)
            if len(content) + 1 > port.length:
                truncated += 1
                templates_truncated.add(t)
    return {
        "text_no_prompt_max_diff": text_diff,
        "image_no_prompt_max_diff": image_diff,
        "template_prompts": len(temps) * len(CLASSNAMES),
        "template_prompts_truncated": truncated,
        "templates_truncated_for_some_class": len(templates_truncated),
    }


def maple(port: Port, images: torch.Tensor, labels: torch.Tensor, prompt_embeds: torch.Tensor) -> dict:
    """maple_steps.py on SigLIP."""
    m, depth, dt, dv = MAPLE_N_CTX, MAPLE_DEPTH, port.dt, port.dv
    ms = maple_steps
    ctx0 = port.phrase_ctx(m)
    bound = 1.0 / math.sqrt(dt)
    proj_w0, proj_b0 = wave((dv, dt), bound, 0.1), wave((dv,), bound, 0.2)
    deep_text0 = [wave((m, dt), 0.02, 1.0 + i) for i in range(depth - 1)]
    deep_w0 = [wave((dv, dt), bound, 0.3) for _ in range(depth - 1)]
    deep_b0 = [wave((dv,), bound, 0.4) for _ in range(depth - 1)]

    ctx = nn.Parameter(ctx0.clone())
    proj_w, proj_b = nn.Parameter(proj_w0.clone()), nn.Parameter(proj_b0.clone())
    deep_text = [nn.Parameter(t.clone()) for t in deep_text0]
    deep_w = [nn.Parameter(t.clone()) for t in deep_w0]
    deep_b = [nn.Parameter(t.clone()) for t in deep_b0]
    params = [ctx, proj_w, proj_b, *deep_text, *deep_w, *deep_b]

    def text_features():
        return port.text(prompt_embeds, ctx, deep_text)

    def image_features():
        shared = F.linear(ctx, proj_w, proj_b)
        deep = [F.linear(t, w, b) for t, w, b in zip(deep_text, deep_w, deep_b)]
        return port.image(images, shared, deep)

    with torch.no_grad():
        text0, image0 = text_features(), image_features()
        logits0 = port.logits(image0, text0)

    opt = torch.optim.SGD(params, lr=ms.LR, momentum=ms.MOMENTUM, weight_decay=ms.WEIGHT_DECAY, dampening=0.0)
    losses = []
    for step in range(ms.STEPS):
        for group in opt.param_groups:
            group["lr"] = ms.dassl_lr(step)
        loss = F.cross_entropy(port.logits(image_features(), text_features()), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))

    return {
        "classnames": CLASSNAMES,
        "n_ctx": m,
        "depth": depth,
        "ctx_init": PHRASE,
        "init": "wave(): proj (0.1, 0.2), deep_text (1+i), deep weight/bias (0.3, 0.4), images (0.5)",
        "ctx_init_values": f32(ctx0),
        "image_shape": list(images.shape),
        "labels": labels.tolist(),
        "text_features": f32(text0),
        "image_features": f32(image0),
        "logits": f32(logits0),
        "steps": ms.STEPS,
        "lr": ms.LR,
        "momentum": ms.MOMENTUM,
        "weight_decay": ms.WEIGHT_DECAY,
        "warmup_epochs": ms.WARMUP_EPOCHS,
        "warmup_lr": ms.WARMUP_LR,
        "losses": losses,
        "final": {
            "ctx": f32(ctx),
            "proj_weight": f32(proj_w),
            "proj_bias": f32(proj_b),
            "deep_text": [f32(t) for t in deep_text],
            "deep_weight": [f32(t) for t in deep_w],
            "deep_bias": [f32(t) for t in deep_b],
        },
    }


def promptsrc(
    port: Port, images: torch.Tensor, labels: torch.Tensor, prompt_embeds: torch.Tensor, frozen: torch.Tensor
) -> dict:
    """promptsrc_steps.py on SigLIP."""
    ps = promptsrc_steps
    mt, mv, jt, jv, dt, dv = SRC_N_CTX_TEXT, SRC_N_CTX_VISION, SRC_DEPTH_TEXT, SRC_DEPTH_VISION, port.dt, port.dv
    ctx0 = port.phrase_ctx(mt)
    deep_text0 = [wave((mt, dt), 0.02, 1.0 + i) for i in range(jt - 1)]
    vision_ctx0 = wave((mv, dv), 0.02, 2.0)
    deep_vision0 = [wave((mv, dv), 0.02, 3.0 + i) for i in range(jv - 1)]

    with torch.no_grad():
        fixed = l2n(frozen.mean(dim=1))  # textual diversity: mean of the raw features, then l2n
        zs_image = l2n(port.model.get_image_features(pixel_values=images).pooler_output)
    zs_logits = port.scale * zs_image @ fixed.t() + port.bias

    ctx = nn.Parameter(ctx0.clone())
    deep_text = [nn.Parameter(t.clone()) for t in deep_text0]
    vision_ctx = nn.Parameter(vision_ctx0.clone())
    deep_vision = [nn.Parameter(t.clone()) for t in deep_vision0]
    params = [ctx, *deep_text, vision_ctx, *deep_vision]

    def terms():
        img = l2n(port.image(images, vision_ctx, deep_vision))
        txt = l2n(port.text(prompt_embeds, ctx, deep_text))
        logits = port.scale * img @ txt.t() + port.bias
        ce = F.cross_entropy(logits, labels)
        l_text = F.l1_loss(txt, fixed, reduction="mean") * ps.TEXT_WEIGHT
        l_image = F.l1_loss(img, zs_image, reduction="mean") * ps.IMAGE_WEIGHT
        l_kl = (
            F.kl_div(F.log_softmax(logits, dim=1), F.log_softmax(zs_logits, dim=1), reduction="sum", log_target=True)
            / logits.numel()
        )
        return logits, ce, l_text, l_image, l_kl

    with torch.no_grad():
        logits0, ce0, text0, image0, kl0 = terms()

    gauss = [
        math.exp(-0.5 * ((a - ps.GPA_MEAN) / ps.GPA_STD) ** 2) / (ps.GPA_STD * math.sqrt(2 * math.pi))
        for a in range(1, ps.EPOCHS + 1)
    ]
    gauss = [g / sum(gauss) for g in gauss]
    opt = torch.optim.SGD(params, lr=ps.LR, momentum=ps.MOMENTUM, weight_decay=ps.WEIGHT_DECAY, dampening=0.0)
    losses, gpa = [], None
    for epoch in range(ps.EPOCHS):
        for group in opt.param_groups:
            group["lr"] = ps.dassl_lr(epoch)
        _, ce, l_text, l_image, l_kl = terms()
        loss = ce + (l_kl + l_text + l_image)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        weighted = [p.detach().clone() * gauss[epoch] for p in params]
        gpa = weighted if gpa is None else [a + b for a, b in zip(weighted, gpa)]
    last = [p.detach().clone() for p in params]

    def named(values):
        return {
            "ctx": f32(values[0]),
            "deep_text": [f32(v) for v in values[1:jt]],
            "vision_ctx": f32(values[jt]),
            "deep_vision": [f32(v) for v in values[jt + 1 :]],
        }

    return {
        "classnames": CLASSNAMES,
        "n_ctx_text": mt,
        "n_ctx_vision": mv,
        "depth_text": jt,
        "depth_vision": jv,
        "ctx_init": PHRASE,
        "init": "wave(): deep_text (1+i, 0.02), vision_ctx (2, 0.02), deep_vision (3+i, 0.02), images (0.5, 1)",
        "ctx_init_values": f32(ctx0),
        "image_shape": list(images.shape),
        "labels": labels.tolist(),
        "fixed_text_features": f32(fixed),
        "zero_shot_logits": f32(zs_logits),
        "logits": f32(logits0),
        "terms": {"ce": f32(ce0), "text": f32(text0), "image": f32(image0), "kl": f32(kl0)},
        "epochs": ps.EPOCHS,
        "lr": ps.LR,
        "momentum": ps.MOMENTUM,
        "weight_decay": ps.WEIGHT_DECAY,
        "warmup_epochs": ps.WARMUP_EPOCHS,
        "warmup_lr": ps.WARMUP_LR,
        "text_weight": ps.TEXT_WEIGHT,
        "image_weight": ps.IMAGE_WEIGHT,
        "gpa_mean": ps.GPA_MEAN,
        "gpa_std": ps.GPA_STD,
        "gpa_weights": gauss,
        "losses": losses,
        "last": named(last),
        "final": named(gpa),
    }


def hicropl(
    port: Port, images: torch.Tensor, labels: torch.Tensor, prompt_embeds: torch.Tensor, frozen: torch.Tensor
) -> dict:
    """hicropl_steps.py on SigLIP."""
    hs = hicropl_steps
    # hicropl_steps.Learner builds its attention modules with the module's HEADS (8 for the CLIP case)
    hs.HEADS = HC_HEADS
    m, depth = HC_N_CTX, HC_DEPTH
    ctx0 = port.phrase_ctx(m)
    with torch.no_grad():
        teacher = l2n(l2n(frozen).mean(dim=1))  # l2n each template's feature, mean, l2n
        image_fixed = l2n(port.model.get_image_features(pixel_values=images).pooler_output)

    learner = Learner(ctx0, port.dv, depth, HC_CROSS_LAYER)
    text_p, vis_p = learner.cross_prompts_text, learner.cross_prompts_visual
    cos = nn.CosineSimilarity(dim=1, eps=1e-7)

    def forward(snapshot: dict | None = None):
        learner.map()
        if snapshot is not None:
            snapshot.update(learner.prompts())
        txt = port.text(prompt_embeds, text_p[0], [text_p[i] for i in range(1, depth)])
        img = port.image(images, vis_p[0], [vis_p[i] for i in range(1, depth)])
        img = l2n(l2n(img) + image_fixed)
        txt = l2n(l2n(txt) + teacher)
        logits = port.scale * img @ txt.t() + port.bias
        ce = F.cross_entropy(logits, labels)
        d_text = 1.0 - cos(txt, teacher).mean()
        d_image = 1.0 - cos(img, image_fixed).mean()
        return img, txt, logits, ce, d_text, d_image

    names = [n for n, _ in learner.named_parameters()]
    prompt_names = learner.prompt_names()
    opt = torch.optim.Adam(
        list(learner.parameters()), lr=hs.LR, betas=(0.9, 0.999), eps=hs.ADAM_EPS, weight_decay=hs.WEIGHT_DECAY
    )
    losses, mapped, first = [], {}, None
    for epoch in range(hs.EPOCHS):
        for group in opt.param_groups:
            group["lr"] = hs.dassl_lr(epoch)
        img, txt, logits, ce, d_text, d_image = forward(mapped if epoch == 0 else None)
        loss = ce + HC_LAMBD * (d_text + d_image)
        opt.zero_grad()
        loss.backward()
        if epoch == 0:
            first = (img, txt, logits, ce, d_text, d_image)
            for n, p in learner.named_parameters():
                if n.startswith("cross_prompts_"):
                    assert p.grad is not None, n
                else:
                    assert p.grad is None, n
        opt.step()
        losses.append(float(loss.item()))
    final = learner.prompts()
    with torch.no_grad():
        inference_logits = forward()[2]
    assert list(mapped) == prompt_names and list(final) == prompt_names

    img0, txt0, logits0, ce0, d_text0, d_image0 = first
    return {
        "n_ctx": m,
        "ctx_init": PHRASE,
        "depth": depth,
        "cross_layer": HC_CROSS_LAYER,
        "heads": HC_HEADS,
        "epochs": hs.EPOCHS,
        "lr": hs.LR,
        "adam_eps": hs.ADAM_EPS,
        "weight_decay": hs.WEIGHT_DECAY,
        "warmup_epochs": hs.WARMUP_EPOCHS,
        "warmup_lr": hs.WARMUP_LR,
        "lambda": HC_LAMBD,
        "classnames": CLASSNAMES,
        "image_shape": list(images.shape),
        "labels": labels.tolist(),
        "parameter_names": names,
        "init": learner.init,
        "ctx_init_values": f32(ctx0),
        "teacher_text": f32(teacher),
        "mapped": mapped,
        "text_features": f32(txt0),
        "image_features": f32(img0),
        "logits": f32(logits0),
        "terms": {"ce": f32(ce0), "distill_text": f32(d_text0), "distill_image": f32(d_image0)},
        "mapper_grads": "none",
        "losses": losses,
        "final": final,
        "inference_logits": f32(inference_logits),
    }


def main() -> None:
    port = Port()
    temps = templates()
    assert len(temps) == 60, len(temps)
    images = wave((N_IMAGES, 3, IMAGE_SIZE, IMAGE_SIZE), 1.0, 0.5)
    labels = torch.arange(N_IMAGES) % port.k

    prompt_ids = port.prompt_ids()
    phrase_ids = port.tok(PHRASE, add_special_tokens=False)["input_ids"]
    m_max = max(MAPLE_N_CTX, SRC_N_CTX_TEXT, HC_N_CTX)
    assert all(row[:m_max] == phrase_ids[:m_max] for row in prompt_ids.tolist()), "prompt does not start with the phrase"
    with torch.no_grad():
        prompt_embeds = port.emb(prompt_ids)
    check = checks(port, images, prompt_ids, temps)
    frozen = port.frozen_text(temps)

    result = {
        "source": "torch 2.15 float32, transformers 5.24.0 SiglipModel; scripts/golden/deep_prompts_siglip.py",
        "classnames": CLASSNAMES,
        "phrase": PHRASE,
        "phrase_ids": phrase_ids,
        "context_length": port.length,
        "prompt_ids": prompt_ids.tolist(),
        "slots_start": 0,
        "image_shape": [N_IMAGES, 3, IMAGE_SIZE, IMAGE_SIZE],
        "labels": labels.tolist(),
        "logit_scale_exp": f32(port.scale[0]),
        "logit_bias": f32(port.bias[0]),
        "n_templates": len(temps),
        "checks": check,
        "maple": maple(port, images, labels, prompt_embeds),
        "promptsrc": promptsrc(port, images, labels, prompt_embeds, frozen),
        "hicropl": hicropl(port, images, labels, prompt_embeds, frozen),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, separators=(",", ":")) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes)")
    print("checks", check)
    for name in ("maple", "promptsrc", "hicropl"):
        print(name, "losses", result[name]["losses"])


if __name__ == "__main__":
    main()
