#!/usr/bin/env python3
"""Peer timing for crates/calibra-metrics/benches/selective.rs: the selective-prediction metric set on
1,000,000 predictions x 8 classes with the Python libraries that define it, on the same data.

    PYTHONPATH=/tmp/selective-venv/lib/python3.11/site-packages \
        /work/main/.venv-golden/bin/python benches/peers/selective_peer.py [--rounds 2] [--skip-rust]

The set (what `summarize_selective_single_label` computes):
- torch-uncertainty 0.13 AURC, AUGRC, RiskAt80Cov, CovAt5Risk on the MSP (float64 tensors, CPU);
- E-AURC: torch-uncertainty AURC of the oracle ranking subtracted (numpy for the oracle scores);
- MSP, max-logit, energy (scipy logsumexp), entropy (scipy entr), margin (numpy), and torch-uncertainty
  AURC + AUGRC (+ E-AURC) of each;
- relplot.smECE on the top-label pairs; uncertainty-calibration lower_bound_scaling_ce(p=2, debias=True,
  15 equal-mass bins, top-label).

Writes benches/data/selective_{logits.f64,labels.u32} (git-ignored), then alternates: Python set
(timed), `cargo bench -p calibra-metrics --bench selective` (criterion mean), for --rounds rounds, and
prints each round's ratio and the 1-minute load average before and after.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import time
from pathlib import Path

import calibration
import numpy as np
import relplot
import scipy.special as sps
import torch

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benches" / "data"
N, K = 1_000_000, 8
TU = Path(importlib.util.find_spec("torch_uncertainty").submodule_search_locations[0]) / "metrics" / "classification"
spec = importlib.util.spec_from_file_location("tu_rc", TU / "risk_coverage.py")
RC = importlib.util.module_from_spec(spec)
spec.loader.exec_module(RC)


def make_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, K, N)
    z = 2.5 * rng.random((N, K))
    z[np.arange(N), y] += 2.0
    DATA.mkdir(parents=True, exist_ok=True)
    z.astype("<f8").tofile(DATA / "selective_logits.f64")
    y.astype("<u4").tofile(DATA / "selective_labels.u32")
    return z, y


def tu(metric, probs2, t):
    metric.update(probs2, t)
    return float(metric.compute().reshape(-1)[0])


def as_probs(score):
    """torch-uncertainty ranks by probs.max(-1); a two-column [s, -inf-like] tensor ranks by s."""
    s = torch.tensor(score, dtype=torch.float64)
    return torch.stack([s, torch.full_like(s, -1e300)], dim=-1)


def python_set(z, y):
    zz = z - z.max(axis=1, keepdims=True)
    p = np.exp(zz)
    p /= p.sum(axis=1, keepdims=True)
    pt, yt = torch.tensor(p), torch.tensor(y)
    out = {
        "aurc": tu(RC.AURC(), pt, yt),
        "augrc": tu(RC.AUGRC(), pt, yt),
        "risk_at_80_coverage": tu(RC.RiskAt80Cov(), pt, yt),
        "coverage_at_5_risk": tu(RC.CovAt5Risk(), pt, yt),
    }
    pred = p.argmax(axis=1)
    err = pred != y
    # errors are fixed by the argmax: rank by each score with the same errors (target = argmax unless wrong)
    t_err = torch.tensor(np.where(err, 1, 0))
    oracle = tu(RC.AURC(), as_probs(1.0 - err), t_err)
    out["eaurc"] = out["aurc"] - oracle
    s = np.sort(p, axis=1)
    scores = {"msp": p.max(axis=1), "max-logit": z.max(axis=1), "energy": sps.logsumexp(z, axis=1),
              "entropy": -sps.entr(p).sum(axis=1), "margin": s[:, -1] - s[:, -2]}
    out["by_score"] = {}
    for name, sc in scores.items():
        a = tu(RC.AURC(), as_probs(sc), t_err)
        out["by_score"][name] = {"aurc": a, "eaurc": a - oracle, "augrc": tu(RC.AUGRC(), as_probs(sc), t_err)}
    f, yy = relplot.multiclass_logits_to_confidences(p, y, probs=True)
    out["smooth_ece"] = float(relplot.smECE(f, yy))
    out["debiased_ece"] = float(calibration.lower_bound_scaling_ce(
        p, y, p=2, debias=True, num_bins=15, binning_scheme=calibration.get_equal_bins, mode="top-label"))
    return out


def rust_mean_seconds():
    subprocess.run(["cargo", "bench", "-p", "calibra-metrics", "--bench", "selective", "--", "--noplot"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    est = json.loads((target / "criterion" / "selective" / "selective_set_1m_x8" / "new" / "estimates.json").read_text())
    return est["mean"]["point_estimate"] / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip-rust", action="store_true")
    args = ap.parse_args()
    z, y = make_data()
    torch.set_num_threads(os.cpu_count())
    print(f"load before: {os.getloadavg()[0]:.2f}")
    for r in range(args.rounds):
        t0 = time.perf_counter()
        values = python_set(z, y)
        py = time.perf_counter() - t0
        line = f"round {r + 1}: python {py:.3f} s"
        if not args.skip_rust:
            rs = rust_mean_seconds()
            line += f", calibra {rs:.3f} s, ratio {py / rs:.1f}x"
        print(line + f" (load {os.getloadavg()[0]:.2f})", flush=True)
    print("python values:", json.dumps({k: v for k, v in values.items() if k != "by_score"}))
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
