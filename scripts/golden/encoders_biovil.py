"""Golden fixtures for BioViL's image model checkpoint (`biovil_image_resnet50_proj_size_128.pt`), which
`calibra convert biovil` turns into a timm ResNet directory (crates/calibra-models/src/resnet/biovil.rs).

Run (venv with torch 2.15, torchvision 0.29.2, hi-ml-multimodal 0.2.2):

    CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_biovil.py

The reference is hi-ml-multimodal's own code: `health_multimodal.image.model.ImageModel` (its
`ImageEncoder`, its torchvision-based `ResNetHIML`, its `MLP` projector) and, for the image path,
`health_multimodal.image.data.io.load_image` with `create_chest_xray_transform_for_inference(512, 480)`,
the pair `get_image_inference(ImageModelType.BIOVIL)` uses. One thing is changed to keep the fixture
small: hi-ml's `resnet50` factory (which `ImageEncoder` calls) is replaced by one that builds hi-ml's
`ResNetHIML` with torchvision's own `_make_layer`, with stage widths (4, 8, 12, 16) instead of (64, 128,
256, 512) and depths (1, 2, 1, 1); the stem, the blocks, the forward and every name are torchvision's
and hi-ml's.

Writes, under crates/calibra-models/tests/fixtures/biovil/:
- image_model.pt: `ImageModel(img_encoder_type="resnet50", joint_feature_size=8).state_dict()`, as
  `torch.save` writes it: `encoder.encoder.*` (the ResNet, torchvision's unused ImageNet `fc`
  included, with 10 outputs instead of 1000), `projector.model.*`.
- golden.safetensors:
  - `pixel_values` [2, 3, 40, 40] (already preprocessed) and `img_embedding` [2, 64]: hi-ml's
    `ImageModelOutput.img_embedding` in eval mode;
  - `image_pixels_sampled` [60, 60]: hi-ml's preprocessing of image.png (`load_image` then the BioViL
    transform: [3, 480, 480], the three channels equal), channel 0 at rows and columns 0, 8, ..., 472,
    in 0-255 levels;
  - `image_embedding` [1, 64]: hi-ml's `img_embedding` of that preprocessed image.
- biovil_t_names.pt: the names only (tiny zero tensors) that mark BioViL-T's multi-image encoder,
  `encoder.encoder.conv1.weight` next to `encoder.backbone_to_vit.weight` and
  `encoder.missing_previous_emb` (hi-ml's `MultiImageEncoder`), for the refusal test: the real model
  is too large for a fixture.
- image.png: a 52x44 8-bit grayscale image whose intensities span 0-255 (so hi-ml's per-image
  `remap_to_uint8` leaves it unchanged, which the script checks).

Every BatchNorm gets random running statistics and affine parameters. Deterministic (fixed seeds):
re-running rewrites identical files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from safetensors.torch import save_file
from torchvision.models.resnet import Bottleneck

import health_multimodal.image.model.encoder as himl_encoder
from health_multimodal.image.data.io import load_image, remap_to_uint8
from health_multimodal.image.data.transforms import create_chest_xray_transform_for_inference
from health_multimodal.image.model.model import ImageModel
from health_multimodal.image.model.resnet import ResNetHIML

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "crates" / "calibra-models" / "tests" / "fixtures" / "biovil"

torch.set_num_threads(1)

WIDTHS = (4, 8, 12, 16)
DEPTHS = (1, 2, 1, 1)


def narrow_resnet50(pretrained: bool = False, **kwargs) -> ResNetHIML:
    """hi-ml's ResNetHIML with narrower stages, built by torchvision's `_make_layer`."""
    assert not pretrained
    model = ResNetHIML(block=Bottleneck, layers=[1, 1, 1, 1], **kwargs)
    model.inplanes = 64
    model.layer1 = model._make_layer(Bottleneck, WIDTHS[0], DEPTHS[0])
    for stage in range(1, 4):
        layer = model._make_layer(Bottleneck, WIDTHS[stage], DEPTHS[stage], stride=2)
        setattr(model, f"layer{stage + 1}", layer)
    model.fc = nn.Linear(WIDTHS[3] * Bottleneck.expansion, 10)  # torchvision: 1000 ImageNet classes
    return model


def randomise(model: nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            # Weights scaled by 1/sqrt(fan-in), so that activations stay of order one through the stages.
            fan_in = p[0].numel() if p.dim() > 1 else 25
            p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.2 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.5 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + 1.5 * torch.rand(n, generator=g))
                m.num_batches_tracked.fill_(int(torch.randint(1, 100000, (1,), generator=g)))


def test_image() -> np.ndarray:
    """A smooth 8-bit grayscale gradient with structure, spanning 0-255."""
    h, w = 44, 52
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    v = 0.5 + 0.35 * np.sin(xx / 5.0) * np.cos(yy / 7.0) + 0.15 * (xx - yy) / w
    v = (v - v.min()) / (v.max() - v.min())
    return np.round(v * 255.0).astype(np.uint8)


def main() -> None:
    FIX.mkdir(parents=True, exist_ok=True)
    himl_encoder.resnet50 = narrow_resnet50
    model = ImageModel(img_encoder_type="resnet50", joint_feature_size=8)
    randomise(model, 5)
    model.eval()
    torch.save(model.state_dict(), FIX / "image_model.pt")

    torch.save(
        {
            "encoder.encoder.conv1.weight": torch.zeros(64, 3, 7, 7),
            "encoder.backbone_to_vit.weight": torch.zeros(4, 64, 1, 1),
            "encoder.missing_previous_emb": torch.zeros(1, 4, 1, 1),
        },
        FIX / "biovil_t_names.pt",
    )

    pixels = test_image()
    assert pixels.min() == 0 and pixels.max() == 255
    assert np.array_equal(remap_to_uint8(pixels), pixels), "remap_to_uint8 must leave this image unchanged"
    Image.fromarray(pixels, mode="L").save(FIX / "image.png")

    transform = create_chest_xray_transform_for_inference(resize=512, center_crop_size=480)
    image = transform(load_image(FIX / "image.png")).unsqueeze(0)
    assert image.shape == (1, 3, 480, 480)
    assert torch.equal(image[:, 0], image[:, 1]) and torch.equal(image[:, 0], image[:, 2])
    levels = image[0, 0] * 255.0
    assert torch.equal(levels, levels.round()), "ToTensor of 8-bit pixels gives whole levels"

    x = torch.randn(2, 3, 40, 40, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        golden = {
            "pixel_values": x,
            "img_embedding": model(x).img_embedding,
            "image_pixels_sampled": levels[::8, ::8],
            "image_embedding": model(image).img_embedding,
        }
    save_file({k: v.contiguous().to(torch.float32) for k, v in golden.items()}, FIX / "golden.safetensors")
    for name in ["image_model.pt", "biovil_t_names.pt", "image.png", "golden.safetensors"]:
        print(f"wrote {FIX / name} ({(FIX / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
