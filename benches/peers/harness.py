"""Measure calibra against its Python peer honestly: same machine, same run, rounds interleaved.

    python3 benches/peers/harness.py SUITE [--rounds N] [--python PEER_PYTHON] [--json FILE]
    python3 benches/peers/harness.py --list

A suite pairs a calibra benchmark executable (built here with `cargo bench --no-run`, release
profile) with the peer script that does the same work in PyTorch. For each round the harness runs
both, one after the other (the order alternates between rounds so that a drifting machine favours
neither side), and reads each side's median time per unit of work from its output. It reports every
round, then the median and the range of the per-round ratios.

Ratio = peer time / calibra time: above 1 means calibra is faster.

Rules the harness keeps, so that a ratio means what it says:
- it records the 1/5/15-minute load average before the first round and after every run;
- it refuses to measure ("machine busy", exit status 3) when the 1-minute load at the start is above
  1.5 (`--max-load`); it waits up to `--wait` seconds for the load to fall first;
- both sides get the same number of threads: `RAYON_NUM_THREADS` for calibra, `torch.set_num_threads`
  inside each peer script (2, as the peer scripts are written; `--threads` must match them);
- nothing is compiled between rounds: the executables are built before the first measurement.

The peer Python needs torch, transformers and peft at the versions of scripts/golden/requirements.txt;
give its interpreter with `--python` or `CALIBRA_PEER_PYTHON` (default: `.venv-golden/bin/python`,
which `scripts/golden/venv.sh true` creates). Not run in CI.
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
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEDIAN = r"median (?P<seconds>[0-9.]+) s/"
KEYED_MEDIAN = r"\[(?P<key>[^\]]+)\][^\n]*?median (?P<seconds>[0-9.]+) s/"
PEAK_RSS = r"peak RSS (?P<mib>[0-9.]+) MiB"


@dataclass
class Suite:
    """One calibra benchmark and its peer, with what each prints."""

    description: str
    package: str
    bench: str
    calibra_env: dict[str, str]
    peer: list[str]
    peer_env: dict[str, str]
    pattern: str = MEDIAN
    unit: str = "s/batch"


SUITES: dict[str, Suite] = {
    "vit-forward": Suite(
        "ViT-B/16 forward, 224 px, batch 8, random weights (transformers ViTModel, eager attention)",
        "calibra-models",
        "vit_forward",
        {"VIT_BENCH_ITERS": "3"},
        ["crates/calibra-models/benches/peers/vit_peer.py", "3"],
        {},
    ),
    "lora-step-tiny": Suite(
        "LoRA step (r 8 on q/v, head, AdamW, clipping), tiny ViT (hidden 96, 4 layers, 32 px), batch 32",
        "calibra-train",
        "lora_step",
        {"LORA_BENCH_SHAPE": "tiny", "LORA_BENCH_STEPS": "20"},
        ["crates/calibra-train/benches/peers/lora_step_peer.py", "tiny", "20", "sdpa"],
        {},
        unit="s/step",
    ),
    "lora-step-vitb": Suite(
        "LoRA step (r 8 on q/v, head, AdamW, clipping), ViT-B/16 at 224 px, batch 32",
        "calibra-train",
        "lora_step",
        {"LORA_BENCH_SHAPE": "vitb", "LORA_BENCH_STEPS": "2"},
        ["crates/calibra-train/benches/peers/lora_step_peer.py", "vitb", "2", "sdpa"],
        {},
        unit="s/step",
    ),
    "lora-step-dinov2b": Suite(
        "LoRA step (r 8 on q/v, head, AdamW, clipping), DINOv2-B/14 at 224 px (head on [CLS ‖ mean of patches]), batch 32",
        "calibra-train",
        "lora_step",
        {"LORA_BENCH_SHAPE": "dinov2b", "LORA_BENCH_STEPS": "2"},
        ["crates/calibra-train/benches/peers/lora_step_peer.py", "dinov2b", "2", "sdpa"],
        {},
        unit="s/step",
    ),
    "lora-step-clipb": Suite(
        "LoRA step (r 8 on q/v, head, AdamW, clipping), CLIP ViT-B/16 vision tower at 224 px (head on the mean patch token), batch 32",
        "calibra-train",
        "lora_step",
        {"LORA_BENCH_SHAPE": "clipb", "LORA_BENCH_STEPS": "2"},
        ["crates/calibra-train/benches/peers/lora_step_peer.py", "clipb", "2", "sdpa"],
        {},
        unit="s/step",
    ),
    "lora-step-siglipb": Suite(
        "LoRA step (r 8 on q/v, head, AdamW, clipping), SigLIP-B/16 vision tower at 224 px, no pooling head (head on the mean token), batch 32",
        "calibra-train",
        "lora_step",
        {"LORA_BENCH_SHAPE": "siglipb", "LORA_BENCH_STEPS": "2"},
        ["crates/calibra-train/benches/peers/lora_step_peer.py", "siglipb", "2", "sdpa"],
        {},
        unit="s/step",
    ),
    "deep-prompt-step": Suite(
        "MaPLe, PromptSRC and HiCroPL step (reference settings), ViT-B/16 CLIP at 224 px, batch 32, K 5",
        "calibra-train",
        "deep_prompt_step",
        {"DEEP_PROMPT_BENCH_STEPS": "3", "DEEP_PROMPT_BENCH_METHODS": "maple,promptsrc,hicropl"},
        ["crates/calibra-train/benches/peers/deep_prompt_step_peer.py"],
        {"DEEP_PROMPT_BENCH_STEPS": "3", "DEEP_PROMPT_BENCH_METHODS": "maple,promptsrc,hicropl"},
        pattern=KEYED_MEDIAN,
        unit="s/step",
    ),
    "coop-step": Suite(
        "CoOp step, batch 32 of cached features, K 5, 16 context tokens: tiny CLIP and a ViT-B/16 text tower",
        "calibra-train",
        "coop_step",
        {"COOP_BENCH_STEPS": "6"},
        ["crates/calibra-train/benches/peers/coop_step_peer.py"],
        {"COOP_BENCH_STEPS": "6"},
        pattern=KEYED_MEDIAN,
        unit="s/step",
    ),
    "text-tower-products": Suite(
        "the matrix products alone of a CoOp step on a ViT-B/16 text tower (forward and to the input, 385 rows)",
        "calibra-models",
        "text_tower_products",
        {"PRODUCTS_BENCH_REPS": "7"},
        ["crates/calibra-models/benches/peers/text_tower_products_peer.py", "7"],
        {},
        unit="s/step",
    ),
}


@dataclass
class Run:
    side: str
    seconds: dict[str, float]
    peak_rss_mib: float | None
    load_after: tuple[float, float, float]
    wall: float
    output: str = field(repr=False)


def load() -> tuple[float, float, float]:
    return os.getloadavg()


def fmt_load(l: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in l)


def bench_executable(suite: Suite) -> Path:
    """Builds (if needed) and locates the release bench executable through cargo's JSON messages."""
    cmd = ["cargo", "bench", "--no-run", "--message-format=json", "-p", suite.package, "--bench", suite.bench]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"harness: `{' '.join(cmd)}` failed:\n{proc.stderr[-4000:]}")
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        target = msg.get("target", {})
        if msg.get("reason") == "compiler-artifact" and target.get("name") == suite.bench and msg.get("executable"):
            return Path(msg["executable"])
    sys.exit(f"harness: cargo built no executable for bench {suite.bench} of {suite.package}")


def parse(side: str, suite: Suite, output: str) -> tuple[dict[str, float], float | None]:
    seconds = {}
    for m in re.finditer(suite.pattern, output):
        key = m.groupdict().get("key") or "-"
        seconds[key] = float(m.group("seconds"))
    if not seconds:
        sys.exit(f"harness: the {side} output has no line matching {suite.pattern!r}:\n{output[-3000:]}")
    rss = re.search(PEAK_RSS, output)
    return seconds, (float(rss.group("mib")) if rss else None)


def run_side(side: str, suite: Suite, cmd: list[str], env: dict[str, str]) -> Run:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True)
    wall = time.monotonic() - t0
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"harness: the {side} run `{' '.join(cmd)}` failed (status {proc.returncode}):\n{output[-3000:]}")
    seconds, rss = parse(side, suite, output)
    return Run(side, seconds, rss, load(), wall, output)


def wait_for_idle(max_load: float, wait: float) -> tuple[float, float, float]:
    deadline = time.monotonic() + wait
    current = load()
    while current[0] > max_load and time.monotonic() < deadline:
        time.sleep(10)
        current = load()
    return current


def write_json(path: Path, doc: dict) -> None:
    """Write `doc` to `path` whole or not at all (a temporary file renamed over it)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", nargs="?", choices=sorted(SUITES))
    parser.add_argument("--list", action="store_true", help="list the suites and exit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="threads per side (the peers use 2)")
    parser.add_argument("--python", default=os.environ.get("CALIBRA_PEER_PYTHON", str(ROOT / ".venv-golden/bin/python")))
    parser.add_argument("--max-load", type=float, default=1.5, help="refuse above this 1-minute load")
    parser.add_argument("--wait", type=float, default=300, help="seconds to wait for the load to fall")
    parser.add_argument("--json", type=Path, help="also write every round and the summary here")
    args = parser.parse_args()
    if args.list or not args.suite:
        for name, s in SUITES.items():
            print(f"{name:16} {s.description}")
        return 0
    if args.rounds < 1:
        sys.exit("harness: --rounds must be at least 1")
    if args.threads != 2:
        sys.exit("harness: the peer scripts run torch on 2 threads; --threads must be 2 until they take it")
    suite = SUITES[args.suite]
    if not Path(args.python).exists():
        sys.exit(f"harness: no peer Python at {args.python} (give --python or CALIBRA_PEER_PYTHON)")

    exe = bench_executable(suite)
    calibra_cmd = [str(exe), "--bench"]
    calibra_env = {**suite.calibra_env, "RAYON_NUM_THREADS": str(args.threads)}
    peer_cmd = [args.python, *suite.peer]
    peer_env = {**suite.peer_env, "OMP_NUM_THREADS": str(args.threads)}

    start = wait_for_idle(args.max_load, args.wait)
    print(f"# {args.suite}: {suite.description}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"load at start {fmt_load(start)}")
    if start[0] > args.max_load:
        print(f"machine busy: 1-minute load {start[0]:.2f} > {args.max_load} after waiting "
              f"{args.wait:.0f} s; not measuring")
        return 3

    rounds = []
    for r in range(args.rounds):
        before = load()
        sides = [("calibra", calibra_cmd, calibra_env), ("peer", peer_cmd, peer_env)]
        if r % 2 == 1:
            sides.reverse()
        runs = {side: run_side(side, suite, cmd, env) for side, cmd, env in sides}
        rounds.append((before, runs))
        c, p = runs["calibra"], runs["peer"]
        for key in sorted(c.seconds):
            if key not in p.seconds:
                sys.exit(f"harness: the peer printed no measurement for {key!r}")
            print(f"round {r + 1} [{key}]: calibra {c.seconds[key]:.4f} {suite.unit}, peer {p.seconds[key]:.4f} "
                  f"{suite.unit}, ratio {p.seconds[key] / c.seconds[key]:.2f}x; load {fmt_load(before)} -> "
                  f"{fmt_load(c.load_after)} (calibra) / {fmt_load(p.load_after)} (peer)", flush=True)

    summary = {}
    print()
    print(f"| measurement | round | load (1 min) at start | calibra {suite.unit} | peer {suite.unit} | peer / calibra |")
    print("|---|---|---|---|---|---|")
    for key in sorted(rounds[0][1]["calibra"].seconds):
        ratios = []
        for r, (before, runs) in enumerate(rounds):
            c, p = runs["calibra"].seconds[key], runs["peer"].seconds[key]
            ratios.append(p / c)
            print(f"| {key} | {r + 1} | {before[0]:.2f} | {c:.4f} | {p:.4f} | {p / c:.2f}× |")
        cal = [runs["calibra"].seconds[key] for _, runs in rounds]
        peer = [runs["peer"].seconds[key] for _, runs in rounds]
        med = statistics.median(ratios)
        print(f"| **{key}** | median | | **{statistics.median(cal):.4f}** | **{statistics.median(peer):.4f}** | "
              f"**{med:.2f}×** ({min(ratios):.2f}–{max(ratios):.2f}×) |")
        summary[key] = {"ratio_median": med, "ratio_min": min(ratios), "ratio_max": max(ratios),
                        "calibra_median_s": statistics.median(cal), "peer_median_s": statistics.median(peer)}
    rss = {side: [runs[side].peak_rss_mib for _, runs in rounds if runs[side].peak_rss_mib] for side in ("calibra", "peer")}
    if rss["calibra"] and rss["peer"]:
        print(f"\npeak RSS: calibra {max(rss['calibra']):.0f} MiB, peer {max(rss['peer']):.0f} MiB")
    end = load()
    print(f"load at end {fmt_load(end)}")
    if args.json:
        doc = {
            "suite": args.suite, "description": suite.description, "threads": args.threads,
            "load_start": start, "load_end": end, "summary": summary, "peak_rss_mib": rss,
            "rounds": [{"load_before": b, **{s: {"seconds": x.seconds, "load_after": x.load_after, "wall": x.wall}
                                             for s, x in runs.items()}} for b, runs in rounds],
        }
        write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
