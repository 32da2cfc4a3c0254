"""The example run set of `calibra eval --selective` and the golden values of its analyses.

Writes
- examples/selective_runs/runs.jsonl and examples/selective_runs/predictions/*.csv: 2 encoders (EncA, EncB)
  on one 3-class dataset (`derm`, 120 test ids) x 2 seeds, frozen `linear` probes at full labels, each
  fit predicted on the clean test split, under `gaussian_blur` severity 2 (the same 120 ids) and on the
  shift target `derm-ext` (90 other ids). Synthetic numbers, not measurements. Rows are written in a
  shuffled order, so that the id sort of the conformal split matters. Record metrics: `macro_auroc`
  (sklearn, one-vs-rest macro) and `accuracy` (argmax, ties to the lowest index) of the file.
- crates/calibra-crs/tests/golden/selective_eval.json: what calibra_crs::selective_analyses must give
  on that run set at alpha = 0.1 with LAC and eval seed 7 (read by crates/calibra-crs/tests/selective_golden.rs).

The oracle, independent of the Rust code:
- AURC, E-AURC, AUGRC and the risk at coverage c (risk of the ceil(n c) most confident rows): numpy port of
  torch-uncertainty 0.13 `risk_coverage.py` (np.trapezoid over c_k = k/n, divided by 1 - 1/n) with a STABLE
  descending sort of the MSP (ties keep row order), the rule the calibra-metrics golden vectors
  (scripts/golden/selective.py) check against torch-uncertainty itself;
- the conformal split of calibra_crs::conformal_split: SplitMix64 uniform draws (calibra-calibrate
  `uniform_draws`) seeded with eval_seed * 0x9E3779B97F4A7C15 + fit seed (mod 2^64) over the sorted ids,
  the floor(n/2) smallest draws (ties by row) the calibration half;
- the LAC quantile as MAPIE 1.6 computes it: np.quantile(1 - p_y, ceil((n+1)(1-alpha))/n, method="lower"),
  sets {k : (1 - p_k) - q <= 1e-8}; coverage and mean set size on the rows outside the calibration half;
- shift detection: sklearn roc_auc_score of -MSP (shift rows positive) and, for FPR at 95 % TPR, the first
  point of sklearn roc_curve(drop_intermediate=False) (thresholds only between distinct scores) whose TPR
  reaches 0.95.

Deterministic (numpy seed fixed). Run: scripts/golden/venv.sh python scripts/golden/selective_eval.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import sklearn.metrics as skm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "selective_runs"
GOLDEN = ROOT / "crates" / "calibra-crs" / "tests" / "golden" / "selective_eval.json"
RNG_SEED = 20240624
EVAL_SEED = 7
ALPHA = 0.1
K = 3
N_TEST = 120
N_SHIFT = 90
ENCODERS = {"EncA": 1.6, "EncB": 0.9}  # signal strength of the logits
SEEDS = [0, 1]
M64 = (1 << 64) - 1


def uniform_draws(seed: int, n: int) -> list[float]:
    """calibra-calibrate `uniform_draws`: SplitMix64, 53-bit mantissas."""
    s, out = seed, []
    for _ in range(n):
        s = (s + 0x9E3779B97F4A7C15) & M64
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        z ^= z >> 31
        out.append((z >> 11) * (1.0 / (1 << 53)))
    return out


def split_seed(eval_seed: int, fit_seed: int) -> int:
    return (eval_seed * 0x9E3779B97F4A7C15 + fit_seed) & M64


def calibration_half(ids: list[str], seed: int) -> set[str]:
    ordered = sorted(ids)
    u = uniform_draws(seed, len(ordered))
    order = sorted(range(len(ordered)), key=lambda i: (u[i], i))
    return {ordered[i] for i in order[: len(ordered) // 2]}


def fmt(x: float) -> str:
    return repr(float(x))


def make_rows(rng, ids, strength, noise):
    """Probabilities (6 decimals, rows summing to 1) of a softmax of `strength * onehot(y) + noise`."""
    rows = []
    for i in ids:
        y = int(rng.integers(K))
        z = rng.normal(0.0, noise, K)
        z[y] += strength
        p = np.exp(z - z.max())
        p /= p.sum()
        p0, p1 = round(float(p[0]), 6), round(float(p[1]), 6)
        p2 = round(1.0 - p0 - p1, 6)
        rows.append((i, y, [p0, p1, p2]))
    order = rng.permutation(len(rows))
    return [rows[j] for j in order]


def write_predictions(path: Path, rows) -> None:
    with path.open("w") as f:
        f.write("id,label,prob_0,prob_1,prob_2\n")
        for i, y, p in rows:
            f.write(f"{i},{y},{','.join(fmt(v) for v in p)}\n")


def read_back(path: Path):
    """The rows as the Rust reader parses them (file order)."""
    ids, ys, ps = [], [], []
    for line in path.read_text().splitlines()[1:]:
        cells = line.split(",")
        ids.append(cells[0])
        ys.append(int(cells[1]))
        ps.append([float(c) for c in cells[2:]])
    return ids, np.array(ys), np.array(ps)


def trapz_normalised(values: np.ndarray) -> float:
    n = len(values)
    c = np.arange(1, n + 1, dtype=np.float64) / n
    return float(np.trapezoid(values, c) / (1.0 - 1.0 / n))


def selective(ps: np.ndarray, ys: np.ndarray):
    conf = ps.max(axis=1)
    err = ps.argmax(axis=1) != ys
    n = len(conf)
    order = np.argsort(-conf, kind="stable")
    cum = np.cumsum(err[order])
    k = np.arange(1, n + 1)
    risks = cum / k
    aurc = trapz_normalised(risks)
    right = int((~err).sum())
    oracle = np.maximum(k - right, 0) / k
    augrc = trapz_normalised(risks * (k / n))
    grid = [i / 20 for i in range(1, 21)]
    curve = [float(risks[min(max(math.ceil(n * c), 1), n) - 1]) for c in grid]
    return {"aurc": aurc, "eaurc": aurc - trapz_normalised(oracle), "augrc": augrc, "risk_coverage": curve}


def lac_quantile(ps: np.ndarray, ys: np.ndarray, alpha: float) -> float:
    n = len(ys)
    scores = 1.0 - ps[np.arange(n), ys]
    level = math.ceil((n + 1) * (1 - alpha)) / n
    return float(np.quantile(scores, level, method="lower"))


def lac_coverage(ps: np.ndarray, ys: np.ndarray, q: float):
    sets = (1.0 - ps) - q <= 1e-8
    return {
        "samples": len(ys),
        "coverage": float(sets[np.arange(len(ys)), ys].mean()),
        "mean_set_size": float(sets.sum(axis=1).mean()),
        "empty_fraction": float((sets.sum(axis=1) == 0).mean()),
    }


def fpr_at_95(clean_conf: np.ndarray, shifted_conf: np.ndarray) -> float:
    scores = -np.concatenate([clean_conf, shifted_conf])
    y = np.concatenate([np.zeros(len(clean_conf)), np.ones(len(shifted_conf))])
    fpr, tpr, _ = skm.roc_curve(y, scores, drop_intermediate=False)
    return float(fpr[np.argmax(tpr >= 0.95)])


def main() -> None:
    rng = np.random.default_rng(RNG_SEED)
    (EXAMPLE / "predictions").mkdir(parents=True, exist_ok=True)
    test_ids = [f"derm-{i:03d}" for i in range(N_TEST)]
    shift_ids = [f"ext-{i:03d}" for i in range(N_SHIFT)]
    conditions = [
        ("clean", {"kind": "clean"}, test_ids, 1.0, 1.0),
        ("blur2", {"kind": "perturbation", "perturbation": "gaussian_blur", "severity": 2}, test_ids, 0.7, 1.2),
        ("shift", {"kind": "shift", "target": "derm-ext"}, shift_ids, 0.5, 1.4),
    ]
    records, runs, conformal, shift = [], [], [], []
    for encoder, strength in ENCODERS.items():
        for seed in SEEDS:
            loaded = {}
            for name, cond, ids, s_mult, noise in conditions:
                rel = f"predictions/{encoder}-derm-{name}-seed{seed}.csv"
                write_predictions(EXAMPLE / rel, make_rows(rng, ids, strength * 2.0 * s_mult, noise))
                fid, ys, ps = read_back(EXAMPLE / rel)
                loaded[name] = (cond, fid, ys, ps)
                records.append(
                    {
                        "encoder": encoder,
                        "dataset": "derm",
                        "regime": "frozen",
                        "probe": "linear",
                        "calibrator": "none",
                        "label_fraction": 1.0,
                        "seed": seed,
                        "condition": cond,
                        "metrics": {
                            "accuracy": float((ps.argmax(axis=1) == ys).mean()),
                            "macro_auroc": float(skm.roc_auc_score(ys, ps, multi_class="ovr", average="macro")),
                        },
                        "paths": {"predictions": rel},
                    }
                )
                runs.append({"encoder": encoder, "seed": seed, "condition": cond, **selective(ps, ys)})
            _, cid, cys, cps = loaded["clean"]
            cal = calibration_half(cid, split_seed(EVAL_SEED, seed))
            rows = np.array([i in cal for i in cid])
            q = lac_quantile(cps[rows], cys[rows], ALPHA)
            for name, (cond, fid, ys, ps) in loaded.items():
                keep = np.array([i not in cal for i in fid])
                conformal.append(
                    {
                        "encoder": encoder,
                        "seed": seed,
                        "condition": cond,
                        "calibration_samples": int(rows.sum()),
                        "quantile": q,
                        "excluded": int((~keep).sum()),
                        **lac_coverage(ps[keep], ys[keep], q),
                    }
                )
            _, sid, sys_, sps = loaded["shift"]
            clean_conf, shifted_conf = cps.max(axis=1), sps.max(axis=1)
            y = np.concatenate([np.zeros(len(clean_conf)), np.ones(len(shifted_conf))])
            shift.append(
                {
                    "encoder": encoder,
                    "seed": seed,
                    "auroc": float(skm.roc_auc_score(y, -np.concatenate([clean_conf, shifted_conf]))),
                    "fpr_at_95_tpr": fpr_at_95(clean_conf, shifted_conf),
                }
            )
    with (EXAMPLE / "runs.jsonl").open("w") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    cells = []
    for encoder in ENCODERS:
        for _, cond, *_ in conditions:
            rs = [r for r in runs if r["encoder"] == encoder and r["condition"] == cond]
            cs = [c for c in conformal if c["encoder"] == encoder and c["condition"] == cond]
            ss = [s for s in shift if s["encoder"] == encoder] if cond["kind"] == "shift" else []
            cell = {
                "encoder": encoder,
                "condition": cond,
                "aurc": float(np.mean([r["aurc"] for r in rs])),
                "augrc": float(np.mean([r["augrc"] for r in rs])),
                "coverage": float(np.mean([c["coverage"] for c in cs])),
                "mean_set_size": float(np.mean([c["mean_set_size"] for c in cs])),
            }
            if ss:
                cell["shift_auroc"] = float(np.mean([s["auroc"] for s in ss]))
            cells.append(cell)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "generator": "scripts/golden/selective_eval.py",
        "alpha": ALPHA,
        "method": "lac",
        "eval_seed": EVAL_SEED,
        "runs": runs,
        "conformal": conformal,
        "shift_detection": shift,
        "cells": cells,
    }
    GOLDEN.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(records)} records to {EXAMPLE} and {GOLDEN}")


if __name__ == "__main__":
    main()
