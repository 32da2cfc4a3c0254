#!/usr/bin/env python3
"""Write examples/focus_runs/ : a run set for the FOCUS additions and the encoder analyses of `calibra eval`.

Contents (synthetic numbers, not measurements):
- runs.jsonl: 4 encoders x 2 datasets (brset-dr, papila-gon) x 2 seeds, frozen `linear` probes on
  label fractions 0.01/0.05/0.10/0.25/1.0, two perturbation conditions at fraction 1.0 (the four CRS
  axes), plus
  - frozen `linear` runs with calibrator `temperature` (clean, fraction 1.0): E2 calibration repair;
  - RETFound probes `linear@0.25`, `linear@0.5`, `linear@0.75` (clean, fraction 1.0): E3 feature depth;
  - MedSigLIP zero-shot runs (probe `prompt-simple`, with parse_coverage): E5 prompting vs probing;
  - LoRA runs (probe `lora-r8`, clean, fraction 1.0) of three encoders on brset-dr: adaptation deltas.
- predictions/*.csv: 150 binary rows (`id,label,prob_0,prob_1,age,sex,quality`) for every clean,
  full-label, uncalibrated `linear` or `lora-r8` run on brset-dr (the same 150 test ids); the metrics of
  those records (macro_auroc, ece, brier, accuracy) are computed from the file (AUROC by the rank-sum
  formula, ECE with 15 equal-width right-closed bins on top-label confidence, binary Brier, accuracy).
- groups.csv: `id,age,sex,quality` of the 150 test ids (the same values as the predictions' extra
  columns); sex has a 4-sample `U` group, below the default minimum group size.

Deterministic: standard library only, fixed seed; re-running rewrites identical bytes.
Usage: python3 scripts/examples/make_focus_runs.py   (from the repository root)
"""

import json
import math
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "examples", "focus_runs")

# encoder: (quality offset, ECE level, label-efficiency steepness, corruption sensitivity)
ENCODERS = {
    "DINOv2-B": (0.03, 0.06, 0.8, 0.06),
    "MedSigLIP": (0.05, 0.03, 0.6, 0.05),
    "RETFound": (0.06, 0.09, 0.7, 0.09),
    "ViT-B16": (-0.03, 0.05, 1.1, 0.07),
}
DATASETS = {"brset-dr": 0.80, "papila-gon": 0.76}
SPECIALIST_BONUS = {("RETFound", "brset-dr"): 0.05}
SEEDS = [0, 1]
FRACTIONS = [0.01, 0.05, 0.10, 0.25, 1.0]
PERTURBATIONS = [("gaussian_blur", 2, 0.6), ("jpeg", 2, 0.9)]
LORA = {"DINOv2-B": 1.0, "MedSigLIP": 1.5, "ViT-B16": 0.6}
N_TEST = 150


def r4(x):
    return round(x, 4)


def auroc(p, y):
    pairs = sorted(zip(p, y))
    ranks = [0.0] * len(pairs)
    i = 0
    while i < len(pairs):
        j = i
        while j + 1 < len(pairs) and pairs[j + 1][0] == pairs[i][0]:
            j += 1
        for t in range(i, j + 1):
            ranks[t] = (i + j) / 2 + 1
        i = j + 1
    pos = sum(1 for _, t in pairs if t == 1)
    neg = len(pairs) - pos
    s = sum(r for r, (_, t) in zip(ranks, pairs) if t == 1)
    return (s - pos * (pos + 1) / 2) / (pos * neg)


def ece(p1, y, n_bins=15):
    bins = {}
    for p, t in zip(p1, y):
        conf, pred = (p, 1) if p > 1 - p else (1 - p, 0)  # argmax ties -> class 0
        b = min(max(math.ceil(conf * n_bins) - 1, 0), n_bins - 1)
        bins.setdefault(b, []).append((conf, 1.0 if pred == t else 0.0))
    return sum(len(v) / len(y) * abs(sum(c for c, _ in v) / len(v) - sum(a for _, a in v) / len(v)) for v in bins.values())


def metrics_of(p1, y):
    return {
        "macro_auroc": r4(auroc(p1, y)),
        "ece": r4(ece(p1, y)),
        "brier": r4(sum((p - t) ** 2 for p, t in zip(p1, y)) / len(y)),
        "accuracy": r4(sum(1 for p, t in zip(p1, y) if (1 if p > 1 - p else 0) == t) / len(y)),
    }


def test_set(rng):
    rows = []
    for i in range(N_TEST):
        sex = "U" if i % 37 == 5 else rng.choice(["F", "M"])
        age = "" if i % 23 == 7 else str(rng.randint(25, 85))
        rows.append(
            {"id": f"brset-{i:04d}", "label": 1 if rng.random() < 0.4 else 0, "age": age, "sex": sex,
             "quality": f"{rng.random():.3f}"}
        )
    return rows


def predictions(rng, rows, strength, bias):
    out = []
    for r in rows:
        # Harder for older patients and low-quality images: this creates the gaps.
        s = strength * (1.0 - 0.4 * (r["age"] != "" and int(r["age"]) > 60)) * (0.6 + 0.6 * float(r["quality"]))
        z = (2 * r["label"] - 1) * s + rng.gauss(0, 1) + bias
        p1 = round(1 / (1 + math.exp(-z)), 6)
        out.append(p1)
    return out


def write_predictions(path, rows, p1):
    with open(path, "w") as fh:
        fh.write("id,label,prob_0,prob_1,age,sex,quality\n")
        for r, p in zip(rows, p1):
            fh.write(f"{r['id']},{r['label']},{round(1 - p, 6)},{p},{r['age']},{r['sex']},{r['quality']}\n")


def record(enc, ds, regime, probe, frac, seed, cond, metrics, calibrator="none", pred=None):
    rec = {"encoder": enc, "dataset": ds, "regime": regime, "probe": probe, "calibrator": calibrator,
           "label_fraction": frac, "seed": seed, "condition": cond, "metrics": metrics}
    if pred:
        rec["paths"] = {"predictions": pred}
    return rec


def main():
    rng = random.Random(7)
    os.makedirs(os.path.join(OUT, "predictions"), exist_ok=True)
    rows = test_set(rng)
    with open(os.path.join(OUT, "groups.csv"), "w") as fh:
        fh.write("id,age,sex,quality\n")
        for r in rows:
            fh.write(f"{r['id']},{r['age']},{r['sex']},{r['quality']}\n")
    labels = [r["label"] for r in rows]
    clean = {"kind": "clean"}
    records = []
    for enc, (q, e0, steep, sens) in ENCODERS.items():
        for ds, base in DATASETS.items():
            bonus = SPECIALIST_BONUS.get((enc, ds), 0.0)
            for seed in SEEDS:
                noise = rng.gauss(0, 0.004)
                a1 = base + q + bonus + noise
                for frac in FRACTIONS:
                    if frac == 1.0 and ds == "brset-dr":
                        p1 = predictions(rng, rows, 1.2 + 6 * (q + bonus), 0.2 * (e0 - 0.05) * 10)
                        name = f"predictions/{enc}-{ds}-linear-seed{seed}.csv"
                        write_predictions(os.path.join(OUT, name), rows, p1)
                        m = metrics_of(p1, labels)
                        records.append(record(enc, ds, "frozen", "linear", frac, seed, clean, m, pred=name))
                        a1, ece1, brier1 = m["macro_auroc"], m["ece"], m["brier"]
                    else:
                        drop = steep * 0.12 * (1 - frac) ** 2 if frac < 1.0 else 0.0
                        a = a1 - drop if frac < 1.0 else a1
                        ece1 = e0 + rng.gauss(0, 0.003)
                        m = {"macro_auroc": r4(a), "ece": r4(ece1 if frac == 1.0 else ece1 + 0.02 * (1 - frac)),
                             "brier": r4(0.15 + ece1)}
                        records.append(record(enc, ds, "frozen", "linear", frac, seed, clean, m))
                        if frac == 1.0:
                            a1 = m["macro_auroc"]
                            ece1 = m["ece"]
                            brier1 = m["brier"]
                # Perturbations (fraction 1).
                for pert, sev, scale in PERTURBATIONS:
                    m = {"macro_auroc": r4(a1 - sens * scale + rng.gauss(0, 0.002)),
                         "ece": r4(ece1 + 0.8 * sens * scale + rng.gauss(0, 0.003))}
                    cond = {"kind": "perturbation", "perturbation": pert, "severity": sev}
                    records.append(record(enc, ds, "frozen", "linear", 1.0, seed, cond, m))
                # Temperature scaling: lower ECE and Brier, same AUROC.
                m = {"macro_auroc": r4(a1), "ece": r4(0.35 * ece1), "brier": r4(brier1 - 0.3 * ece1 * ece1)}
                records.append(record(enc, ds, "frozen", "linear", 1.0, seed, clean, m, calibrator="temperature"))
                if enc == "RETFound":
                    for depth, gain in [("0.25", -0.04), ("0.5", 0.012), ("0.75", 0.006)]:
                        m = {"macro_auroc": r4(a1 + gain + rng.gauss(0, 0.002)), "ece": r4(ece1 - 0.01)}
                        records.append(record(enc, ds, "frozen", f"linear@{depth}", 1.0, seed, clean, m))
                if enc == "MedSigLIP":
                    m = {"macro_auroc": r4(a1 - 0.12), "accuracy": r4(0.61 + rng.gauss(0, 0.01)),
                         "parse_coverage": 1.0}
                    records.append(record(enc, ds, "zero-shot", "prompt-simple", 1.0, seed, clean, m))
                if enc in LORA and ds == "brset-dr":
                    p1 = predictions(rng, rows, 1.2 + 6 * q + LORA[enc], 0.0)
                    name = f"predictions/{enc}-{ds}-lora-seed{seed}.csv"
                    write_predictions(os.path.join(OUT, name), rows, p1)
                    records.append(record(enc, ds, "lora", "lora-r8", 1.0, seed, clean, metrics_of(p1, labels),
                                          pred=name))
    with open(os.path.join(OUT, "runs.jsonl"), "w") as fh:
        for r in records:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
    print(f"wrote {len(records)} records to {OUT}/runs.jsonl")


if __name__ == "__main__":
    main()
