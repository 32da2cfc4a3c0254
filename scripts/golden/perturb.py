"""Golden references for calibra-data's perturbations.

Writes crates/calibra-data/tests/golden/perturb/:
  inputs/*.png          the test images (deterministic numpy drawings)
  perturb.json          Pillow (libjpeg-turbo) JPEG error at qualities 75/40/20/10 with 4:2:0 subsampling
                        (RGB) or single-channel (gray): RMSE and mean absolute error in 8-bit levels
  blur_*.png            scipy.ndimage.gaussian_filter(mode="reflect", truncate=4.0), rounded
  contrast_*.png        m + c (x - m) with per-channel means (ImageNet-C contrast), rounded half-even-safe
  fov_*.png             Pillow centre crop then resize back with BILINEAR
  rician_*.png          Rician noise "v2" computed here independently of Rust: SHA-256 seed, a pure-Python
                        ChaCha20 (rand_chacha's ChaCha20Rng: 64-bit block counter, stream 0), both outputs
                        of one Box-Muller transform (math.log / math.cos / math.sin), two 64-bit words per
                        value
  perturb.json "rician_moments"
                        mean and variance of scipy.stats.rice(nu/sigma, scale=sigma) for a few (nu, sigma);
                        the script checks its own v2 draws (unclamped) against them and against the
                        distribution (Kolmogorov-Smirnov), and the Rust test checks its draws against them
The Rust tests compare: JPEG RMSE within 5 % of Pillow's; blur and contrast within 1 level everywhere;
field-of-view crop within a mean of 1 level; Rician noise byte for byte (both sides use the platform's
libm log, cos and sin: glibc's, the same on both sides) and its moments within 5 standard errors of scipy's.

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/perturb.py
"""

import hashlib
import io
import json
import math
import os
import struct

import numpy as np
import PIL
import scipy
from PIL import Image
from scipy import stats
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


RICIAN_SIGMAS = [0.03, 0.06, 0.12]  # severities 1, 2, 3 (crates/calibra-data/src/perturb/mod.rs)
RICIAN_CASES = [("small_rgb_32", "golden-id-7", 2), ("scene_gray_64", "golden-id-8", 3), ("small_rgb_32", "golden-id-9", 1)]
MASK32 = 0xFFFFFFFF


def chacha20_words(key, n_words):
    """The first n_words 32-bit output words of ChaCha20 (20 rounds) keyed by 32 bytes, nonce/stream 0,
    64-bit block counter from 0 in words 12-13: the stream of rand_chacha's ChaCha20Rng::from_seed(key)."""
    k = list(struct.unpack("<8I", key))
    out = []
    block = 0
    while len(out) < n_words:
        init = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574] + k + [block & MASK32, block >> 32, 0, 0]
        x = list(init)

        def qr(a, b, c, d):
            x[a] = (x[a] + x[b]) & MASK32
            x[d] ^= x[a]
            x[d] = ((x[d] << 16) | (x[d] >> 16)) & MASK32
            x[c] = (x[c] + x[d]) & MASK32
            x[b] ^= x[c]
            x[b] = ((x[b] << 12) | (x[b] >> 20)) & MASK32
            x[a] = (x[a] + x[b]) & MASK32
            x[d] ^= x[a]
            x[d] = ((x[d] << 8) | (x[d] >> 24)) & MASK32
            x[c] = (x[c] + x[d]) & MASK32
            x[b] ^= x[c]
            x[b] = ((x[b] << 7) | (x[b] >> 25)) & MASK32

        for _ in range(10):
            qr(0, 4, 8, 12), qr(1, 5, 9, 13), qr(2, 6, 10, 14), qr(3, 7, 11, 15)
            qr(0, 5, 10, 15), qr(1, 6, 11, 12), qr(2, 7, 8, 13), qr(3, 4, 9, 14)
        out.extend((a + b) & MASK32 for a, b in zip(x, init))
        block += 1
    return out[:n_words]


def round_half_away(v):
    """Rust's f64::round for v >= 0, exactly (floor(v + 0.5) can round up in the addition)."""
    f = math.floor(v)
    return f + 1 if v - f >= 0.5 else f


def rician_stream(image_id, level, n_values):
    """The 2 n_values 64-bit words of the stream of (image_id, rician-noise, level), little-endian pairs of
    32-bit ChaCha20 words."""
    seed = hashlib.sha256(b"\0".join(p.encode() for p in ["calibra-perturb-v1", image_id, "rician-noise", str(level)])).digest()
    w = chacha20_words(seed, 4 * n_values)
    return [w[2 * i] | (w[2 * i + 1] << 32) for i in range(len(w) // 2)]


def normal_pair(a, b):
    """Both outputs of one Box-Muller transform: r = sqrt(-2 ln u1), theta = 2 pi u2 with
    u1 = 1 - (a >> 11) 2^-53 and u2 = (b >> 11) 2^-53; returns (r cos theta, r sin theta)."""
    u1 = 1.0 - (a >> 11) * 2.0**-53
    u2 = (b >> 11) * 2.0**-53
    r = math.sqrt(-2.0 * math.log(u1))
    theta = math.tau * u2
    return r * math.cos(theta), r * math.sin(theta)


def rician_magnitudes(xs, u64, sigma):
    """sqrt((x + sigma z1)^2 + (sigma z2)^2) per value, unclamped, (z1, z2) from words 2i, 2i + 1."""
    out = []
    for i, x in enumerate(xs):
        z1, z2 = normal_pair(u64[2 * i], u64[2 * i + 1])
        nr, ni = sigma * z1, sigma * z2
        out.append(math.sqrt((x + nr) * (x + nr) + ni * ni))
    return out


def rician_v2(arr, image_id, level):
    """calibra's Rician noise, definition v2 (src/perturb/rician.rs): per value in row-major, channel
    order, (z1, z2) = both outputs of one Box-Muller transform on consecutive little-endian 64-bit words
    a, b of the stream; then round(255 clamp(sqrt((x + s z1)^2 + (s z2)^2), 0, 1))."""
    sigma = RICIAN_SIGMAS[level - 1]
    flat = arr.reshape(-1)
    xs = [v / 255.0 for v in flat.tolist()]
    ys = rician_magnitudes(xs, rician_stream(image_id, level, flat.size), sigma)
    out = np.array([round_half_away(min(max(y, 0.0), 1.0) * 255.0) for y in ys], dtype=np.uint8)
    return out.reshape(arr.shape)


# (nu, sigma) on the [0, 1] scale: dark (Rayleigh-like), mid-grey and bright pixels at the three severities.
RICIAN_MOMENT_CASES = [(0.0, 0.12), (0.05, 0.12), (0.3, 0.06), (0.8, 0.03), (0.5, 0.5)]
RICIAN_MOMENT_DRAWS = 20000


def rician_moments():
    """scipy.stats.rice mean and variance per case, after checking this script's own v2 draws against
    them (5 standard errors) and against the distribution (KS test)."""
    out = []
    for k, (nu, sigma) in enumerate(RICIAN_MOMENT_CASES):
        dist = stats.rice(nu / sigma, scale=sigma)
        mean, var = float(dist.mean()), float(dist.var())
        ys = np.array(rician_magnitudes([nu] * RICIAN_MOMENT_DRAWS, rician_stream(f"moments-{k}", 2, RICIAN_MOMENT_DRAWS), sigma))
        n = len(ys)
        m4 = float(dist.moment(4) - 4 * mean * dist.moment(3) + 6 * mean**2 * dist.moment(2) - 3 * mean**4)
        se_mean, se_var = math.sqrt(var / n), math.sqrt((m4 - var * var) / n)
        assert abs(ys.mean() - mean) < 5 * se_mean, (nu, sigma, ys.mean(), mean)
        assert abs(ys.var() - var) < 5 * se_var, (nu, sigma, ys.var(), var)
        ks = stats.kstest(ys, dist.cdf)
        assert ks.pvalue > 1e-3, (nu, sigma, ks)
        out.append({"nu": nu, "sigma": sigma, "mean": mean, "var": var, "fourth_central_moment": m4,
                    "python_draws": n, "python_ks_pvalue": float(ks.pvalue)})
    return out


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
    report["rician"] = []
    for name, image_id, level in RICIAN_CASES:
        file = f"rician_{name}_{image_id}_{level}.png"
        pil(rician_v2(images[name], image_id, level)).save(os.path.join(OUT, file))
        report["rician"].append({"input": name, "id": image_id, "severity": level, "file": file})
    report["rician_definition"] = "v2"
    report["rician_moments"] = rician_moments()
    report["blur_sigmas"], report["contrast_factors"], report["fov_fractions"] = BLUR_SIGMAS, CONTRAST, FOV
    with open(os.path.join(OUT, "perturb.json"), "w") as fh:
        json.dump(report, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
