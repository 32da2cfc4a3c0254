#!/usr/bin/env python3
"""Peer timing for benches/metrics.rs: the same metric set with scikit-learn + netcal (+ numpy where
no library has the metric), and Kendall / Spearman with scipy, on the same data the Rust bench reads.

    scripts/golden/venv.sh python benches/peers/metrics_peer.py [--skip-rust]

Writes benches/data/{metrics_probs.f64, metrics_labels.u32, rank_x.f64, rank_y.f64} (git-ignored),
times the Python peers (best of 3 runs), runs `cargo bench --bench metrics` on the same files, reads
criterion's mean estimates and prints the ratios (peer time / calibra time).
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import scipy.stats
from sklearn.metrics import (accuracy_score, average_precision_score, brier_score_loss, f1_score,
                             log_loss, roc_auc_score)
from netcal.metrics import ACE, ECE, MCE

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "benches", "data")
N, K, N_RANK, BINS = 1_000_000, 8, 100_000, 15


def make_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, K, N)
    z = 2.0 * rng.random((N, K))
    z[np.arange(N), y] += 2.0
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    x = rng.random(N_RANK)
    yr = x + rng.random(N_RANK)
    os.makedirs(DATA, exist_ok=True)
    p.astype("<f8").tofile(os.path.join(DATA, "metrics_probs.f64"))
    y.astype("<u4").tofile(os.path.join(DATA, "metrics_labels.u32"))
    x.astype("<f8").tofile(os.path.join(DATA, "rank_x.f64"))
    yr.astype("<f8").tofile(os.path.join(DATA, "rank_y.f64"))
    return p, y, x, yr


def adaptive_ece(conf, correct, bins):
    """Mukhoti's AdaECE (numpy; no library provides it)."""
    n = len(conf)
    edges = np.interp(np.linspace(0, n, bins + 1), np.arange(n), np.sort(conf))
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            total += m.mean() * abs(correct[m].mean() - conf[m].mean())
    return total


def classwise_ece(p, y, bins):
    total = 0.0
    for k in range(p.shape[1]):
        total += ECE(bins).measure(p[:, k], (y == k).astype(int))
    return total / p.shape[1]


def full_set(p, y):
    labels = list(range(K))
    conf = p.max(axis=1)
    pred = p.argmax(axis=1)
    correct = (pred == y).astype(float)
    out = {
        "accuracy": accuracy_score(y, pred),
        "macro_auroc": roc_auc_score(y, p, multi_class="ovr", average="macro", labels=labels),
        "macro_auprc": average_precision_score(np.eye(K)[y], p, average="macro"),
        "ece": ECE(BINS).measure(p, y),
        "mce": MCE(BINS).measure(p, y),
        "ace": ACE(BINS).measure(p, y),
        "adaptive_ece": adaptive_ece(conf, correct, BINS),
        "classwise_ece": classwise_ece(p, y, BINS),
        "brier": brier_score_loss(y, p, labels=labels),
        "nll": log_loss(y, p, labels=labels),
        "macro_f1": f1_score(y, pred, average="macro"),
    }
    return out


def best_of(f, repeats=3):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def criterion_mean(group, name):
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    path = os.path.join(target, "criterion", group, name, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["mean"]["point_estimate"] / 1e9


def main():
    p, y, x, yr = make_data()
    t_full = best_of(lambda: full_set(p, y))
    t_kendall = best_of(lambda: scipy.stats.kendalltau(x, yr))
    t_spearman = best_of(lambda: scipy.stats.spearmanr(x, yr))
    print(f"python peers: full set {t_full:.3f} s, kendalltau {t_kendall * 1e3:.1f} ms, "
          f"spearmanr {t_spearman * 1e3:.1f} ms")
    if "--skip-rust" in sys.argv:
        return
    env = dict(os.environ, CALIBRA_BENCH_DATA=DATA)
    subprocess.run(["cargo", "bench", "--bench", "metrics", "--", "--noplot"], cwd=ROOT, env=env, check=True)
    r_full = criterion_mean("metrics", "full_set_1m_x8")
    r_kendall = criterion_mean("rank", "kendall_tau_b_100k")
    r_spearman = criterion_mean("rank", "spearman_rho_100k")
    print("\n| task | python peer | calibra | ratio (peer / calibra) |")
    print("|---|---|---|---|")
    print(f"| full metric set, 1,000,000 × 8 (sklearn + netcal + numpy) | {t_full:.3f} s | {r_full:.3f} s | {t_full / r_full:.1f}× |")
    print(f"| Kendall τ-b, n = 100,000 (scipy) | {t_kendall * 1e3:.1f} ms | {r_kendall * 1e3:.1f} ms | {t_kendall / r_kendall:.1f}× |")
    print(f"| Spearman ρ, n = 100,000 (scipy) | {t_spearman * 1e3:.1f} ms | {r_spearman * 1e3:.1f} ms | {t_spearman / r_spearman:.1f}× |")


if __name__ == "__main__":
    main()
