"""Golden vectors for calibra-train's train-time augmentation (crates/calibra-train/src/augment.rs):
torchvision 0.29.2's `resized_crop` (bilinear, antialias=True, on a float tensor) followed by
`horizontal_flip`, for fixed crop boxes of a small random image: the whole image, small and large
boxes, boxes touching each edge, non-square boxes and a 1-pixel-wide one, with and without the flip.

The boxes are fixed here because calibra draws them from its own seeded ChaCha20 stream (with
torchvision's distribution, checked in augment.rs's unit tests), not torch's generator.

Run: /work/pyenv/peers/bin/python scripts/golden/augment.py (torch 2.15.0, torchvision 0.29.2).
Writes crates/calibra-train/tests/golden/augment.json. Deterministic.
"""

import json
import os

import numpy as np
import torch
import torchvision
from torchvision.transforms.v2 import functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "calibra-train", "tests", "golden", "augment.json")

C, H, W = 3, 9, 11
BOXES = [  # (top, left, height, width, flip)
    (0, 0, H, W, False),
    (0, 0, H, W, True),
    (2, 3, 4, 5, False),
    (2, 3, 4, 5, True),
    (0, 0, 3, 3, False),
    (H - 5, W - 2, 5, 2, True),
    (1, 4, 8, 1, False),
    (4, 0, 1, W, True),
    (3, 2, 6, 9, False),
]


def main():
    rng = np.random.default_rng(20261203)
    image = rng.uniform(-2.0, 2.0, size=(C, H, W)).astype(np.float32)
    t = torch.from_numpy(image)
    cases = []
    for top, left, h, w, flip in BOXES:
        out = F.resized_crop(t, top, left, h, w, [H, W], interpolation=F.InterpolationMode.BILINEAR, antialias=True)
        if flip:
            out = F.horizontal_flip(out)
        cases.append({"top": top, "left": left, "height": h, "width": w, "flip": flip, "out": out.numpy().ravel().tolist()})
    doc = {
        "generator": f"scripts/golden/augment.py (torch {torch.__version__}, torchvision {torchvision.__version__})",
        "shape": [C, H, W],
        "image": image.ravel().tolist(),
        "cases": cases,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f)
        f.write("\n")


if __name__ == "__main__":
    main()
