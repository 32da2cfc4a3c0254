#!/usr/bin/env python3
"""Sum a cubecl kernel profile by kernel, leaving out the bench's warm-up step.

Input: the stdout of `lora_step` (crates/calibra-train/benches/lora_step.rs) run with
`LORA_BENCH_MARK_STEPS=1` in a directory whose `cubecl.toml` turns cubecl's profiling logger on with
`stdout = true` (scripts/dev/gpu_check.sh writes both). cubecl prints one line per kernel it ran,
`| <duration> | <kernel name>`, and the bench prints `lora_step: step N done` as each step ends.

Output: the kernel lines of the steps from `--from-step` on (by default all but the first, the
warm-up, where autotune times its candidates), summed by kernel name (generic arguments dropped) and by a coarse kind, largest first,
with the number of timed steps so that per-step figures can be read. Standard library only.

    python3 scripts/dev/kernel_profile.py STREAM.log [--from-step 2] [--top 30]

`--from-step N` counts the kernels of steps N and later. autotune keeps timing candidates for a few
steps after the first where burn-fusion meets new fused blocks, so a steady-state profile wants N of 4
or more (with LORA_BENCH_STEPS at least N).
"""

import argparse
import re
import sys
from collections import defaultdict

KERNEL_LINE = re.compile(r"^\| (\S+)\s* \| (.+)$")
STEP_DONE = re.compile(r"lora_step: step (\d+) done")
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
DURATION = re.compile(r"^([0-9.]+)(ns|µs|us|ms|s)$")

# (kind, substrings of a lower-cased kernel name), first match wins.
KINDS = [
    ("attention", ("attention", "flash")),
    ("matrix product", ("matmul", "gemm", "mma")),
    ("convolution", ("conv",)),
    ("reduction (sum, mean, max, norms)", ("reduce", "sum", "mean", "argmax", "norm")),
    ("softmax", ("softmax",)),
    ("fused element-wise", ("fuse", "elemwise", "elementwise", "trace")),
    ("layout copy", ("contiguous", "copy", "permute", "transpose", "slice", "cat", "gather", "scatter")),
    ("random numbers", ("random", "prng", "bernoulli", "uniform")),
]


def parse_duration(text):
    match = DURATION.match(text)
    if not match:
        return None
    return float(match.group(1)) * UNITS[match.group(2)]


def short_name(name):
    """The kernel name without generic arguments (nested <...>) and trailing whitespace."""
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip()


def kind_of(name):
    lower = name.lower()
    for kind, needles in KINDS:
        if any(n in lower for n in needles):
            return kind
    return "other"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stream")
    parser.add_argument("--from-step", type=int, default=2)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()

    try:
        lines = open(args.stream, encoding="utf-8", errors="replace").read().splitlines()
    except OSError as e:
        sys.exit(f"{args.stream}: {e}")

    counting, steps_seen, skipped = False, [], 0
    by_name = defaultdict(lambda: [0.0, 0])
    by_kind = defaultdict(lambda: [0.0, 0])
    for line in lines:
        marker = STEP_DONE.search(line)
        if marker:
            step = int(marker.group(1))
            if counting:
                steps_seen.append(step)
            counting = step >= args.from_step - 1  # the next kernels belong to step `step + 1`
            continue
        match = KERNEL_LINE.match(line)
        if not match or match.group(2).rstrip().endswith("|"):
            continue  # not a per-kernel line (cubecl's summary tables have more columns)
        seconds = parse_duration(match.group(1))
        if seconds is None:
            skipped += 1
            continue
        if not counting:
            continue
        name = short_name(match.group(2))
        by_name[name][0] += seconds
        by_name[name][1] += 1
        kind = kind_of(name)
        by_kind[kind][0] += seconds
        by_kind[kind][1] += 1

    if not steps_seen:
        sys.exit(f"{args.stream}: no 'lora_step: step N done' marker for step {args.from_step} or later: was "
                 "LORA_BENCH_MARK_STEPS set, and were enough steps run?")
    total = sum(s for s, _ in by_name.values())
    if total == 0:
        sys.exit(f"{args.stream}: no kernel lines from step {args.from_step}: was cubecl's profiling logger on (cubecl.toml)?")
    steps = len(steps_seen)
    print(f"kernel time from step {args.from_step}: {total:.4f} s over {steps} step(s) ({total / steps:.4f} s a step), "
          f"{sum(c for _, c in by_name.values())} kernel launches; {skipped} line(s) without a duration skipped")
    print()
    print("| kind | ms a step | share | launches a step |")
    print("|---|---|---|---|")
    for kind, (seconds, count) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        print(f"| {kind} | {1e3 * seconds / steps:.3f} | {100 * seconds / total:.1f} % | {count / steps:.0f} |")
    print()
    print(f"| kernel (top {args.top}) | ms a step | share | launches a step |")
    print("|---|---|---|---|")
    for name, (seconds, count) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"| `{name[:110]}` | {1e3 * seconds / steps:.3f} | {100 * seconds / total:.1f} % | {count / steps:.0f} |")


if __name__ == "__main__":
    main()
