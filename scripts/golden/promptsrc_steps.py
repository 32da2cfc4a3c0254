"""Golden vectors for PromptSRC (independent V-L prompts + self-regularisation) on the tiny CLIP
(calibra_train::coop::promptsrc).

Run (venv with torch 2.15, transformers 5.24.0):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/promptsrc_steps.py

Reference: Khattak et al., ICCV 2023, muzairkhattak/PromptSRC trainers/promptsrc.py (VLPromptLearner,
CustomCLIP, PromptSRC.forward_backward) and clip/model.py (ResidualAttentionBlock_IVLP,
VisionTransformer with VPT), re-expressed on transformers' CLIPModel modules:

- text: the prompt "a photo of a {class}." is embedded, rows 1 .. 1+mt replaced by `ctx`, positions
  added, and before block i (1 <= i < depth_text) the same rows replaced by `deep_text[i-1]`;
- vision: `vision_ctx` appended after the embedded patches (before pre-LayerNorm), and before block
  i (1 <= i < depth_vision) the last mv rows replaced by `deep_vision[i-1]`;
- objective: CE(logits) + 25 * L1(l2n(text), l2n(mean_t text_zs_t)) + 10 * L1(l2n(image),
  l2n(image_zs)) + sum KL(softmax(zs logits) || softmax(logits)) / numel, where text_zs_t are the
  frozen model's text features of the class names in template t (textual diversity: all templates
  of calibra_models::clip::PROMPTSRC_TEMPLATES, OpenAI CLIP's 60 ImageNet templates), image_zs the
  frozen image features, zs logits = exp(logit_scale) * l2n(image_zs) @ l2n(mean text_zs).T;
- torch.optim.SGD (momentum, dampening 0, weight decay), Dassl's constant-warmup cosine per epoch,
  one full-batch step per epoch;
- Gaussian prompt aggregation: after epoch e (1-based) the parameters are added with weight
  g(e) / sum_{a=1..N} g(a), g the N(mean, std^2) density; the final prompts are that sum.

Float32 (the reference's default PREC is fp16). Every parameter and the images start from the same
fixed formula as maple_steps.py's `wave`, which the Rust test evaluates too.

Writes crates/calibra-train/tests/golden/promptsrc_steps.json. Deterministic; re-running rewrites an
identical file.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import CLIPModel, CLIPTokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoders_clip import CLASSNAMES, causal_mask  # noqa: E402
from maple_steps import f32, wave  # noqa: E402

FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures"
OUT = ROOT / "crates" / "calibra-train" / "tests" / "golden" / "promptsrc_steps.json"
TEMPLATES_RS = ROOT / "crates" / "calibra-models" / "src" / "clip" / "promptsrc_templates.rs"

torch.set_num_threads(1)

N_CTX_TEXT = 4  # "a photo of a" is 4 tokens in the fixture vocabulary
N_CTX_VISION = 3
DEPTH_TEXT = 3
DEPTH_VISION = 2
CTX_INIT = "a photo of a"
N_IMAGES = 6
EPOCHS = 3
LR = 0.5
MOMENTUM = 0.9
WEIGHT_DECAY = 5e-4
WARMUP_EPOCHS = 1
WARMUP_LR = 0.05
TEXT_WEIGHT = 25.0
IMAGE_WEIGHT = 10.0
GPA_MEAN = 2.0  # the reference's 15 (for 20 epochs) would put all weight on the last of 3 epochs
GPA_STD = 1.0


def templates() -> list[str]:
    """The template list calibra ships (parsed from its Rust source, so both sides use one list)."""
    text = TEMPLATES_RS.read_text()
    body = text[text.index("PROMPTSRC_TEMPLATES") :]
    return re.findall(r'"((?:[^"\\]|\\.)*)",', body[: body.index("];")])


def dassl_lr(epoch: int) -> float:
    if epoch < WARMUP_EPOCHS:
        return WARMUP_LR
    return LR * 0.5 * (1 + math.cos(math.pi * (epoch - WARMUP_EPOCHS) / EPOCHS))


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

    def ids(texts):
        return torch.tensor(tok(texts, padding="max_length", max_length=77, truncation=True)["input_ids"])

    with torch.no_grad():
        ctx0 = emb(ids([CTX_INIT]))[0, 1 : 1 + N_CTX_TEXT].clone()
    deep_text0 = [wave((N_CTX_TEXT, dt), 0.02, 1.0 + i) for i in range(DEPTH_TEXT - 1)]
    vision_ctx0 = wave((N_CTX_VISION, dv), 0.02, 2.0)
    deep_vision0 = [wave((N_CTX_VISION, dv), 0.02, 3.0 + i) for i in range(DEPTH_VISION - 1)]
    images = wave((N_IMAGES, 3, 30, 30), 1.0, 0.5)
    labels = torch.arange(N_IMAGES) % k

    tokenized = ids([CTX_INIT + " " + name + "." for name in CLASSNAMES])
    with torch.no_grad():
        embedding = emb(tokenized)
        # textual diversity: the mean of the frozen text features over every template
        fixed = torch.stack(
            [model.get_text_features(input_ids=ids([t.replace("{}", c) for c in CLASSNAMES])).pooler_output for t in temps],
            dim=1,
        ).mean(dim=1)
        fixed = fixed / fixed.norm(dim=-1, keepdim=True)
        zs_image = model.get_image_features(pixel_values=images).pooler_output
        zs_image = zs_image / zs_image.norm(dim=-1, keepdim=True)
    prefix, suffix = embedding[:, :1], embedding[:, 1 + N_CTX_TEXT :]
    eot = (tokenized == tok.eos_token_id).int().argmax(dim=-1)
    scale = model.logit_scale.exp()
    zs_logits = scale * zs_image @ fixed.t()

    ctx = torch.nn.Parameter(ctx0.clone())
    deep_text = [torch.nn.Parameter(t.clone()) for t in deep_text0]
    vision_ctx = torch.nn.Parameter(vision_ctx0.clone())
    deep_vision = [torch.nn.Parameter(t.clone()) for t in deep_vision0]
    params = [ctx, *deep_text, vision_ctx, *deep_vision]

    def text_features():
        x = torch.cat([prefix, ctx.unsqueeze(0).expand(k, -1, -1), suffix], dim=1)
        n = x.shape[1]
        x = x + tm.embeddings.position_embedding.weight[:n][None]
        mask = causal_mask(n)
        for i, layer in enumerate(tm.encoder.layers):
            if 1 <= i < DEPTH_TEXT:
                x = torch.cat([x[:, :1], deep_text[i - 1].unsqueeze(0).expand(k, -1, -1), x[:, 1 + N_CTX_TEXT :]], dim=1)
            x = layer(x, mask)
        x = tm.final_layer_norm(x)
        return model.text_projection(x[torch.arange(k), eot])

    def image_features():
        b = images.shape[0]
        x = vm.embeddings(images)
        x = torch.cat([x, vision_ctx.unsqueeze(0).expand(b, -1, -1)], dim=1)
        x = vm.pre_layrnorm(x)
        for i, layer in enumerate(vm.encoder.layers):
            if 1 <= i < DEPTH_VISION:
                keep = x.shape[1] - N_CTX_VISION
                x = torch.cat([x[:, :keep], deep_vision[i - 1].unsqueeze(0).expand(b, -1, -1)], dim=1)
            x = layer(x, None)
        return model.visual_projection(vm.post_layernorm(x[:, 0]))

    def terms():
        img = image_features()
        txt = text_features()
        img = img / img.norm(dim=-1, keepdim=True)
        txt = txt / txt.norm(dim=-1, keepdim=True)
        logits = scale * img @ txt.t()
        ce = F.cross_entropy(logits, labels)
        l_text = F.l1_loss(txt, fixed, reduction="mean") * TEXT_WEIGHT
        l_image = F.l1_loss(img, zs_image, reduction="mean") * IMAGE_WEIGHT
        l_kl = F.kl_div(F.log_softmax(logits, dim=1), F.log_softmax(zs_logits, dim=1), reduction="sum", log_target=True) / logits.numel()
        return logits, ce, l_text, l_image, l_kl

    with torch.no_grad():
        logits0, ce0, text0, image0, kl0 = terms()

    gauss = [math.exp(-0.5 * ((a - GPA_MEAN) / GPA_STD) ** 2) / (GPA_STD * math.sqrt(2 * math.pi)) for a in range(1, EPOCHS + 1)]
    gauss = [g / sum(gauss) for g in gauss]
    opt = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY, dampening=0.0)
    losses, gpa = [], None
    for epoch in range(EPOCHS):
        for group in opt.param_groups:
            group["lr"] = dassl_lr(epoch)
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
        j = 0
        out = {"ctx": f32(values[j])}
        j += 1
        out["deep_text"] = [f32(v) for v in values[j : j + DEPTH_TEXT - 1]]
        j += DEPTH_TEXT - 1
        out["vision_ctx"] = f32(values[j])
        j += 1
        out["deep_vision"] = [f32(v) for v in values[j:]]
        return out

    result = {
        "source": "torch 2.15 float32, transformers 5.24.0 CLIPModel; scripts/golden/promptsrc_steps.py",
        "classnames": CLASSNAMES,
        "n_ctx_text": N_CTX_TEXT,
        "n_ctx_vision": N_CTX_VISION,
        "depth_text": DEPTH_TEXT,
        "depth_vision": DEPTH_VISION,
        "ctx_init": CTX_INIT,
        "init": "wave(): deep_text (1+i, 0.02), vision_ctx (2, 0.02), deep_vision (3+i, 0.02), images (0.5, 1)",
        "ctx_init_values": f32(ctx0),
        "image_shape": list(images.shape),
        "labels": labels.tolist(),
        "fixed_text_features": f32(fixed),
        "zero_shot_logits": f32(zs_logits),
        "logits": f32(logits0),
        "terms": {"ce": f32(ce0), "text": f32(text0), "image": f32(image0), "kl": f32(kl0)},
        "epochs": EPOCHS,
        "lr": LR,
        "momentum": MOMENTUM,
        "weight_decay": WEIGHT_DECAY,
        "warmup_epochs": WARMUP_EPOCHS,
        "warmup_lr": WARMUP_LR,
        "text_weight": TEXT_WEIGHT,
        "image_weight": IMAGE_WEIGHT,
        "gpa_mean": GPA_MEAN,
        "gpa_std": GPA_STD,
        "gpa_weights": gauss,
        "losses": losses,
        "last": named(last),
        "final": named(gpa),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, separators=(",", ":")) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: losses {losses}")


if __name__ == "__main__":
    main()
