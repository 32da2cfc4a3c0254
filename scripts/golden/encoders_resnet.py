"""Golden fixtures for calibra-models' ResNet loader (issue #17 item 5, the ResNet part).

Writes crates/calibra-models/tests/fixtures/resnet/<variant>/:

  config.json + model.safetensors   a TINY random model saved by its library's own writer
  golden.safetensors                float32 reference outputs of that library, in eval mode:
      pixel_values   [2, 3, S, S]    the input (standard normal)
      pooler         [2, C]          the flattened adaptive-average-pooled last stage
                                     (transformers `pooler_output`; timm `forward_head(..., pre_logits=True)`)
      last           [2, C, h, w]    the last stage's feature map (transformers `last_hidden_state`;
                                     timm `forward_features`)
      hidden{k}      [2, C_k]        `hidden_states[k]` averaged over its spatial axes, k = 0 (stem output,
                                     after the max-pool) .. 4 (last stage)
      pixel_values_train [n, 3, T, T] a second input (n = 4, T = 48; hf_basic T = 96), larger so
                                     that every BatchNorm's batch variance is well above its epsilon (with
                                     2 images of 32 px the last stage's 1x1 maps give variances below 1e-7,
                                     where float32 and float64 torch already differ by 2e-3)
      pooler_train   [n, C]          `pooler` of that input with the model in train mode (BatchNorm on the
                                     batch statistics), to check that fine-tuning uses them; the script
                                     checks it against a float64 run (within 5e-5)

Variants (transformers 5.24 `ResNetModel` / `ResNetForImageClassification`):
  hf_bottleneck       embedding 8, hidden [8, 16, 24, 32], depths [1, 1, 2, 1], bottleneck, 32 px
  hf_basic            the same widths, depths [1, 2, 1, 1], `layer_type: basic`,
                      `downsample_in_first_stage: true`, 64 px
  hf_cls_ds_bottleneck `ResNetForImageClassification` (keys under `resnet.`, a `classifier.1`),
                      `downsample_in_bottleneck: true`, depths [2, 1, 1, 1], 40 px (odd feature maps)
and timm 1.0.31 (`save_for_hf`, keys `conv1`, `bn1`, `layer{1..4}.{j}...`, `fc`):
  timm_resnet50       `timm.create_model("resnet50", layers=[1, 1, 2, 1], channels=[4, 8, 12, 16],
                      num_classes=5)`, 32 px
  timm_resnet18       `timm.create_model("resnet18", layers=[1, 1, 1, 1], channels=[8, 16, 24, 32],
                      num_classes=5)`, 32 px

and crates/calibra-models/tests/fixtures/resnet/preprocess/: the image processor of transformers'
ResNet checkpoints (`microsoft/resnet-50` ships a legacy `ConvNextFeatureExtractor` config: `size` 224,
`crop_pct` 0.875) at size 32, as preprocessor_config.json in that legacy form, loaded with
`AutoImageProcessor.from_pretrained` and applied to timm's preprocess fixture image (61x45 PNG):
golden.safetensors `pixel_values` [1, 3, 32, 32] (shorter side to int(32 / 0.875) = 36, centre crop 32).

Every BatchNorm gets random non-trivial running statistics, affine parameters and
`num_batches_tracked`, so that eval-mode numerics matter. Deterministic (fixed seeds).

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_resnet.py
"""

import copy
import json
import os
import shutil

import timm
import torch
from PIL import Image
import torch.nn as nn
from safetensors.torch import save_file
from timm.models._hub import save_for_hf
from transformers import AutoImageProcessor, ResNetConfig, ResNetForImageClassification, ResNetModel

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FIXTURES = os.path.join(ROOT, "crates", "calibra-models", "tests", "fixtures", "resnet")


def randomise_batchnorm(model, seed):
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            with torch.no_grad():
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.2 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.5 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + 1.5 * torch.rand(n, generator=g))
                m.num_batches_tracked.fill_(int(torch.randint(1, 100000, (1,), generator=g)))


def pooled(h):
    return h.mean(dim=(2, 3)).contiguous()


def hf_outputs(base, x):
    out = base(pixel_values=x, output_hidden_states=True)
    golden = {
        "pooler": out.pooler_output.flatten(1).contiguous(),
        "last": out.last_hidden_state.contiguous(),
    }
    for k, h in enumerate(out.hidden_states):
        golden[f"hidden{k}"] = pooled(h)
    return golden


def timm_outputs(model, x):
    feats = model.forward_features(x)
    golden = {
        "pooler": model.forward_head(feats, pre_logits=True).contiguous(),
        "last": feats.contiguous(),
    }
    stem = model.maxpool(model.act1(model.bn1(model.conv1(x))))
    golden["hidden0"] = pooled(stem)
    h = stem
    for k, name in enumerate(["layer1", "layer2", "layer3", "layer4"], start=1):
        h = getattr(model, name)(h)
        golden[f"hidden{k}"] = pooled(h)
    return golden


def train_mode_pooler(model, forward, x_train):
    """`forward` of a train-mode copy of `model` on `x_train`, checked against float64."""
    with torch.no_grad():
        out = forward(copy.deepcopy(model).train(), x_train)
        ref = forward(copy.deepcopy(model).double().train(), x_train.double())
    assert (out.double() - ref).abs().max() < 5e-5, "train-mode reference is ill-conditioned"
    return out


def write_golden(out, x, golden, x_train, train_pooler):
    tensors = {
        "pixel_values": x.contiguous(),
        **golden,
        "pixel_values_train": x_train.contiguous(),
        "pooler_train": train_pooler.contiguous(),
    }
    save_file({k: v.float() for k, v in tensors.items()}, os.path.join(out, "golden.safetensors"))


def hf_fixture(name, config, size, seed, classification=False, train_shape=(4, 48)):
    torch.manual_seed(seed)
    model = (ResNetForImageClassification if classification else ResNetModel)(config).eval()
    randomise_batchnorm(model, seed + 1)
    out = os.path.join(FIXTURES, name)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    # Re-create from the directory, as a user would load it.
    reloaded = (ResNetForImageClassification if classification else ResNetModel).from_pretrained(out).eval()
    base = reloaded.resnet if classification else reloaded
    x = torch.randn(2, config.num_channels, size, size, generator=torch.Generator().manual_seed(seed + 2))
    with torch.no_grad():
        golden = hf_outputs(base, x)
        if classification:
            # ResNetForImageClassification: classifier = Flatten + Linear on pooler_output.
            logits = reloaded(pixel_values=x).logits
            lin = reloaded.classifier[1]
            expect = golden["pooler"] @ lin.weight.T + lin.bias
            assert torch.allclose(logits, expect, atol=1e-5)
    n, t = train_shape
    x_train = torch.randn(n, config.num_channels, t, t, generator=torch.Generator().manual_seed(seed + 3))
    train_pooler = train_mode_pooler(base, lambda m, t: m(pixel_values=t).pooler_output.flatten(1), x_train)
    write_golden(out, x, golden, x_train, train_pooler)
    print(name, {k: tuple(v.shape) for k, v in golden.items()})


def timm_fixture(name, arch, size, seed, train_shape=(4, 48), **kwargs):
    torch.manual_seed(seed)
    model = timm.create_model(arch, pretrained=False, num_classes=5, **kwargs).eval()
    randomise_batchnorm(model, seed + 1)
    out = os.path.join(FIXTURES, name)
    shutil.rmtree(out, ignore_errors=True)
    save_for_hf(model, out, safe_serialization=True)
    reloaded = timm.create_model(f"local-dir:{out}", pretrained=True).eval()
    x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(seed + 2))
    with torch.no_grad():
        golden = timm_outputs(reloaded, x)
    n, t = train_shape
    x_train = torch.randn(n, 3, t, t, generator=torch.Generator().manual_seed(seed + 3))
    train_pooler = train_mode_pooler(
        reloaded, lambda m, t: m.forward_head(m.forward_features(t), pre_logits=True), x_train
    )
    write_golden(out, x, golden, x_train, train_pooler)
    print(name, {k: tuple(v.shape) for k, v in golden.items()})


def preprocess_fixture():
    out = os.path.join(FIXTURES, "preprocess")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    legacy = {
        "crop_pct": 0.875,
        "do_normalize": True,
        "do_resize": True,
        "feature_extractor_type": "ConvNextFeatureExtractor",
        "image_mean": [0.485, 0.456, 0.406],
        "image_std": [0.229, 0.224, 0.225],
        "resample": 3,
        "size": 32,
    }
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(legacy, f, indent=2)
        f.write("\n")
    processor = AutoImageProcessor.from_pretrained(out)
    image = os.path.join(FIXTURES, "..", "timm", "preprocess", "image.png")
    with Image.open(image) as im:
        t = processor(images=im.convert("RGB"), return_tensors="pt")["pixel_values"]
    save_file({"pixel_values": t.contiguous().float()}, os.path.join(out, "golden.safetensors"))
    print("preprocess", type(processor).__name__, tuple(t.shape))


def main():
    os.makedirs(FIXTURES, exist_ok=True)
    widths = dict(embedding_size=8, hidden_sizes=[8, 16, 24, 32])
    hf_fixture("hf_bottleneck", ResNetConfig(**widths, depths=[1, 1, 2, 1], layer_type="bottleneck"), 32, 100)
    hf_fixture(
        "hf_basic",
        ResNetConfig(**widths, depths=[1, 2, 1, 1], layer_type="basic", downsample_in_first_stage=True),
        64,
        200,
        train_shape=(4, 96),
    )
    hf_fixture(
        "hf_cls_ds_bottleneck",
        ResNetConfig(
            **widths,
            depths=[2, 1, 1, 1],
            layer_type="bottleneck",
            downsample_in_bottleneck=True,
            num_labels=3,
        ),
        40,
        300,
        classification=True,
    )
    timm_fixture("timm_resnet50", "resnet50", 32, 400, layers=[1, 1, 2, 1], channels=[4, 8, 12, 16])
    timm_fixture("timm_resnet18", "resnet18", 32, 500, layers=[1, 1, 1, 1], channels=[8, 16, 24, 32])
    preprocess_fixture()


if __name__ == "__main__":
    main()
