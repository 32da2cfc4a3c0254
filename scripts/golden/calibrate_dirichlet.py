"""Golden vectors for Dirichlet calibration (calibra-calibrate, spec §B4) from dirichletcal 0.5.3.

dirichletcal 0.5.3 needs Python >= 3.12 and jax (on 3.11 pip falls back to an old sdist that does not
build), so this script runs in its own environment, e.g.

    /root/.pyenv/versions/3.12.1/bin/python -m venv /work/pyenv/dirichlet312
    /work/pyenv/dirichlet312/bin/pip install dirichletcal==0.5.3 scikit-learn scipy numpy
    CALIBRA_GOLDEN_VENV=/work/pyenv/dirichlet312 scripts/golden/venv.sh python scripts/golden/calibrate_dirichlet.py

(versions used are recorded in the output). Each case also carries a hand oracle: a scipy L-BFGS-B fit
of the same objective (ref_row, reg_norm, exact log-softmax instead of dirichletcal's clip on q), and the
largest difference between the two. Deterministic: fixed seeds.
"""

import json
import pathlib
from importlib.metadata import version

import numpy as np
import scipy
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax
from dirichletcal.calib.fulldirichlet import FullDirichletCalibrator

OUT = pathlib.Path(__file__).resolve().parents[2] / "crates" / "calibra-calibrate" / "tests" / "golden"
VERSIONS = {p: version(p) for p in ["numpy", "scipy", "scikit-learn", "dirichletcal", "jax"]}


def tolist(a):
    return np.asarray(a, dtype=np.float64).tolist()


def log_clip(p):
    tiny = np.finfo(np.float64).tiny
    return np.log(np.clip(p, tiny, 1 - tiny))


def oracle(p, y, k, reg_lambda, reg_mu):
    """softmax(W ln p + b), last row of [W|b] fixed at 0, regulariser with reg_norm=True."""
    X = log_clip(p)
    n = len(y)
    onehot = np.eye(k)[y]
    if reg_mu is None:
        mask = np.full((k, k + 1), reg_lambda / (k * (k + 1)))
    else:
        mask = np.full((k, k + 1), reg_lambda / (k * (k - 1)))
        mask[np.arange(k), np.arange(k)] = 0.0
        mask[:, k] = reg_mu / k

    def fg(theta):
        Wb = np.zeros((k, k + 1))
        Wb[: k - 1] = theta.reshape(k - 1, k + 1)
        ls = log_softmax(X @ Wb[:, :k].T + Wb[:, k], axis=1)
        G = (np.exp(ls) - onehot) / n
        grad = np.hstack([G.T @ X, G.sum(0)[:, None]]) + 2 * mask * Wb
        return -np.mean(ls[np.arange(n), y]) + np.sum(mask * Wb ** 2), grad[: k - 1].ravel()

    Wb0 = np.hstack([np.eye(k), np.zeros((k, 1))])
    r = minimize(fg, (Wb0 - Wb0[-1])[: k - 1].ravel(), jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-13, "ftol": 0, "maxiter": 50000, "maxcor": 20})
    Wb = np.zeros((k, k + 1))
    Wb[: k - 1] = r.x.reshape(k - 1, k + 1)
    return lambda q: softmax(log_clip(q) @ Wb[:, :k].T + Wb[:, k], axis=1)


def main():
    rng = np.random.default_rng(306)
    cases = []
    for name, n, k, reg_lambda, reg_mu in [("unregularised_k3", 150, 3, 0.0, None),
                                           ("odir_k4", 120, 4, 0.5, 0.1),
                                           ("l2_k3", 120, 3, 0.3, None)]:
        y = np.arange(n) % k  # every class present (dirichletcal sizes W by the classes it sees)
        rng.shuffle(y)
        z = rng.normal(0, 1, (n, k))
        z[np.arange(n), y] += 1.0
        p = softmax(2.5 * z, axis=1)
        zt = rng.normal(0, 1.5, (20, k))
        pt = softmax(2.5 * zt, axis=1)
        cal = FullDirichletCalibrator(reg_lambda=reg_lambda, reg_mu=reg_mu, reg_norm=True).fit(p, y)
        q = np.asarray(cal.predict_proba(pt))
        q_oracle = oracle(p, y, k, reg_lambda, reg_mu)(pt)
        cases.append({
            "name": name, "k": k, "probabilities": tolist(p.ravel()), "labels": y.tolist(),
            "regulariser": None if reg_lambda == 0.0 else (
                {"type": "odir", "lambda": reg_lambda, "mu": reg_mu} if reg_mu is not None
                else {"type": "l2", "lambda": reg_lambda}),
            "test_probabilities": tolist(pt.ravel()),
            "dirichletcal_test": tolist(q.ravel()),
            "oracle_test": tolist(q_oracle.ravel()),
            "dirichletcal_vs_oracle_max_abs": float(np.max(np.abs(q - q_oracle))),
        })
        print(name, "dirichletcal vs oracle", cases[-1]["dirichletcal_vs_oracle_max_abs"])
    payload = {"generated_by": "scripts/golden/calibrate_dirichlet.py", "versions": VERSIONS, "cases": cases}
    path = OUT / "dirichlet.json"
    path.write_text(json.dumps(payload) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
