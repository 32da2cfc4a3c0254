"""Golden fixtures for calibra-models' ViT-MAE encoder (issue #17 item 5).

Builds a TINY randomly initialised transformers 5.24.0 `ViTMAEForPreTraining` (torch CPU, eager
attention, float32; its encoder is a `ViTMAEModel`) and writes, under
crates/calibra-models/tests/fixtures/vit_mae/:

  config.json, model.safetensors   -- `ViTMAEModel.save_pretrained` (the encoder alone; transformers
                                      5.24 writes the 4.x key names, encoder.layer.N.attention...)
  pretraining/                     -- `ViTMAEForPreTraining.save_pretrained`: the same encoder under
                                      `vit.` plus the MAE decoder, as facebook/vit-mae-* ship
  golden.safetensors               -- inputs and reference outputs of the encoder, with
                                      `mask_ratio = 0` and `noise = arange(L)` so that no patch is
                                      dropped and the token order is the image's:
      pixel_values              [2, 3, 30, 30]
      last_hidden_state         after the final LayerNorm
      pooler_output             last_hidden_state[:, 0] (MAE has no pooler; calibra's feature is the CLS)
      hidden_states.2           output of block 2 (before the final LayerNorm)
      pixel_values_interp       [2, 3, 42, 36]
      last_hidden_state_interp  with interpolate_pos_encoding=True (7x6 grid)

The config keeps `mask_ratio = 0.75` (the pre-training value, as the released checkpoints carry
it): calibra embeds whole images, which is transformers with mask_ratio 0. The script also checks
that with mask_ratio 0 and *random* noise (the default, which shuffles the patch order) the CLS
token is unchanged, so mask ratio 0 with any noise gives the feature calibra computes.

Position embeddings stay the fixed 2-D sin-cos table transformers initialises (as in real
checkpoints); every other parameter is randomised.

Deterministic: fixed seeds. Run:
  CALIBRA_GOLDEN_VENV=/work/pyenv/peers scripts/golden/venv.sh python scripts/golden/encoders_mae.py
"""

import os
import shutil

import torch
from safetensors.torch import save_file
from transformers import ViTMAEConfig, ViTMAEForPreTraining

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "crates", "calibra-models", "tests", "fixtures", "vit_mae")


def randomise(model, seed):
    """Non-trivial random values (norm scales around 1, the rest N(0, 0.2^2)); the fixed sin-cos
    position tables are left as transformers built them."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if "position_embeddings" in name or "decoder_pos_embed" in name:
                continue
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.2 * noise)


def encode(encoder, pixels, **kwargs):
    n_patches = (pixels.shape[2] // 6) * (pixels.shape[3] // 6)
    noise = torch.arange(n_patches, dtype=torch.float32).expand(pixels.shape[0], n_patches)
    return encoder(pixel_values=pixels, noise=noise, output_hidden_states=True, **kwargs)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cfg = ViTMAEConfig(
        hidden_size=48,
        num_hidden_layers=3,
        num_attention_heads=3,
        intermediate_size=80,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        image_size=30,
        patch_size=6,
        num_channels=3,
        qkv_bias=True,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        decoder_num_attention_heads=2,
        decoder_hidden_size=16,
        decoder_num_hidden_layers=1,
        decoder_intermediate_size=32,
        mask_ratio=0.75,
        norm_pix_loss=False,
    )
    cfg._attn_implementation = "eager"
    model = ViTMAEForPreTraining(cfg)
    randomise(model, 50)
    model.eval()
    encoder = model.vit

    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    encoder.save_pretrained(OUT)
    model.save_pretrained(os.path.join(OUT, "pretraining"))

    g = torch.Generator().manual_seed(1234)
    pixels = torch.randn(2, 3, 30, 30, generator=g)
    pixels_interp = torch.randn(2, 3, 42, 36, generator=g)
    encoder.config.mask_ratio = 0.0
    with torch.no_grad():
        out = encode(encoder, pixels)
        assert len(out.hidden_states) == cfg.num_hidden_layers + 1, len(out.hidden_states)
        n_patches = 25
        embedded = encoder.embeddings(pixels, noise=torch.arange(n_patches, dtype=torch.float32).expand(2, n_patches))[0]
        assert bool((out.hidden_states[0] == embedded).all()), "hidden_states[0] is the embedding output"
        assert bool((out.ids_restore == torch.arange(25)).all())
        shuffled = encoder(pixel_values=pixels)  # random noise: the patch order is shuffled
        cls_gap = (shuffled.last_hidden_state[:, 0] - out.last_hidden_state[:, 0]).abs().max().item()
        assert cls_gap < 1e-5, cls_gap
        out_i = encode(encoder, pixels_interp, interpolate_pos_encoding=True)
    # hidden_states[0] is the embedding output (checked above), hidden_states[k] block k's output.
    golden = {
        "pixel_values": pixels,
        "last_hidden_state": out.last_hidden_state,
        "pooler_output": out.last_hidden_state[:, 0],
        "hidden_states.2": out.hidden_states[2],
        "pixel_values_interp": pixels_interp,
        "last_hidden_state_interp": out_i.last_hidden_state,
    }
    save_file({k: v.contiguous() for k, v in golden.items()}, os.path.join(OUT, "golden.safetensors"))
    print("vit_mae ->", OUT, sorted(golden), f"CLS with shuffled order within {cls_gap:.1e}")


if __name__ == "__main__":
    main()
