"""Golden vectors for the FOCUS additions and the encoder-analysis statistics of calibra-crs.

Writes crates/calibra-crs/tests/golden/focus.json (deterministic: fixed seeds, no clock).

Oracles:
- per-group metrics: sklearn roc_auc_score / brier_score_loss / accuracy_score; top-label ECE with
  15 equal-width right-closed bins in numpy (searchsorted(edges[1:-1], c, side="left"), as
  scripts/golden/metrics.py);
- group splits: numpy median of the valid values, right-closed strata;
- paired bootstrap deltas on explicit index draws (numpy), numpy linear percentiles, the two-sided
  bootstrap p-value p = min(1, 2 * min(1 + #{d <= 0}, 1 + #{d >= 0}) / (B + 1));
- Benjamini-Hochberg: scipy.stats.false_discovery_control(p, method="bh");
- E4 correlations: scipy.stats.pearsonr and spearmanr.

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/focus.py
"""

import json
import os

import numpy as np
import scipy
from scipy import stats
from sklearn.metrics import accuracy_score, brier_score_loss, roc_auc_score

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "crates", "calibra-crs", "tests", "golden", "focus.json")
N_BINS = 15


def ece_top_label(probs, labels, n_bins=N_BINS):
    conf = probs.max(axis=1)
    pred = probs.argmax(axis=1)
    correct = (pred == labels).astype(float)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    b = np.searchsorted(edges[1:-1], conf, side="left")
    total = 0.0
    for k in range(n_bins):
        m = b == k
        if m.any():
            total += m.sum() / len(conf) * abs(correct[m].mean() - conf[m].mean())
    return float(total)


def metric(name, probs, labels):
    k = probs.shape[1]
    if name == "macro_auroc":
        if len(np.unique(labels)) < (2 if k == 2 else k):
            return None
        if k == 2:
            return float(roc_auc_score(labels, probs[:, 1]))
        return float(roc_auc_score(labels, probs, multi_class="ovr", average="macro", labels=list(range(k))))
    if name == "ece":
        return ece_top_label(probs, labels)
    if name == "brier":
        if k == 2:
            return float(brier_score_loss(labels, probs[:, 1]))
        onehot = np.eye(k)[labels]
        return float(((probs - onehot) ** 2).sum(axis=1).mean())
    if name == "accuracy":
        return float(accuracy_score(labels, probs.argmax(axis=1)))
    raise ValueError(name)


METRICS = ["macro_auroc", "ece", "brier", "accuracy"]


def rounded_probs(rng, n, k, labels, strength):
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += strength
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p = np.round(p, 6)
    p[:, -1] = np.round(1.0 - p[:, :-1].sum(axis=1), 6)
    return p


def gaps_case(rng, n, k, min_size):
    labels = rng.integers(0, k, size=n)
    labels[:k] = np.arange(k)
    probs = rounded_probs(rng, n, k, labels, 1.2)
    age = np.round(rng.uniform(20, 80, size=n)).astype(int).astype(object)
    age[rng.random(n) < 0.1] = ""
    sex = rng.choice(["F", "M"], size=n).astype(object)
    sex[rng.random(n) < 0.04] = "U"
    quality = np.round(rng.uniform(0, 1, size=n), 3)
    columns = {
        "age": {"split": "median", "values": [str(a) for a in age]},
        "sex": {"split": "categorical", "values": [str(s) for s in sex]},
        "quality": {"split": "thresholds", "thresholds": [0.4], "values": [str(q) for q in quality]},
    }
    expected = {}
    for name, col in columns.items():
        vals = col["values"]
        valid = [i for i, v in enumerate(vals) if v != ""]
        if col["split"] == "categorical":
            names = sorted(set(vals[i] for i in valid))
            rows = [[i for i in valid if vals[i] == g] for g in names]
            cuts = []
        else:
            x = np.array([float(vals[i]) for i in valid])
            cuts = [float(np.median(x))] if col["split"] == "median" else col["thresholds"]
            rows = [[], []]
            for i in valid:
                rows[0 if float(vals[i]) <= cuts[0] else 1].append(i)
            names = None
        per_metric = {}
        for m in METRICS:
            values = []
            for r in rows:
                if len(r) < min_size:
                    values.append(None)
                else:
                    values.append(metric(m, probs[r], labels[r]))
            defined = [v for v in values if v is not None]
            per_metric[m] = {
                "values": values,
                "gap": (max(defined) - min(defined)) if len(defined) >= 2 else None,
            }
        expected[name] = {
            "cuts": cuts,
            "sizes": [len(r) for r in rows],
            "missing": n - len(valid),
            "groups": names,
            "metrics": per_metric,
        }
    return {
        "k": k,
        "min_group_size": min_size,
        "probs": probs.ravel().tolist(),
        "labels": labels.tolist(),
        "columns": columns,
        "expected": expected,
    }


def deltas_case(rng, n, k, replicates):
    labels = rng.integers(0, k, size=n)
    labels[:k] = np.arange(k)
    base = rounded_probs(rng, n, k, labels, 0.6)
    adapted = rounded_probs(rng, n, k, labels, 1.6)
    draws = rng.integers(0, n, size=(replicates, n))
    level = 0.9
    out = {}
    for m in METRICS:
        b0, a0 = metric(m, base, labels), metric(m, adapted, labels)
        deltas = []
        for d in draws:
            bv, av = metric(m, base[d], labels[d]), metric(m, adapted[d], labels[d])
            if bv is not None and av is not None:
                deltas.append(av - bv)
        deltas = np.array(deltas)
        le, ge = int((deltas <= 0).sum()), int((deltas >= 0).sum())
        out[m] = {
            "base": b0,
            "adapted": a0,
            "delta": a0 - b0,
            "lower": float(np.percentile(deltas, 100 * (1 - level) / 2)),
            "upper": float(np.percentile(deltas, 100 * (1 + level) / 2)),
            "p_value": min(1.0, 2 * (1 + min(le, ge)) / (len(deltas) + 1)),
            "replicates_defined": len(deltas),
        }
    return {
        "k": k,
        "level": level,
        "base": base.ravel().tolist(),
        "adapted": adapted.ravel().tolist(),
        "labels": labels.tolist(),
        "draws": draws.tolist(),
        "expected": out,
    }


def bh_case(rng):
    cases = []
    for m in (1, 5, 25):
        p = np.round(rng.uniform(0, 0.2, size=m) ** 2, 4)
        if m == 25:
            p[3] = p[7]  # a tie
            p[10] = 1.0
        cases.append(
            {"p": p.tolist(), "adjusted": stats.false_discovery_control(p, method="bh").tolist()}
        )
    return cases


def correlation_case(rng):
    x = np.round(rng.uniform(0, 0.1, size=9), 4)
    y = np.round(0.5 * x + rng.normal(0, 0.02, size=9), 4)
    return {
        "x": x.tolist(),
        "y": y.tolist(),
        "pearson_r": float(stats.pearsonr(x, y).statistic),
        "spearman_rho": float(stats.spearmanr(x, y).statistic),
    }


def main():
    rng = np.random.default_rng(20260430)
    golden = {
        "generator": "scripts/golden/focus.py",
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__},
        "n_bins": N_BINS,
        "gaps_binary": gaps_case(rng, 160, 2, 30),
        "gaps_multiclass": gaps_case(rng, 120, 3, 20),
        "deltas_binary": deltas_case(rng, 60, 2, 30),
        "deltas_multiclass": deltas_case(rng, 45, 3, 20),
        "bh": bh_case(rng),
        "correlation": correlation_case(rng),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(golden, fh, indent=None, sort_keys=True, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
