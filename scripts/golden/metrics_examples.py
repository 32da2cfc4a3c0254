"""Golden `calibra metrics --format json` output for the shipped example files, from the peers.

    CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/metrics_examples.py

Writes tests/golden/metrics_examples.json, read by tests/cli_metrics.rs. This checks the composition
of the metric set (which probabilities, which convention, which averaging per task) end to end; the
individual metrics are checked on adversarial inputs by scripts/golden/metrics.py, whose oracles are
reused here. Definitions per task are those documented in calibra_metrics::summary.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.special import log_softmax, expit
from sklearn.metrics import (accuracy_score, average_precision_score, brier_score_loss, cohen_kappa_score,
                             f1_score, log_loss, mean_absolute_error, roc_auc_score)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import metrics as oracle  # noqa: E402  (scripts/golden/metrics.py)

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "metrics_examples.json"
BINS = 15
CONVENTION = "right-closed"


def load(name: str):
    with open(ROOT / "examples" / name, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = list(rows[0].keys())
    kind = "logit_" if any(c.startswith("logit_") for c in cols) else "prob_"
    classes = [c[len(kind):] for c in cols if c.startswith(kind)]
    scores = np.array([[float(r[kind + c]) for c in classes] for r in rows], dtype=np.float64)
    if "label" in cols:
        targets = np.array([int(r["label"]) for r in rows])
    else:
        targets = np.array([[np.nan if r["label_" + c] == "" else float(r["label_" + c]) for c in classes]
                            for r in rows])
    return kind, classes, scores, targets


def bins_json(rel: dict, n_bins: int) -> list[dict]:
    e = oracle.edges(n_bins)
    out = []
    for b, (count, conf, acc) in enumerate(zip(rel["count"], rel["confidence"], rel["accuracy"])):
        out.append({"lower": float(e[b]), "upper": float(e[b + 1]), "count": count,
                    "confidence": None if math.isnan(conf) else conf,
                    "accuracy": None if math.isnan(acc) else acc})
    return out


def nan_to_none(x: float):
    return None if math.isnan(x) else float(x)


def single_label(kind, scores, y, ordinal: bool) -> dict:
    n, k = scores.shape
    if kind == "logit_":
        logp = log_softmax(scores, axis=1)
        p = np.exp(logp)
        nll = float(-logp[np.arange(n), y].mean())
    else:
        p = scores
        nll = float(log_loss(y, p, labels=list(range(k))))
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    correct = (pred == y).astype(np.float64)
    rel = oracle.reliability(conf, correct, BINS, CONVENTION)
    per_auc = [oracle.auroc_or_nan((y == j).astype(int), p[:, j]) for j in range(k)]
    if k == 2:
        macro_auroc = roc_auc_score(y, p[:, 1])
        auroc_per_class = [macro_auroc]
        macro_auprc = average_precision_score(y, p[:, 1])
        brier = brier_score_loss(y, p[:, 1])
    else:
        macro_auroc = roc_auc_score(y, p, multi_class="ovr", average="macro", labels=list(range(k)))
        auroc_per_class = per_auc
        macro_auprc = average_precision_score(np.eye(k)[y], p, average="macro")
        brier = brier_score_loss(y, p, labels=list(range(k)), scale_by_half=False)
    out = {
        "n": n, "num_classes": k, "task": "binary" if k == 2 else "multiclass",
        "accuracy": accuracy_score(y, pred),
        "macro_auroc": macro_auroc, "auroc_per_class": auroc_per_class, "macro_auprc": macro_auprc,
        "ece": oracle.ece_from_bins(rel, n),
        "adaptive_ece": oracle.adaptive_ece(p, y, BINS),
        "ace": oracle.nixon_ace(p, y, 30, 0.0),
        "mce": oracle.mce_from_bins(rel),
        "classwise_ece": oracle.classwise_ece(p, y, BINS, CONVENTION),
        "brier": brier, "nll": nll,
        "macro_f1": f1_score(y, pred, average="macro", zero_division=0),
        "reliability": bins_json(rel, BINS),
    }
    if k == 2:
        pos_rel = oracle.reliability(p[:, 1], y.astype(np.float64), BINS, CONVENTION)
        out["ece_binary_positive"] = oracle.ece_from_bins(pos_rel, n)
    if ordinal:
        out["qwk"] = cohen_kappa_score(y, pred, weights="quadratic", labels=list(range(k)))
        out["ordinal_mae"] = mean_absolute_error(y, pred)
    return out


def multilabel(kind, scores, t) -> dict:
    n, l = scores.shape
    p = expit(scores) if kind == "logit_" else scores
    per = {"auroc": [], "ap": [], "ece": [], "mce": [], "brier": [], "nll": [], "f1": []}
    pooled_p, pooled_y, hits, cells = [], [], 0, 0
    for j in range(l):
        m = ~np.isnan(t[:, j])
        s, y = p[m, j], t[m, j].astype(int)
        auc = oracle.auroc_or_nan(y, s)
        per["auroc"].append(auc)
        if y.any():
            per["ap"].append(average_precision_score(y, s))
        rel = oracle.reliability(s, y.astype(np.float64), BINS, CONVENTION)
        per["ece"].append(oracle.ece_from_bins(rel, len(s)))
        per["mce"].append(oracle.mce_from_bins(rel))
        per["brier"].append(brier_score_loss(y, s))
        per["nll"].append(log_loss(y, s, labels=[0, 1]))
        per["f1"].append(f1_score(y, (s >= 0.5).astype(int), zero_division=0))
        pooled_p.extend(s)
        pooled_y.extend(y)
        hits += int(((s >= 0.5).astype(int) == y).sum())
        cells += len(s)
    defined_auc = [a for a in per["auroc"] if not math.isnan(a)]
    rel = oracle.reliability(np.array(pooled_p), np.array(pooled_y, dtype=np.float64), BINS, CONVENTION)
    mean = lambda v: float(np.mean(v))  # noqa: E731
    return {
        "n": n, "num_classes": l, "task": "multilabel",
        "accuracy": hits / cells,
        "macro_auroc": mean(defined_auc), "auroc_per_class": [nan_to_none(a) for a in per["auroc"]],
        "macro_auprc": mean(per["ap"]),
        "ece": mean(per["ece"]), "ece_binary_positive": mean(per["ece"]),
        "adaptive_ece": None, "ace": None, "classwise_ece": None,
        "mce": mean(per["mce"]), "brier": mean(per["brier"]), "nll": mean(per["nll"]),
        "macro_f1": mean(per["f1"]),
        "reliability": bins_json(rel, BINS),
    }


def main() -> None:
    cases = []
    for name, ordinal in [("predictions_multiclass.csv", False), ("predictions_binary.csv", False),
                          ("predictions_ordinal.csv", True), ("predictions_multilabel.csv", False)]:
        kind, _, scores, targets = load(name)
        expected = multilabel(kind, scores, targets) if targets.ndim == 2 else \
            single_label(kind, scores, targets, ordinal)
        cases.append({"file": name, "ordinal": ordinal, "tolerance": 1e-12, "expected": expected})
    text = json.dumps({"generator": "scripts/golden/metrics_examples.py", "bins": BINS,
                       "binning": CONVENTION, "cases": cases}, indent=1, sort_keys=True,
                      default=float) + "\n"
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(cases)} example files")


if __name__ == "__main__":
    main()
