"""LoRA fine-tuning throughput and peak memory: `calibra train --regime lora` against PyTorch + peft with a
torch DataLoader, over the same JPEG ImageFolder (issue #16, item 7).

    python3 benches/rehearsal_lora.py --calibra BIN --python PEER_PY --data DIR --encoder CKPT \
        [--rounds N] [--max-load 1.5] [--wait 300] [--json FILE]

What runs, per round (the order of the two sides alternates between rounds, so that a drifting machine
favours neither):
- calibra: `BIN train --encoder CKPT --data imagefolder:DIR --regime lora --epochs 1 --batch-size 32
  --augment crop-flip --lora-targets query,value --out <fresh temporary dir>` with RAYON_NUM_THREADS=2 and
  CALIBRA_TRAIN_IN_MEMORY_MIB=0 (every batch is decoded from disk, as it would be on a large dataset);
- the peer, benches/peers/rehearsal_lora_peer.py: the same LoRA epoch in PyTorch + peft, images read by a
  DataLoader with 2 workers (torch.set_num_threads(2) in the main process), on as many training images as
  calibra's train split holds, then a held-out evaluation of as many images as calibra's calibration
  split holds.
The split sizes come from `BIN data inspect imagefolder:DIR --format json` (split seed 0, calibra
train's default), checked against calibra's "training on N images" line.

Images/s, both sides over the same window:
- calibra prints progress lines on stderr after the first step of an epoch, after its last step and at
  least every 30 s between (the pace it prints leaves the first step out, like this driver), and
  a monitored run (calibra train always monitors its calibration split) evaluates the calibration split
  before it reports the last step. The driver reads calibra's stderr line by line as it arrives and
  stamps each line (time.monotonic()): t1 = the "epoch 1 step 1/S" line, t2 = the "epoch 1 step S/S"
  line. calibra images/s = (training images - images of step 1) / (t2 - t1), i.e. steps 2..S plus the
  epoch end's calibration-split evaluation (and a checkpoint if one fell due: every 50 steps).
- the peer times each step (including its wait for the DataLoader) and the held-out evaluation itself:
  peer images/s = images of steps 2..S / (their seconds + the held-out evaluation's). Its training-only
  rate (held-out evaluation left out) is printed beside it.
Ratio = calibra images/s / peer images/s: above 1 means calibra is faster.

Peak memory:
- calibra: ru_maxrss of the calibra process from os.wait4 (one process: the whole run, loading, the
  epoch-0 evaluation, training, predictions);
- peer: its main process's VmHWM plus each DataLoader worker's VmHWM ("main+workers", as the peer
  reports them); forked workers share the parent's pages, which that sum counts once per process, so
  calibra / peer main alone is printed too. The peer's own wait4 ru_maxrss (the largest of the main
  process and its workers) is recorded as a check.
RSS ratio = calibra peak RSS / peer main+workers: below 1 means calibra needs less.

Rules, as benches/peers/harness.py keeps them: the 1-minute load is checked before the first round
(after waiting up to --wait seconds for it to fall below --max-load; above it: "machine busy", exit
status 3), and recorded before and after every run; both sides get 2 threads; nothing is built here.

Reproduce (from the repository root; the inputs take about 380 MB, the checkpoint's 343 MB most of it):
    BIN=target/release/calibra
    $BIN data export 'synth:derm?n=2000&size=224' --out /work/rehearsal/derm224
    $BIN pretrain --name vitb16-random --out /work/rehearsal --hidden 768 --layers 12 --heads 12 \
        --mlp 3072 --patch 16 --image-size 224 --seed 0
    python3 benches/rehearsal_lora.py --calibra $BIN --python PEER_PY --data /work/rehearsal/derm224 \
        --encoder /work/rehearsal/vitb16-random --rounds 3 --json rehearsal_lora.json
PEER_PY needs torch, torchvision, transformers and peft (those of scripts/golden/requirements.txt, plus
the torchvision of that torch). benches/RESULTS.md's rounds use an export of n=400 (281 training
images): on an idle 2-core machine a round, both sides, took 4 to 7 minutes (a LoRA step of 32 images
takes 7 to 16 s in calibra and 14 to 17 s in torch, depending on the CPU; calibra train also evaluates
the whole training set and the calibration split before its first step, outside the timed window, and
predicts the test split after training). The n=2000 export above takes about five times as long.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The load-average rules and the atomic JSON write are the peer harness's.
sys.path.insert(0, str(ROOT / "benches/peers"))
from harness import fmt_load, load, wait_for_idle, write_json  # noqa: E402
PEER = ROOT / "benches/peers/rehearsal_lora_peer.py"
THREADS = 2
BATCH = 32

TRAINING_ON = re.compile(r"lora: training on (?P<n>\d+) images")
STEP_LINE = re.compile(
    r"lora: epoch (?P<epoch>\d+) step (?P<step>\d+)/(?P<total>\d+) loss \S+ lr \S+(?: · (?P<ips>[0-9.]+) img/s)?"
)
PEER_JSON = "peer-json: "


@dataclass
class Run:
    """One side's run in one round."""

    side: str
    images_per_s: float
    peak_rss_mib: float
    wall_s: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    detail: dict = field(default_factory=dict)


def spawn(cmd: list[str], env: dict[str, str]) -> tuple[list[tuple[float, str]], str, int, float, float]:
    """Runs `cmd`, stamping each stderr line with time.monotonic() as it arrives. Returns the stamped
    stderr lines, stdout, the exit status, the wall seconds and ru_maxrss (MiB) from os.wait4."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    lines = [(time.monotonic(), line.rstrip("\n")) for line in proc.stderr]
    reader.join()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return lines, "".join(out), proc.returncode, wall, usage.ru_maxrss / 1024


def fail(side: str, cmd: list[str], status: int, output: str) -> None:
    sys.exit(f"rehearsal_lora: the {side} run `{' '.join(cmd)}` failed (status {status}):\n{output[-3000:]}")


def splits(calibra: str, data: str) -> tuple[int, int]:
    """The train and calibration split sizes calibra train uses (split seed 0)."""
    cmd = [calibra, "data", "inspect", f"imagefolder:{data}", "--format", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "RAYON_NUM_THREADS": str(THREADS)})
    if proc.returncode != 0:
        fail("calibra data inspect", cmd, proc.returncode, proc.stdout + proc.stderr)
    sizes = {s["split"]: s["samples"] for s in json.loads(proc.stdout)["splits"]}
    return sizes["train"], sizes["calibration"]


def run_calibra(args: argparse.Namespace, train_images: int) -> Run:
    before = load()
    with tempfile.TemporaryDirectory(prefix="rehearsal-lora-") as tmp:
        cmd = [args.calibra, "train", "--encoder", args.encoder, "--data", f"imagefolder:{args.data}",
               "--regime", "lora", "--epochs", "1", "--batch-size", str(BATCH), "--augment", "crop-flip",
               "--lora-targets", "query,value", "--out", str(Path(tmp) / "store")]
        env = {"RAYON_NUM_THREADS": str(THREADS), "CALIBRA_TRAIN_IN_MEMORY_MIB": "0"}
        lines, stdout, status, wall, rss = spawn(cmd, env)
    after = load()
    text = "\n".join(line for _, line in lines)
    if status != 0:
        fail("calibra", cmd, status, stdout + text)
    n = [int(m.group("n")) for _, line in lines if (m := TRAINING_ON.search(line))]
    if n != [train_images]:
        sys.exit(f"rehearsal_lora: calibra trained on {n} images, `data inspect` gave a train split of "
                 f"{train_images}:\n{text[-3000:]}")
    steps = [(t, m) for t, line in lines if (m := STEP_LINE.search(line))]
    first = next(((t, m) for t, m in steps if m.group("step") == "1"), None)
    last = next(((t, m) for t, m in steps if m.group("step") == m.group("total")), None)
    if first is None or last is None or first[1].group("total") == "1":
        sys.exit(f"rehearsal_lora: no first and last step lines (or a one-step epoch) in calibra's stderr:\n"
                 f"{text[-3000:]}")
    total = int(last[1].group("total"))
    timed_images = train_images - min(BATCH, train_images)
    seconds = last[0] - first[0]
    return Run("calibra", timed_images / seconds, rss, wall, before, after, {
        "steps": total, "timed_images": timed_images, "window_s": seconds,
        "printed_images_per_s": float(last[1].group("ips") or "nan"),
    })


def run_peer(args: argparse.Namespace, train_images: int, held_out: int) -> Run:
    before = load()
    cmd = [args.python, str(PEER), args.data, args.encoder, str(train_images), "--held-out", str(held_out)]
    lines, stdout, status, wall, rss = spawn(cmd, {"OMP_NUM_THREADS": str(THREADS)})
    after = load()
    if status != 0:
        fail("peer", cmd, status, stdout + "\n".join(line for _, line in lines))
    found = [line[len(PEER_JSON):] for line in stdout.splitlines() if line.startswith(PEER_JSON)]
    if not found:
        sys.exit(f"rehearsal_lora: the peer printed no `{PEER_JSON}` line:\n{stdout[-3000:]}")
    r = json.loads(found[-1])
    return Run("peer", r["window_images_per_s"], r["rss_main_plus_workers_mib"], wall, before, after, {
        **{k: r[k] for k in ("steps", "timed_images", "timed_seconds", "held_out_seconds", "train_images_per_s",
                             "epoch_wall_s", "rss_main_mib", "rss_workers_mib", "pss_peak_sampled_mib")},
        "wait4_maxrss_mib": rss,
    })


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}× ({min(values):.2f}–{max(values):.2f}×)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calibra", required=True, help="the calibra executable (a release build)")
    parser.add_argument("--python", required=True, help="Python with torch, torchvision, transformers, peft")
    parser.add_argument("--data", required=True, help="the JPEG ImageFolder (calibra data export)")
    parser.add_argument("--encoder", required=True, help="the ViT checkpoint directory (calibra pretrain)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-load", type=float, default=1.5, help="refuse above this 1-minute load")
    parser.add_argument("--wait", type=float, default=300, help="seconds to wait for the load to fall")
    parser.add_argument("--json", type=Path, help="also write every round and the summary here")
    args = parser.parse_args()
    if args.rounds < 1:
        sys.exit("rehearsal_lora: --rounds must be at least 1")
    args.data, args.encoder = str(Path(args.data).resolve()), str(Path(args.encoder).resolve())
    for what, path in [("--calibra", args.calibra), ("--python", args.python), ("--data", args.data),
                       ("--encoder", args.encoder)]:
        if not Path(path).exists():
            sys.exit(f"rehearsal_lora: {what} {path} does not exist")

    train_images, held_out = splits(args.calibra, args.data)
    start = wait_for_idle(args.max_load, args.wait)
    print(f"# LoRA epoch (r 8 on query/value, head, AdamW, clipping, crop-flip), batch {BATCH}, {THREADS} threads: "
          f"calibra train (streaming from disk) vs PyTorch + peft (DataLoader, 2 workers)")
    print(f"data {args.data}: {train_images} training images, {held_out} calibration images; "
          f"encoder {args.encoder}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"load at start {fmt_load(start)}")
    if start[0] > args.max_load:
        print(f"machine busy: 1-minute load {start[0]:.2f} > {args.max_load} after waiting {args.wait:.0f} s; "
              f"not measuring")
        return 3

    rounds: list[dict[str, Run]] = []
    for r in range(args.rounds):
        order = ["calibra", "peer"] if r % 2 == 0 else ["peer", "calibra"]
        runs = {}
        for side in order:
            if side == "calibra":
                runs[side] = run_calibra(args, train_images)
            else:
                runs[side] = run_peer(args, train_images, held_out)
        rounds.append(runs)
        c, p = runs["calibra"], runs["peer"]
        print(f"\nround {r + 1} ({' then '.join(order)})")
        print("| side | load before → after (1/5/15 min) | images/s (steps 2..S + held-out eval) | "
              "peak RSS MiB | wall s |")
        print("|---|---|---|---|---|")
        print(f"| calibra | {fmt_load(c.load_before)} → {fmt_load(c.load_after)} | {c.images_per_s:.3f} "
              f"({c.detail['timed_images']} images in {c.detail['window_s']:.1f} s; calibra's own last line says "
              f"{c.detail['printed_images_per_s']:.2f} img/s) | {c.peak_rss_mib:.0f} | {c.wall_s:.1f} |")
        print(f"| peer | {fmt_load(p.load_before)} → {fmt_load(p.load_after)} | {p.images_per_s:.3f} "
              f"(training alone {p.detail['train_images_per_s']:.3f}; held-out eval "
              f"{p.detail['held_out_seconds']:.1f} s) | {p.peak_rss_mib:.0f} (main {p.detail['rss_main_mib']:.0f} + "
              f"workers {' + '.join(f'{w:.0f}' for w in p.detail['rss_workers_mib'])}; sampled Pss "
              f"{p.detail['pss_peak_sampled_mib']:.0f}) | {p.wall_s:.1f} |")
        print(f"ratios: images/s calibra / peer {c.images_per_s / p.images_per_s:.2f}×; peak RSS calibra / peer "
              f"main+workers {c.peak_rss_mib / p.peak_rss_mib:.2f}×, / peer main "
              f"{c.peak_rss_mib / p.detail['rss_main_mib']:.2f}×", flush=True)

    speed = [x["calibra"].images_per_s / x["peer"].images_per_s for x in rounds]
    rss = [x["calibra"].peak_rss_mib / x["peer"].peak_rss_mib for x in rounds]
    rss_main = [x["calibra"].peak_rss_mib / x["peer"].detail["rss_main_mib"] for x in rounds]
    end = load()
    print(f"\nover {len(rounds)} round(s), median (range):")
    print(f"  images/s calibra / peer: {spread(speed)}  (above 1: calibra faster)")
    print(f"  peak RSS calibra / peer main+workers: {spread(rss)}; / peer main process: {spread(rss_main)}"
          f"  (below 1: calibra smaller)")
    print(f"load at end {fmt_load(end)}")
    if args.json:
        doc = {
            "data": args.data, "encoder": args.encoder, "train_images": train_images, "held_out_images": held_out,
            "batch": BATCH, "threads": THREADS, "load_start": start, "load_end": end,
            "summary": {
                "images_per_s_ratio": summary(speed),
                "peak_rss_ratio_main_plus_workers": summary(rss),
                "peak_rss_ratio_main": summary(rss_main),
            },
            "rounds": [{side: asdict(run) for side, run in x.items()} for x in rounds],
        }
        write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
