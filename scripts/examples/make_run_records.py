#!/usr/bin/env python3
"""Write examples/run_records.jsonl (+ a few predictions files) for `calibra eval`.

A small but realistic run set in the run-record schema of crates/calibra-crs/src/run_record.rs:
6 encoders x 2 datasets x 3 seeds, frozen linear probes on label fractions 0.01/0.05/0.10/0.25/1.0,
three perturbation x severity conditions at fraction 1.0, a shift target (chexpert -> mimic-cxr), and a
LoRA regime (clean, fraction 1.0) for three encoders so that frozen-vs-adapted comparisons appear.
Metrics: macro_auroc and ece. The numbers are synthetic (a latent quality per encoder plus seeded
noise), not measurements. Three clean frozen runs (isic2019, seed 0) also point to a predictions file
(examples/eval_runs/*.csv, 200 binary rows); their recorded macro_auroc and ece are computed from that
file (AUROC by the rank-sum formula, ECE with 15 equal-width bins on top-label confidence).

Deterministic: standard library only, fixed seed; re-running rewrites identical bytes.
Usage: python3 scripts/examples/make_run_records.py   (from the repository root)
"""

import json
import math
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "examples", "run_records.jsonl")
PRED_DIR = os.path.join(ROOT, "examples", "eval_runs")

# encoder: (clean AUROC offset, ECE level, label-efficiency steepness, corruption sensitivity)
ENCODERS = {
    "BiomedCLIP": (0.020, 0.035, 0.55, 0.040),
    "CheXzero": (0.000, 0.090, 0.70, 0.030),
    "DINOv2-B": (0.035, 0.060, 0.85, 0.070),
    "MedSigLIP": (0.030, 0.025, 0.65, 0.055),
    "PanDerm": (0.045, 0.110, 0.90, 0.110),
    "ResNet50-IN": (-0.040, 0.050, 1.10, 0.090),
}
DATASETS = {"isic2019": 0.86, "chexpert": 0.80}
SHIFT = {"chexpert": "mimic-cxr"}
SEEDS = [0, 1, 2]
FRACTIONS = [0.01, 0.05, 0.10, 0.25, 1.0]
PERTURBATIONS = [("gaussian_blur", 1, 0.4), ("gaussian_blur", 3, 1.0), ("jpeg", 2, 0.6)]
LORA = {"DINOv2-B": 0.015, "MedSigLIP": 0.030, "PanDerm": -0.005}
PREDICTION_RUNS = ["MedSigLIP", "PanDerm", "ResNet50-IN"]


def r4(x):
    return round(x, 4)


def record(encoder, dataset, regime, probe, fraction, seed, condition, auroc, ece, paths=None):
    rec = {
        "encoder": encoder,
        "dataset": dataset,
        "regime": regime,
        "probe": probe,
        "calibrator": "none",
        "label_fraction": fraction,
        "seed": seed,
        "condition": condition,
        "metrics": {"macro_auroc": r4(min(auroc, 0.999)), "ece": r4(max(ece, 0.002))},
    }
    if paths:
        rec["paths"] = paths
    return rec


def binary_auroc(scores, labels):
    pairs = sorted(zip(scores, labels))
    ranks = [0.0] * len(pairs)
    i = 0
    while i < len(pairs):
        j = i
        while j + 1 < len(pairs) and pairs[j + 1][0] == pairs[i][0]:
            j += 1
        for t in range(i, j + 1):
            ranks[t] = (i + j) / 2.0 + 1.0
        i = j + 1
    n_pos = sum(labels)
    n_neg = len(labels) - n_pos
    rank_sum = sum(r for r, (_, y) in zip(ranks, pairs) if y == 1)
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def top_label_ece(p1, labels, n_bins=15):
    bins = [[0, 0.0, 0.0] for _ in range(n_bins)]
    for p, y in zip(p1, labels):
        pred = 1 if p > 0.5 else 0  # argmax; a tie goes to the lower index
        conf = p if pred == 1 else 1.0 - p
        b = min(int(conf * n_bins), n_bins - 1)
        if conf == b / n_bins and b > 0:  # right-closed bins (lo, hi]
            b -= 1
        bins[b][0] += 1
        bins[b][1] += conf
        bins[b][2] += 1.0 if pred == y else 0.0
    n = len(labels)
    return sum(c / n * abs(acc / c - conf / c) for c, conf, acc in bins if c > 0)


def predictions_file(rng, encoder, path):
    """200 binary rows whose separation and over-confidence follow the encoder's latent quality."""
    offset, ece_level, _, _ = ENCODERS[encoder]
    separation = 1.6 + 8.0 * offset
    temperature = 1.0 + 6.0 * ece_level
    lines = ["id,label,prob_benign,prob_malignant"]
    probs, labels = [], []
    for i in range(200):
        y = 1 if i % 3 == 0 else 0
        z = rng.gauss(separation if y else -separation * 0.5, 1.4) * temperature
        p = 1.0 / (1.0 + math.exp(-z))
        p = min(max(round(p, 6), 0.000001), 0.999999)
        probs.append(p)
        labels.append(y)
        lines.append(f"isic-{i:04d},{y},{1.0 - p:.6f},{p:.6f}")
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    # Recompute from the written (rounded) values so the record matches the file.
    written = [float(line.split(",")[3]) for line in lines[1:]]
    return binary_auroc(written, labels), top_label_ece(written, labels)


def main():
    rng = random.Random(20261130)
    os.makedirs(PRED_DIR, exist_ok=True)
    lines = []
    for encoder, (offset, ece_level, steep, sens) in ENCODERS.items():
        for dataset, base in DATASETS.items():
            for seed in SEEDS:
                clean = base + offset + rng.gauss(0, 0.006)
                for fraction in FRACTIONS:
                    drop = 0.0 if fraction == 1.0 else steep * 0.09 * math.log10(1.0 / fraction)
                    auroc = clean - drop + (0 if fraction == 1.0 else rng.gauss(0, 0.008))
                    ece = ece_level * (1.0 + 0.6 * (1.0 - fraction)) + rng.gauss(0, 0.004)
                    paths = None
                    if fraction == 1.0 and dataset == "isic2019" and seed == 0 and encoder in PREDICTION_RUNS:
                        name = f"{encoder}-{dataset}-seed{seed}.csv"
                        auroc, ece = predictions_file(rng, encoder, os.path.join(PRED_DIR, name))
                        paths = {"predictions": f"eval_runs/{name}"}
                    lines.append(
                        record(encoder, dataset, "frozen", "linear-ce", fraction, seed, {"kind": "clean"},
                               auroc, ece, paths)
                    )
                for pert, severity, strength in PERTURBATIONS:
                    auroc = clean - sens * strength * clean * (1.0 + rng.gauss(0, 0.1))
                    ece = ece_level * (1.0 + strength) + rng.gauss(0, 0.004)
                    cond = {"kind": "perturbation", "perturbation": pert, "severity": severity}
                    lines.append(record(encoder, dataset, "frozen", "linear-ce", 1.0, seed, cond, auroc, ece))
                if dataset in SHIFT:
                    auroc = clean - 0.08 - 0.4 * sens + rng.gauss(0, 0.006)
                    ece = ece_level * 1.8 + rng.gauss(0, 0.004)
                    cond = {"kind": "shift", "target": SHIFT[dataset]}
                    lines.append(record(encoder, dataset, "frozen", "linear-ce", 1.0, seed, cond, auroc, ece))
                if encoder in LORA:
                    auroc = clean + LORA[encoder] + rng.gauss(0, 0.005)
                    ece = ece_level * 0.8 + rng.gauss(0, 0.004)
                    lines.append(record(encoder, dataset, "lora", "lora-r8-ce", 1.0, seed, {"kind": "clean"},
                                        auroc, ece))
    with open(OUT, "w", newline="\n") as f:
        for rec in lines:
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
    print(f"wrote {len(lines)} records to {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
