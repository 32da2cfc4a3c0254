"""Peer timings for calibra-transfer (issue 18): the numpy / scikit-learn reference implementations of
scripts/golden/transfer.py on n = 20,000, d = 768, K = 8, interleaved with calibra's criterion bench.

Run:  /work/main/.venv-golden/bin/python benches/peers/transfer_peer.py [--skip-rust]
Writes the data once to $CALIBRA_TRANSFER_BENCH_DIR (default /tmp/calibra-transfer-bench; ~123 MB, not
committed): features.f64 (row-major little-endian f64) and labels.u32. The Rust bench
(crates/calibra-transfer/benches/estimators.rs) reads the same files. Order: numpy, calibra, numpy;
the 1-minute load average is printed before each part.

Data: 8 classes (round-robin labels, shuffled), a 24-dimensional latent (class centre + unit noise)
mapped to 768 dimensions by a fixed random matrix, plus isotropic noise 0.05 — low-rank enough that
NLEEP's PCA to 80 % variance keeps few components, as real encoder features do.
"""

import os
import pathlib
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts" / "golden"))
import transfer as ref  # noqa: E402

N, D, K, LATENT = 20_000, 768, 8, 24
DIR = pathlib.Path(os.environ.get("CALIBRA_TRANSFER_BENCH_DIR", "/tmp/calibra-transfer-bench"))
ROOT = pathlib.Path(__file__).resolve().parents[2]


def make_data():
    rng = np.random.default_rng(18)
    y = np.arange(N) % K
    rng.shuffle(y)
    centres = rng.normal(0, 1.0, size=(K, LATENT))
    w = rng.normal(size=(LATENT, D)) / np.sqrt(LATENT)
    f = (centres[y] + rng.normal(size=(N, LATENT))) @ w + 0.05 * rng.normal(size=(N, D))
    DIR.mkdir(parents=True, exist_ok=True)
    f.astype("<f8").tofile(DIR / "features.f64")
    y.astype("<u4").tofile(DIR / "labels.u32")


def load():
    f = np.fromfile(DIR / "features.f64", dtype="<f8").reshape(N, D)
    y = np.fromfile(DIR / "labels.u32", dtype="<u4").astype(np.int64)
    return f, y


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def numpy_round(f, y):
    t4, vals = timed(lambda: (ref.logme_classes(f, y), ref.hscore(f, y), ref.gbc(f, y, "spherical", pca=64),
                              ref.transrate(f, y)))
    tn, nl = timed(lambda: ref.nleep_sklearn(f, y))
    print(f"load {os.getloadavg()[0]:.2f}  numpy logme+hscore+gbc(pca64)+transrate {t4:.3f} s  values {vals}")
    print(f"load {os.getloadavg()[0]:.2f}  sklearn nleep (PCA 0.8 -> {nl[1]} dims, GMM {5 * K}) {tn:.3f} s  value {nl[0]}")


def main():
    if not (DIR / "features.f64").exists():
        make_data()
    f, y = load()
    numpy_round(f, y)
    if "--skip-rust" not in sys.argv:
        print(f"load {os.getloadavg()[0]:.2f}  cargo bench -p calibra-transfer --bench estimators")
        env = dict(os.environ, CALIBRA_TRANSFER_BENCH_DIR=str(DIR))
        subprocess.run(["cargo", "bench", "-p", "calibra-transfer", "--bench", "estimators"], cwd=ROOT, env=env,
                       check=True)
        numpy_round(f, y)


if __name__ == "__main__":
    main()
