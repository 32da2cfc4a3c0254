"""PyTorch + peft CPU peer for benches/rehearsal_lora.py: one LoRA epoch of a ViT classifier over a JPEG
ImageFolder, read from disk by a torch DataLoader, as `calibra train --regime lora` trains it.

    python benches/peers/rehearsal_lora_peer.py DATA CKPT N [--held-out M] [--steps S]

- DATA: an ImageFolder (`DATA/<class>/<image>.jpg`, as `calibra data export` writes it); CKPT: a Hugging
  Face ViT checkpoint directory (config.json, model.safetensors, preprocessor_config.json, as
  `calibra pretrain` writes it), loaded with transformers' ViTForImageClassification.from_pretrained
  (K = the ImageFolder's classes; a classifier of another size, or none, is initialised afresh), hidden
  and attention dropout 0, transformers' default (sdpa) attention.
- The files are put in a seeded shuffle (random.Random(--seed)); the first N train, the next M (--held-out,
  default 0) are the held-out set evaluated once after the epoch, as calibra evaluates its calibration
  split at every epoch end.
- Training: torchvision RandomResizedCrop(size) (scale (0.08, 1), ratio (3/4, 4/3)) + RandomHorizontalFlip
  + ToTensor + Normalize(mean, std), size / mean / std from preprocessor_config.json; DataLoader(batch 32,
  shuffle, num_workers 2, drop_last False); peft LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05,
  target_modules=["q_proj", "v_proj"] (what transformers 5.x names ViT's query / value projections, and
  what calibra's `--lora-targets query,value` wraps), modules_to_save=["classifier"]); per step: forward,
  cross-entropy, backward, clip_grad_norm_(1.0), AdamW(lr 2e-4, betas (0.9, 0.999), eps 1e-8, weight
  decay 0.01) step, linear warmup over ceil(0.1 * steps) steps then cosine (calibra's schedule).
  torch.set_num_threads(2) in this process (DataLoader workers run torch on one thread each).
- Held-out evaluation: Resize(size) + ToTensor + Normalize, batches of 64 (calibra's), model.eval(),
  torch.no_grad(), a DataLoader with the same number of workers; mean cross-entropy.

Timing (time.perf_counter): a step's seconds run from the end of the previous step (the start of the
epoch for the first) to the end of its optimiser step, so they include waiting for the DataLoader. The
first step (worker start-up, first batches decoded, first-touch allocations) is left out of images/s:
"train images/s" = images of steps 2..S / their seconds; "window images/s" = the same images / (their
seconds + the held-out evaluation), which is what calibra's progress lines can time (its last step is
reported after the epoch end's held-out evaluation). "epoch wall" = start of the epoch (DataLoader
iterator created) to the end of the last step.

Memory: peak RSS of this process (VmHWM); of each DataLoader worker (its VmHWM, read from
/proc/PID/status after the last batch, before the workers are shut down), and the largest child by
getrusage(RUSAGE_CHILDREN).ru_maxrss at the end (the held-out evaluation's workers included);
"main+workers" = the main VmHWM + every training worker's VmHWM. Forked workers share the parent's pages
(model weights, libraries) copy-on-write and RSS counts those in every process, so that sum overstates
the machine's memory; the summed proportional set
size (Pss, /proc/PID/smaps_rollup) of the main process and workers, sampled after every step, is printed
beside it (a lower bound on the peak: it misses what happens inside a step).

The last line is `peer-json: {...}` with every number, for the driver.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from torch.utils.data import DataLoader, Subset
from torchvision import datasets, transforms
from transformers import ViTForImageClassification, get_cosine_schedule_with_warmup

BATCH = 32
EVAL_BATCH = 64
THREADS = 2
WORKERS = 2


def kib_field(pid: int | str, name: str, file: str = "status") -> float | None:
    """A `NAME: N kB` field of /proc/PID/<file> in MiB (None if the process or field is gone)."""
    try:
        with open(f"/proc/{pid}/{file}") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


def child_pids() -> list[int]:
    """The live child processes of this process (the DataLoader workers while an iterator runs)."""
    me = str(os.getpid())
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the parenthesised command name, which may hold spaces.
        if stat[stat.rindex(")") + 2:].split()[1] == me:
            pids.append(int(entry))
    return sorted(pids)


def pss_mib(pids: list[int]) -> float:
    """Summed Pss of this process and `pids`, in MiB."""
    return sum(kib_field(p, "Pss", "smaps_rollup") or 0.0 for p in ["self", *pids])


def preprocessing(ckpt: Path) -> tuple[tuple[int, int], list[float], list[float]]:
    """(height, width), mean and std of the checkpoint's preprocessor_config.json."""
    cfg = json.loads((ckpt / "preprocessor_config.json").read_text())
    size = cfg.get("size", 224)
    if isinstance(size, int):
        hw = (size, size)
    elif "height" in size:
        hw = (size["height"], size["width"])
    else:
        hw = (size["shortest_edge"], size["shortest_edge"])
    crop = cfg.get("crop_size") if cfg.get("do_center_crop") else None
    if crop:
        hw = (crop["height"], crop["width"]) if isinstance(crop, dict) else (crop, crop)
    return hw, cfg.get("image_mean", [0.5] * 3), cfg.get("image_std", [0.5] * 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path, help="ImageFolder root")
    parser.add_argument("ckpt", type=Path, help="Hugging Face ViT checkpoint directory")
    parser.add_argument("n", type=int, help="training images (the first N of the seeded shuffle)")
    parser.add_argument("--held-out", type=int, default=0, metavar="M",
                        help="images evaluated after the epoch (the next M of the shuffle; 0: none)")
    parser.add_argument("--steps", type=int, help="stop after this many steps (smoke tests)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(THREADS)
    hw, mean, std = preprocessing(args.ckpt)
    normalize = [transforms.ToTensor(), transforms.Normalize(mean, std)]
    train_tf = transforms.Compose([transforms.RandomResizedCrop(hw), transforms.RandomHorizontalFlip(), *normalize])
    eval_tf = transforms.Compose([transforms.Resize(hw), *normalize])
    train_folder = datasets.ImageFolder(str(args.data), transform=train_tf)
    eval_folder = datasets.ImageFolder(str(args.data), transform=eval_tf)
    order = list(range(len(train_folder)))
    random.Random(args.seed).shuffle(order)
    if args.n < 1 or args.n + args.held_out > len(order):
        sys.exit(f"peer: asked for {args.n} training + {args.held_out} held-out images; {args.data} has {len(order)}")
    train = Subset(train_folder, order[: args.n])
    held_out = Subset(eval_folder, order[args.n : args.n + args.held_out])
    classes = len(train_folder.classes)

    base = ViTForImageClassification.from_pretrained(
        str(args.ckpt), num_labels=classes, ignore_mismatched_sizes=True,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=["q_proj", "v_proj"],
                      modules_to_save=["classifier"])
    model = get_peft_model(base, lora)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    loader = DataLoader(train, batch_size=BATCH, shuffle=True, num_workers=WORKERS, drop_last=False)
    total = len(loader) if args.steps is None else min(args.steps, len(loader))
    sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=math.ceil(0.1 * total), num_training_steps=total)
    n_lora = sum(1 for n, m in model.named_modules() if hasattr(m, "lora_A") and n.endswith(("q_proj", "v_proj")))
    print(f"peer: torch {torch.__version__} + peft LoRA ({n_lora} q/v modules, r 8) on {args.ckpt}, {classes} "
          f"classes, {hw[0]}x{hw[1]} px; {args.n} training images, {total} steps of {BATCH}, {WORKERS} DataLoader "
          f"workers, {THREADS} threads", flush=True)

    step_seconds, step_images = [], []
    workers, worker_hwm, peak_pss = [], {}, 0.0
    epoch_start = time.perf_counter()
    last = epoch_start
    batches = iter(loader)
    for step in range(total):
        images, labels = next(batches)
        logits = model(pixel_values=images).logits
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        now = time.perf_counter()
        step_seconds.append(now - last)
        step_images.append(len(labels))
        last = now
        if not torch.isfinite(loss):
            sys.exit(f"peer: non-finite loss at step {step + 1}")
        if not workers:
            workers = child_pids()
        peak_pss = max(peak_pss, pss_mib(workers))
        print(f"step {step + 1}/{total}: {step_seconds[-1]:.3f} s, {len(labels)} images, loss {loss.item():.4f}",
              flush=True)
    epoch_wall = last - epoch_start
    # The workers are idle now: their high-water marks are final. Then shut them down and reap them.
    for pid in workers:
        worker_hwm[pid] = kib_field(pid, "VmHWM")
    del batches
    children_max = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    eval_seconds = 0.0
    if args.held_out:
        t0 = time.perf_counter()
        model.eval()
        losses = []
        with torch.no_grad():
            for images, labels in DataLoader(held_out, batch_size=EVAL_BATCH, shuffle=False, num_workers=WORKERS):
                losses.append(F.cross_entropy(model(pixel_values=images).logits, labels, reduction="sum").item())
        eval_seconds = time.perf_counter() - t0
        print(f"held-out eval: {args.held_out} images in {eval_seconds:.3f} s, mean loss "
              f"{sum(losses) / args.held_out:.4f}", flush=True)
    children_max = max(children_max, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)

    timed_images = sum(step_images[1:])
    timed_seconds = sum(step_seconds[1:])
    train_ips = timed_images / timed_seconds if timed_images else float("nan")
    window_ips = timed_images / (timed_seconds + eval_seconds) if timed_images else float("nan")
    main_hwm = kib_field("self", "VmHWM") or float("nan")
    hwms = [h for h in worker_hwm.values() if h is not None]
    both = main_hwm + sum(hwms)
    print(f"train: {timed_images} images in steps 2..{total}, {timed_seconds:.3f} s: {train_ips:.3f} images/s "
          f"(first step, {step_seconds[0]:.3f} s, excluded)")
    print(f"window: steps 2..{total} + held-out eval ({args.held_out} images), "
          f"{timed_seconds + eval_seconds:.3f} s: {window_ips:.3f} images/s")
    print(f"epoch wall: {epoch_wall:.3f} s ({total} steps, DataLoader start-up included; held-out eval not)")
    print(f"peak RSS: main {main_hwm:.0f} MiB (VmHWM); workers "
          f"{' + '.join(f'{h:.0f}' for h in hwms) or 'n/a'} MiB (VmHWM each; largest child, held-out eval's "
          f"workers included, by RUSAGE_CHILDREN {children_max:.0f} MiB); main+workers {both:.0f} MiB "
          f"(sum, counts shared pages in every process); "
          f"sampled peak Pss main+workers {peak_pss:.0f} MiB")
    result = {
        "train_images": args.n, "held_out_images": args.held_out, "steps": total, "batch": BATCH,
        "step_seconds": step_seconds, "step_images": step_images, "timed_images": timed_images,
        "timed_seconds": timed_seconds, "train_images_per_s": train_ips, "held_out_seconds": eval_seconds,
        "window_images_per_s": window_ips, "epoch_wall_s": epoch_wall,
        "rss_main_mib": main_hwm, "rss_workers_mib": hwms, "rss_workers_children_max_mib": children_max,
        "rss_main_plus_workers_mib": both, "pss_peak_sampled_mib": peak_pss,
        "torch": torch.__version__,
    }
    print("peer-json: " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
