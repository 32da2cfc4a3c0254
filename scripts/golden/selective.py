"""Golden vectors for the selective-prediction metrics of crates/calibra-metrics.

Writes crates/calibra-metrics/tests/golden/selective.json, read by crates/calibra-metrics/tests/parity.rs
(the `selective_*` tests). Deterministic: fixed numpy seed, fixed case order.

Run with a Python that has numpy, scipy, scikit-learn, torch, torchmetrics, torch-uncertainty 0.13,
relplot 1.0.3 and uncertainty-calibration 0.1.4, e.g. the golden venv plus a venv holding the last two:

    PYTHONPATH=/tmp/selective-venv/lib/python3.11/site-packages \
        /work/main/.venv-golden/bin/python scripts/golden/selective.py

Peers:
- AURC, AUGRC, RiskAtxCov, CovAtxRisk, FPRx: torch-uncertainty 0.13 itself
  (`metrics/classification/risk_coverage.py`, `fpr.py`; loaded by file path because the package's
  `__init__` imports lightning). Two caveats, both measured here and written into the JSON:
  (1) it builds the coverage axis `torch.arange(1, n + 1) / n` in float32, so its AURC/AUGRC differ from
  the exact float64 formula by ~1e-8 (tolerance `tu` = 1e-6); (2) it ranks with the unstable
  `argsort(descending=True)`, which on the CPU permutes tied scores arbitrarily for larger inputs, so with
  ties the library value is not a function of the data (measured with torch 2.15: identical to the
  stable order up to 16 rows, different from it, and from the reversed-ties order, at 17 rows and more). Hence the float64 values come from a numpy port
  of the same formulas with a STABLE descending sort (ties keep row order), the rule calibra implements,
  and the library values are stored (and compared) only for tie-free cases.
- E-AURC (absent from torch-uncertainty 0.13): numpy, AURC minus the same estimator on the oracle ranking.
- confidence scores: numpy / scipy (`logsumexp`, `special.entr`).
- smooth ECE: relplot.smECE(f, y, return_width=True) and relplot.smECE_sigma(f, y, 0.05) on the top-label
  (confidence, correct) pairs of relplot.multiclass_logits_to_confidences(probs, labels, probs=True).
- debiased ECE: calibration.lower_bound_scaling_ce(probs, labels, p=2, debias=True, num_bins=15,
  binning_scheme=calibration.get_equal_bins, mode="top-label") (Kumar et al. 2019).
- shift detection: sklearn roc_auc_score and torch-uncertainty `_fprx_compute(recall_level=0.95)` on the
  negated confidence, shift samples positive.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
import re
from pathlib import Path

import calibration
import numpy as np
import relplot
import scipy.special as sps
import sklearn.metrics as skm
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "calibra-metrics" / "tests" / "golden" / "selective.json"
SEED = 20261201
TU_DIR = Path(importlib.util.find_spec("torch_uncertainty").submodule_search_locations[0]) / "metrics" / "classification"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"tu_{name}", TU_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RC = load("risk_coverage")
FPR = load("fpr")


def q(a, decimals=12):
    return np.round(np.asarray(a, dtype=np.float64), decimals) + 0.0


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


# ---- numpy port (float64, stable descending sort) ------------------------------------------------


def risks(conf, err):
    order = np.argsort(-conf, kind="stable")
    return np.cumsum(err[order]) / np.arange(1, len(conf) + 1)


def trapz_norm(y, n):
    if n < 2:
        return math.nan
    c = np.arange(1, n + 1) / n
    return float(np.sum((c[1:] - c[:-1]) * (y[1:] + y[:-1]) / 2.0) / (1.0 - 1.0 / n))


def areas(conf, err):
    n = len(conf)
    r = risks(conf, err)
    c = np.arange(1, n + 1) / n
    aurc = trapz_norm(r, n)
    oracle = risks(1.0 - err, err)
    k80 = min(max(math.ceil(n * 0.8), 1), n)
    adm = np.nonzero(r <= 0.05)[0]
    return {
        "aurc": aurc,
        "eaurc": aurc - trapz_norm(oracle, n),
        "optimal_aurc": trapz_norm(oracle, n),
        "augrc": trapz_norm(r * c, n),
        "risk_at_80_coverage": float(r[k80 - 1]),
        "coverage_at_5_risk": float((adm[-1] + 1) / n) if len(adm) else math.nan,
        "risks": [float(x) for x in r],
    }


def tu_values(probs, labels):
    p, t = torch.tensor(probs, dtype=torch.float64), torch.tensor(labels)
    out = {}
    for key, metric in (("aurc", RC.AURC()), ("augrc", RC.AUGRC()), ("risk_at_80_coverage", RC.RiskAt80Cov()),
                        ("coverage_at_5_risk", RC.CovAt5Risk())):
        metric.update(p, t)
        v = metric.compute()
        out[key] = float(v.reshape(-1)[0])
    return out


def scores(probs, logits):
    s = np.sort(probs, axis=1)
    return {
        "msp": probs.max(axis=1),
        "max-logit": logits.max(axis=1),
        "energy": sps.logsumexp(logits, axis=1),
        "entropy": -sps.entr(probs).sum(axis=1),
        "margin": s[:, -1] - s[:, -2],
    }


def classification_case(name, logits, labels, note=""):
    logits = q(logits)
    probs = softmax(logits)
    labels = np.asarray(labels)
    conf = probs.max(axis=1)
    err = (probs.argmax(axis=1) != labels).astype(np.float64)
    ties = len(np.unique(conf)) < len(conf)
    sc = scores(probs, logits)
    f, y = relplot.multiclass_logits_to_confidences(probs, labels, probs=True)
    sm, width = relplot.smECE(f, y, return_width=True)
    case = {
        "name": name,
        "note": note,
        "k": probs.shape[1],
        "logits": [float(v) for v in logits.ravel()],
        "probs": [float(v) for v in probs.ravel()],
        "labels": [int(v) for v in labels],
        "ties": bool(ties),
        "expected": areas(conf, err),
        # per-row scores only for the small cases (file size)
        "scores": {k: [float(x) for x in v] for k, v in sc.items()} if len(labels) <= 100 else None,
        "by_score": {k: {kk: vv for kk, vv in areas(v, err).items() if kk in ("aurc", "eaurc", "augrc")}
                     for k, v in sc.items()},
        "smooth_ece": float(sm),
        "smooth_ece_bandwidth": float(width),
        "smooth_ece_sigma_0_05": float(relplot.smECE_sigma(f, y, 0.05)),
        "debiased_ece": float(calibration.lower_bound_scaling_ce(
            probs, labels, p=2, debias=True, num_bins=15, binning_scheme=calibration.get_equal_bins,
            mode="top-label")),
    }
    tu = tu_values(probs, labels)
    case["tu_agrees_with_numpy"] = {k: abs(tu[k] - case["expected"][k]) < 1e-6 or (math.isnan(tu[k]) and math.isnan(case["expected"][k])) for k in tu}
    if not ties:
        case["tu"] = tu
        assert all(case["tu_agrees_with_numpy"].values()), (name, tu, case["expected"])
    return case


def shift_case(name, clean, shifted):
    clean, shifted = q(clean), q(shifted)
    s = np.concatenate([-clean, -shifted])
    t = np.concatenate([np.zeros(len(clean)), np.ones(len(shifted))])
    fpr = float(FPR._fprx_compute(torch.tensor(s), torch.tensor(t), recall_level=0.95, pos_label=1))
    return {"name": name, "clean": [float(v) for v in clean], "shifted": [float(v) for v in shifted],
            "auroc": float(skm.roc_auc_score(t, s)), "fpr_at_95_tpr": fpr}


def read_example(name):
    import csv
    with open(ROOT / "examples" / name) as fh:
        rows = list(csv.DictReader(fh))
    cols = [c for c in rows[0] if c.startswith("logit_")]
    z = np.array([[float(r[c]) for c in cols] for r in rows])
    y = np.array([int(r["label"]) for r in rows])
    return softmax(z), y


def example_case(name):
    probs, labels = read_example(name)
    conf = probs.max(axis=1)
    err = (probs.argmax(axis=1) != labels).astype(np.float64)
    assert len(np.unique(conf)) == len(conf), name
    tu = tu_values(probs, labels)
    ours = areas(conf, err)
    f, y = relplot.multiclass_logits_to_confidences(probs, labels, probs=True)
    return {
        "file": name,
        "expected": {
            "aurc": tu["aurc"], "augrc": tu["augrc"], "eaurc": ours["eaurc"],
            "risk_at_80_coverage": tu["risk_at_80_coverage"], "coverage_at_5_risk": tu["coverage_at_5_risk"],
            "smooth_ece": float(relplot.smECE(f, y)),
            "debiased_ece": float(calibration.lower_bound_scaling_ce(
                probs, labels, p=2, debias=True, num_bins=15, binning_scheme=calibration.get_equal_bins,
                mode="top-label")),
        },
    }


def write_examples():
    out = ROOT / "tests" / "golden" / "selective_examples.json"
    doc = {"generator": "scripts/golden/selective.py (torch-uncertainty AURC/AUGRC/RiskAt80Cov/CovAt5Risk, "
                        "numpy E-AURC, relplot smECE, uncertainty-calibration debiased ECE)",
           "tolerance": 1e-6,
           "cases": [example_case(n) for n in ("predictions_multiclass.csv", "predictions_binary.csv",
                                               "miscalibrated_test.csv")]}
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}")


def main():
    write_examples()
    rng = np.random.default_rng(SEED)
    cases = []
    for name, n, k, signal in (("random_k3_n100", 100, 3, 1.5), ("random_k5_n400", 400, 5, 2.5),
                               ("random_k2_n50", 50, 2, 1.0), ("random_k8_n300", 300, 8, 3.0)):
        y = rng.integers(0, k, n)
        z = rng.normal(size=(n, k)) * 1.5 + signal * np.eye(k)[y]
        cases.append(classification_case(name, z, y))
    # Ties: logits on a coarse grid so that many rows share their confidence (numpy stable port only).
    y = rng.integers(0, 3, 60)
    z = np.round(rng.normal(size=(60, 3)) + np.eye(3)[y], 0)
    cases.append(classification_case("tied_grid_k3_n60", z, y, "ties: stable descending sort"))
    y = np.arange(20) % 4
    cases.append(classification_case("all_correct_k4_n20", 5.0 * np.eye(4)[y] + rng.normal(size=(20, 4)) * 0.1, y))
    cases.append(classification_case("all_wrong_k4_n20", 5.0 * np.eye(4)[(y + 1) % 4] + rng.normal(size=(20, 4)) * 0.1, y))
    cases.append(classification_case("two_samples_k3", rng.normal(size=(2, 3)), np.array([0, 2])))
    shifts = [
        shift_case("separated", rng.uniform(0.7, 1.0, 40), rng.uniform(0.3, 0.6, 30)),
        shift_case("overlapping", rng.beta(5, 2, 200), rng.beta(3, 3, 150)),
        shift_case("tied_grid", np.round(rng.beta(5, 2, 80), 1), np.round(rng.beta(3, 3, 60), 1)),
    ]
    doc = {
        "generator": "scripts/golden/selective.py",
        "versions": {"numpy": np.__version__, "torch": torch.__version__,
                     "torch_uncertainty": importlib.metadata.version("torch-uncertainty"), "relplot": "1.0.3", "uncertainty_calibration": "0.1.4"},
        "tolerance": {"f64": 1e-12, "tu": 1e-6, "smooth_ece": 1e-9},
        "cases": cases,
        "shift": shifts,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, allow_nan=True).replace("NaN", "null")
    # number arrays on one line
    text = re.sub(r"\[\s*([-0-9.e+,\snul]*?)\s*\]", lambda m: "[" + re.sub(r"\s+", "", m.group(1)).replace(",", ", ") + "]", text)
    OUT.write_text(text + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
