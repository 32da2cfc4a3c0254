#!/usr/bin/env python3
"""Peer timing for benches/calibrate.rs: fitting each post-hoc calibrator on 100,000 × 10 logits.

    scripts/golden/venv.sh python benches/peers/calibrate_peer.py [--skip-rust]

Peers (the issue's list): sklearn 1.9 `_TemperatureScaling` (temperature),
`CalibratedClassifierCV(FrozenEstimator, method="isotonic")` (isotonic, on probabilities) and
`method="sigmoid"` (Platt one-vs-rest on logits), a scipy L-BFGS-B fit of the same objective for
vector / matrix scaling (no library peer exists), and dirichletcal 0.5.3 `FullDirichletCalibrator`
(ODIR λ = μ = 1e-3, reg_norm=True, no cross-validation) — dirichletcal needs Python >= 3.12, so it
runs in a second interpreter given by $CALIBRA_DIRICHLET_PYTHON (default /work/pyenv/dirichlet312/bin/python;
skipped when absent).

Writes benches/data/{calibrate_logits.f64, calibrate_labels.u32} (git-ignored), times the peers
(best of 3 runs; 1 run for dirichletcal), runs `cargo bench --bench calibrate` on the same files,
reads criterion's mean estimates and prints the ratios (peer time / calibra time; > 1 = calibra faster).
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "benches", "data")
N, K = 100_000, 10
LAMBDA = MU = 1e-3


def make_data():
    rng = np.random.default_rng(3)
    y = rng.integers(0, K, N)
    z = 2.0 * (rng.random((N, K)) - 0.5)
    z[np.arange(N), y] += 1.5
    z *= 3.0
    os.makedirs(DATA, exist_ok=True)
    z.astype("<f8").tofile(os.path.join(DATA, "calibrate_logits.f64"))
    y.astype("<u4").tofile(os.path.join(DATA, "calibrate_labels.u32"))
    return z, y


def load_data():
    z = np.fromfile(os.path.join(DATA, "calibrate_logits.f64"), dtype="<f8").reshape(N, K)
    y = np.fromfile(os.path.join(DATA, "calibrate_labels.u32"), dtype="<u4").astype(np.int64)
    return z, y


def best_of(fn, runs=3):
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def dirichlet_only():
    from dirichletcal.calib.fulldirichlet import FullDirichletCalibrator

    z, y = load_data()
    p = softmax(z)
    t = time.perf_counter()
    FullDirichletCalibrator(reg_lambda=LAMBDA, reg_mu=MU, reg_norm=True).fit(p, y)
    print(json.dumps({"dirichlet": time.perf_counter() - t}))


def sklearn_peers(z, y):
    from scipy.optimize import minimize
    from scipy.special import log_softmax
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.calibration import CalibratedClassifierCV, _TemperatureScaling
    from sklearn.frozen import FrozenEstimator

    class PassThrough(ClassifierMixin, BaseEstimator):
        def __init__(self, decision=False):
            self.decision = decision

        def fit(self, X, y):
            self.classes_ = np.arange(K)
            return self

        def predict(self, X):
            return np.argmax(X, axis=1)

        def predict_proba(self, X):
            return np.asarray(X)

        def __getattribute__(self, name):
            if name == "decision_function" and not object.__getattribute__(self, "decision"):
                raise AttributeError(name)
            return object.__getattribute__(self, name)

        def decision_function(self, X):
            return np.asarray(X)

    p = softmax(z)
    onehot = np.eye(K)[y]

    def affine(form):
        def fg(theta):
            if form == "vector":
                W, b = np.diag(theta[:K]), theta[K:]
            else:
                Wb = np.zeros((K, K + 1))
                Wb[: K - 1] = theta.reshape(K - 1, K + 1)
                W, b = Wb[:, :K], Wb[:, K]
            ls = log_softmax(z @ W.T + b, axis=1)
            G = (np.exp(ls) - onehot) / N
            if form == "vector":
                grad = np.concatenate([(G * z).sum(0), G.sum(0)])
            else:
                grad = np.hstack([G.T @ z, G.sum(0)[:, None]])[: K - 1].ravel()
            return -np.mean(ls[np.arange(N), y]), grad

        if form == "vector":
            x0 = np.concatenate([np.ones(K), np.zeros(K)])
        else:
            Wb = np.hstack([np.eye(K), np.zeros((K, 1))])
            x0 = (Wb - Wb[-1])[: K - 1].ravel()
        # Same stopping rule as calibra (gradient 1e-9).
        minimize(fg, x0, jac=True, method="L-BFGS-B", options={"gtol": 1e-9, "ftol": 0, "maxiter": 5000})

    return {
        "temperature": best_of(lambda: _TemperatureScaling().fit(z, y)),
        "isotonic": best_of(lambda: CalibratedClassifierCV(FrozenEstimator(PassThrough().fit(p, y)),
                                                           method="isotonic").fit(p, y)),
        "platt": best_of(lambda: CalibratedClassifierCV(FrozenEstimator(PassThrough(decision=True).fit(z, y)),
                                                        method="sigmoid").fit(z, y)),
        "vector": best_of(lambda: affine("vector")),
        "matrix": best_of(lambda: affine("matrix")),
    }


def criterion_mean(name):
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    path = os.path.join(target, "criterion", "calibrate_fit_100k_x10", name, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["mean"]["point_estimate"] * 1e-9


def main():
    if "--dirichlet-only" in sys.argv:
        dirichlet_only()
        return
    z, y = make_data()
    peer = sklearn_peers(z, y)
    py312 = os.environ.get("CALIBRA_DIRICHLET_PYTHON", "/work/pyenv/dirichlet312/bin/python")
    if os.path.exists(py312):
        out = subprocess.run([py312, __file__, "--dirichlet-only"], check=True, capture_output=True, text=True)
        peer.update(json.loads(out.stdout.strip().splitlines()[-1]))
    print("peer seconds:", json.dumps(peer))
    if "--skip-rust" in sys.argv:
        return
    env = dict(os.environ, CALIBRA_BENCH_DATA=DATA)
    subprocess.run(["cargo", "bench", "--bench", "calibrate", "--", "--noplot"], cwd=ROOT, env=env, check=True)
    print(f"{'method':<12} {'peer s':>10} {'calibra s':>10} {'peer/calibra':>13}")
    for name, seconds in peer.items():
        ours = criterion_mean(name)
        print(f"{name:<12} {seconds:>10.4f} {ours:>10.4f} {seconds / ours:>13.2f}")


if __name__ == "__main__":
    main()
