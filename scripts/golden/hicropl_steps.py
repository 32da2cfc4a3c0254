"""Golden vectors for HiCroPL (hierarchical cross-modal prompt learning) on the tiny CLIP
(calibra_train::coop::hicropl).

Run (venv with torch 2.15, transformers 5.24.0):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/hicropl_steps.py

Reference: Zheng et al., zzeoZheng/HiCroPL trainers/hicropl.py (CrossModalPromptLearner,
AttentionPooling, CrossPromptAttention, CustomCLIP.forward) and clip/model.py
(ResidualAttentionBlock_HiCroPL, VisionTransformer_HiCroPL), re-expressed on transformers' CLIPModel
modules (the tiny fixture is an HF checkpoint):

- prompts: `cross_prompts_text[l]` and `cross_prompts_visual[l]` ([n_ctx, width]) for layers
  l < depth; `cross_prompts_text[0]` is the first-layer text context, initialised from the embeddings
  of tokens 1 .. 1+n_ctx of "a photo of a" (the text prompt stays "a photo of a {class}.", its rows
  1 .. 1+n_ctx replaced);
- mapping, run at the start of every forward (train and eval), written into the prompts with
  `.data.copy_` as the reference does:
  T->I: for l < cross_layer, a learned proxy token pools cross_prompts_text[l] (AttentionPooling:
  ln_2(q + MHA(ln_1 q, ln_1 k, ln_1 v))); the stacked visual prompts of those layers attend to the
  proxies (CrossPromptAttention: linear q/k/v, pre-LN MHA residual, QuickGELU FFN residual) and
  replace cross_prompts_visual[0 .. cross_layer];
  I->T: for cross_layer <= l < depth, the same with the roles swapped, replacing
  cross_prompts_text[cross_layer .. depth];
  because the mapped values reach the loss only through `.data`, the mappers, poolings and proxy
  tokens never receive a gradient: only the prompts train (asserted below);
- towers (IVLP): text rows 1 .. 1+n_ctx replaced by cross_prompts_text[i] before block i
  (1 <= i < depth); vision: cross_prompts_visual[0] appended after the patch embeddings (before
  pre-LayerNorm), the last n_ctx rows replaced by cross_prompts_visual[i] before block i;
- fusion and loss (CustomCLIP.forward): image = l2n(l2n(image) + l2n(frozen image)), text =
  l2n(l2n(text) + teacher), logits = exp(logit_scale) * image @ text.T,
  loss = CE + lambda * ((1 - mean cos(text, teacher)) + (1 - mean cos(image, frozen image)));
  the reference's teacher averages the frozen text features over GPT-3 class descriptions; here (as
  in calibra by default) over the 60 templates of calibra_models::clip::PROMPTSRC_TEMPLATES (each
  feature normalised, averaged, normalised again); the reference's own teacher from descriptions
  (`gpt_clip_classifier` on a class -> sentences JSON) is written too, from DESCRIPTIONS, as
  `teacher_from_descriptions`;
- torch.optim.Adam (weight decay added to the gradient) on every learner parameter, Dassl's
  constant-warmup cosine per epoch, one full-batch step per epoch.

Float32 throughout (the reference's default PREC is fp16, and it adds the teacher in fp16 to the
text features). The reference draws its initial values at random (and gives all cross_prompts_visual,
all proxy tokens and all poolings the same start); here every learner parameter but
cross_prompts_text.0 starts at `offset + wave(shape, amplitude, phase)` (maple_steps.py's `wave`,
computed in float64 and cast to float32, the offset then added in float32), with the per-parameter
amplitude, phase and offset listed under "init" by parameter name, so the Rust test rebuilds them.

Writes crates/calibra-train/tests/golden/hicropl_steps.json. Deterministic (no random numbers, one
thread); re-running rewrites an identical file.
"""

from __future__ import annotations

import json
import math
import sys
from collections import OrderedDict
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import CLIPModel, CLIPTokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoders_clip import CLASSNAMES, causal_mask  # noqa: E402
from maple_steps import f32, wave  # noqa: E402
from promptsrc_steps import templates  # noqa: E402

FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures"
OUT = ROOT / "crates" / "calibra-train" / "tests" / "golden" / "hicropl_steps.json"

torch.set_num_threads(1)

N_CTX = 2
CTX_INIT = "a photo of a"
DEPTH = 3  # the tiny CLIP has 3 blocks per tower
CROSS_LAYER = 2
HEADS = 8
N_IMAGES = 6
EPOCHS = 3
# Larger than the reference's 0.0025 so that the prompts visibly move within 3 steps.
LR = 0.05
ADAM_EPS = 1e-3
WEIGHT_DECAY = 5e-4
WARMUP_EPOCHS = 1
WARMUP_LR = 0.01
LAMBD = 12.0


# Class descriptions in the format of the reference's `gpt_file/<dataset>_prompt.json` (class name ->
# sentences), written for this test (the reference's are GPT-3's), for its teacher from descriptions.
DESCRIPTIONS = {
    "melanocytic nevus": ["a mole with a regular brown network.", "a benign skin lesion of uniform colour."],
    "melanoma": ["an irregular dark lesion with several colours.", "a melanoma with blurred borders.", "skin cancer."],
    "basal cell carcinoma": ["a pearly lesion with fine vessels on its surface."],
}


def dassl_lr(epoch: int) -> float:
    if epoch < WARMUP_EPOCHS:
        return WARMUP_LR
    return LR * 0.5 * (1 + math.cos(math.pi * (epoch - WARMUP_EPOCHS) / EPOCHS))


class QuickGELU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(1.702 * x)


class AttentionPooling(nn.Module):
    """A proxy token (query) attends to one layer's prompts: ln_2(q + MHA(ln_1 q, ln_1 k, ln_1 v))."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads)
        self.ln_1 = nn.LayerNorm(width)
        self.ln_2 = nn.LayerNorm(width)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        pooled = self.attn(self.ln_1(q), self.ln_1(k), self.ln_1(v), need_weights=False)[0]
        return self.ln_2(q + pooled)


class CrossPromptAttention(nn.Module):
    """Prompts of one modality (width `width`) attend to proxies of the other (width `source`)."""

    def __init__(self, width: int, source: int, heads: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads)
        self.linear_q = nn.Linear(width, width)
        self.linear_k = nn.Linear(source, width)
        self.linear_v = nn.Linear(source, width)
        self.ln_1 = nn.LayerNorm(width)
        self.ffn = nn.Sequential(
            OrderedDict([("c_fc", nn.Linear(width, 4 * width)), ("gelu", QuickGELU()), ("c_proj", nn.Linear(4 * width, width))])
        )
        self.ln_2 = nn.LayerNorm(width)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        h = self.linear_q(q)
        kh, vh = self.linear_k(k), self.linear_v(v)
        h = h + self.attn(self.ln_1(h), self.ln_1(kh), self.ln_1(vh), need_weights=False)[0]
        return h + self.ffn(self.ln_2(h))


class Learner(nn.Module):
    """CrossModalPromptLearner's parameters (same names, same registration order) and mapping."""

    def __init__(self, ctx0: torch.Tensor, dv: int, depth: int, cross_layer: int) -> None:
        super().__init__()
        m, dt = ctx0.shape
        self.m, self.depth, self.cross_layer = m, depth, cross_layer
        self.cross_prompts_text = nn.ParameterList([nn.Parameter(torch.zeros(m, dt)) for _ in range(depth)])
        self.cross_prompts_visual = nn.ParameterList([nn.Parameter(torch.zeros(m, dv)) for _ in range(depth)])
        self.text2visual_net = CrossPromptAttention(dv, dt, HEADS)
        self.visual2text_net = CrossPromptAttention(dt, dv, HEADS)
        self.attn_pooling_text_nets = nn.ModuleList([AttentionPooling(dt, HEADS) for _ in range(cross_layer)])
        self.attn_pooling_visual_nets = nn.ModuleList([AttentionPooling(dv, HEADS) for _ in range(depth - cross_layer)])
        self.text_proxy_token = nn.ParameterList([nn.Parameter(torch.zeros(1, dt)) for _ in range(cross_layer)])
        self.visual_proxy_token = nn.ParameterList([nn.Parameter(torch.zeros(1, dv)) for _ in range(depth - cross_layer)])
        self.init = self._fill(ctx0)

    def _fill(self, ctx0: torch.Tensor) -> list[dict]:
        """ctx0 into cross_prompts_text.0; every other parameter from `wave`, by name order."""
        entries = []
        with torch.no_grad():
            i = 0
            for name, p in self.named_parameters():
                if name == "cross_prompts_text.0":
                    p.copy_(ctx0)
                    continue
                shape = list(p.shape)
                offset = 0.0
                if name.startswith("cross_prompts_"):
                    amplitude = 0.02
                elif "_proxy_token." in name:
                    amplitude = 1.0
                elif name.endswith(("ln_1.weight", "ln_2.weight")):
                    amplitude, offset = 0.1, 1.0
                elif p.dim() == 1:
                    amplitude = 0.1
                else:
                    assert p.dim() == 2, name
                    amplitude = 1.0 / math.sqrt(shape[1])
                phase = 10.0 + 0.37 * i
                p.copy_(wave(tuple(shape), amplitude, phase) + offset)
                entries.append({"name": name, "shape": shape, "amplitude": amplitude, "phase": phase, "offset": offset})
                i += 1
        return entries

    def prompt_names(self) -> list[str]:
        return [n for n, _ in self.named_parameters() if n.startswith("cross_prompts_")]

    def prompts(self) -> dict:
        return {n: f32(p) for n, p in self.named_parameters() if n.startswith("cross_prompts_")}

    def map(self) -> None:
        """CrossModalPromptLearner.forward's T->I then I->T mapping, written through `.data`."""
        m, depth, cl = self.m, self.depth, self.cross_layer
        text, visual = self.cross_prompts_text, self.cross_prompts_visual
        # T->I: pooled text proxies of layers < cross_layer update the visual prompts of those layers
        proxies = torch.cat(
            [self.attn_pooling_text_nets[i](self.text_proxy_token[i], text[i], text[i]) for i in range(cl)], dim=0
        )
        stacked = torch.cat([visual[i] for i in range(cl)], dim=0)
        updated = self.text2visual_net(stacked, proxies, proxies)
        for i in range(cl):
            visual[i].data.copy_(updated[i * m : (i + 1) * m])
        # I->T: pooled visual proxies of layers >= cross_layer update the text prompts of those layers
        proxies = torch.cat(
            [
                self.attn_pooling_visual_nets[i - cl](self.visual_proxy_token[i - cl], visual[i], visual[i])
                for i in range(cl, depth)
            ],
            dim=0,
        )
        stacked = torch.cat([text[i] for i in range(cl, depth)], dim=0)
        updated = self.visual2text_net(stacked, proxies, proxies)
        for i in range(cl, depth):
            text[i].data.copy_(updated[(i - cl) * m : (i - cl + 1) * m])


def l2n(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def main() -> None:
    model = CLIPModel.from_pretrained(FIX / "clip", attn_implementation="eager").eval()
    for p in model.parameters():
        p.requires_grad_(False)
    tok = CLIPTokenizer.from_pretrained(FIX / "tokenizer" / "hf")
    tm, vm = model.text_model, model.vision_model
    emb = tm.embeddings.token_embedding
    dt, dv = emb.weight.shape[1], vm.config.hidden_size
    k = len(CLASSNAMES)
    temps = templates()
    assert len(temps) == 60, len(temps)

    def ids(texts: list[str]) -> torch.Tensor:
        return torch.tensor(tok(texts, padding="max_length", max_length=77, truncation=True)["input_ids"])

    with torch.no_grad():
        ctx0 = emb(ids([CTX_INIT]))[0, 1 : 1 + N_CTX].clone()
    images = wave((N_IMAGES, 3, 30, 30), 1.0, 0.5)
    labels = torch.arange(N_IMAGES) % k

    # the reference's prompt text is the full ctx_init phrase + class; its rows 1 .. 1+n_ctx are the ctx
    tokenized = ids([CTX_INIT + " " + name + "." for name in CLASSNAMES])
    with torch.no_grad():
        embedding = emb(tokenized)
        # teacher: per class, the normalised frozen text features averaged over templates, normalised
        teacher = torch.stack(
            [l2n(model.get_text_features(input_ids=ids([t.replace("{}", c) for c in CLASSNAMES])).pooler_output) for t in temps],
            dim=1,
        )
        teacher = l2n(teacher.mean(dim=1))
        # the reference's own teacher (`gpt_clip_classifier`): per class, its description sentences'
        # normalised frozen features averaged and normalised (class names looked up with "_" -> " ")
        described = l2n(
            torch.stack(
                [l2n(model.get_text_features(input_ids=ids(DESCRIPTIONS[c])).pooler_output).mean(dim=0) for c in CLASSNAMES]
            )
        )
        image_fixed = l2n(model.get_image_features(pixel_values=images).pooler_output)
    prefix, suffix = embedding[:, :1], embedding[:, 1 + N_CTX :]
    eot = (tokenized == tok.eos_token_id).int().argmax(dim=-1)
    scale = model.logit_scale.exp()

    learner = Learner(ctx0, dv, DEPTH, CROSS_LAYER)
    text_p, vis_p = learner.cross_prompts_text, learner.cross_prompts_visual

    def text_features() -> torch.Tensor:
        x = torch.cat([prefix, text_p[0].unsqueeze(0).expand(k, -1, -1), suffix], dim=1)
        n = x.shape[1]
        x = x + tm.embeddings.position_embedding.weight[:n][None]
        mask = causal_mask(n)
        for i, layer in enumerate(tm.encoder.layers):
            if 1 <= i < DEPTH:
                x = torch.cat([x[:, :1], text_p[i].unsqueeze(0).expand(k, -1, -1), x[:, 1 + N_CTX :]], dim=1)
            x = layer(x, mask)
        x = tm.final_layer_norm(x)
        return model.text_projection(x[torch.arange(k), eot])

    def image_features() -> torch.Tensor:
        b = images.shape[0]
        x = vm.embeddings(images)
        x = torch.cat([x, vis_p[0].unsqueeze(0).expand(b, -1, -1)], dim=1)
        x = vm.pre_layrnorm(x)
        for i, layer in enumerate(vm.encoder.layers):
            if 1 <= i < DEPTH:
                keep = x.shape[1] - N_CTX
                x = torch.cat([x[:, :keep], vis_p[i].unsqueeze(0).expand(b, -1, -1)], dim=1)
            x = layer(x, None)
        return model.visual_projection(vm.post_layernorm(x[:, 0]))

    cos = nn.CosineSimilarity(dim=1, eps=1e-7)

    def forward(snapshot: dict | None = None):
        """CustomCLIP.forward: map, prompted towers, fusion with the frozen features, loss terms."""
        learner.map()
        if snapshot is not None:
            snapshot.update(learner.prompts())
        img = l2n(l2n(image_features()) + image_fixed)
        txt = l2n(l2n(text_features()) + teacher)
        logits = scale * img @ txt.t()
        ce = F.cross_entropy(logits, labels)
        d_text = 1.0 - cos(txt, teacher).mean()
        d_image = 1.0 - cos(img, image_fixed).mean()
        return img, txt, logits, ce, d_text, d_image

    names = [n for n, _ in learner.named_parameters()]
    prompt_names = learner.prompt_names()
    opt = torch.optim.Adam(
        list(learner.parameters()), lr=LR, betas=(0.9, 0.999), eps=ADAM_EPS, weight_decay=WEIGHT_DECAY
    )
    losses, mapped, first = [], {}, None
    for epoch in range(EPOCHS):
        for group in opt.param_groups:
            group["lr"] = dassl_lr(epoch)
        img, txt, logits, ce, d_text, d_image = forward(mapped if epoch == 0 else None)
        loss = ce + LAMBD * (d_text + d_image)
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

    cross1 = Learner(ctx0, dv, DEPTH, 1)
    cross1_mapped: dict = {}
    with torch.no_grad():
        cross1.map()
        cross1_mapped.update(cross1.prompts())

    img0, txt0, logits0, ce0, d_text0, d_image0 = first
    result = {
        "source": "torch 2.15 float32, transformers 5.24.0 CLIPModel; scripts/golden/hicropl_steps.py",
        "n_ctx": N_CTX,
        "ctx_init": CTX_INIT,
        "depth": DEPTH,
        "cross_layer": CROSS_LAYER,
        "heads": HEADS,
        "epochs": EPOCHS,
        "lr": LR,
        "adam_eps": ADAM_EPS,
        "weight_decay": WEIGHT_DECAY,
        "warmup_epochs": WARMUP_EPOCHS,
        "warmup_lr": WARMUP_LR,
        "lambda": LAMBD,
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
        "descriptions": DESCRIPTIONS,
        "teacher_from_descriptions": f32(described),
        "mapping_cross1": {
            "depth": DEPTH,
            "cross_layer": 1,
            "parameter_names": [n for n, _ in cross1.named_parameters()],
            "init": cross1.init,
            "mapped": cross1_mapped,
        },
    }
    assert list(mapped) == prompt_names and list(final) == prompt_names
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, separators=(",", ":")) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: losses {losses}")


if __name__ == "__main__":
    main()
