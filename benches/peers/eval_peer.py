#!/usr/bin/env python3
"""numpy oracle of `calibra eval`'s paired-seed bootstrap (spec crs-protocol.md §2, §4, §5.1).

Reads a run-record JSONL file (or generates the issue-4 benchmark design: 15 encoders x 3 datasets x
5 seeds, clean runs at label fractions 0.01/0.05/0.10/0.25/1.0 and 15 perturbation x severity conditions
at fraction 1.0, metrics macro_auroc and ece), then computes with numpy, vectorised over replicates:
seed-weighted metric means -> cell axes (disc = A0, cal = -ECE, LE = mean A(rho)/A0, robustness
max(0, 1 - (mean delta + max delta [+ shift delta]) / (2 [+ 1]))) -> encoder means over cells -> panel
min/max anchors -> D, S, W, CRS -> 95 % percentile interval, P(rank 1), P(top 3).

Replicate draws use numpy's PCG64 (not calibra's ChaCha8 streams), so intervals agree with calibra's
statistically, not bit for bit; the point CRS (all seeds once) must agree to ~1e-12.

Usage:
  eval_peer.py [--records RUNS.jsonl] [--replicates N] [--seed S]
Prints one JSON object: encoders, point CRS, interval, P(rank 1), P(top 3), and the seconds taken by
the bootstrap.
"""

import argparse
import json
import sys
import time

import numpy as np

FRACTIONS = [0.01, 0.05, 0.10, 0.25]


def design(seed=0):
    """The issue-4 benchmark design as run records (synthetic values)."""
    rng = np.random.default_rng(seed)
    records = []
    perts = [(p, s) for p in ["blur", "jpeg", "contrast", "rician", "crop"] for s in (1, 2, 3)]
    for e in range(15):
        quality = rng.uniform(-0.05, 0.05)
        for d in range(3):
            for s in range(5):
                clean = 0.8 + quality + rng.normal(0, 0.01)
                for f in FRACTIONS + [1.0]:
                    a = clean - (0 if f == 1.0 else 0.05 * np.log10(1 / f)) + rng.normal(0, 0.01)
                    records.append((f"enc{e:02d}", f"ds{d}", f, s, ("clean",), a, rng.uniform(0.02, 0.12)))
                for p, sev in perts:
                    a = clean - 0.02 * sev * rng.uniform(0.5, 1.5)
                    records.append((f"enc{e:02d}", f"ds{d}", 1.0, s, ("perturbation", p, sev), a,
                                    rng.uniform(0.02, 0.2)))
    return records


def read_records(path):
    out = []
    with open(path) as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            if r["regime"] != "frozen" or r["calibrator"] != "none":
                continue
            c = r["condition"]
            cond = (c["kind"],) if c["kind"] == "clean" else (
                (c["kind"], c["perturbation"], c["severity"]) if c["kind"] == "perturbation" else (c["kind"], c["target"]))
            m = r["metrics"]
            out.append((r["encoder"], r["dataset"], r["label_fraction"], r["seed"], cond,
                        m.get("macro_auroc", np.nan), m.get("ece", np.nan)))
    return out


def evaluate(records, replicates, seed):
    seeds = sorted({r[3] for r in records})
    groups = sorted({(r[0], r[1], r[2], r[4]) for r in records})
    gi = {g: i for i, g in enumerate(groups)}
    si = {s: i for i, s in enumerate(seeds)}
    auc = np.full((len(groups), len(seeds)), np.nan)
    ece = np.full((len(groups), len(seeds)), np.nan)
    for enc, ds, f, s, cond, a, e in records:
        auc[gi[(enc, ds, f, cond)], si[s]] = a
        ece[gi[(enc, ds, f, cond)], si[s]] = e
    encoders = sorted({g[0] for g in groups})
    cells = sorted({(g[0], g[1]) for g in groups})
    plan = []
    for enc, ds in cells:
        mine = [g for g in groups if g[0] == enc and g[1] == ds]
        full = gi[next(g for g in mine if g[2] == 1.0 and g[3] == ("clean",))]
        le = [gi[next(g for g in mine if abs(g[2] - f) < 1e-9 and g[3] == ("clean",))] for f in FRACTIONS]
        pert = [gi[g] for g in mine if g[2] == 1.0 and g[3][0] == "perturbation"]
        shift = [gi[g] for g in mine if g[2] == 1.0 and g[3][0] == "shift"]
        plan.append((encoders.index(enc), full, le, pert, shift))

    def crs_of(weights):  # weights: [R, S] seed multiplicities
        def wmean(v):
            mask = ~np.isnan(v)
            vv = np.where(mask, v, 0.0)
            return (vv @ weights.T / (mask.astype(float) @ weights.T)).T  # [R, G]

        A, E = wmean(auc), wmean(ece)
        R = weights.shape[0]
        prof = np.zeros((R, len(encoders), 4))
        count = np.zeros(len(encoders))
        for e, full, le, pert, shift in plan:
            a0 = A[:, full]
            lev = np.mean(A[:, le] / a0[:, None], axis=1)
            d = np.maximum(0.0, (a0[:, None] - A[:, pert]) / a0[:, None])
            if shift:
                ds_ = np.mean(np.maximum(0.0, (a0[:, None] - A[:, shift]) / a0[:, None]), axis=1)
                rob = np.maximum(0.0, 1 - (d.mean(axis=1) + d.max(axis=1) + ds_) / 3)
            else:
                rob = np.maximum(0.0, 1 - (d.mean(axis=1) + d.max(axis=1)) / 2)
            prof[:, e] += np.stack([a0, -E[:, full], lev, rob], axis=1)
            count[e] += 1
        prof /= count[None, :, None]
        lo, hi = prof.min(axis=1, keepdims=True), prof.max(axis=1, keepdims=True)
        s = np.clip((prof - lo) / (hi - lo), 0, 1)
        ge = (s[:, :, None, :] >= s[:, None, :, :]).all(axis=3)
        gt = (s[:, :, None, :] > s[:, None, :, :]).any(axis=3)
        D = (ge & gt).sum(axis=2) / (len(encoders) - 1)
        S = 1 - 0.25 * ((1 - s) ** 2).sum(axis=2)
        W = s.min(axis=2)
        return 0.60 * D + 0.25 * S + 0.15 * W  # [R, K]

    point = crs_of(np.ones((1, len(seeds))))[0]
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(seeds), size=(replicates, len(seeds)))
    weights = np.zeros((replicates, len(seeds)))
    np.add.at(weights, (np.arange(replicates)[:, None], draws), 1.0)
    crs = crs_of(weights)
    crs = crs[~np.isnan(crs).any(axis=1)]
    order = np.argsort(-crs, axis=1, kind="stable")
    rank1 = np.bincount(order[:, 0], minlength=len(encoders)) / len(crs)
    top3 = np.bincount(order[:, :3].ravel(), minlength=len(encoders)) / len(crs)
    lower, upper = np.percentile(crs, [2.5, 97.5], axis=0)
    seconds = time.perf_counter() - t0
    return {
        "encoders": encoders,
        "crs": point.tolist(),
        "lower": lower.tolist(),
        "upper": upper.tolist(),
        "p_rank1": rank1.tolist(),
        "p_top3": top3.tolist(),
        "replicates": int(len(crs)),
        "bootstrap_seconds": seconds,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records")
    ap.add_argument("--replicates", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    records = read_records(args.records) if args.records else design()
    json.dump(evaluate(records, args.replicates, args.seed), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
