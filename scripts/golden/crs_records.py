"""Golden vectors for calibra-crs run records -> metric rows -> axes, the bootstrap's per-replicate
pipeline, and rank comparison statistics.

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/crs_records.py
Writes crates/calibra-crs/tests/golden/crs_records.json (deterministic: fixed seeds, no clock).

Independent oracle (numpy/scipy), written from shared/spec/crs-protocol.md sections 1, 2, 4 and 5.4:
- metric rows: per (encoder, dataset, regime, probe, calibrator, condition, label fraction) and metric,
  mean over observed seeds and sample std (ddof=1, None for n < 2);
- axes per cell (regime frozen, calibrator none): disc = clean AUROC at fraction 1, cal = -ECE,
  LE = mean_{rho in P} A(rho)/A(1), AULC = np.trapezoid over every observed clean fraction,
  robustness with/without the shift term; encoder aggregate = nanmean over observed cells;
- bootstrap replicate pipeline: for fixed seed multiplicities, weighted seed means -> axes -> profiles
  -> panel min/max anchors -> CRS (spec section 4, all encoders form the panel);
- rank comparison: ordinal ranks (ties by input order), scipy kendalltau / spearmanr on them,
  kendalltau (tau-b) and weightedtau on raw scores, reversals, displacement, top-k overlap, tied pairs.
"""

import json
import os

import numpy as np
from scipy import stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "crates", "calibra-crs", "tests", "golden", "crs_records.json")

P = [0.01, 0.05, 0.10, 0.25]
FRACTIONS = [0.01, 0.05, 0.10, 0.25, 1.0]
SEEDS = [0, 1, 2]
PERTURBATIONS = [("gaussian_blur", 1), ("gaussian_blur", 2), ("jpeg", 2)]


def f(x):
    """Metric values as a run would log them: 4 decimals (keeps the golden file small)."""
    return round(float(x), 4)


def build_records(rng):
    """A small synthetic design with deliberate holes."""
    encoders = {"Alpha": 0.90, "Beta": 0.85, "Gamma": 0.80, "Delta": 0.87}
    datasets = ["chexpert", "isic"]
    records = []

    def add(enc, ds, frac, seed, cond, auroc, ece, regime="frozen", calibrator="none"):
        records.append(
            {
                "encoder": enc,
                "dataset": ds,
                "regime": regime,
                "probe": "linear",
                "calibrator": calibrator,
                "label_fraction": frac,
                "seed": seed,
                "condition": cond,
                "metrics": {
                    "macro_auroc": f(auroc),
                    "ece": f(ece),
                },
            }
        )

    for enc, base in encoders.items():
        for ds in datasets:
            if enc == "Gamma" and ds == "isic":
                continue  # unobserved cell: never imputed
            cell_base = base + rng.uniform(-0.04, 0.04)
            for seed in SEEDS:
                noise = rng.normal(0, 0.01)
                a_full = cell_base + noise
                for frac in FRACTIONS:
                    if enc == "Beta" and ds == "isic" and frac == 0.05:
                        continue  # LE missing for this cell, AULC still defined
                    if enc == "Delta" and ds == "chexpert" and frac == 0.25 and seed == 2:
                        continue  # one seed missing: that row has n = 2
                    if frac == 1.0:
                        a = a_full
                    else:
                        if enc == "Delta" and ds == "isic":
                            a = a_full * rng.uniform(1.0, 1.04)  # retention above 1: kept, not clipped
                        else:
                            a = a_full * rng.uniform(0.75 + 0.2 * frac ** 0.5, 0.99)
                    ece = rng.uniform(0.02, 0.15)
                    add(enc, ds, frac, seed, {"kind": "clean"}, a, ece)
                for name, sev in PERTURBATIONS:
                    if enc == "Alpha" and ds == "isic" and name == "jpeg":
                        continue  # fewer perturbations observed for one cell
                    drop = rng.uniform(-0.01, 0.04 * sev)  # negative drop = gain, clipped at 0
                    add(enc, ds, 1.0, seed, {"kind": "perturbation", "perturbation": name, "severity": sev},
                        a_full - drop, rng.uniform(0.05, 0.25))
                if ds == "chexpert":
                    add(enc, ds, 1.0, seed, {"kind": "shift", "target": "mimic-cxr"},
                        a_full - rng.uniform(0.0, 0.1), rng.uniform(0.05, 0.2))
                # runs the axes must ignore: another regime, another calibrator
                if enc != "Alpha" or ds != "chexpert":
                    continue
                add(enc, ds, 1.0, seed, {"kind": "clean"}, a_full + 0.02, 0.01, regime="lora")
                add(enc, ds, 1.0, seed, {"kind": "clean"}, a_full, 0.005, calibrator="temperature")
    return records


def cond_key(c):
    return json.dumps(c, sort_keys=True)


def group_key(r):
    return (r["encoder"], r["dataset"], r["regime"], r["probe"], r["calibrator"], cond_key(r["condition"]),
            r["label_fraction"])


def metric_rows(records, weights=None):
    """{group: {metric: (mean, std, n)}}; with weights (per seed index) the weighted mean only."""
    groups = {}
    for r in records:
        groups.setdefault(group_key(r), {}).setdefault("_seeds", []).append(r)
    out = {}
    for g, d in groups.items():
        rows = {}
        metrics = sorted({m for r in d["_seeds"] for m in r["metrics"]})
        for m in metrics:
            vals = np.array([r["metrics"][m] for r in d["_seeds"] if m in r["metrics"]])
            seeds = [SEEDS.index(r["seed"]) for r in d["_seeds"] if m in r["metrics"]]
            if weights is None:
                std = float(np.std(vals, ddof=1)) if len(vals) >= 2 else None
                rows[m] = (float(np.mean(vals)), std, len(vals))
            else:
                w = np.array([weights[s] for s in seeds], dtype=float)
                rows[m] = (float(np.sum(w * vals) / np.sum(w)) if w.sum() > 0 else None, None, None)
        out[g] = rows
    return out


def cell_axes(rows):
    cells = {}
    for g, ms in rows.items():
        enc, ds, regime, probe, cal, cond, frac = g
        if regime != "frozen" or cal != "none":
            continue
        cells.setdefault((enc, ds), []).append((json.loads(cond), frac, ms))
    out = {}
    for (enc, ds), entries in sorted(cells.items()):
        def auroc(e):
            v = e[2].get("macro_auroc")
            return None if v is None else v[0]

        clean = {e[1]: e for e in entries if e[0]["kind"] == "clean"}
        a0 = auroc(clean[1.0]) if 1.0 in clean else None
        ece = clean[1.0][2]["ece"][0] if 1.0 in clean else None
        res = {"encoder": enc, "dataset": ds, "discrimination": a0, "calibration": -ece}
        curve = sorted((fr, auroc(e)) for fr, e in clean.items() if auroc(e) is not None)
        xs = np.array([c[0] for c in curve])
        ys = np.array([c[1] for c in curve])
        res["aulc"] = float(np.trapezoid(ys, xs)) if len(curve) >= 2 and xs[-1] == 1.0 else None
        if all(p in clean for p in P):
            res["label_efficiency"] = float(np.mean([auroc(clean[p]) / a0 for p in P]))
        else:
            res["label_efficiency"] = None
        pert = [auroc(e) for e in entries if e[0]["kind"] == "perturbation" and e[1] == 1.0]
        shift = [auroc(e) for e in entries if e[0]["kind"] == "shift" and e[1] == 1.0]
        d = np.maximum(0.0, (a0 - np.array(pert)) / a0)
        dbar, dmax = float(np.mean(d)), float(np.max(d))
        res["delta_mean"], res["delta_max"] = dbar, dmax
        if shift:
            ds_ = float(np.mean(np.maximum(0.0, (a0 - np.array(shift)) / a0)))
            res["delta_shift"] = ds_
            res["robustness"] = max(0.0, 1.0 - (dbar + dmax + ds_) / 3.0)
        else:
            res["delta_shift"] = None
            res["robustness"] = max(0.0, 1.0 - (dbar + dmax) / 2.0)
        res["robustness_corruption_only"] = max(0.0, 1.0 - (dbar + dmax) / 2.0)
        out[(enc, ds)] = res
    return out


AXES = ["discrimination", "calibration", "label_efficiency", "robustness"]


def profiles(cells, variant="with-shift"):
    encs = sorted({c["encoder"] for c in cells.values()})
    out = {}
    for e in encs:
        vals = []
        for a in AXES:
            key = "robustness_corruption_only" if (a == "robustness" and variant == "corruption-only") else a
            obs = [c[key] for c in cells.values() if c["encoder"] == e and c[key] is not None]
            vals.append(float(np.mean(obs)) if obs else None)
        out[e] = vals
    return out


def crs_panel(prof, axis_w=(0.25, 0.25, 0.25, 0.25), alpha=(0.60, 0.25, 0.15)):
    encs = sorted(prof)
    S = np.array([prof[e] for e in encs], dtype=float)
    lo, hi = S.min(axis=0), S.max(axis=0)
    N = np.clip((S - lo) / (hi - lo), 0.0, 1.0)
    n = len(encs)
    out = {}
    for k in range(n):
        dom = sum(
            1 for j in range(n) if j != k and np.all(N[k] >= N[j]) and np.any(N[k] > N[j])
        ) / (n - 1)
        s = 1.0 - float(np.sum(np.array(axis_w) * (1.0 - N[k]) ** 2))
        w = float(np.min(N[k]))
        out[encs[k]] = alpha[0] * dom + alpha[1] * s + alpha[2] * w
    return out


def ordinal_ranks(scores):
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    ranks = [0] * len(scores)
    for pos, i in enumerate(order):
        ranks[i] = pos + 1
    return ranks


def tied_pairs(scores):
    _, counts = np.unique(np.array(scores), return_counts=True)
    return int(sum(c * (c - 1) // 2 for c in counts))


def compare(names_a, scores_a, names_b, scores_b):
    ra_own = ordinal_ranks(scores_a)
    rb_own = ordinal_ranks(scores_b)
    idx_b = {n: i for i, n in enumerate(names_b)}
    ra = ra_own
    rb = [rb_own[idx_b[n]] for n in names_a]
    sb = [scores_b[idx_b[n]] for n in names_a]
    n = len(names_a)
    rev = sum(1 for i in range(n) for j in range(i + 1, n) if (ra[i] - ra[j]) * (rb[i] - rb[j]) < 0)
    top = {}
    for k in (3, 5):
        if k <= n:
            top[str(k)] = len({names_a[i] for i in range(n) if ra[i] <= k} & {names_a[i] for i in range(n) if rb[i] <= k}) / k
    moves = sorted(({"encoder": names_a[i], "rank_a": ra[i], "rank_b": rb[i]} for i in range(n)),
                   key=lambda m: m["rank_a"])
    return {
        "n": n,
        "kendall_tau": float(stats.kendalltau(ra, rb).statistic),
        "spearman_rho": float(stats.spearmanr(ra, rb).statistic),
        "kendall_tau_b_scores": float(stats.kendalltau(scores_a, sb).statistic),
        "weighted_tau": float(stats.weightedtau(scores_a, sb).statistic),
        "reversals": rev,
        "pairs": n * (n - 1) // 2,
        "mean_abs_displacement": float(np.mean(np.abs(np.array(ra) - np.array(rb)))),
        "top_k_overlap": top,
        "ties_a": tied_pairs(scores_a),
        "ties_b": tied_pairs(scores_b),
        "moves": moves,
    }


def main():
    rng = np.random.default_rng(20261130)
    records = build_records(rng)
    rows = metric_rows(records)
    row_list = []
    for g in sorted(rows, key=lambda g: (g[0], g[1], g[2], g[3], g[4], g[5], g[6])):
        enc, ds, regime, probe, cal, cond, frac = g
        for m, (mean, std, n) in sorted(rows[g].items()):
            # compact: [encoder, dataset, regime, probe, calibrator, condition, fraction, metric, mean, std, n]
            row_list.append([enc, ds, regime, probe, cal, json.loads(cond), frac, m, mean, std, n])
    cells = cell_axes(rows)

    replicates = []
    for weights in ([1, 1, 1], [3, 0, 0], [0, 2, 1], [1, 0, 2], [2, 1, 0]):
        wrows = metric_rows(records, weights)
        wcells = cell_axes(wrows)
        prof = profiles(wcells)
        replicates.append({"weights": weights, "profiles": prof, "crs": crs_panel(prof)})

    comparisons = []
    crng = np.random.default_rng(7)
    for n, levels in ((15, 20), (15, 6), (8, 1000), (6, 3), (12, 12), (4, 2)):
        names = [f"enc{i:02d}" for i in range(n)]
        a = [float(x) for x in crng.integers(0, levels, n) / levels]
        b = [float(x) for x in crng.integers(0, levels, n) / levels]
        perm = crng.permutation(n)
        names_b = [names[i] for i in perm]
        scores_b = [b[i] for i in perm]
        comparisons.append({
            "a": [[nm, s] for nm, s in zip(names, a)],
            "b": [[nm, s] for nm, s in zip(names_b, scores_b)],
            "expected": compare(names, a, names_b, scores_b),
        })

    golden = {
        "generator": "scripts/golden/crs_records.py",
        "numpy": np.__version__,
        "scipy": __import__("scipy").__version__,
        "records_jsonl": [json.dumps(r, separators=(",", ":")) for r in records],
        "seeds": SEEDS,
        "metric_rows": row_list,
        "cells": list(cells.values()),
        "profiles_with_shift": profiles(cells, "with-shift"),
        "profiles_corruption_only": profiles(cells, "corruption-only"),
        "replicates": replicates,
        "rank_comparisons": comparisons,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(golden, fh, indent=None, sort_keys=True, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {OUT}: {len(records)} records, {len(row_list)} rows, {len(cells)} cells")


if __name__ == "__main__":
    main()
