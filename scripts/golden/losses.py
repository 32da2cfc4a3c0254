"""Golden vectors for calibra-train's training losses (spec §A).

Each loss is written here in torch, mirroring the reference repositories' code as quoted in
shared/spec/calibration-metrics-transfer.md §A:

- cross-entropy, label smoothing (torch form): torch.nn.functional.cross_entropy itself;
- label smoothing off-target: MVC-Bench trainers/regularizers.py::label_smooth (alpha made a parameter)
  = MDCA-Calibration solvers/loss.py::LabelSmoothingLoss;
- focal / FLSD-53: torrvision/focal_calibration Losses/focal_loss*.py (mean reduction, spec §0);
- MDCA: MDCA-Calibration solvers/loss.py::MDCA (the per-class loop);
- MbLS: by-liu/MbLS LogitMarginL1 (CE + alpha * mean relu(max - z - margin));
- MCM: MVC-Bench trainers/regularizers.py::margin_mean_var_allclass_loss_explicit, added to CE;
- ZS-Norm / range penalty: MVC-Bench eccv_zs / eccv_penalty (ZS-Norm with the spec's 1e-12 guard);
- masked BCE: binary_cross_entropy_with_logits with weight = mask, sum / mask.sum().

Every loss is evaluated in float64 and float32 on the same inputs (the float32 inputs are the float64
values rounded by torch), with the gradient with respect to the logits.  Deterministic: fixed seeds.

Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/losses.py
Writes crates/calibra-train/tests/fixtures/losses.json.
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "calibra-train", "tests", "fixtures", "losses.json"
)


# ----------------------------------------------------------------------------------------------------
# Loss formulas (torch)


def ce(z, y, zs, ml):
    return F.cross_entropy(z, y)


def ls_torch(eps):
    return lambda z, y, zs, ml: F.cross_entropy(z, y, label_smoothing=eps)


def ls_offtarget(alpha):
    def f(z, y, zs, ml):
        pred = z.log_softmax(dim=-1)
        k = pred.shape[-1]
        with torch.no_grad():
            true_dist = torch.zeros_like(pred)
            true_dist.fill_(alpha / (k - 1))
            true_dist.scatter_(1, y.data.unsqueeze(1), 1.0 - alpha)
        return torch.mean(torch.sum(-true_dist * pred, dim=-1))

    return f


def focal(gamma):
    def f(z, y, zs, ml):
        logpt = F.log_softmax(z, dim=1).gather(1, y.view(-1, 1)).view(-1)
        pt = logpt.exp()
        return (-1 * (1 - pt) ** gamma * logpt).mean()

    return f


def flsd53(z, y, zs, ml):
    logpt = F.log_softmax(z, dim=1).gather(1, y.view(-1, 1)).view(-1)
    pt = logpt.exp()
    gamma_dic = {0.2: 5.0, 0.5: 3.0}
    gammas = []
    for i in range(pt.shape[0]):
        p = pt[i].item()
        if p >= 0.5:
            gammas.append(3.0)
            continue
        for key in sorted(gamma_dic.keys()):
            if p < key:
                gammas.append(gamma_dic[key])
                break
    gamma = torch.tensor(gammas, dtype=z.dtype)
    return (-1 * (1 - pt) ** gamma * logpt).mean()


def mdca_term(z, y):
    output = torch.softmax(z, dim=1)
    loss = torch.tensor(0.0, dtype=z.dtype)
    _, classes = output.shape
    for c in range(classes):
        avg_count = (y == c).to(z.dtype).mean()
        avg_conf = torch.mean(output[:, c])
        loss = loss + torch.abs(avg_conf - avg_count)
    return loss / classes


def mdca(beta):
    return lambda z, y, zs, ml: beta * mdca_term(z, y)


def mbls(margin, lam):
    def f(z, y, zs, ml):
        loss_ce = F.cross_entropy(z, y)
        max_vals = z.max(dim=1, keepdim=True).values
        diffs = max_vals - z
        return loss_ce + lam * F.relu(diffs - margin).mean()

    return f


def mcm_reg(z, y, alpha, beta, mode):
    b, c = z.shape
    idx = torch.arange(b)
    z_true = z[idx, y].unsqueeze(1)
    mask = torch.ones_like(z, dtype=torch.bool)
    mask[idx, y] = False
    others = z[mask].view(b, c - 1)
    margins = z_true - others
    mbar = margins.mean(dim=1)
    mu = mbar.mean()
    if mode == "per_sample":
        var_term = mbar.var(unbiased=False)
    elif mode == "all_pairs":
        em2 = margins.pow(2).mean()
        var_term = em2 - mu**2
    else:
        raise ValueError(mode)
    return -alpha * mu + beta * var_term


def mcm(alpha, beta, mode):
    return lambda z, y, zs, ml: F.cross_entropy(z, y) + mcm_reg(z, y, alpha, beta, mode)


def zs_norm(eps):
    def f(z, y, zs, ml):
        min_op, max_op = torch.min(z, 1)[0].unsqueeze(1), torch.max(z, 1)[0].unsqueeze(1)
        min_zs, max_zs = torch.min(zs, 1)[0].unsqueeze(1), torch.max(zs, 1)[0].unsqueeze(1)
        op_norm = (z - min_op) / (max_op - min_op + eps)
        op_norm = op_norm * (max_zs - min_zs) + min_zs
        return F.cross_entropy(op_norm, y)

    return f


def range_penalty(lam):
    def f(z, y, zs, ml):
        _, c = zs.shape
        min_zs, max_zs = torch.min(zs, 1)[0].unsqueeze(1), torch.max(zs, 1)[0].unsqueeze(1)
        constr1 = F.relu(z - max_zs.repeat(1, c)).mean()
        constr2 = F.relu(min_zs.repeat(1, c) - z).mean()
        return F.cross_entropy(z, y) + lam * (constr1 + constr2)

    return f


def bce_masked(z, y, zs, ml):
    labels, mask = ml
    total = F.binary_cross_entropy_with_logits(z, labels, weight=mask, reduction="sum")
    return total / mask.sum()


def weighted(*terms):
    def f(z, y, zs, ml):
        out = None
        for w, t in terms:
            v = w * t(z, y, zs, ml)
            out = v if out is None else out + v
        return out

    return f


# (spec string, args, torch function)
LOSSES = [
    ("ce", [], ce),
    ("ls", [], ls_torch(0.1)),
    ("ls", ["eps=0.3"], ls_torch(0.3)),
    ("ls_offtarget", [], ls_offtarget(0.1)),
    ("ls_offtarget", ["alpha=0.25"], ls_offtarget(0.25)),
    ("focal", [], focal(3.0)),
    ("focal", ["gamma=1"], focal(1.0)),
    ("focal", ["gamma=2.5"], focal(2.5)),
    ("flsd53", [], flsd53),
    ("mdca", [], mdca(1.0)),
    ("ce+mdca", ["beta=1"], weighted((1.0, ce), (1.0, mdca(1.0)))),
    ("ce+mdca", ["beta=5"], weighted((1.0, ce), (1.0, mdca(5.0)))),
    ("focal+mdca", ["gamma=1", "beta=1"], weighted((1.0, focal(1.0)), (1.0, mdca(1.0)))),
    ("ls_offtarget+mdca", ["alpha=0.1", "beta=1"], weighted((1.0, ls_offtarget(0.1)), (1.0, mdca(1.0)))),
    ("0.5*ce+2*mdca", ["mdca.beta=1"], weighted((0.5, ce), (2.0, mdca(1.0)))),
    ("mbls", [], mbls(10.0, 0.1)),
    ("mbls", ["margin=1", "lambda=0.5"], mbls(1.0, 0.5)),
    ("mcm", [], mcm(0.1, 0.01, "all_pairs")),
    ("mcm", ["variance=per_sample"], mcm(0.1, 0.01, "per_sample")),
    ("mcm", ["alpha=0.3", "beta=0.2"], mcm(0.3, 0.2, "all_pairs")),
    ("mcm_mean", [], mcm(0.1, 0.0, "all_pairs")),
    ("mcm_var", [], mcm(0.0, 0.01, "all_pairs")),
    ("mcm_var", ["variance=per_sample", "beta=0.5"], mcm(0.0, 0.5, "per_sample")),
    ("zs_norm", [], zs_norm(1e-12)),
    ("range_penalty", [], range_penalty(10.0)),
    ("range_penalty", ["lambda=0.5"], range_penalty(0.5)),
    ("bce_masked", [], bce_masked),
]


# ----------------------------------------------------------------------------------------------------
# Fixed batches


def make_cases():
    cases = []

    def add(name, z, y, zs, seed):
        g = np.random.default_rng(seed)
        n, k = z.shape
        # Multilabel targets: 1 / 0 observed, otherwise masked (uncertain or blank).
        codes = g.integers(0, 4, size=(n, k))  # 0 -> neg, 1 -> pos, 2 -> uncertain, 3 -> blank
        labels = np.where(codes == 1, 1.0, 0.0)
        mask = np.where(codes <= 1, 1.0, 0.0)
        raw = [[(None if c == 3 else (-1.0 if c == 2 else float(c))) for c in row] for row in codes]
        cases.append(
            {
                "name": name,
                "n": int(n),
                "k": int(k),
                "logits": [float(v) for v in z.reshape(-1)],
                "targets": [int(v) for v in y],
                "zero_shot": [float(v) for v in zs.reshape(-1)],
                "multilabel_raw": [v for row in raw for v in row],
                "multilabel_labels": [float(v) for v in labels.reshape(-1)],
                "multilabel_mask": [float(v) for v in mask.reshape(-1)],
            }
        )

    g = np.random.default_rng(20260701)
    # A: N=7, K=5, moderate logits.
    z = g.normal(0.0, 2.0, size=(7, 5))
    y = g.integers(0, 5, size=7)
    zs = g.normal(0.0, 1.5, size=(7, 5)) + 1.0
    add("n7_k5", z, y, zs, 1)
    # B: binary K=2.
    z = g.normal(0.0, 1.5, size=(6, 2))
    y = np.array([0, 1, 1, 0, 1, 0])
    zs = g.normal(0.0, 1.0, size=(6, 2))
    add("n6_k2", z, y, zs, 2)
    # C: extreme logits (saturated softmax rows, both right and badly wrong).
    z = g.normal(0.0, 1.0, size=(5, 4))
    y = np.array([0, 1, 2, 3, 0])
    z[0, 0] = 60.0  # confident and right
    z[1, 3] = 80.0  # confident and wrong
    z[2, 2] = -70.0  # target logit far below
    z[4, 1] = -90.0
    zs = g.normal(0.0, 2.0, size=(5, 4))
    add("n5_k4_extreme", z, y, zs, 3)
    # D: CLIP-like scale (100 * cosine), wide margins so MbLS's margin 10 is active.
    z = 100.0 * g.uniform(0.05, 0.35, size=(8, 6))
    y = g.integers(0, 6, size=8)
    zs = 100.0 * g.uniform(0.15, 0.30, size=(8, 6))
    add("n8_k6_clip_scale", z, y, zs, 4)
    return cases


def short(v, dtype):
    """float32 results are written with the shortest text that round-trips the float32 value."""
    return float(str(np.float32(v))) if dtype == torch.float32 else v


def evaluate(fn, case, dtype):
    n, k = case["n"], case["k"]
    z = torch.tensor(case["logits"], dtype=torch.float64).view(n, k).to(dtype).requires_grad_(True)
    y = torch.tensor(case["targets"], dtype=torch.long)
    zs = torch.tensor(case["zero_shot"], dtype=torch.float64).view(n, k).to(dtype)
    labels = torch.tensor(case["multilabel_labels"], dtype=torch.float64).view(n, k).to(dtype)
    mask = torch.tensor(case["multilabel_mask"], dtype=torch.float64).view(n, k).to(dtype)
    loss = fn(z, y, zs, (labels, mask))
    loss.backward()
    value = short(float(loss.item()), dtype)
    grad = [short(float(v), dtype) for v in z.grad.reshape(-1).tolist()]
    assert math.isfinite(value) and all(math.isfinite(v) for v in grad), (case["name"], value)
    return {"value": value, "grad": grad}


def main():
    torch.manual_seed(0)
    cases = make_cases()
    results = []
    for case in cases:
        for spec, args, fn in LOSSES:
            results.append(
                {
                    "case": case["name"],
                    "spec": spec,
                    "args": args,
                    "f64": evaluate(fn, case, torch.float64),
                    "f32": evaluate(fn, case, torch.float32),
                }
            )
    doc = {
        "generator": "scripts/golden/losses.py",
        "torch": torch.__version__.split("+")[0],
        "cases": cases,
        "results": results,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(doc, fh, indent=None, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(results)} results over {len(cases)} cases to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
