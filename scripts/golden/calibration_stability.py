"""Golden vectors for calibra-crs calibration stability (spec crs-protocol.md section 6): accuracy, ECE,
MCE and ACE across training seeds and across prompt templates.

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/calibration_stability.py
Writes (deterministic: fixed seed, no clock)
- crates/calibra-crs/tests/golden/calibration_stability_records.jsonl: the run-record fixture (JSON Lines);
- crates/calibra-crs/tests/golden/calibration_stability.json: the expected table.

Independent oracle (numpy), written from the module docs of calibra_crs::calibration_stability:
- metrics: accuracy, ece, mce, adaptive_ece (record names); other metrics are ignored;
- template convention: a probe `<method>:<ID>` whose text after the last ':' is one uppercase ASCII letter
  followed by digits carries template ID (method non-empty); any other probe is its own method;
- seeds axis: group by (encoder, dataset, regime, probe-as-method + template, calibrator, label fraction,
  condition); members = seeds ascending;
- templates axis: records with a template, grouped by everything but the template (seed included);
  members = templates ordered by (letter, number);
- per metric over the members carrying it: n, mean (np.mean), std = np.std(values, ddof=1), None if n < 2;
  a group carrying none of the four metrics gives no row;
- row order: axis (seeds, templates), encoder, dataset, regime (frozen, lora, coop, full, zero-shot),
  method, calibrator, label fraction, condition (clean < perturbation(name, severity) < shift(target)),
  then the template (seeds axis; none first) or the seed (templates axis).
"""

import json
import os
import re

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "crates", "calibra-crs", "tests", "golden")
RECORDS = os.path.join(GOLDEN, "calibration_stability_records.jsonl")
OUT = os.path.join(GOLDEN, "calibration_stability.json")

METRICS = ["accuracy", "ece", "mce", "adaptive_ece"]
REGIME_ORDER = ["frozen", "lora", "coop", "full", "zero-shot"]
TEMPLATE = re.compile(r"^([A-Z])([0-9]+)$")


def build_records(rng):
    records = []

    def add(encoder, dataset, regime, probe, calibrator, fraction, seed, condition, drop=0.1, only=None):
        metrics = {}
        for name in METRICS + ["brier"]:
            if rng.random() < drop:
                continue
            metrics[name] = round(float(rng.uniform(0.0, 1.0)), 6)
        if only is not None:
            metrics = {k: v for k, v in metrics.items() if k in only} or {only[0]: 0.5}
        records.append(
            {
                "encoder": encoder,
                "dataset": dataset,
                "regime": regime,
                "probe": probe,
                "calibrator": calibrator,
                "label_fraction": fraction,
                "seed": seed,
                "condition": condition,
                "metrics": metrics,
            }
        )

    clean = {"kind": "clean"}
    blur = {"kind": "perturbation", "perturbation": "blur", "severity": 2}
    jpeg = {"kind": "perturbation", "perturbation": "jpeg", "severity": 1}
    shift = {"kind": "shift", "target": "ham"}
    # Frozen probes over 4 seeds, some seeds missing; a depth suffix and a colon label (not templates).
    frozen = [
        ("Beta", "derm", "linear", "none"),
        ("Beta", "derm", "linear", "temperature"),
        ("Alpha", "cxr", "linear", "none"),
        ("Alpha", "cxr", "linear@0.5", "none"),
        ("Alpha", "cxr", "tag:x1", "none"),
    ]
    for encoder, dataset, probe, calibrator in frozen:
        for fraction, conditions in [(0.1, [clean]), (1.0, [clean, blur, jpeg, shift])]:
            for condition in conditions:
                for seed in range(4):
                    if rng.random() < 0.25:
                        continue
                    add(encoder, dataset, "frozen", probe, calibrator, fraction, seed, condition)
    # Zero-shot: the MVC-Bench family, a user template and a two-digit id, seeds 0 and 3.
    for encoder in ["Alpha", "Beta"]:
        for seed in [3, 0]:
            for template in ["P10", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "C1"]:
                if encoder == "Beta" and template == "P10":
                    continue
                if rng.random() < 0.15:
                    continue
                add(encoder, "derm", "zero-shot", f"zero-shot:{template}", "none", 1.0, seed, clean)
    # A future templated method in another regime (CoOp with templates), two fractions, 3 seeds.
    for fraction in [0.25, 1.0]:
        for seed in range(3):
            for template in ["P1", "P2", "P3"]:
                add("Alpha", "derm", "coop", f"coop-mcm:{template}", "none", fraction, seed, clean, drop=0.2)
    # LoRA with one seed only (n = 1: mean, no std); a group with no stability metric at all (no row).
    add("Alpha", "derm", "lora", "ce", "none", 1.0, 0, clean)
    add("Beta", "derm", "lora", "ce", "none", 1.0, 0, clean, only=["brier"])
    # Shuffle: the table must not depend on record order.
    order = rng.permutation(len(records))
    return [records[i] for i in order]


def split_template(probe):
    if ":" in probe:
        method, tid = probe.rsplit(":", 1)
        m = TEMPLATE.match(tid)
        if method and m:
            return method, (m.group(1), int(m.group(2)), tid)
    return probe, None


def condition_key(c):
    if c["kind"] == "clean":
        return (0, "", 0)
    if c["kind"] == "perturbation":
        return (1, c["perturbation"], c["severity"])
    return (2, c["target"], 0)


def table(records):
    groups = {}
    for r in records:
        method, template = split_template(r["probe"])
        base = (
            r["encoder"],
            r["dataset"],
            REGIME_ORDER.index(r["regime"]),
            method,
            r["calibrator"],
            r["label_fraction"],
            condition_key(r["condition"]),
        )
        # Sort keys: template None first (seeds axis), seed None (templates axis never mixes).
        tkey = (0,) if template is None else (1, template)
        seeds_key = (0, base, tkey, ())
        groups.setdefault(seeds_key, {"info": (r, method, template, None), "members": {}})
        groups[seeds_key]["members"][(r["seed"],)] = (str(r["seed"]), r["metrics"])
        if template is not None:
            key = (1, base, (0,), (r["seed"],))
            groups.setdefault(key, {"info": (r, method, None, r["seed"]), "members": {}})
            groups[key]["members"][template] = (template[2], r["metrics"])
    rows = []
    for key in sorted(groups):
        g = groups[key]
        r, method, template, seed = g["info"]
        members = [g["members"][m] for m in sorted(g["members"])]
        metrics = {}
        for name in METRICS:
            values = np.array([m[name] for _, m in members if name in m], dtype=np.float64)
            if values.size == 0:
                continue
            metrics[name] = {
                "n": int(values.size),
                "mean": float(np.mean(values)),
                "std": float(np.std(values, ddof=1)) if values.size >= 2 else None,
            }
        if not metrics:
            continue
        rows.append(
            {
                "axis": "seeds" if key[0] == 0 else "templates",
                "encoder": r["encoder"],
                "dataset": r["dataset"],
                "regime": r["regime"],
                "method": method,
                "calibrator": r["calibrator"],
                "label_fraction": r["label_fraction"],
                "condition": r["condition"],
                "template": None if template is None else template[2],
                "seed": seed,
                "members": [text for text, _ in members],
                "metrics": metrics,
            }
        )
    return rows


def main():
    rng = np.random.default_rng(20261130)
    records = build_records(rng)
    os.makedirs(GOLDEN, exist_ok=True)
    with open(RECORDS, "w") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    rows = table(records)
    doc = {
        "source": "scripts/golden/calibration_stability.py (numpy " + np.__version__ + ")",
        "records": os.path.relpath(RECORDS, ROOT),
        "metrics": METRICS,
        "rows": rows,
    }
    # One row per line: small and diffable.
    with open(OUT, "w") as f:
        head = {k: v for k, v in doc.items() if k != "rows"}
        f.write(json.dumps(head, sort_keys=True)[:-1] + ', "rows": [\n')
        f.write(",\n".join(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in rows))
        f.write("\n]}\n")
    print(f"wrote {len(records)} records to {RECORDS} and {len(rows)} rows to {OUT}")


if __name__ == "__main__":
    main()
