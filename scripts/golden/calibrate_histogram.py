"""Golden vectors for histogram binning in crates/calibra-calibrate, from netcal 1.4 `HistogramBinning`.

    /work/main/.venv-golden/bin/python scripts/golden/calibrate_histogram.py

Writes crates/calibra-calibrate/tests/golden/histogram.json (read by tests/parity.rs,
`histogram_binning_matches_netcal`). netcal is called as calibra calls the method: K = 2 on the 2-column
probabilities (netcal then models column 1), K > 2 on the K-column probabilities (one-vs-all, rows
normalised). Cases include probabilities exactly on bin edges (netcal fits left-closed and predicts
right-closed) and, for K > 2, a class absent from the calibration split only when netcal's output stays
finite (it divides by the row sum).
"""
import json
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
from netcal.binning import HistogramBinning

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "calibra-calibrate" / "tests" / "golden" / "histogram.json"


def probs_of(rng, n, k, edges=False):
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    if edges and k == 2:
        p[: n // 5, 1] = np.round(p[: n // 5, 1], 1)
        p[:, 0] = 1.0 - p[:, 1]
    return np.round(p, 12) / np.round(p, 12).sum(axis=1, keepdims=True), y


def case(name, rng, n_cal, n_test, k, bins, edges=False):
    p_cal, y_cal = probs_of(rng, n_cal, k, edges)
    p_test, _ = probs_of(rng, n_test, k, edges)
    if edges:
        p_test[:6, :] = [[0.5, 0.5], [0.7, 0.3], [0.0, 1.0], [1.0, 0.0], [0.9, 0.1], [0.4, 0.6]][:6] if k == 2 else p_test[:6]
    hb = HistogramBinning(bins=bins)
    hb.fit(p_cal, y_cal)
    q = hb.transform(p_test)
    if k == 2:
        q = np.stack([1 - q, q], axis=1)
    assert np.isfinite(q).all(), name
    return {"name": name, "k": k, "bins": bins, "cal_probs": p_cal.ravel().tolist(), "cal_labels": y_cal.tolist(),
            "test_probs": p_test.ravel().tolist(), "expected": q.ravel().tolist()}


def main():
    rng = np.random.default_rng(20261201)
    cases = [case("binary_b10", rng, 300, 80, 2, 10), case("binary_edges_b10", rng, 200, 60, 2, 10, edges=True),
             case("binary_b5_small", rng, 12, 30, 2, 5), case("k4_b10", rng, 400, 80, 4, 10),
             case("k6_b15", rng, 500, 60, 6, 15)]
    OUT.write_text(json.dumps({"generator": "scripts/golden/calibrate_histogram.py", "netcal": version("netcal"),
                               "tolerance": 1e-12, "cases": cases}) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
