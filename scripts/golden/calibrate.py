"""Golden vectors for calibra-calibrate (temperature, isotonic, Platt, vector/matrix, per-label).

Run:  CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/calibrate.py
Peers (versions recorded in every file): scikit-learn 1.9.1 (`_TemperatureScaling`, `IsotonicRegression`,
`CalibratedClassifierCV(FrozenEstimator, method="isotonic"/"sigmoid")`, `_sigmoid_calibration`),
scipy 1.17.1 (`minimize_scalar(method="bounded")`, L-BFGS-B for the vector/matrix oracle).
Dirichlet calibration has its own script (calibrate_dirichlet.py, Python 3.12 + dirichletcal 0.5.3).
Deterministic: fixed seeds; re-running regenerates identical files. Spec: §B of
shared/spec/calibration-metrics-transfer.md.
"""

import json
import pathlib

import numpy as np
import scipy
import sklearn
from scipy.optimize import minimize, minimize_scalar
from scipy.special import log_softmax, softmax, expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV, _sigmoid_calibration
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression

OUT = pathlib.Path(__file__).resolve().parents[2] / "crates" / "calibra-calibrate" / "tests" / "golden"
VERSIONS = {"numpy": np.__version__, "scipy": scipy.__version__, "scikit-learn": sklearn.__version__}


def dump(name, payload):
    payload = {"generated_by": "scripts/golden/calibrate.py", "versions": VERSIONS, **payload}
    path = OUT / name
    path.write_text(json.dumps(payload) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def tolist(a):
    return np.asarray(a, dtype=np.float64).tolist()


def make_logits(rng, n, k, signal, scale):
    """Over-confident logits: class signal plus noise, multiplied by `scale`."""
    y = rng.integers(0, k, n)
    z = rng.normal(0.0, 1.0, (n, k))
    z[np.arange(n), y] += signal
    return z * scale, y


class PassThrough(ClassifierMixin, BaseEstimator):
    """A 'fitted classifier' whose features ARE its scores: predict_proba(X) = X (or decision_function)."""

    def __init__(self, decision=False, k=2):
        self.decision = decision
        self.k = k

    def fit(self, X, y):
        self.classes_ = np.arange(self.k)
        return self

    def predict(self, X):
        return np.argmax(np.asarray(X), axis=1)

    def predict_proba(self, X):
        if self.decision:
            raise AttributeError
        return np.asarray(X)

    def __getattribute__(self, name):
        if name == "decision_function" and not object.__getattribute__(self, "decision"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    def decision_function(self, X):
        X = np.asarray(X)
        return X[:, 1] - X[:, 0] if self.k == 2 else X


# ----------------------------------------------------------------------------------------------
# Temperature scaling: sklearn _TemperatureScaling (+ the bounded scipy search it runs).
def temperature_cases():
    from sklearn.calibration import _TemperatureScaling

    rng = np.random.default_rng(301)
    cases = []

    def case(name, logits, y, test, kind="logit"):
        ts = _TemperatureScaling().fit(logits if kind == "logit" else logits, y)
        conv = np.log(logits + 1e-12) if kind == "probability" else logits
        # The same bounded search written out (what the spec describes), as a cross-check.
        f = lambda lb: np.mean(-log_softmax(np.exp(lb) * conv, axis=1)[np.arange(len(y)), y])
        r = minimize_scalar(f, bounds=(-10.0, 10.0), method="bounded", options={"xatol": 64 * np.finfo(float).eps})
        assert abs(np.exp(r.x) - ts.beta_) <= 1e-7 * ts.beta_, (np.exp(r.x) - ts.beta_, ts.beta_)
        cases.append({
            "name": name, "kind": kind, "k": int(logits.shape[1]),
            "scores": tolist(logits.ravel()), "labels": y.tolist(),
            "test_scores": tolist(test.ravel()),
            "beta": float(ts.beta_), "log_beta": float(np.log(ts.beta_)),
            "nll_after": float(f(np.log(ts.beta_))),
            "test_probabilities": tolist(ts.predict(test).ravel()),
        })

    z, y = make_logits(rng, 90, 4, 1.5, 3.0)
    zt, _ = make_logits(rng, 20, 4, 1.5, 3.0)
    case("overconfident_k4", z, y, zt)
    z, y = make_logits(rng, 80, 3, 2.0, 0.4)
    zt, _ = make_logits(rng, 15, 3, 2.0, 0.4)
    case("underconfident_k3", z, y, zt)
    z, y = make_logits(rng, 100, 2, 1.0, 2.5)
    zt, _ = make_logits(rng, 10, 2, 1.0, 2.5)
    case("binary_k2", z, y, zt)
    # Stored probabilities: sklearn takes log(p + 1e-12).
    z, y = make_logits(rng, 70, 3, 1.5, 3.0)
    zt, _ = make_logits(rng, 10, 3, 1.5, 3.0)
    case("probabilities_k3", softmax(z, axis=1), y, softmax(zt, axis=1), kind="probability")
    # Perfectly separated: the optimum β → ∞, the search ends at the upper bound log β = 10.
    y = np.arange(30) % 3
    z = np.full((30, 3), -1.0)
    z[np.arange(30), y] = 1.0
    case("separated_upper_bound", z, y, z[:5])
    # Anti-correlated: optimum β ≤ 0, the search ends at the lower bound log β = −10.
    case("anticorrelated_lower_bound", -z, y, -z[:5])
    dump("temperature.json", {"cases": cases})


# ----------------------------------------------------------------------------------------------
# Isotonic: IsotonicRegression (binary) and CalibratedClassifierCV(FrozenEstimator, "isotonic").
def isotonic_cases():
    rng = np.random.default_rng(302)
    binary = []
    for name, n, decimals in [("ties", 80, 1), ("continuous", 60, None), ("few", 5, None)]:
        s = rng.uniform(0, 1, n)
        if decimals is not None:
            s = np.round(s, decimals)
        t = (rng.uniform(0, 1, n) < s).astype(float)
        iso = IsotonicRegression(out_of_bounds="clip").fit(s, t)
        xq = np.concatenate([[-0.5, 0.0, 1.0, 1.5], rng.uniform(-0.1, 1.1, 30), s[:10]])
        binary.append({
            "name": name, "scores": tolist(s), "targets": tolist(t),
            "x_thresholds": tolist(iso.X_thresholds_), "y_thresholds": tolist(iso.y_thresholds_),
            "query": tolist(xq), "predictions": tolist(iso.predict(xq)),
        })
    ovr = []
    for name, n, k in [("k3", 90, 3), ("k2", 60, 2), ("k4_ties", 80, 4)]:
        z, y = make_logits(rng, n, k, 1.2, 2.0)
        p = softmax(z, axis=1)
        if name.endswith("ties"):
            p = np.round(p, 2)
            p[:, -1] = 1.0 - p[:, :-1].sum(axis=1)
            p = np.clip(p, 0, 1)
            p /= p.sum(axis=1, keepdims=True)
        zt, _ = make_logits(rng, 25, k, 1.2, 2.0)
        pt = softmax(zt, axis=1)
        clf = PassThrough(k=k).fit(p, y)
        cal = CalibratedClassifierCV(FrozenEstimator(clf), method="isotonic").fit(p, y)
        ovr.append({
            "name": name, "k": k, "probabilities": tolist(p.ravel()), "labels": y.tolist(),
            "test_probabilities": tolist(pt.ravel()),
            "calibrated_test": tolist(cal.predict_proba(pt).ravel()),
            "calibrated_train": tolist(cal.predict_proba(p).ravel()),
        })
    dump("isotonic.json", {"binary": binary, "one_vs_rest": ovr})


# ----------------------------------------------------------------------------------------------
# Platt: _sigmoid_calibration (binary), CalibratedClassifierCV(method="sigmoid") (one-vs-rest).
def platt_exact(f, y):
    """The exact minimiser of the same objective (tight tolerance), to report sklearn's iterate error."""
    f = np.asarray(f, float)
    scale = max(np.max(np.abs(f)), 1.0) if np.max(np.abs(f)) >= 30 else 1.0
    F = f / scale
    p1 = float(np.sum(y > 0)); p0 = len(y) - p1
    T = np.where(y > 0, (p1 + 1) / (p1 + 2), 1 / (p0 + 2))

    def lg(ab):
        raw = -(ab[0] * F + ab[1])
        loss = np.logaddexp(0, raw) - T * raw
        g = expit(raw) - T
        return loss.mean(), np.array([-(g * F).mean(), -g.mean()])

    r = minimize(lg, [0.0, np.log((p0 + 1) / (p1 + 1))], jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-14, "ftol": 0, "maxiter": 10000})
    return r.x[0] / scale, r.x[1]


def platt_cases():
    rng = np.random.default_rng(303)
    binary = []
    for name, n, spread, prob in [("logodds", 120, 2.0, False), ("large_scores_rescaled", 90, 40.0, False),
                                  ("probability_scores", 100, 1.5, True), ("imbalanced", 60, 1.0, False)]:
        y = (rng.uniform(0, 1, n) < (0.15 if name == "imbalanced" else 0.5)).astype(int)
        f = rng.normal(0, 1, n) * spread + (2 * y - 1) * spread * 0.8
        if prob:
            f = expit(f)
        a, b = _sigmoid_calibration(f, y)
        ea, eb = platt_exact(f, y)
        fq = np.concatenate([f[:10], rng.normal(0, spread * 2, 10) if not prob else rng.uniform(0, 1, 10)])
        binary.append({
            "name": name, "scores": tolist(f), "labels": y.tolist(), "a": float(a), "b": float(b),
            "exact_a": float(ea), "exact_b": float(eb),
            "query": tolist(fq), "predictions": tolist(expit(-(a * fq + b))),
        })
    ovr = []
    for name, n, k, decision in [("k3_logits", 100, 3, True), ("k2_logits", 80, 2, True), ("k3_probabilities", 90, 3, False)]:
        z, y = make_logits(rng, n, k, 1.0, 2.0)
        zt, _ = make_logits(rng, 20, k, 1.0, 2.0)
        X, Xt = (z, zt) if decision else (softmax(z, axis=1), softmax(zt, axis=1))
        clf = PassThrough(decision=decision, k=k).fit(X, y)
        cal = CalibratedClassifierCV(FrozenEstimator(clf), method="sigmoid").fit(X, y)
        ovr.append({
            "name": name, "k": k, "score_kind": "logit" if decision else "probability",
            "scores": tolist(X.ravel()), "labels": y.tolist(), "test_scores": tolist(Xt.ravel()),
            "a": [float(c.a_) for c in cal.calibrated_classifiers_[0].calibrators],
            "b": [float(c.b_) for c in cal.calibrated_classifiers_[0].calibrators],
            "calibrated_test": tolist(cal.predict_proba(Xt).ravel()),
        })
    dump("platt.json", {"binary": binary, "one_vs_rest": ovr})


# ----------------------------------------------------------------------------------------------
# Vector / matrix scaling: scipy L-BFGS-B fit of the same objective (hand oracle; Guo's code is not
# canonical). Matrix: last row of [W|b] fixed at 0 (ref_row); ODIR in the normalised (paper) form.
def affine_fit(X, y, k, form, reg=None):
    n = len(y)
    onehot = np.eye(k)[y]

    def unpack(theta):
        if form == "diagonal":
            return np.diag(theta[:k]), theta[k:]
        Wb = np.zeros((k, k + 1))
        Wb[: k - 1] = theta.reshape(k - 1, k + 1)
        return Wb[:, :k], Wb[:, k]

    def fg(theta):
        W, b = unpack(theta)
        logits = X @ W.T + b
        ls = log_softmax(logits, axis=1)
        loss = -np.mean(ls[np.arange(n), y])
        G = (np.exp(ls) - onehot) / n
        if form == "diagonal":
            grad = np.concatenate([(G * X).sum(0), G.sum(0)])
        else:
            gW = G.T @ X
            gb = G.sum(0)
            grad = np.hstack([gW, gb[:, None]])[: k - 1].ravel()
        if reg is not None:
            lam, mu = reg
            lw, lb = lam / (k * (k - 1)), mu / k
            full = np.zeros((k, k + 1))
            full[: k - 1] = theta.reshape(k - 1, k + 1)
            mask = np.ones((k, k + 1)) * lw
            mask[np.arange(k), np.arange(k)] = 0.0
            mask[:, k] = lb
            loss += np.sum(mask * full ** 2)
            grad = grad + (2 * mask * full)[: k - 1].ravel()
        return loss, grad

    if form == "diagonal":
        theta0 = np.concatenate([np.ones(k), np.zeros(k)])
    else:
        Wb = np.hstack([np.eye(k), np.zeros((k, 1))])
        theta0 = (Wb - Wb[-1])[: k - 1].ravel()
    r = minimize(fg, theta0, jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-13, "ftol": 0, "maxiter": 50000, "maxcor": 20})
    W, b = unpack(r.x)
    return W, b, float(r.fun), float(np.max(np.abs(r.jac)))


def affine_cases():
    rng = np.random.default_rng(304)
    cases = []
    for name, form, n, k, reg in [("vector_k4", "diagonal", 120, 4, None), ("vector_k2", "diagonal", 80, 2, None),
                                  ("matrix_k3", "full", 120, 3, None), ("matrix_odir_k4", "full", 100, 4, (0.5, 0.1))]:
        z, y = make_logits(rng, n, k, 1.0, 2.0)
        zt, _ = make_logits(rng, 20, k, 1.0, 2.0)
        W, b, fun, gnorm = affine_fit(z, y, k, form, reg)
        cases.append({
            "name": name, "form": form, "k": k, "logits": tolist(z.ravel()), "labels": y.tolist(),
            "regulariser": None if reg is None else {"lambda": reg[0], "mu": reg[1], "normalised": True},
            "objective": fun, "oracle_gradient_inf_norm": gnorm,
            "weights": tolist(W.ravel()), "bias": tolist(b),
            "test_logits": tolist(zt.ravel()),
            "test_probabilities": tolist(softmax(zt @ W.T + b, axis=1).ravel()),
        })
    dump("affine.json", {"cases": cases})


# ----------------------------------------------------------------------------------------------
# Per-label (multilabel) calibration: the binary peers on each label's observed (non-blank) cells.
def per_label_cases():
    from sklearn.calibration import _TemperatureScaling

    rng = np.random.default_rng(305)
    n, l = 90, 3
    truth = rng.uniform(0, 1, (n, l)) < np.array([0.3, 0.5, 0.7])
    z = rng.normal(0, 1, (n, l)) * 2.0 + (2 * truth - 1) * 1.5
    mask = rng.uniform(0, 1, (n, l)) < 0.2  # blank cells
    zt = rng.normal(0, 2, (15, l))
    platt, iso, temp = [], [], []
    for c in range(l):
        obs = ~mask[:, c]
        f, y = z[obs, c], truth[obs, c].astype(int)
        a, b = _sigmoid_calibration(f, y)
        platt.append({"a": float(a), "b": float(b), "test": tolist(expit(-(a * zt[:, c] + b)))})
        p = expit(f)
        ir = IsotonicRegression(out_of_bounds="clip").fit(p, y)
        iso.append({"test": tolist(ir.predict(expit(zt[:, c])))})
        two = np.stack([np.zeros_like(f), f], axis=1)
        ts = _TemperatureScaling().fit(two, y)
        temp.append({"beta": float(ts.beta_), "test": tolist(expit(ts.beta_ * zt[:, c]))})
    targets = [[None if mask[i, c] else bool(truth[i, c]) for c in range(l)] for i in range(n)]
    dump("per_label.json", {
        "labels": l, "logits": tolist(z.ravel()), "targets": sum(targets, []), "test_logits": tolist(zt.ravel()),
        "platt": platt, "isotonic": iso, "temperature": temp,
    })


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    temperature_cases()
    isotonic_cases()
    platt_cases()
    affine_cases()
    per_label_cases()
