"""Golden vectors for calibra-transfer (transferability estimators, spec §D).

Run:  /work/main/.venv-golden/bin/python scripts/golden/transfer.py   (or scripts/golden/venv.sh python ...)
Reference implementations written here in numpy / scikit-learn, each following its public reference:
  LogME            thuml/LogME LogME.py::LogME._fit_fixed_point (N > D: eigen-basis of FᵀF; N ≤ D: SVD of F)
  H-score          Bao et al. 2019 as TLlib tllib/ranking/hscore.py::h_score (np.cov, pinv rcond 1e-15)
  shrinkage H      Ibrahim et al. 2021 as TLlib regularized_h_score (sklearn LedoitWolf)
  GBC              google-research stable_transfer/transferability/gbc.py (spherical + diagonal, PCA via
                   sklearn PCA(svd_solver="full"))
  LEEP / NLEEP     google-research stable_transfer leep.py / nleep.py: PCA(n_components=0.8),
                   GaussianMixture(5*C, random_state=123); LEEP here in float64 on supplied posteriors
  TransRate        TLlib tllib/ranking/transrate.py (eps 1e-4)
  participation ratio, k-NN agreement (cosine, k=10, leave-one-out), quintiles: spec §D5 / crate docs.
The H-score of google-research (elementwise product inside the trace, spec §D2) is NOT used.
Deterministic: fixed seeds; re-running regenerates identical files.
"""

import json
import pathlib

import numpy as np
import scipy
import sklearn
from scipy.stats import spearmanr
from sklearn.covariance import LedoitWolf
from sklearn.decomposition import PCA
from sklearn.mixture import GaussianMixture

OUT = pathlib.Path(__file__).resolve().parents[2] / "crates" / "calibra-transfer" / "tests" / "golden"
VERSIONS = {"numpy": np.__version__, "scipy": scipy.__version__, "scikit-learn": sklearn.__version__}


# ---------------------------------------------------------------- references

def logme_fixed_point(f, targets):
    """Mean LogME evidence over target columns (thuml fixed point, spec §D1)."""
    f = f.astype(np.float64)
    n, d = f.shape
    if n > d:
        u_s, s_g, vh = np.linalg.svd(f.T @ f)
        s = np.sqrt(s_g)
        k = int(np.sum(s > 1e-10))
        s, vh = s[:k], vh[:k]
        u = (f @ vh.T) / s.reshape(1, -1)
    else:
        u, s, vh = np.linalg.svd(f, full_matrices=False)
    sigma = s.reshape(-1, 1) ** 2
    evidences = []
    for t in targets:
        t = t.reshape(-1, 1).astype(np.float64)
        x = u.T @ t
        x2 = x ** 2
        res_x2 = (t ** 2).sum() - x2.sum()
        alpha, beta = 1.0, 1.0
        for _ in range(11):
            tau = alpha / beta
            gamma = (sigma / (sigma + tau)).sum()
            m2 = (sigma * x2 / ((tau + sigma) ** 2)).sum()
            res2 = (x2 / ((1 + sigma / tau) ** 2)).sum() + res_x2
            alpha = gamma / (m2 + 1e-5)
            beta = (n - gamma) / (res2 + 1e-5)
            if abs(alpha / beta - tau) / tau <= 1e-3:
                break
        ev = (d / 2.0 * np.log(alpha) + n / 2.0 * np.log(beta) - 0.5 * np.sum(np.log(alpha + beta * sigma))
              - beta / 2.0 * res2 - alpha / 2.0 * m2 - n / 2.0 * np.log(2 * np.pi)) / n
        evidences.append(ev)
    return float(np.mean(evidences))


def logme_classes(f, y):
    c = int(y.max() + 1)
    return logme_fixed_point(f, [(y == i).astype(np.float64) for i in range(c)])


def class_mean_matrix(f, y):
    g = np.zeros_like(f)
    for i in range(int(y.max() + 1)):
        if np.any(y == i):
            g[y == i] = f[y == i].mean(axis=0)
    return g


def hscore(f, y):
    covf = np.cov(f, rowvar=False)
    covg = np.cov(class_mean_matrix(f, y), rowvar=False)
    return float(np.trace(np.linalg.pinv(covf, rcond=1e-15) @ covg))


def hscore_shrinkage(f, y):
    f = f - f.mean(axis=0, keepdims=True)
    lw = LedoitWolf(assume_centered=False).fit(f)
    covg = np.cov(class_mean_matrix(f, y), rowvar=False)
    return float(np.trace(np.linalg.pinv(lw.covariance_, rcond=1e-15) @ ((1 - lw.shrinkage_) * covg))), float(lw.shrinkage_)


def gbc(f, y, gaussian, pca=None):
    if pca is not None:
        f = PCA(n_components=pca, svd_solver="full").fit_transform(f)
    stats = {}
    for c in np.unique(y):
        fc = f[y == c]
        stats[c] = (fc.mean(axis=0), np.maximum(fc.var(axis=0), 1e-4))
    total = 0.0
    for c1 in stats:
        for c2 in stats:
            if c1 == c2:
                continue
            m1, v1 = stats[c1]
            m2, v2 = stats[c2]
            if gaussian == "spherical":
                v1, v2 = np.mean(v1), np.mean(v2)
            avg = (v1 + v2) / 2
            first = np.sum((m1 - m2) ** 2 / avg) / 8
            second = np.sum(np.log(avg)) - 0.5 * np.sum(np.log(v1)) - 0.5 * np.sum(np.log(v2))
            total += np.exp(-(first + 0.5 * second))
    return float(-total)


def leep(theta, y):
    c = int(y.max() + 1)
    onehot = np.eye(c)[y]
    occ = theta.T @ onehot  # [Z, C]
    s = occ.sum(axis=1, keepdims=True)
    cond = np.divide(occ, s, out=np.zeros_like(occ), where=s != 0)
    eep = np.sum((theta @ cond) * onehot, axis=1)
    return float(np.mean(np.where(eep > 0, np.log(np.where(eep > 0, eep, 1.0)), -np.log(c))))


def nleep_sklearn(f, y):
    p = PCA(n_components=0.8, svd_solver="full").fit_transform(f)
    comps = 5 * int(y.max() + 1)
    gmm = GaussianMixture(n_components=comps, random_state=123).fit(p)
    return leep(gmm.predict_proba(p), y), int(p.shape[1])


def coding_rate(z, eps=1e-4):
    n, d = z.shape
    return 0.5 * np.linalg.slogdet(np.eye(d) + 1 / (n * eps) * z.T @ z)[1]


def transrate(f, y, eps=1e-4):
    z = f - f.mean(axis=0, keepdims=True)
    c = int(y.max() + 1)
    return float(coding_rate(z, eps) - sum(coding_rate(z[y == i], eps) for i in range(c)) / c)


def participation_ratio(f):
    lam = np.clip(np.linalg.eigvalsh(np.cov(f, rowvar=False)), 0, None)
    return float(lam.sum() ** 2 / (lam ** 2).sum())


def knn_neighbours(f, k=10):
    norm = np.linalg.norm(f, axis=1, keepdims=True)
    u = f / np.where(norm > 0, norm, 1.0)
    sims = u @ u.T
    np.fill_diagonal(sims, -np.inf)
    # stable sort of -similarity: ties go to the lower index
    return np.argsort(-sims, axis=1, kind="stable")[:, :k]


def knn_label_agreement(f, y, k=10):
    nb = knn_neighbours(f, k)
    return float(np.mean((y[nb] == y[:, None]).mean(axis=1)))


def knn_outcome_agreement(f, v, k=10):
    nb = knn_neighbours(f, k)
    return float(spearmanr(v, v[nb].mean(axis=1)).statistic)


def quintiles(v):
    edges = np.quantile(v, [0.2, 0.4, 0.6, 0.8])
    return np.searchsorted(edges, v, side="right")


# ---------------------------------------------------------------- data

def clusters(rng, n, d, c, spread=0.45, offset=3.0):
    y = np.arange(n) % c
    rng.shuffle(y)
    centres = rng.normal(0, spread, size=(c, d))
    scales = rng.uniform(0.5, 1.5, size=d)
    f = centres[y] + rng.normal(size=(n, d)) * scales + offset
    return f, y


def dump(name, payload):
    payload = {"generated_by": "scripts/golden/transfer.py", "versions": VERSIONS, **payload}
    (OUT / name).write_text(json.dumps(payload, indent=None, separators=(",", ":")) + "\n")


def case_tall():
    """N > D: every estimator (LogME via the eigen-basis)."""
    rng = np.random.default_rng(20261201)
    n, d, c = 120, 16, 4
    f, y = clusters(rng, n, d, c)
    v = f[:, :3].sum(axis=1) + 0.5 * y + rng.normal(size=n)  # a continuous outcome
    theta = rng.dirichlet(np.ones(6), size=n)
    sh, alpha = hscore_shrinkage(f, y)
    nl, nl_dims = nleep_sklearn(f, y)
    vq = quintiles(v)
    return {
        "n": n, "d": d, "features": f.ravel().tolist(), "labels": y.tolist(), "outcome": v.tolist(),
        "posteriors": theta.ravel().tolist(), "posterior_columns": 6,
        "expected": {
            "logme": logme_classes(f, y),
            "logme_regression": logme_fixed_point(f, [v]),
            "hscore": hscore(f, y),
            "hscore_shrinkage": sh,
            "ledoit_wolf_shrinkage": alpha,
            "gbc_spherical": gbc(f, y, "spherical"),
            "gbc_diagonal": gbc(f, y, "diagonal"),
            "gbc_spherical_pca8": gbc(f, y, "spherical", pca=8),
            "gbc_diagonal_pca8": gbc(f, y, "diagonal", pca=8),
            "transrate": transrate(f, y),
            "effective_dimensionality": participation_ratio(f),
            "knn_agreement": knn_label_agreement(f, y),
            "knn_outcome_agreement": knn_outcome_agreement(f, v),
            "leep": leep(theta, y),
            "nleep_sklearn": nl,
            "nleep_pca_components": nl_dims,
            "outcome_quintiles": vq.tolist(),
            "quintile_logme_classes": logme_classes(f, vq),
            "quintile_hscore": hscore(f, vq),
        },
    }


def case_wide():
    """N ≤ D: LogME through the thin SVD of F; TransRate classes with n_c < d."""
    rng = np.random.default_rng(7)
    n, d, c = 30, 50, 3
    f, y = clusters(rng, n, d, c, offset=-1.0)
    return {
        "n": n, "d": d, "features": f.ravel().tolist(), "labels": y.tolist(),
        "expected": {
            "logme": logme_classes(f, y),
            "gbc_spherical": gbc(f, y, "spherical"),
            "gbc_diagonal": gbc(f, y, "diagonal"),
            "transrate": transrate(f, y),
            "effective_dimensionality": participation_ratio(f),
            "knn_agreement": knn_label_agreement(f, y),
        },
    }


def case_multilabel():
    """Three binary labels with missing values (-1): every estimator per label, then the mean."""
    rng = np.random.default_rng(99)
    n, d, labels = 90, 8, 3
    f = rng.normal(size=(n, d)) + 0.5
    w = rng.normal(size=(d, labels))
    lab = (f @ w + rng.normal(size=(n, labels)) > 0).astype(int)
    lab[rng.uniform(size=(n, labels)) < 0.15] = -1
    per = {"logme": [], "hscore": [], "gbc_diagonal": [], "transrate": []}
    for j in range(labels):
        keep = lab[:, j] >= 0
        fj, yj = f[keep], lab[keep, j]
        per["logme"].append(logme_classes(fj, yj))
        per["hscore"].append(hscore(fj, yj))
        per["gbc_diagonal"].append(gbc(fj, yj, "diagonal"))
        per["transrate"].append(transrate(fj, yj))
    return {
        "n": n, "d": d, "labels": labels, "features": f.ravel().tolist(), "values": lab.ravel().tolist(),
        "expected": {k: float(np.mean(v)) for k, v in per.items()},
    }


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    dump("tall.json", case_tall())
    dump("wide.json", case_wide())
    dump("multilabel.json", case_multilabel())


if __name__ == "__main__":
    main()
