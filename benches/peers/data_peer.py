#!/usr/bin/env python3
"""Peer timing for the issue-5 benchmark (crates/calibra-data/benches/image_path.rs): Pillow + numpy in
one process doing the same per-image work — JPEG decode, Rician noise (sigma 0.06 on [0, 1]), bilinear
resize to 224 x 224, ImageNet normalisation to a CHW float32 array — on the same 256 x 256 RGB JPEGs.

    scripts/golden/venv.sh python benches/peers/data_peer.py [--skip-rust] [--cpu]

(--skip-rust skips the criterion runs, not the CPU-time comparison.) Writes benches/data/data_images/*.jpg (git-ignored; 64 procedural images, quality 90, 4:2:0), times
the peer (best of 3 passes), runs `cargo bench -p calibra-data --bench image_path` on the same files
twice (with RAYON_NUM_THREADS=1, then with the default rayon pool), times the peer again, reads
criterion's mean estimates (under $CARGO_TARGET_DIR when set) and prints images/s of all.

With --cpu it then measures CPU time instead of wall time (less sensitive to a loaded machine): the
peer's per-pass `time.process_time` (5 passes in this process), and calibra's `perf stat -e task-clock`
of `cargo run --release -p calibra-data --example image_path_timing` with 5 passes minus the same with
0 passes (reading the files only), per image, RAYON_NUM_THREADS=1, 3 rounds. Needs `perf`.

The calibra benchmark lives in calibra-data (it used to be the workspace root's `benches/data.rs`,
whose `cargo bench` builds the whole `calibra` binary and with it burn in release mode). Record the
numbers in benches/RESULTS.md.
"""
import io
import json
import os
import subprocess
import sys
import time

import numpy as np
from PIL import Image

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "benches", "data", "data_images")
N, SIDE, SIGMA = 64, 256, 0.06
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)[:, None, None]
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)[:, None, None]


def make_images():
    rng = np.random.default_rng(0)
    os.makedirs(DATA, exist_ok=True)
    y, x = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
    for i in range(N):
        cx, cy, r = rng.uniform(80, 176, 2).tolist() + [rng.uniform(30, 70)]
        lesion = ((x - cx) ** 2 + (y - cy) ** 2 < r * r).astype(np.float32)
        base = np.stack([225 - 100 * lesion, 180 - 110 * lesion, 160 - 110 * lesion], -1)
        base += rng.normal(0, 6, base.shape)
        img = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8), "RGB")
        img.save(os.path.join(DATA, f"img{i:03d}.jpg"), quality=90, subsampling=2)


def one(data, rng):
    img = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.float32) / 255.0
    nr = rng.normal(0, SIGMA, img.shape).astype(np.float32)
    ni = rng.normal(0, SIGMA, img.shape).astype(np.float32)
    noisy = np.clip(np.sqrt((img + nr) ** 2 + ni * ni), 0, 1)
    u8 = Image.fromarray(np.round(noisy * 255).astype(np.uint8), "RGB").resize((224, 224), Image.BILINEAR)
    chw = np.asarray(u8, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return (chw - MEAN) / STD


def time_peer(files):
    best = float("inf")
    for _ in range(3):
        rng = np.random.default_rng(1)
        t0 = time.perf_counter()
        for data in files:
            one(data, rng)
        best = min(best, time.perf_counter() - t0)
    return best


def criterion_mean(name):
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    path = os.path.join(target, "criterion", "data", name, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["mean"]["point_estimate"] / 1e9


def main():
    make_images()
    files = [open(os.path.join(DATA, f), "rb").read() for f in sorted(os.listdir(DATA)) if f.endswith(".jpg")]
    peer = time_peer(files)
    print(f"peer (Pillow {Image.__version__} + numpy {np.__version__}, 1 process): {len(files) / peer:.1f} images/s")
    if "--skip-rust" in sys.argv:
        if "--cpu" in sys.argv:
            cpu_times(files)
        return
    results = []
    for threads, name in [("1", "decode_rician_resize224_1thread"), (None, "decode_rician_resize224_rayon")]:
        env = {**os.environ, "CALIBRA_BENCH_DATA": os.path.join(ROOT, "benches", "data")}
        env.pop("RAYON_NUM_THREADS", None)
        if threads:
            env["RAYON_NUM_THREADS"] = threads
        subprocess.run(["cargo", "bench", "-p", "calibra-data", "--bench", "image_path"], cwd=ROOT, check=True, env=env)
        results.append((name, criterion_mean(name)))
    # The peer again after calibra, so that a change in the machine's load during the run shows.
    peer_after = time_peer(files)
    print(f"peer again after calibra: {len(files) / peer_after:.1f} images/s")
    for name, t in results:
        print(f"calibra {name}: {len(files) / t:.1f} images/s ({peer / t:.2f}x the first peer timing, "
              f"{peer_after / t:.2f}x the second)")
    if "--cpu" in sys.argv:
        cpu_times(files)


def peer_cpu(files, passes=5):
    """The peer's CPU milliseconds per image of each pass (time.process_time)."""
    out = []
    for _ in range(passes):
        rng = np.random.default_rng(1)
        t0 = time.process_time()
        for data in files:
            one(data, rng)
        out.append((time.process_time() - t0) * 1e3 / len(files))
    return out


def calibra_cpu(n_images, rounds=3, passes=5):
    """calibra's CPU milliseconds per image of each round: perf stat task-clock of the timing example
    with `passes` passes minus with 0 passes, divided by passes x images, on one rayon thread."""
    subprocess.run(["cargo", "build", "--release", "-p", "calibra-data", "--example", "image_path_timing"],
                   cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    exe = os.path.join(target, "release", "examples", "image_path_timing")
    env = {**os.environ, "RAYON_NUM_THREADS": "1"}

    def task_clock(k):
        r = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", exe, DATA, str(k)], env=env, check=True,
                           capture_output=True, text=True)
        return next(float(line.split(",")[0]) for line in r.stderr.splitlines() if "task-clock" in line)

    return [(task_clock(passes) - task_clock(0)) / (passes * n_images) for _ in range(rounds)]


def cpu_times(files):
    load = open("/proc/loadavg").read().split()[:3]
    peer = peer_cpu(files)
    ours = calibra_cpu(len(files))
    peer_again = peer_cpu(files)
    load_after = open("/proc/loadavg").read().split()[:3]
    fmt = lambda xs: " ".join(f"{x:.2f}" for x in xs)
    print(f"CPU ms/image, load average {' '.join(load)} -> {' '.join(load_after)}")
    print(f"  peer passes: {fmt(peer)}; again after calibra: {fmt(peer_again)}")
    print(f"  calibra rounds (mean of 5 passes each, 1 thread): {fmt(ours)}")
    best_peer, best_ours = min(peer + peer_again), min(ours)
    print(f"  best: peer {best_peer:.2f} ms ({1e3 / best_peer:.1f} images/s of CPU), calibra {best_ours:.2f} ms "
          f"({1e3 / best_ours:.1f} images/s of CPU): {best_peer / best_ours:.2f}x")


if __name__ == "__main__":
    main()
