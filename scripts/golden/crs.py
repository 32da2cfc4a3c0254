"""Golden vectors for the Clinical Reliability Score (crates/calibra-crs/tests/golden/crs.json).

An independent numpy implementation of shared/spec/crs-protocol.md §4, written from the spec (not from
the Rust code):

    s~_a   = clip((s_a - l_a) / (u_a - l_a), 0, 1), (l_a, u_a) = panel min/max per oriented axis
    D(k)   = (1/n_k) sum_{j in R, j != k} 1[s~(k) > s~(j)] (Pareto), n_k = |R| - 1[k in R]
    S(k)   = 1 - sum_a w_a (1 - s~_a)^2
    W(k)   = min_a s~_a
    CRS(k) = a_D D + a_S S + a_W W

Cases: random continuous panels, coarse-grid panels with ties and exact duplicate profiles, candidates
outside the anchors (clipping), candidates that are panel members (n_k = |R| - 1), random Dirichlet
weights, the CRS-Bench Figure 2 profiles (examples/profiles_crsbench.csv), and two inputs the contract
rejects (a panel without spread on an axis; a missing axis). Ranks are ordinal (1 = best, ties by input
order).

The `stability` section checks the deterministic building blocks of the stability analyses on given
perturbations (the random draws themselves are not part of the contract): sub-panels rebuilt with
recomputed anchors (leave-one-out and fixed member sets), insertion trials (base reference vs cohort
recomputation) and re-weighted rankings, each compared with the full ranking by Kendall tau-b
(scipy.stats.kendalltau, ties honoured) and the top-3 overlap.

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/crs.py
Deterministic: fixed seed, so re-running regenerates an identical file.
"""

import csv
import json
import pathlib

import numpy as np
from scipy import stats

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates" / "calibra-crs" / "tests" / "golden" / "crs.json"
SEED = 20261130
DEFAULT_COMPONENTS = [0.60, 0.25, 0.15]
UNIFORM_AXES = [0.25, 0.25, 0.25, 0.25]


def anchors_from_panel(panel):
    lower, upper = panel.min(axis=0), panel.max(axis=0)
    if np.any(~(lower < upper)):
        raise ValueError("degenerate anchors")
    return lower, upper


def normalize(values, lower, upper):
    return np.clip((values - lower) / (upper - lower), 0.0, 1.0)


def dominates(a, b):
    return bool(np.all(a >= b) and np.any(a > b))


def score(norm, panel_norm, own_index, axis_w, comp_w):
    peers = [j for j in range(len(panel_norm)) if j != own_index]
    n_k = len(peers)
    d = sum(dominates(norm, panel_norm[j]) for j in peers) / n_k if n_k else 0.0
    s = 1.0 - float(np.sum(np.asarray(axis_w) * (1.0 - norm) ** 2))
    w = float(np.min(norm))
    crs = comp_w[0] * d + comp_w[1] * s + comp_w[2] * w
    return d, s, w, crs


def ordinal_ranks(scores):
    order = np.argsort(-np.asarray(scores), kind="stable")
    ranks = np.empty(len(scores), dtype=int)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks.tolist()


def evaluate(names, panel, cand_names, candidates, axis_w, comp_w, unit_anchors=False):
    if unit_anchors:
        lower, upper = np.zeros(4), np.ones(4)
    else:
        lower, upper = anchors_from_panel(panel)
    panel_norm = normalize(panel, lower, upper)
    index = {n: i for i, n in enumerate(names)}

    def block(group_names, values):
        out = {"normalized": [], "dominance": [], "ideal": [], "worst": [], "crs": [], "saturated": []}
        for name, v in zip(group_names, values):
            norm = normalize(v, lower, upper)
            d, s, w, c = score(norm, panel_norm, index.get(name), axis_w, comp_w)
            out["normalized"].append(norm.tolist())
            out["dominance"].append(d)
            out["ideal"].append(s)
            out["worst"].append(w)
            out["crs"].append(c)
            out["saturated"].append([a for a in range(4) if v[a] < lower[a] or v[a] > upper[a]])
        out["rank"] = ordinal_ranks(out["crs"])
        return out

    return {
        "anchors": {"lower": lower.tolist(), "upper": upper.tolist()},
        "panel": block(names, panel),
        "candidates": block(cand_names, candidates),
    }


def panel_crs(panel, axis_w, comp_w):
    """CRS of every panel member against the panel itself (anchors = panel min/max)."""
    lower, upper = anchors_from_panel(panel)
    norm = normalize(panel, lower, upper)
    return [score(norm[i], norm, i, axis_w, comp_w)[3] for i in range(len(panel))]


def top_k(scores, k):
    return set(np.argsort(-np.asarray(scores), kind="stable")[:k].tolist())


def agreement(full, perturbed, k=3):
    k = min(k, len(full))
    a, b = top_k(full, k), top_k(perturbed, k)
    return {
        "tau": float(stats.kendalltau(full, perturbed).statistic),
        "top_k_overlap": len(a & b) / k,
        "top_k_unchanged": a == b,
    }


def stability_case(name, names, panel, rng):
    n = len(panel)
    full = panel_crs(panel, UNIFORM_AXES, DEFAULT_COMPONENTS)
    member_sets = [[i for i in range(n) if i != r] for r in range(n)]
    member_sets += [sorted(rng.choice(n, size=n - 3, replace=False).tolist()) for _ in range(4)]
    subpanels = []
    for members in member_sets:
        sub = panel_crs(panel[members], UNIFORM_AXES, DEFAULT_COMPONENTS)
        subpanels.append({"members": members, **agreement([full[i] for i in members], sub)})
    insertions = []
    for _ in range(4):
        newcomers = rng.choice(n, size=3, replace=False).tolist()
        base = [i for i in range(n) if i not in newcomers]
        before = panel_crs(panel[base], UNIFORM_AXES, DEFAULT_COMPONENTS)
        cohort = panel_crs(panel[base + newcomers], UNIFORM_AXES, DEFAULT_COMPONENTS)[: len(base)]
        insertions.append({"newcomers": newcomers, "base": base, "before": before, "cohort_after": cohort})
    reweighted = []
    for _ in range(3):
        axis_w = rng.dirichlet(np.ones(4)).tolist()
        reweighted.append({"axis_weights": axis_w, "component_weights": DEFAULT_COMPONENTS,
                           **agreement(full, panel_crs(panel, axis_w, DEFAULT_COMPONENTS))})
        comp_w = rng.dirichlet(np.ones(3)).tolist()
        reweighted.append({"axis_weights": UNIFORM_AXES, "component_weights": comp_w,
                           **agreement(full, panel_crs(panel, UNIFORM_AXES, comp_w))})
    return {
        "name": name,
        "panel": {"encoders": names, "values": panel.tolist()},
        "full_crs": full,
        "subpanels": subpanels,
        "insertions": insertions,
        "reweighted": reweighted,
    }


def oriented_panel(rng, n):
    """Plausible oriented profiles: AUROC, -ECE, retention (may exceed 1), robustness."""
    return np.column_stack(
        [
            rng.uniform(0.70, 0.96, n),
            -rng.uniform(0.01, 0.20, n),
            rng.uniform(0.80, 1.01, n),
            rng.uniform(0.40, 1.00, n),
        ]
    )


def case(name, names, panel, cand_names, candidates, axis_w, comp_w, unit_anchors=False):
    return {
        "name": name,
        "unit_anchors": unit_anchors,
        "panel": {"encoders": names, "values": np.asarray(panel).tolist()},
        "candidates": {"encoders": cand_names, "values": np.asarray(candidates).reshape(-1, 4).tolist()},
        "axis_weights": list(axis_w),
        "component_weights": list(comp_w),
        "expected": evaluate(
            names, np.asarray(panel), cand_names, np.asarray(candidates).reshape(-1, 4), axis_w, comp_w, unit_anchors
        ),
    }


def main():
    rng = np.random.default_rng(SEED)
    cases = []

    # Random continuous panels with candidates inside and outside the anchors.
    for size, weights in [(2, "default"), (3, "default"), (5, "dirichlet"), (8, "default"), (12, "dirichlet")]:
        panel = oriented_panel(rng, size)
        names = [f"e{i}" for i in range(size)]
        lo, hi = panel.min(axis=0), panel.max(axis=0)
        span = hi - lo
        candidates = np.vstack(
            [
                lo + rng.uniform(0.0, 1.0, (2, 4)) * span,  # inside
                lo + rng.uniform(-0.5, 1.5, (2, 4)) * span,  # partly outside: clipped
                hi + 0.1 * span,  # above every anchor: s~ = 1 everywhere
                lo - 0.1 * span,  # below every anchor: s~ = 0 everywhere
                panel[size // 2],  # a panel member scored again (n_k = |R| - 1)
            ]
        )
        cand_names = [f"c{i}" for i in range(6)] + [names[size // 2]]
        if weights == "dirichlet":
            axis_w, comp_w = rng.dirichlet(np.ones(4)).tolist(), rng.dirichlet(np.ones(3)).tolist()
        else:
            axis_w, comp_w = UNIFORM_AXES, DEFAULT_COMPONENTS
        cases.append(case(f"random_n{size}_{weights}", names, panel, cand_names, candidates, axis_w, comp_w))

    # Coarse grid: ties on axes and exact duplicate profiles (neither dominates the other).
    for size in (6, 10):
        grid = np.array([0.5, 0.7, 0.9])
        panel = grid[rng.integers(0, 3, (size, 4))]
        panel[0], panel[2] = 0.5, 0.9  # guarantee spread on every axis
        panel[1] = panel[3]  # an exact duplicate profile
        names = [f"g{i}" for i in range(size)]
        candidates = np.vstack([grid[rng.integers(0, 3, (3, 4))], panel[3], [0.9, 0.9, 0.9, 1.0]])
        cand_names = ["h0", "h1", "h2", "h3", "h4"]
        cases.append(case(f"grid_ties_n{size}", names, panel, cand_names, candidates, UNIFORM_AXES, DEFAULT_COMPONENTS))

    # The CRS-Bench Figure 2 profiles (already normalised: identity anchors).
    with open(ROOT / "examples" / "profiles_crsbench.csv", newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    names = [r["encoder"] for r in rows]
    axes = ["discrimination", "calibration", "label_efficiency", "robustness"]
    panel = np.array([[float(r[a]) for a in axes] for r in rows])
    cases.append(case("crsbench_figure2", names, panel, [], np.zeros((0, 4)), UNIFORM_AXES, DEFAULT_COMPONENTS, True))

    rejected = [
        {
            "name": "no_spread_on_calibration",
            "panel": {"encoders": ["a", "b"], "values": [[0.8, -0.1, 0.9, 0.5], [0.9, -0.1, 0.95, 0.7]]},
            "error": "degenerate_anchor",
        },
        {
            "name": "missing_label_efficiency",
            "panel": {"encoders": ["a", "b"], "values": [[0.8, -0.1, 0.9, 0.5], [0.9, -0.2, None, 0.7]]},
            "error": "missing_axis",
        },
    ]
    for r in rejected:  # the oracle rejects them too
        values = np.array([[np.nan if v is None else v for v in row] for row in r["panel"]["values"]])
        try:
            if np.isnan(values).any():
                raise ValueError("missing axis")
            anchors_from_panel(values)
        except ValueError:
            continue
        raise AssertionError(f"{r['name']} should be rejected")

    # Stability building blocks: the Figure 2 values used as oriented values (anchors recomputed on every
    # sub-panel), and a random oriented panel.
    stability = [
        stability_case("crsbench_figure2_oriented", names, panel, rng),
        stability_case("random_n9", [f"s{i}" for i in range(9)], oriented_panel(rng, 9), rng),
    ]

    doc = {
        "generator": "scripts/golden/crs.py",
        "numpy": np.__version__,
        "seed": SEED,
        "axes": axes,
        "cases": cases,
        "rejected": rejected,
        "stability": stability,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(cases)} cases, {len(rejected)} rejected inputs")


if __name__ == "__main__":
    main()
