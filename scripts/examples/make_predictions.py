#!/usr/bin/env python3
"""Generate the small example predictions files in examples/ (standard library only, deterministic).

    python3 scripts/examples/make_predictions.py

Each file mimics the output of an over-confident image classifier on a medical task, so that the
evaluator has something realistic to report:
  predictions_multiclass.csv  7 skin-lesion classes (ISIC 2019 names), logits, 400 rows
  predictions_binary.csv      referable vs non-referable, logits, 300 rows
  predictions_ordinal.csv     5 retinopathy grades (APTOS 2019), probabilities, 300 rows
  predictions_multilabel.csv  5 CheXpert competition labels, logits, blanks = uncertain/unlabelled, 300 rows
Re-running rewrites byte-identical files.
"""
import math
import os
import random

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def softmax(z):
    m = max(z)
    e = [math.exp(v - m) for v in z]
    s = sum(e)
    return [v / s for v in e]


def fmt(x):
    return repr(float(x))


def single_label(rng, n, classes, prior, separation, overconfidence, ordinal=False):
    rows = []
    for i in range(n):
        y = rng.choices(range(len(classes)), weights=prior)[0]
        z = []
        for k in range(len(classes)):
            if ordinal:
                # Neighbouring grades are confused more often than distant ones.
                mean = separation * (1.0 - abs(k - y) / 2.0)
            else:
                mean = separation if k == y else 0.0
            z.append(overconfidence * (mean + rng.gauss(0.0, 1.0)))
        rows.append((f"case{i:04d}", y, z))
    return rows


def write_single(path, classes, rows, as_prob=False):
    prefix = "prob_" if as_prob else "logit_"
    with open(path, "w", newline="\n") as f:
        f.write(",".join(["id", "label"] + [prefix + c for c in classes]) + "\n")
        for rid, y, z in rows:
            scores = softmax(z) if as_prob else z
            if as_prob:
                # Force an exact row sum of 1 after rounding by putting the residual on the last class.
                scores = [round(s, 12) for s in scores]
                scores[-1] = round(1.0 - sum(scores[:-1]), 12)
            f.write(",".join([rid, str(y)] + [fmt(s) for s in scores]) + "\n")


def main():
    os.makedirs(ROOT, exist_ok=True)
    isic = ["MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC"]
    rng = random.Random(2019)
    rows = single_label(rng, 400, isic, [18, 50, 13, 4, 10, 2, 3], separation=1.6, overconfidence=2.5)
    write_single(os.path.join(ROOT, "predictions_multiclass.csv"), isic, rows)

    rng = random.Random(7)
    rows = single_label(rng, 300, ["non_referable", "referable"], [70, 30], separation=1.8, overconfidence=2.0)
    write_single(os.path.join(ROOT, "predictions_binary.csv"), ["non_referable", "referable"], rows)

    grades = ["grade0", "grade1", "grade2", "grade3", "grade4"]
    rng = random.Random(2020)
    rows = single_label(rng, 300, grades, [49, 10, 27, 5, 9], separation=2.0, overconfidence=1.8, ordinal=True)
    write_single(os.path.join(ROOT, "predictions_ordinal.csv"), grades, rows, as_prob=True)

    labels = ["Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Pleural_Effusion"]
    prevalence = [0.3, 0.2, 0.1, 0.25, 0.35]
    rng = random.Random(2021)
    path = os.path.join(ROOT, "predictions_multilabel.csv")
    with open(path, "w", newline="\n") as f:
        f.write(",".join(["id"] + ["label_" + c for c in labels] + ["logit_" + c for c in labels]) + "\n")
        for i in range(300):
            targets, logits = [], []
            for p in prevalence:
                y = 1 if rng.random() < p else 0
                z = 2.2 * ((1.5 if y else -1.5) + rng.gauss(0.0, 1.2))
                # About 12 % of cells are uncertain or unlabelled (CheXpert -1 / blank under U-ignore).
                targets.append("" if rng.random() < 0.12 else str(y))
                logits.append(fmt(z))
            f.write(",".join([f"study{i:04d}"] + targets + logits) + "\n")


if __name__ == "__main__":
    main()
