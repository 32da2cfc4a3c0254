"""Small, deliberately miscalibrated example predictions for `calibra calibrate` (examples/).

Run:  python3 scripts/examples/miscalibrated.py      (standard library only; deterministic)

Writes
- examples/miscalibrated_cal.csv, examples/miscalibrated_test.csv: a 4-class skin-lesion-like task,
  logits of an over-confident model (true signal scaled by 4: confidence far above accuracy), a
  calibration split and a test split from the same distribution;
- examples/miscalibrated_binary_cal.csv, examples/miscalibrated_binary_test.csv: the same kind of
  over-confident logits for a binary task (benign vs malignant), where temperature scaling is a
  monotone map of the positive-class probability and so leaves AUROC exactly unchanged;
- examples/miscalibrated_multilabel_cal.csv, examples/miscalibrated_multilabel_test.csv: a 3-finding
  chest-X-ray-like multilabel task with over-confident per-label logits and blank (unobserved) labels.
Logits are rounded to 4 decimals to keep the files small.
"""

import math
import pathlib
import random

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLASSES = ["nevus", "melanoma", "carcinoma", "keratosis"]
PRIORS = [0.45, 0.2, 0.2, 0.15]
FINDINGS = ["effusion", "edema", "cardiomegaly"]
PREVALENCE = [0.3, 0.2, 0.4]


def pick(rng, weights):
    u, acc = rng.random(), 0.0
    for i, w in enumerate(weights):
        acc += w
        if u < acc:
            return i
    return len(weights) - 1


def multiclass(path, rng, n, prefix, classes=CLASSES, priors=PRIORS):
    lines = ["id,label," + ",".join(f"logit_{c}" for c in classes)]
    for i in range(n):
        y = pick(rng, priors)
        z = [rng.gauss(0.0, 1.0) + (1.3 if c == y else 0.0) for c in range(len(classes))]
        z = [4.0 * v for v in z]  # over-confident scale
        lines.append(f"{prefix}{i:04d},{y}," + ",".join(f"{v:.4f}" for v in z))
    path.write_text("\n".join(lines) + "\n")


def multilabel(path, rng, n, prefix):
    header = ["id"] + [f"label_{f}" for f in FINDINGS] + [f"logit_{f}" for f in FINDINGS]
    lines = [",".join(header)]
    for i in range(n):
        labels, logits = [], []
        for prevalence in PREVALENCE:
            t = rng.random() < prevalence
            z = 3.5 * (rng.gauss(0.0, 1.0) + (1.0 if t else -1.0) + math.log(prevalence / (1 - prevalence)))
            blank = rng.random() < 0.1
            labels.append("" if blank else str(int(t)))
            logits.append(f"{z:.4f}")
        lines.append(f"{prefix}{i:04d}," + ",".join(labels + logits))
    path.write_text("\n".join(lines) + "\n")


def main():
    out = ROOT / "examples"
    out.mkdir(exist_ok=True)
    multiclass(out / "miscalibrated_cal.csv", random.Random(20261), 500, "cal-")
    multiclass(out / "miscalibrated_test.csv", random.Random(20262), 500, "test-")
    binary = (["benign", "malignant"], [0.7, 0.3])
    multiclass(out / "miscalibrated_binary_cal.csv", random.Random(20265), 400, "cal-", *binary)
    multiclass(out / "miscalibrated_binary_test.csv", random.Random(20266), 400, "test-", *binary)
    multilabel(out / "miscalibrated_multilabel_cal.csv", random.Random(20263), 300, "cal-")
    multilabel(out / "miscalibrated_multilabel_test.csv", random.Random(20264), 300, "test-")
    for p in sorted(out.glob("miscalibrated*.csv")):
        print(f"wrote {p} ({p.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
