"""Golden vectors for the split conformal prediction sets of crates/calibra-calibrate, from MAPIE 1.6.

Writes crates/calibra-calibrate/tests/golden/conformal.json, read by
crates/calibra-calibrate/tests/parity.rs (`conformal_*` tests). Deterministic (fixed seeds).

    /tmp/selective-venv/bin/python scripts/golden/conformal.py    # a venv with mapie==1.6.* (numpy, sklearn)

Peers:
- LAC and APS: MAPIE's public path, `SplitConformalClassifier(estimator, confidence_level=1 - alpha,
  conformity_score=..., prefit=True, random_state=SEED).conformalize(P_cal, y_cal).predict_set(P_test,
  conformity_score_params={"include_last_label": ...})`, with a prefit estimator whose `predict_proba`
  returns its input (so the probabilities are the data). MAPIE draws its uniforms from
  `check_random_state(SEED)` afresh at each use: `RandomState(SEED).uniform(size=n_cal)` for the APS/RAPS
  calibration scores and `RandomState(SEED).uniform(size=(n_test, 1))` for the randomised rule; both
  arrays are stored, and calibra is fed the same draws.
- RAPS: MAPIE's `RAPSConformityScore` methods with `k_star` and `lambda_star` set to the case's `k_reg`
  and `lambda` (MAPIE's own public RAPS picks them on a stratified 20 % sub-split; calibra takes them as
  parameters): `get_conformity_scores` (randomised APS score), `_regularize_conformity_score`,
  `_compute_classification_quantile`, `get_prediction_sets`.
- ties: numpy's default `argsort` (used by MAPIE to rank classes) is a SIMD sort on x86 whose order of
  tied probabilities depends on the machine (measured here: argsort([.2 .3 .2 .3 0 0]) = [5 4 0 2 3 1],
  stable = [4 5 0 2 1 3]). The script therefore runs MAPIE with `numpy.argsort` made stable
  (kind="stable"), which turns MAPIE's `fliplr(argsort(p))` into "descending, ties to the higher class
  index", the rule calibra implements; rows without ties are unaffected (the k4 and k3_small data agree
  with the unpatched MAPIE too, which the script asserts).
- marginal coverage / mean set size: mapie.metrics.classification classification_coverage_score /
  classification_mean_width_score.
"""

from __future__ import annotations

import json
import re
from importlib.metadata import version
from pathlib import Path

import numpy as np
from mapie.classification import SplitConformalClassifier
from mapie.conformity_scores import APSConformityScore, RAPSConformityScore
from mapie.metrics.classification import classification_coverage_score, classification_mean_width_score
from mapie.utils import _compute_classification_quantile
from sklearn.base import BaseEstimator, ClassifierMixin

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "calibra-calibrate" / "tests" / "golden" / "conformal.json"
SEED = 20261201


class Identity(ClassifierMixin, BaseEstimator):
    """A prefit classifier whose probabilities are its features."""

    def fit(self, X, y):
        self.classes_ = np.arange(X.shape[1])
        self.n_features_in_ = X.shape[1]
        return self

    def predict_proba(self, X):
        return np.asarray(X)

    def predict(self, X):
        return np.argmax(X, axis=1)


def probs_of(rng, n, k, signal, ties=False):
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) * 1.2 + signal * np.eye(k)[y]
    if ties:
        z = np.round(z)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p = p / p.sum(axis=1, keepdims=True)
    return np.round(p, 12) / np.round(p, 12).sum(axis=1, keepdims=True), y


def sets_of(mask):
    return [[int(c) for c in np.nonzero(row)[0]] for row in mask]


def public_case(name, data, p_cal, y_cal, p_test, y_test, alpha, score, last):
    k = p_cal.shape[1]
    est = Identity().fit(p_cal, y_cal)
    mapie = SplitConformalClassifier(estimator=est, confidence_level=1 - alpha, conformity_score=score,
                                     prefit=True, random_state=SEED)
    mapie.conformalize(p_cal, y_cal)
    params = {} if score == "lac" else {"include_last_label": last}
    _, mask = mapie.predict_set(p_test, conformity_score_params=params)
    mask = mask[:, :, 0]
    q = float(np.ravel(mapie._mapie_classifier.conformity_score_function_.quantiles_)[0])
    return {
        "name": name, "data": data, "method": score, "last_label": {True: "include", False: "exclude"}.get(last, last),
        "alpha": alpha, "k": k, "lambda": 0.0, "k_reg": 0,
        "quantile": q,
        "sets": sets_of(mask),
        "coverage": float(classification_coverage_score(y_test, mask[:, :, None])[0]),
        "mean_set_size": float(classification_mean_width_score(mask[:, :, None])[0]),
    }


def raps_case(name, data, p_cal, y_cal, p_test, y_test, alpha, lam, k_reg, last):
    k = p_cal.shape[1]
    cs = RAPSConformityScore()
    cs.classes = np.arange(k)
    cs.random_state = SEED
    alpha_np = np.array([alpha])
    # RAPS's own get_conformity_scores first scores its sub-split; the APS method it then calls is this.
    scores = APSConformityScore.get_conformity_scores(cs, y_cal, p_cal, y_enc=y_cal)
    k_star = np.array([k_reg])
    reg = cs._regularize_conformity_score(k_star, lam, scores, cs.cutoff)
    q = _compute_classification_quantile(reg, alpha_np)
    cs.quantiles_ = q
    cs.k_star = k_star
    cs.lambda_star = lam
    y_rep = np.repeat(p_test[:, :, None], 1, axis=2)
    mask = cs.get_prediction_sets(y_rep, reg, alpha_np, cv="prefit", include_last_label=last)[:, :, 0]
    return {
        "name": name, "data": data, "method": "raps", "last_label": {True: "include", False: "exclude"}.get(last, last),
        "alpha": alpha, "k": k, "lambda": lam, "k_reg": k_reg,
        "quantile": float(np.ravel(q)[0]),
        "sets": sets_of(mask),
        "coverage": float(classification_coverage_score(y_test, mask[:, :, None])[0]),
        "mean_set_size": float(classification_mean_width_score(mask[:, :, None])[0]),
    }


_ARGSORT = np.argsort


def stable_argsort(a, axis=-1, kind=None, order=None, **kw):
    return _ARGSORT(a, axis=axis, kind="stable", order=order, **kw)


def read_example(name, multilabel=False):
    import csv
    with open(ROOT / "examples" / name) as fh:
        rows = list(csv.DictReader(fh))
    cols = [c for c in rows[0] if c.startswith("logit_")]
    z = np.array([[float(r[c]) for c in cols] for r in rows])
    if multilabel:
        t = np.array([[(-1 if r["label_" + c[6:]] == "" else int(r["label_" + c[6:]])) for c in cols] for r in rows])
        return 1.0 / (1.0 + np.exp(-z)), t, [r["id"] for r in rows]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True), np.array([int(r["label"]) for r in rows]), [r["id"] for r in rows]


def lac_sets(p_cal, y_cal, p_test, alpha):
    est = Identity().fit(p_cal, y_cal)
    mapie = SplitConformalClassifier(estimator=est, confidence_level=1 - alpha, conformity_score="lac", prefit=True)
    mapie.conformalize(p_cal, y_cal)
    _, mask = mapie.predict_set(p_test)
    return [" ".join(str(c) for c in np.nonzero(row)[0]) for row in mask[:, :, 0]]


def write_examples():
    """End-to-end LAC sets of `calibra calibrate --method lac` on the shipped examples (no draws needed)."""
    out_path = ROOT / "tests" / "golden" / "conformal_examples.json"
    cases = []
    p_cal, y_cal, _ = read_example("miscalibrated_cal.csv")
    p_test, _, ids = read_example("miscalibrated_test.csv")
    for alpha in (0.1, 0.05):
        cases.append({"cal": "miscalibrated_cal.csv", "test": "miscalibrated_test.csv", "alpha": alpha,
                      "ids": ids, "set": lac_sets(p_cal, y_cal, p_test, alpha)})
    p_cal, t_cal, _ = read_example("miscalibrated_multilabel_cal.csv", multilabel=True)
    p_test, _, ids = read_example("miscalibrated_multilabel_test.csv", multilabel=True)
    per_label = {}
    for j in range(p_cal.shape[1]):
        keep = t_cal[:, j] >= 0
        two_cal = np.stack([1 - p_cal[keep, j], p_cal[keep, j]], axis=1)
        two_test = np.stack([1 - p_test[:, j], p_test[:, j]], axis=1)
        per_label[j] = lac_sets(two_cal, t_cal[keep, j], two_test, 0.1)
    cases.append({"cal": "miscalibrated_multilabel_cal.csv", "test": "miscalibrated_multilabel_test.csv",
                  "alpha": 0.1, "ids": ids, "set_per_label": [per_label[j] for j in sorted(per_label)]})
    out_path.write_text(json.dumps({"generator": "scripts/golden/conformal.py (MAPIE SplitConformalClassifier, lac)",
                                    "cases": cases}) + "\n")
    print(f"wrote {out_path}")


def main():
    write_examples()
    unpatched = run(patched=False)
    patched = run(patched=True)
    for a, b in zip(unpatched["cases"], patched["cases"]):
        if a["data"] != "k6_ties":
            assert a == b, a["name"]
    text = json.dumps(patched, indent=1)
    text = re.sub(r"\[\s*([-0-9.e+,\s]*?)\s*\]", lambda m: "[" + re.sub(r"\s+", "", m.group(1)).replace(",", ", ") + "]", text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text + "\n")
    print(f"wrote {OUT}: {len(patched['cases'])} cases")


def run(patched):
    np.argsort = stable_argsort if patched else _ARGSORT
    rng = np.random.default_rng(SEED)
    cases, data = [], {}
    for tag, n_cal, n_test, k, signal, ties in (("k4", 200, 60, 4, 1.5, False), ("k6_ties", 150, 50, 6, 1.0, True),
                                                ("k3_small", 19, 30, 3, 2.0, False)):
        p_cal, y_cal = probs_of(rng, n_cal, k, signal, ties)
        p_test, y_test = probs_of(rng, n_test, k, signal, ties)
        data[tag] = {
            "k": k,
            "cal_probs": [float(v) for v in p_cal.ravel()], "cal_labels": [int(v) for v in y_cal],
            "test_probs": [float(v) for v in p_test.ravel()], "test_labels": [int(v) for v in y_test],
            "cal_draws": [float(v) for v in np.random.RandomState(SEED).uniform(size=len(y_cal))],
            "test_draws": [float(v) for v in np.random.RandomState(SEED).uniform(size=(len(y_test), 1)).ravel()],
        }
        for alpha in (0.1, 0.2):
            cases.append(public_case(f"lac_{tag}_a{alpha}", tag, p_cal, y_cal, p_test, y_test, alpha, "lac", True))
            for last in (True, False, "randomized"):
                cases.append(public_case(f"aps_{tag}_a{alpha}_{last}", tag, p_cal, y_cal, p_test, y_test, alpha, "aps", last))
                for lam, k_reg in ((0.01, 1), (0.2, 2)):
                    cases.append(raps_case(f"raps_{tag}_a{alpha}_{last}_l{lam}_k{k_reg}", tag, p_cal, y_cal, p_test, y_test,
                                           alpha, lam, k_reg, last))
    doc = {"generator": "scripts/golden/conformal.py", "versions": {"mapie": version("mapie"), "numpy": np.__version__},
           "argsort": "stable", "tolerance": {"quantile": 1e-12}, "data": data, "cases": cases}
    np.argsort = _ARGSORT
    return doc


if __name__ == "__main__":
    main()
