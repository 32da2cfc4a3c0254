"""Golden references for calibra-data's perturbations.

Writes crates/calibra-data/tests/golden/perturb/:
  inputs/*.png          the test images (deterministic numpy drawings)
  perturb.json          Pillow (libjpeg-turbo) JPEG error at qualities 75/40/20/10 with 4:2:0 subsampling
                        (RGB) or single-channel (gray): RMSE and mean absolute error in 8-bit levels
  blur_*.png            scipy.ndimage.gaussian_filter(mode="reflect", truncate=4.0), rounded
  contrast_*.png        m + c (x - m) with per-channel means (ImageNet-C contrast), rounded half-even-safe
  fov_*.png             Pillow centre crop then resize back with BILINEAR
The Rust tests compare: JPEG RMSE within 5 % of Pillow's; blur and contrast within 1 level everywhere;
field-of-view crop within a mean of 1 level.

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/perturb.py
"""

import io
import json
import os

import numpy as np
import PIL
import scipy
from PIL import Image
from scipy.ndimage import gaussian_filter

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "calibra-data", "tests", "golden", "perturb")
QUALITIES = [75, 40, 20, 10]
BLUR_SIGMAS = [0.6, 1.5, 3.0]
CONTRAST = [0.7, 0.3]
FOV = [0.9, 0.8, 0.7]


def scene(h, w, channels, seed):
    """Gradients, discs, an edge and smoothed texture: enough structure for JPEG to lose something."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    out = []
    for c in range(channels):
        img = 60 + 120 * (x / w) * (0.5 + 0.5 * c / max(channels - 1, 1)) + 40 * (y / h)
        for _ in range(4):
            cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(3, w / 3)
            img += rng.uniform(-70, 70) * (((x - cx) ** 2 + (y - cy) ** 2) < r * r)
        img += gaussian_filter(rng.normal(0, 25, size=(h, w)), 0.8)
        img[:, w // 2 :] += 25 * (c - 1)
        out.append(img)
    arr = np.clip(np.round(np.stack(out, -1)), 0, 255).astype(np.uint8)
    return arr[..., 0] if channels == 1 else arr


def pil(arr):
    return Image.fromarray(arr, "L" if arr.ndim == 2 else "RGB")


def jpeg_error(arr, quality):
    buf = io.BytesIO()
    kwargs = {"quality": quality}
    if arr.ndim == 3:
        kwargs["subsampling"] = 2  # 4:2:0
    pil(arr).save(buf, format="JPEG", **kwargs)
    back = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("L" if arr.ndim == 2 else "RGB"), dtype=np.float64)
    d = back - arr.astype(np.float64)
    return {"quality": quality, "rmse": float(np.sqrt(np.mean(d * d))), "mae": float(np.mean(np.abs(d)))}


def main():
    os.makedirs(os.path.join(OUT, "inputs"), exist_ok=True)
    images = {
        "scene_rgb_64": scene(64, 64, 3, 1),
        "scene_gray_64": scene(64, 64, 1, 2),
        "scene_rgb_50x38": scene(38, 50, 3, 3),
        "small_rgb_32": scene(32, 32, 3, 4),
    }
    report = {"pillow": PIL.__version__, "scipy": scipy.__version__, "numpy": np.__version__, "images": []}
    for name, arr in images.items():
        pil(arr).save(os.path.join(OUT, "inputs", f"{name}.png"))
        report["images"].append({"name": name, "jpeg": [jpeg_error(arr, q) for q in QUALITIES]})
    # Pixel references on the small image only (keeps the files to a few KB).
    small = images["small_rgb_32"]
    f = small.astype(np.float64)
    for s in BLUR_SIGMAS:
        blurred = gaussian_filter(f, sigma=(s, s, 0), mode="reflect", truncate=4.0)
        pil(np.clip(np.round(blurred), 0, 255).astype(np.uint8)).save(os.path.join(OUT, f"blur_small_rgb_32_{s}.png"))
    for c in CONTRAST:
        m = f.mean(axis=(0, 1), keepdims=True)
        pil(np.clip(np.round(m + c * (f - m)), 0, 255).astype(np.uint8)).save(os.path.join(OUT, f"contrast_small_rgb_32_{c}.png"))
    h, w = small.shape[:2]
    for frac in FOV:
        cw, ch = int(round(w * frac)), int(round(h * frac))
        x0, y0 = (w - cw) // 2, (h - ch) // 2
        out = pil(small).crop((x0, y0, x0 + cw, y0 + ch)).resize((w, h), Image.BILINEAR)
        out.save(os.path.join(OUT, f"fov_small_rgb_32_{frac}.png"))
    report["blur_sigmas"], report["contrast_factors"], report["fov_fractions"] = BLUR_SIGMAS, CONTRAST, FOV
    with open(os.path.join(OUT, "perturb.json"), "w") as fh:
        json.dump(report, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
