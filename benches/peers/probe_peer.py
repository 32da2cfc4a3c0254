#!/usr/bin/env python3
"""Peer timing for crates/calibra-probe/benches/logistic.rs: fitting the logistic-regression probe on
n = 20,000, d = 768, K = 8.

    CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python benches/peers/probe_peer.py [--skip-rust]

Data: 8 Gaussian classes (means ~ N(0, 0.1²) per feature, unit noise; numpy seed 20261130),
standardised with sklearn's StandardScaler; written to benches/data/probe_x.f64 (row-major f64 LE) and
probe_y.u32 (git-ignored). Peer: scikit-learn `LogisticRegression(C=1, solver="lbfgs", tol=1e-6,
max_iter=1000)` — the same stopping settings the Rust bench uses (sklearn's default tol=1e-4 stops
wherever its path happens to be). Best of 2 runs. Then runs `cargo bench -p calibra-probe --bench
logistic` on the same files (honours CARGO_TARGET_DIR), reads criterion's mean estimate and the
probabilities the bench wrote (benches/data/probe_rust_proba.f64), and prints the ratio
(sklearn time / calibra time; > 1 = calibra faster) and the largest probability difference.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "benches", "data")
N, D, K = 20_000, 768, 8
SETTINGS = dict(C=1.0, solver="lbfgs", tol=1e-6, max_iter=1000)


def make_data():
    rng = np.random.default_rng(20261130)
    means = rng.normal(0.0, 0.1, size=(K, D))
    y = rng.integers(0, K, size=N)
    x = means[y] + rng.normal(0.0, 1.0, size=(N, D))
    x = StandardScaler().fit_transform(x)
    os.makedirs(DATA, exist_ok=True)
    np.ascontiguousarray(x, dtype="<f8").tofile(os.path.join(DATA, "probe_x.f64"))
    y.astype("<u4").tofile(os.path.join(DATA, "probe_y.u32"))
    return x, y


def objective(x, y, coef, intercept):
    z = x @ coef.T + intercept
    m = z.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(axis=1, keepdims=True))).ravel()
    return float(np.mean(lse - z[np.arange(len(y)), y]) + 0.5 / len(y) * np.sum(coef**2))


def criterion_mean_seconds():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    path = os.path.join(target, "criterion", "probe_logistic_fit", "n20000_d768_k8", "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["mean"]["point_estimate"] * 1e-9


def main():
    x, y = make_data()
    times = []
    model = None
    for _ in range(2):
        t0 = time.perf_counter()
        model = LogisticRegression(**SETTINGS).fit(x, y)
        times.append(time.perf_counter() - t0)
    sk_time = min(times)
    p_sk = model.predict_proba(x)
    print(f"sklearn {sklearn.__version__} lbfgs fit: best of 2 = {sk_time:.3f} s (runs {times}), "
          f"n_iter = {int(model.n_iter_[0])}, objective = {objective(x, y, model.coef_, model.intercept_):.12f}")
    if "--skip-rust" in sys.argv:
        return
    subprocess.run(["cargo", "bench", "-p", "calibra-probe", "--bench", "logistic"], cwd=ROOT, check=True)
    ours = criterion_mean_seconds()
    p_rs = np.fromfile(os.path.join(DATA, "probe_rust_proba.f64"), dtype="<f8").reshape(N, K)
    diff = float(np.abs(p_rs - p_sk).max())
    print(f"calibra-probe fit: mean {ours:.3f} s")
    print(f"ratio sklearn / calibra = {sk_time / ours:.2f}x (> 1 = calibra faster)")
    print(f"max |p_calibra - p_sklearn| over the {N} training rows = {diff:.3e}")


if __name__ == "__main__":
    main()
