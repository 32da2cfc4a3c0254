"""Golden vectors for crates/calibra-metrics, computed by the peer libraries named in the spec.

Run (the venv needs numpy, scipy, scikit-learn, netcal, torch, torchmetrics):

    CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/metrics.py

Writes crates/calibra-metrics/tests/golden/metrics.json, read by crates/calibra-metrics/tests/parity.rs.
Deterministic: fixed numpy seed, fixed case order; re-running must give a byte-identical file.

Peers (spec shared/spec/calibration-metrics-transfer.md, section C; tolerances from section H):
- equal-width binning with edges numpy.linspace(0, 1, B + 1) in float64 for all three conventions
  (right-closed = Guo/gpleiss `lo < c <= hi` with c == 0 put in bin 0; left-closed = netcal/np.histogram;
  torchmetrics = bucketize(right=True) - 1 with an extra bin for c == 1). Top-label and positive-class ECE
  in the left-closed convention come from netcal 1.4 (ECE/MCE on (confidence, outcome), its binary mode),
  cross-checked against the numpy re-implementation to 1e-12. The torchmetrics library values
  (`multiclass_calibration_error` casts to float32; `binary_calibration_error` keeps float64 but builds
  its edges with torch.linspace) are stored separately, with a flag where their binning of an edge-valued
  confidence differs from the float64 numpy.linspace convention (the flag is only set when a numpy
  emulation of torchmetrics' own edges/dtype reproduces the library value, so every difference is
  explained).
- class-wise ECE (section C4), Mukhoti AdaECE (C5 row 1, numpy port of focal_calibration
  AdaptiveECELoss), Nixon ACE (C5 row 2, numpy port of uncertainty-metrics GeneralCalibrationError with
  binning_scheme='adaptive', class_conditional=True, max_prob=False, norm='l1'): numpy.
- Brier: sklearn brier_score_loss (labels=range(K), scale_by_half=False = sum form; binary: 1-D form).
- NLL: sklearn log_loss(labels=range(K)) on probabilities (clip to [eps, 1 - eps], no renormalisation);
  torch.nn.functional.cross_entropy in float64 on logits.
- accuracy, macro F1 (zero_division=0), quadratic weighted kappa (labels=range(K)), ordinal MAE: sklearn.
- AUROC / AP: sklearn roc_auc_score / average_precision_score per class (one-vs-rest) or per label
  (blank targets masked); K = 2 is binary on column 1. Strict mean = NaN if any class is undefined
  (sklearn >= 1.6), skip mean = mean over defined classes.
- sensitivity at specificity: numpy on sklearn roc_curve(drop_intermediate=False) (section C11).
- rank statistics: scipy rankdata / kendalltau (tau-b) / spearmanr / weightedtau (defaults), hand tau-a.

Every input float is written so that it parses to the same double with any correctly-rounding or
naive (significand / 10^e) JSON reader: inputs are quantised to at most 15 decimals before any
metric is computed, and the script asserts that property. Expected values are written in full repr.
NaN is written as null, infinities as the strings "inf" / "-inf".
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import netcal
import numpy as np
import scipy
import scipy.stats as st
import sklearn
import torch
import torchmetrics
from netcal.metrics import ECE as NetcalECE
from netcal.metrics import MCE as NetcalMCE
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    brier_score_loss,
    cohen_kappa_score,
    f1_score,
    log_loss,
    mean_absolute_error,
    roc_auc_score,
    roc_curve,
)
from torchmetrics.functional.classification import (
    binary_calibration_error,
    multiclass_calibration_error,
)

warnings.filterwarnings("ignore")
torch.use_deterministic_algorithms(True)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "calibra-metrics" / "tests" / "golden" / "metrics.json"
SEED = 20261130
CONVENTIONS = ("right-closed", "left-closed", "torchmetrics")
ACE_CONFIGS = ((30, 0.0), (15, 0.01))
SPECIFICITIES = (0.5, 0.8, 0.9, 0.95)
# reliability bins are stored for these cases only (size budget); ECE/MCE of every case depend on them
RELIABILITY_CASES = {"random_k3_n100", "spec_self_check", "linspace_edges_b10", "ties_k3_n40",
                     "exact_zero_one_k3", "single_sample_k3", "random_n100", "tied_grid_n60",
                     "exact_zero_one_n30", "self_check_edges"}
TOL_F64 = 1e-12
TOL_F32 = 1e-6


# ----------------------------------------------------------------------------------------------
# input quantisation: every input double must survive a naive JSON float parser bit-exactly


def quantise(a, decimals: int = 15) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    return np.round(a, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0


def naive_parse_is_exact(x: float) -> bool:
    """True iff significand-as-f64 / 10^e (one rounding) gives the same double as float(repr)."""
    s = repr(float(x))
    mant, _, exp = s.partition("e")
    exp10 = int(exp) if exp else 0
    mant = mant.lstrip("-")
    whole, _, frac = mant.partition(".")
    sig = int(whole + frac)
    exp10 -= len(frac)
    if float(sig) != sig:  # significand itself not exactly representable
        return False
    if abs(exp10) > 22:  # 10^e not exact in f64
        return False
    val = float(sig) * 10.0**exp10 if exp10 >= 0 else float(sig) / 10.0 ** (-exp10)
    return val == abs(float(x))


def check_inputs(name: str, values) -> None:
    for v in np.asarray(values, dtype=np.float64).ravel():
        if math.isfinite(v):
            assert naive_parse_is_exact(v), f"{name}: input {v!r} would not parse exactly"


# ----------------------------------------------------------------------------------------------
# binning (spec C1) and reliability bins


def edges(n_bins: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, n_bins + 1)


def bin_index(c: np.ndarray, n_bins: int, convention: str) -> np.ndarray:
    e = edges(n_bins)
    if convention == "right-closed":
        return np.searchsorted(e[1:-1], c, side="left")
    if convention == "left-closed":
        return np.searchsorted(e[1:-1], c, side="right")
    if convention == "torchmetrics":
        return np.searchsorted(e, c, side="right") - 1
    raise ValueError(convention)


def num_bins_for(n_bins: int, convention: str) -> int:
    return n_bins + 1 if convention == "torchmetrics" else n_bins


def reliability(conf: np.ndarray, outcome: np.ndarray, n_bins: int, convention: str) -> dict:
    idx = bin_index(conf, n_bins, convention)
    nb = num_bins_for(n_bins, convention)
    count, cmean, amean = [], [], []
    for b in range(nb):
        m = idx == b
        count.append(int(m.sum()))
        if m.any():
            cmean.append(float(conf[m].sum() / m.sum()))
            amean.append(float(outcome[m].sum() / m.sum()))
        else:
            cmean.append(math.nan)
            amean.append(math.nan)
    return {"count": count, "confidence": cmean, "accuracy": amean}


def ece_from_bins(rel: dict, n: int) -> float:
    total = 0.0
    for c, conf, acc in zip(rel["count"], rel["confidence"], rel["accuracy"]):
        if c > 0:
            total += (c / n) * abs(acc - conf)
    return total


def mce_from_bins(rel: dict) -> float:
    vals = [abs(a - c) for n, c, a in zip(rel["count"], rel["confidence"], rel["accuracy"]) if n > 0]
    return max(vals) if vals else 0.0


def torch_edges_reimpl(conf: np.ndarray, outcome: np.ndarray, n_bins: int, dtype) -> tuple[float, float]:
    """torchmetrics' own binning: confidences in `dtype`, edges torch.linspace in `dtype`, f64 means."""
    c = torch.tensor(conf, dtype=torch.float64).to(dtype)
    e = torch.linspace(0, 1, n_bins + 1, dtype=dtype)
    idx = (torch.bucketize(c, e, right=True) - 1).numpy()
    cd = c.double().numpy()
    n = len(conf)
    ece, mce = 0.0, 0.0
    for b in range(n_bins + 1):
        m = idx == b
        if m.any():
            d = abs(outcome[m].mean() - cd[m].mean())
            ece += m.sum() / n * d
            mce = max(mce, d)
    return ece, mce


# ----------------------------------------------------------------------------------------------
# numpy ports of the adaptive variants (spec C4, C5)


def classwise_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int, convention: str) -> float:
    n, k = probs.shape
    total = 0.0
    for j in range(k):
        rel = reliability(probs[:, j], (labels == j).astype(np.float64), n_bins, convention)
        total += ece_from_bins(rel, n)
    return total / k


def adaptive_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """focal_calibration Metrics/metrics.py::AdaptiveECELoss, float64."""
    conf = probs.max(axis=1)
    pred = probs.argmax(axis=1)
    acc = (pred == labels).astype(np.float64)
    npt = len(conf)
    hist_edges = np.interp(np.linspace(0, npt, n_bins + 1), np.arange(npt), np.sort(conf))
    _, bounds = np.histogram(conf, hist_edges)
    ece = 0.0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        in_bin = (conf > lo) & (conf <= hi)
        prop = in_bin.astype(np.float64).mean()
        if prop > 0:
            ece += abs(conf[in_bin].mean() - acc[in_bin].mean()) * prop
    return float(ece)


def _nixon_adaptive_bins(predictions: np.ndarray, num_bins: int) -> np.ndarray:
    if np.size(predictions) == 0:
        return np.linspace(0, 1, num_bins + 1)[:-1]
    edge_indices = np.linspace(0, len(predictions), num_bins, endpoint=False)
    edge_indices = np.round(edge_indices).astype(int)
    edge_indices = np.minimum(edge_indices, len(predictions) - 1)
    return np.sort(predictions)[edge_indices][1:]


def _nixon_calibration_error(probs, labels, bin_upper_bounds, num_bins) -> float:
    if np.size(probs) == 0:
        return 0.0
    bin_indices = np.digitize(probs, bin_upper_bounds)
    sums = np.bincount(bin_indices, weights=probs, minlength=num_bins).astype(np.float64)
    counts = np.bincount(bin_indices, minlength=num_bins)
    counts = counts + np.finfo(sums.dtype).eps
    confidences = sums / counts
    accuracies = np.bincount(bin_indices, weights=labels, minlength=num_bins) / counts
    weighting = counts / float(len(probs.flatten()))
    return float(np.sum(np.abs((accuracies - confidences) * weighting)))


def nixon_ace(probs: np.ndarray, labels: np.ndarray, num_bins: int, threshold: float) -> float:
    """uncertainty-metrics GeneralCalibrationError(adaptive, class_conditional, not max_prob, l1)."""
    n, k = probs.shape
    onehot = np.eye(k)[labels]
    errs = []
    for j in range(k):
        p = probs[:, j]
        y = onehot[:, j]
        y = y[p > threshold]
        p = p[p > threshold]
        upper = _nixon_adaptive_bins(p, num_bins)
        errs.append(_nixon_calibration_error(p, y, upper, num_bins) / k)
    return float(np.sum(errs))


# ----------------------------------------------------------------------------------------------
# ranking helpers


def auroc_or_nan(y: np.ndarray, s: np.ndarray) -> float:
    if len(np.unique(y)) < 2:
        return math.nan
    return float(roc_auc_score(y, s))


def macro(per: list[float]) -> dict:
    arr = np.array(per, dtype=np.float64)
    defined = int(np.sum(~np.isnan(arr)))
    strict = float(arr.mean()) if defined == len(arr) else math.nan
    skip = float(arr[~np.isnan(arr)].mean()) if defined > 0 else math.nan
    return {"per_class": per, "strict": strict, "skip": skip, "defined": defined}


def ap_macro(per: list[float], with_positives: list[bool]) -> dict:
    """AP per class: sklearn gives 0.0 without positives (kept in the strict = sklearn macro mean);
    the skip mean runs over the classes that have at least one positive."""
    arr = np.array(per, dtype=np.float64)
    has = np.array(with_positives, dtype=bool)
    return {"per_class": per, "strict": float(arr.mean()),
            "skip": float(arr[has].mean()) if has.any() else math.nan, "defined": int(has.sum())}


def sens_at_spec(y: np.ndarray, s: np.ndarray, min_spec: float) -> dict:
    if len(np.unique(y)) < 2:
        return {"min_specificity": min_spec, "sensitivity": math.nan, "threshold": math.nan,
                "interp": math.nan}
    fpr, tpr, thr = roc_curve(y, s, drop_intermediate=False)
    feasible = np.nonzero(1.0 - fpr >= min_spec)[0]
    best = feasible[np.argmax(tpr[feasible])]  # first index reaching the max: largest threshold
    return {
        "min_specificity": min_spec,
        "sensitivity": float(tpr[best]),
        "threshold": float(thr[best]),
        "interp": float(np.interp(1.0 - min_spec, fpr, tpr)),
    }


def kendall_tau_a(x: np.ndarray, y: np.ndarray) -> float:
    n = len(x)
    if np.isnan(x).any() or np.isnan(y).any():
        return math.nan
    if n < 2:
        return math.nan
    sx = np.sign(x[:, None] - x[None, :])
    sy = np.sign(y[:, None] - y[None, :])
    iu = np.triu_indices(n, 1)
    return float((sx * sy)[iu].sum() / (n * (n - 1) / 2))


# ----------------------------------------------------------------------------------------------
# cases


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def random_probs(rng, n: int, k: int, signal: float, scale: float):
    labels = rng.integers(0, k, size=n)
    logits = rng.normal(0.0, scale, size=(n, k))
    logits[np.arange(n), labels] += signal * rng.random(n)
    logits = quantise(logits, 8)
    return quantise(softmax(logits), 9), labels, logits


def classification_cases(rng) -> list[dict]:
    cases = []

    def add(name, probs, labels, n_bins, logits=None, note=""):
        cases.append({"name": name, "note": note, "probs": np.asarray(probs, dtype=np.float64),
                      "labels": np.asarray(labels, dtype=np.int64), "n_bins": n_bins,
                      "logits": None if logits is None else np.asarray(logits, dtype=np.float64)})

    p, y, _ = random_probs(rng, 100, 3, 2.5, 1.2)
    add("random_k3_n100", p, y, 15, note="continuous random softmax probabilities")
    p, y, _ = random_probs(rng, 60, 5, 3.0, 1.5)
    add("random_k5_n60", p, y, 15, note="continuous random softmax probabilities")
    p, y, _ = random_probs(rng, 50, 8, 3.0, 1.5)
    add("random_k8_n50_b10", p, y, 10, note="continuous random softmax probabilities, 10 bins")
    p, y, z = random_probs(rng, 30, 4, 2.0, 2.0)
    add("logits_k4_n30", p, y, 15, logits=z, note="logit input; probs = float64 softmax of the logits")

    # spec C1 self-check: conf = [.58,.58,.6,.6,.6,.62,.62,.95,.95,1,1,1], correct = 001111111011
    sc_probs = [
        [0.58, 0.30, 0.12], [0.12, 0.58, 0.30], [0.6, 0.3, 0.1], [0.3, 0.6, 0.1], [0.1, 0.3, 0.6],
        [0.62, 0.28, 0.1], [0.1, 0.28, 0.62], [0.95, 0.03, 0.02], [0.02, 0.95, 0.03],
        [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0],
    ]
    sc_labels = [1, 2, 0, 1, 2, 0, 2, 0, 1, 0, 1, 0]
    add("spec_self_check", sc_probs, sc_labels, 15,
        note="spec C1 self-check; ECE must be 0.14167 / 0.33500 / 0.35167")

    # values on (and one ulp beside) the float64 numpy.linspace edges for B = 10
    e10 = edges(10)
    ulp_conf = [0.3, e10[3], 0.7, e10[7], 0.6, e10[6], 0.4, 0.5, 0.8, 0.9, 1.0, 1.0, 0.3, 0.7]
    ulp_probs, ulp_labels = [], []
    for i, c in enumerate(ulp_conf):
        rest = float(quantise((1.0 - c) / 3.0))
        row = [rest, rest, rest, rest]
        row[i % 4] = c
        ulp_probs.append(row)
        ulp_labels.append(i % 4 if i % 3 != 1 else (i + 1) % 4)
    add("linspace_edges_b10", np.array(ulp_probs), ulp_labels, 10,
        note="confidences equal to decimal bin edges and to numpy.linspace(0,1,11) edges "
             "(0.30000000000000004, 0.7000000000000001, 0.6000000000000001) which differ from i/10")

    # ties in scores and in the argmax (argmax tie -> lowest index)
    tie_rows = np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.4, 0.4, 0.2], [0.2, 0.4, 0.4],
                         [0.5, 0.3, 0.2], [0.25, 0.25, 0.5], [0.4, 0.2, 0.4]])
    pick = rng.integers(0, len(tie_rows), size=40)
    add("ties_k3_n40", tie_rows[pick], rng.integers(0, 3, size=40), 15,
        note="repeated rows and tied argmax")

    # exact 0/1 confidences mixed with continuous rows
    p, y, _ = random_probs(rng, 30, 3, 2.0, 1.0)
    hard = np.eye(3)[rng.integers(0, 3, size=12)]
    p01 = np.vstack([p, hard, [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]])
    y01 = np.concatenate([y, rng.integers(0, 3, size=15)])
    add("exact_zero_one_k3", quantise(p01), y01, 15, note="one-hot rows (conf exactly 1, exact zeros)")

    # absent classes: classes 1 and 3 of K=5 never appear in the labels (still predicted)
    p, y, _ = random_probs(rng, 40, 5, 2.0, 1.5)
    y = np.where(y == 1, 0, np.where(y == 3, 4, y))
    add("absent_classes_k5", p, y, 15, note="labels never take the values 1 and 3")

    # single-class labels: every AUROC undefined
    p, _, _ = random_probs(rng, 30, 3, 1.0, 1.5)
    add("single_class_k3", p, np.full(30, 2), 15, note="all labels = 2: per-class AUROC NaN")

    # K = 2: top-label vs positive-class, binary AUROC on column 1
    p, y, _ = random_probs(rng, 80, 2, 2.0, 1.5)
    add("binary_k2_n80", p, y, 15, note="K = 2 (top-label ECE; AUROC/AP binary on column 1)")

    # a single sample
    add("single_sample_k3", [[0.2, 0.7, 0.1]], [1], 15, note="n = 1")
    return cases


def binary_cases(rng) -> list[dict]:
    cases = []

    def add(name, scores, targets, n_bins, note=""):
        cases.append({"name": name, "note": note, "scores": np.asarray(scores, dtype=np.float64),
                      "targets": np.asarray(targets, dtype=bool), "n_bins": n_bins})

    y = rng.random(100) < 0.4
    s = quantise(1 / (1 + np.exp(-(rng.normal(0, 1.5, 100) + 1.5 * y))), 9)
    add("random_n100", s, y, 15, note="continuous scores")
    grid = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
    y = rng.random(60) < 0.5
    s = grid[np.clip(rng.integers(0, 6, 60) + 3 * y, 0, 8)]
    add("tied_grid_n60", s, y, 10, note="scores on a 0.1 grid (bin edges for B = 10, heavy ties)")
    y = rng.random(30) < 0.5
    s = np.where(rng.random(30) < 0.5, y.astype(float), quantise(rng.random(30)))
    s[:3] = [0.0, 1.0, 1.0]
    add("exact_zero_one_n30", s, y, 15, note="scores exactly 0 and 1")
    add("self_check_edges", [.58, .58, .6, .6, .6, .62, .62, .95, .95, 1, 1, 1],
        [0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1], 15, note="spec C1 self-check conf as positive scores")
    add("all_positive_n8", quantise(rng.random(8)), np.ones(8, dtype=bool), 15,
        note="one class only: AUROC and sensitivity NaN, AP 1")
    add("all_negative_n8", quantise(rng.random(8)), np.zeros(8, dtype=bool), 15,
        note="no positives: AUROC NaN, AP 0")
    add("single_sample", [0.7], [True], 15, note="n = 1")
    y = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1], dtype=bool)
    s = np.array([.1, .2, .3, .3, .4, .5, .6, .7, .8, .9, .3, .6, .8, .9, .95])
    add("spec_boundaries_n15", s, y, 10, note="10 negatives: specificity 0.5/0.8/0.9 hit exactly")
    return cases


def multilabel_cases(rng) -> list[dict]:
    cases = []
    n, l = 40, 4
    scores = quantise(rng.random((n, l)), 9)
    t = rng.random((n, l)) < 0.4
    mask = rng.random((n, l)) < 0.2
    t[:, 3] = np.where(mask[:, 3], True, False)  # label 3: every unmasked entry negative
    cases.append({"name": "masked_l4_n40", "note": "20% blanks; label 3 has no unmasked positive",
                  "scores": scores, "targets": t, "mask": mask})
    scores = np.round(rng.random((30, 3)) * 4) / 4
    t = rng.random((30, 3)) < 0.5
    mask = rng.random((30, 3)) < 0.3
    cases.append({"name": "ties_l3_n30", "note": "scores on a 0.25 grid, 30% blanks",
                  "scores": scores, "targets": t, "mask": mask})
    return cases


def rank_cases(rng) -> list[dict]:
    cases = []

    def add(name, x, y, note="", store_ranks=True):
        cases.append({"name": name, "note": note, "x": np.asarray(x, dtype=np.float64),
                      "y": np.asarray(y, dtype=np.float64), "store_ranks": store_ranks})

    x = quantise(rng.normal(size=50), 9)
    add("random_n50", x, quantise(0.6 * x + rng.normal(size=50), 9), note="continuous")
    x = rng.integers(0, 6, size=60)
    add("tied_integers_n60", x, np.clip(x + rng.integers(-2, 3, size=60), 0, 5), note="heavy ties")
    add("constant_x_n10", np.full(10, 3.0), np.arange(10.0), note="constant x: tau-b/rho NaN, tau-a 0")
    add("n2", [1.0, 2.0], [2.0, 1.0], note="two points, discordant")
    x = rng.integers(0, 1000, size=1000)
    add("integers_n1000", x, x + rng.integers(-300, 301, size=1000), note="n = 1000, some ties",
        store_ranks=False)
    add("reversed_ties_n7", [1, 2, 2, 3, 4, 4, 5], [5, 4, 4, 3, 2, 2, 1], note="perfectly discordant")
    add("nan_input_n6", [1, 2, np.nan, 4, 5, 6], [2, 1, 3, 5, 4, 6],
        note="NaN in x: scipy propagates NaN (ranks, tau-b, rho); weighted tau omitted - scipy.weightedtau "
             "does not propagate NaN, the framework policy (spec section 0) returns NaN")
    return cases


# ----------------------------------------------------------------------------------------------
# expected values


def expect_classification(case: dict) -> dict:
    probs, labels, n_bins = case["probs"], case["labels"], case["n_bins"]
    n, k = probs.shape
    conf = probs.max(axis=1)
    preds = probs.argmax(axis=1)
    correct = (preds == labels).astype(np.float64)
    out = {"name": case["name"], "note": case["note"], "k": k, "n": n, "n_bins": n_bins,
           "probs": probs.ravel().tolist(), "labels": labels.tolist(), "preds": preds.tolist()}
    check_inputs(case["name"], probs)
    if case["logits"] is not None:
        out["logits"] = case["logits"].ravel().tolist()
        check_inputs(case["name"], case["logits"])

    rel = {c: reliability(conf, correct, n_bins, c) for c in CONVENTIONS}
    ece = {c: ece_from_bins(rel[c], n) for c in CONVENTIONS}
    mce = {c: mce_from_bins(rel[c]) for c in CONVENTIONS}

    # left-closed peer: netcal on (confidence, correct) (binary mode = top-label reduction)
    nc_ece = NetcalECE(bins=n_bins).measure(conf.copy(), correct.astype(np.int64))
    nc_mce = NetcalMCE(bins=n_bins).measure(conf.copy(), correct.astype(np.int64))
    assert abs(nc_ece - ece["left-closed"]) <= TOL_F64, (case["name"], nc_ece, ece["left-closed"])
    assert abs(nc_mce - mce["left-closed"]) <= TOL_F64, (case["name"], nc_mce, mce["left-closed"])
    if k > 2 and len(np.unique(labels)) > 2:  # netcal's own multiclass path applies: cross-check
        direct = NetcalECE(bins=n_bins).measure(probs.copy(), labels.copy())
        assert abs(direct - nc_ece) <= TOL_F64, (case["name"], direct, nc_ece)
    ece["left-closed"], mce["left-closed"] = float(nc_ece), float(nc_mce)

    # torchmetrics library (float32 internal cast)
    tp = torch.tensor(probs, dtype=torch.float64)
    tl = torch.tensor(labels, dtype=torch.int64)
    tm_ece = float(multiclass_calibration_error(tp, tl, num_classes=k, n_bins=n_bins, norm="l1"))
    tm_mce = float(multiclass_calibration_error(tp, tl, num_classes=k, n_bins=n_bins, norm="max"))
    differs = abs(tm_ece - ece["torchmetrics"]) > TOL_F32 or abs(tm_mce - mce["torchmetrics"]) > TOL_F32
    if differs:
        emu = torch_edges_reimpl(conf, correct, n_bins, torch.float32)
        assert abs(emu[0] - tm_ece) <= TOL_F32 and abs(emu[1] - tm_mce) <= TOL_F32, case["name"]

    out["ece"] = ece
    out["mce"] = mce
    out["torchmetrics_lib"] = {"ece": tm_ece, "mce": tm_mce, "f32_binning_differs": bool(differs)}
    out["classwise_ece"] = {c: classwise_ece(probs, labels, n_bins, c) for c in CONVENTIONS}
    out["adaptive_ece"] = adaptive_ece(probs, labels, n_bins)
    out["ace"] = [{"n_ranges": r, "threshold": t, "value": nixon_ace(probs, labels, r, t)}
                  for r, t in ACE_CONFIGS]
    if case["name"] in RELIABILITY_CASES:
        out["reliability"] = rel

    rng_k = list(range(k))
    out["brier"] = float(brier_score_loss(labels, probs, labels=rng_k, scale_by_half=False))
    out["nll_probs"] = float(log_loss(labels, y_proba=probs, labels=rng_k))
    if case["logits"] is not None:
        out["nll_logits"] = float(torch.nn.functional.cross_entropy(
            torch.tensor(case["logits"], dtype=torch.float64), tl).item())
    out["accuracy"] = float(accuracy_score(labels, preds))
    out["macro_f1"] = float(f1_score(labels, preds, average="macro", zero_division=0))
    out["qwk"] = float(cohen_kappa_score(labels, preds, weights="quadratic", labels=rng_k))
    out["ordinal_mae"] = float(mean_absolute_error(labels, preds))

    # K = 2 is sklearn's binary mode on column 1: a single "class" entry
    cols = [1] if k == 2 else list(range(k))
    per_auc = [auroc_or_nan((labels == j).astype(int), probs[:, j]) for j in cols]
    per_ap = [float(average_precision_score((labels == j).astype(int), probs[:, j])) for j in cols]
    auc = macro(per_auc)
    if k > 2 and len(np.unique(labels)) > 1:  # sklearn's own multiclass path: cross-check the strict mean
        sk = roc_auc_score(labels, probs, multi_class="ovr", average="macro", labels=rng_k)
        assert (math.isnan(sk) and math.isnan(auc["strict"])) or abs(sk - auc["strict"]) <= TOL_F64
    if k == 2:
        sk = auroc_or_nan(labels, probs[:, 1])
        assert (math.isnan(sk) and math.isnan(auc["strict"])) or abs(sk - auc["strict"]) <= TOL_F64
    out["auroc"] = auc
    out["average_precision"] = ap_macro(per_ap, [bool((labels == j).any()) for j in cols])
    if k > 2:
        sk_ap = average_precision_score(np.eye(k)[labels], probs, average="macro")
        assert abs(sk_ap - out["average_precision"]["strict"]) <= TOL_F64, (case["name"], sk_ap)
    return out


def expect_binary(case: dict) -> dict:
    s, t, n_bins = case["scores"], case["targets"], case["n_bins"]
    check_inputs(case["name"], s)
    y = t.astype(np.int64)
    yf = t.astype(np.float64)
    out = {"name": case["name"], "note": case["note"], "n_bins": n_bins, "scores": s.tolist(),
           "targets": [bool(v) for v in t]}
    rel = {c: reliability(s, yf, n_bins, c) for c in CONVENTIONS}
    ece = {c: ece_from_bins(rel[c], len(s)) for c in CONVENTIONS}
    nc = NetcalECE(bins=n_bins).measure(s.copy(), y.copy())
    assert abs(nc - ece["left-closed"]) <= TOL_F64, (case["name"], nc, ece["left-closed"])
    ece["left-closed"] = float(nc)
    tm = float(binary_calibration_error(torch.tensor(s, dtype=torch.float64), torch.tensor(y),
                                        n_bins=n_bins, norm="l1"))
    differs = abs(tm - ece["torchmetrics"]) > TOL_F64
    if differs:
        emu = torch_edges_reimpl(s, yf, n_bins, torch.float64)
        assert abs(emu[0] - tm) <= TOL_F64, (case["name"], emu, tm)
    out["ece_positive"] = ece
    out["torchmetrics_lib"] = {"ece": tm, "torch_linspace_binning_differs": bool(differs)}
    if case["name"] in RELIABILITY_CASES:
        out["reliability"] = rel
    out["auroc"] = auroc_or_nan(y, s)
    out["average_precision"] = float(average_precision_score(y, s)) if len(s) > 0 else math.nan
    out["brier"] = float(brier_score_loss(y, s, pos_label=1))
    out["nll"] = float(log_loss(y, y_proba=s, labels=[0, 1]))
    out["sensitivity_at_specificity"] = [sens_at_spec(y, s, m) for m in SPECIFICITIES]
    return out


def expect_multilabel(case: dict) -> dict:
    scores, t, mask = case["scores"], case["targets"], case["mask"]
    check_inputs(case["name"], scores)
    n, l = scores.shape
    per_auc, per_ap = [], []
    for j in range(l):
        keep = ~mask[:, j]
        yj = t[keep, j].astype(np.int64)
        sj = scores[keep, j]
        per_auc.append(auroc_or_nan(yj, sj))
        per_ap.append(float(average_precision_score(yj, sj)) if keep.any() else math.nan)
    targets = [None if mask[i, j] else bool(t[i, j]) for i in range(n) for j in range(l)]
    if not mask.any():
        sk = roc_auc_score(t.astype(int), scores, average="macro")
        assert abs(sk - np.mean(per_auc)) <= TOL_F64
    return {"name": case["name"], "note": case["note"], "l": l, "n": n,
            "scores": scores.ravel().tolist(), "targets": targets,
            "auroc": macro(per_auc),
            "average_precision": ap_macro(per_ap, [bool((t[~mask[:, j], j]).any()) for j in range(l)])}


def expect_rank(case: dict) -> dict:
    x, y = case["x"], case["y"]
    check_inputs(case["name"], x)
    check_inputs(case["name"], y)
    out = {"name": case["name"], "note": case["note"], "x": x.tolist(), "y": y.tolist()}
    if case["store_ranks"]:
        out["ranks_x"] = st.rankdata(x, method="average").tolist()
        out["ranks_y"] = st.rankdata(y, method="average").tolist()
    out["kendall_tau_b"] = float(st.kendalltau(x, y).statistic)
    out["kendall_tau_a"] = kendall_tau_a(x, y)
    out["spearman_rho"] = float(st.spearmanr(x, y).statistic)
    if not (np.isnan(x).any() or np.isnan(y).any()):
        out["weighted_tau"] = float(st.weightedtau(x, y).statistic)
    return out


# ----------------------------------------------------------------------------------------------
# JSON writer: NaN -> null, +-inf -> "inf"/"-inf", floats in full repr, number arrays on one line


def scalar(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "null"
        if math.isinf(v):
            return '"inf"' if v > 0 else '"-inf"'
        if v.is_integer() and abs(v) < 2**53:
            return str(int(v))  # e.g. 1.0 -> 1 (shorter; parses to the same double)
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    raise TypeError(type(v))


def dump(v, indent: int = 0) -> str:
    pad = " " * indent
    if isinstance(v, dict) and all(not isinstance(e, (dict, list, tuple)) for e in v.values()):
        one_line = "{" + ", ".join(f"{json.dumps(key)}: {scalar(val)}" for key, val in v.items()) + "}"
        if len(one_line) <= 100:
            return pad + one_line
    if isinstance(v, dict):
        items = [f'{pad} {json.dumps(key)}: {dump(val, indent + 1).lstrip()}' for key, val in v.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, (list, tuple)):
        if all(not isinstance(e, (dict, list, tuple)) for e in v):
            return pad + "[" + ", ".join(scalar(e) for e in v) + "]"
        return pad + "[\n" + ",\n".join(dump(e, indent + 1) for e in v) + "\n" + pad + "]"
    return pad + scalar(v)


PEERS = {
    "ece.right-closed": "numpy: spec C1/C2 formula, edges numpy.linspace float64, lo < c <= hi, c == 0 -> bin 0"
                        " (Guo/gpleiss _ECELoss); equals netcal/torchmetrics on edge-free data",
    "ece.left-closed": "netcal 1.4 ECE(bins).measure(confidence, correct) (its binary mode = top-label "
                       "reduction); cross-checked against numpy (1e-12) and netcal's multiclass path",
    "ece.torchmetrics": "numpy float64 re-implementation of torchmetrics' bucketize(right=True)-1 with the "
                        "extra [1,1] bin; torchmetrics_lib holds the library's own float32 value",
    "mce": "as ece, max over non-empty bins (netcal MCE for left-closed; torchmetrics norm='max' in "
           "torchmetrics_lib)",
    "classwise_ece": "numpy, spec C4 (K = number of columns), all three conventions",
    "adaptive_ece": "numpy port of focal_calibration AdaptiveECELoss (spec C5 row 1)",
    "ace": "numpy port of uncertainty-metrics GeneralCalibrationError adaptive/class-conditional (C5 row 2)",
    "reliability": "numpy: count, mean confidence, mean outcome per bin (null = empty)",
    "brier": "sklearn brier_score_loss(labels=range(K), scale_by_half=False); binary: pos_label=1",
    "nll_probs": "sklearn log_loss(labels=range(K)) (clip to [eps, 1-eps])",
    "nll_logits": "torch.nn.functional.cross_entropy, float64",
    "accuracy": "sklearn accuracy_score on argmax (ties -> lowest index)",
    "macro_f1": "sklearn f1_score(average='macro', zero_division=0)",
    "qwk": "sklearn cohen_kappa_score(weights='quadratic', labels=range(K))",
    "ordinal_mae": "sklearn mean_absolute_error(labels, preds)",
    "auroc": "sklearn roc_auc_score per class (OvR) / label (blanks masked); strict/skip means",
    "average_precision": "sklearn average_precision_score per class / label (0.0 without positives); "
                         "strict = sklearn macro mean, skip = mean over classes/labels with a positive",
    "sensitivity_at_specificity": "numpy on sklearn roc_curve(drop_intermediate=False): max TPR with "
                                  "1-FPR >= s, threshold of the first (largest) such threshold; interp = "
                                  "np.interp(1-s, fpr, tpr)",
    "rank": "scipy rankdata(average), kendalltau (tau-b), spearmanr, weightedtau (defaults); hand tau-a",
}


def main() -> None:
    rng = np.random.default_rng(SEED)
    classification = [expect_classification(c) for c in classification_cases(rng)]
    binary = [expect_binary(c) for c in binary_cases(rng)]
    multilabel = [expect_multilabel(c) for c in multilabel_cases(rng)]
    rank = [expect_rank(c) for c in rank_cases(rng)]

    # spec C1 self-check must be reproduced by all three conventions (and by the peers)
    sc = next(c for c in classification if c["name"] == "spec_self_check")
    for conv, want in zip(CONVENTIONS, (0.14167, 0.33500, 0.35167)):
        assert abs(sc["ece"][conv] - want) < 5e-6, (conv, sc["ece"][conv], want)
    assert abs(sc["torchmetrics_lib"]["ece"] - 0.35167) < 5e-6, sc["torchmetrics_lib"]

    # on edge-free continuous data the three conventions, netcal and torchmetrics agree
    for c in classification:
        if c["name"].startswith("random_") or c["name"].startswith("logits_"):
            e = c["ece"]
            assert abs(e["right-closed"] - e["left-closed"]) <= TOL_F64, c["name"]
            assert abs(e["right-closed"] - e["torchmetrics"]) <= TOL_F64, c["name"]
            assert abs(e["right-closed"] - c["torchmetrics_lib"]["ece"]) <= TOL_F32, c["name"]
            assert not c["torchmetrics_lib"]["f32_binning_differs"], c["name"]

    doc = {
        "about": "Golden vectors for calibra-metrics; generated by scripts/golden/metrics.py - do not edit. "
                 "null = NaN; \"inf\" = +infinity.",
        "versions": {
            "python": sys.version.split()[0], "numpy": np.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__, "netcal": netcal.__version__,
            "torch": torch.__version__.split("+")[0], "torchmetrics": torchmetrics.__version__,
        },
        "seed": SEED,
        "tolerance": {"f64": TOL_F64, "torchmetrics_f32": TOL_F32},
        "edges": {str(b): edges(b).tolist() for b in sorted({c["n_bins"] for c in classification + binary})},
        # the same edges as IEEE-754 bit patterns (u64), for an exact comparison that does not depend on
        # the JSON reader rounding 17-digit decimals correctly
        "edges_bits": {str(b): [int(v) for v in edges(b).view(np.uint64)]
                       for b in sorted({c["n_bins"] for c in classification + binary})},
        "peers": PEERS,
        "classification": classification,
        "binary": binary,
        "multilabel": multilabel,
        "rank": rank,
    }
    text = dump(doc) + "\n"
    json.loads(text)  # well-formed
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    flagged = [c["name"] for c in classification if c["torchmetrics_lib"]["f32_binning_differs"]]
    flagged += [c["name"] for c in binary if c["torchmetrics_lib"]["torch_linspace_binning_differs"]]
    sha = subprocess.run(["sha256sum", str(OUT)], capture_output=True, text=True).stdout.split()[0]
    print(f"wrote {OUT.relative_to(ROOT)}: {len(text)} bytes, {len(classification)} classification, "
          f"{len(binary)} binary, {len(multilabel)} multilabel, {len(rank)} rank cases; "
          f"torchmetrics-binning flagged: {flagged or 'none'}; sha256 {sha[:16]}")


if __name__ == "__main__":
    main()
