"""PyTorch CPU peer for benches/vit_forward.rs: HF ViTModel, ViT-B/16 shape, 224x224, batch 8,
random weights, eager attention, torch.set_num_threads(2). Prints images/s (median of N runs).

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python \
     crates/calibra-models/benches/peers/vit_peer.py [ITERS]
"""

import sys
import time

import torch
from transformers import ViTConfig, ViTModel


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    torch.manual_seed(0)
    torch.set_num_threads(2)
    cfg = ViTConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                    image_size=224, patch_size=16)
    cfg._attn_implementation = "eager"
    model = ViTModel(cfg, add_pooling_layer=False).eval()
    images = torch.randn(8, 3, 224, 224)
    with torch.inference_mode():
        model(pixel_values=images)  # warm-up
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            model(pixel_values=images)
            times.append(time.perf_counter() - t0)
    times.sort()
    median = times[len(times) // 2]
    print(f"torch {torch.__version__} ViT-B/16 224px batch 8 (2 threads): median {median:.3f} s/batch, "
          f"{8 / median:.2f} images/s ({iters} iterations)")


if __name__ == "__main__":
    main()
