"""Allocator A/B for a calibra bench executable (issue 21, "fresh memory for every op").

Runs the same release bench executable with the system allocator (glibc) and with jemalloc and
mimalloc preloaded (`LD_PRELOAD`, Debian's libjemalloc2 / libmimalloc2.0), in interleaved rounds
whose order rotates, 2 threads each, recording the 1-minute load before every run. It refuses to
start while the 1-minute load is above 1.5. Prints each run's median time per unit (the bench's
own `median X s/...` line) and the median ratio of each allocator against glibc.

    python3 benches/allocator_ab.py EXECUTABLE [--rounds 3] [--env KEY=VALUE ...]

EXECUTABLE: e.g. the path `cargo bench --no-run -p calibra-models --bench vit_forward` prints.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ALLOCATORS = {
    "glibc": None,
    "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "mimalloc": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2",
}
MEDIAN = re.compile(r"median (?P<s>[0-9.]+) s/")


def load1() -> float:
    return os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("executable")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--env", action="append", default=[])
    args = ap.parse_args()
    for name, lib in ALLOCATORS.items():
        if lib and not os.path.exists(lib):
            sys.exit(f"allocator_ab: {name}: {lib} is missing (apt-get install libjemalloc2 libmimalloc2.0)")
    waited = 0
    while load1() > 1.5:
        if waited >= 600:
            sys.exit(f"machine busy: 1-minute load {load1():.2f} > 1.5 after 10 minutes")
        time.sleep(15)
        waited += 15
    base = dict(os.environ, RAYON_NUM_THREADS="2")
    for kv in args.env:
        k, _, v = kv.partition("=")
        base[k] = v
    names = list(ALLOCATORS)
    times: dict[str, list[float]] = {n: [] for n in names}
    print(f"load at start {os.getloadavg()}")
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            env = dict(base)
            if ALLOCATORS[name]:
                env["LD_PRELOAD"] = ALLOCATORS[name]
            before = load1()
            out = subprocess.run([args.executable, "--bench"], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"allocator_ab: {name} failed:\n{out.stdout}\n{out.stderr}")
            m = MEDIAN.search(out.stdout)
            if not m:
                sys.exit(f"allocator_ab: no `median X s/` line in:\n{out.stdout}")
            times[name].append(float(m["s"]))
            print(f"round {r + 1} {name:8s} {float(m['s']):.4f} s (load {before:.2f})", flush=True)
    print(f"load at end {os.getloadavg()}")
    glibc = times["glibc"]
    for name in names:
        ratios = [g / t for g, t in zip(glibc, times[name])]
        print(
            f"{name:8s} median {statistics.median(times[name]):.4f} s; glibc / {name} = "
            f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
        )


if __name__ == "__main__":
    main()
