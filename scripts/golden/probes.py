"""Golden vectors for calibra-probe (standardisation, logistic regression, k-NN, MLP).

Run:  CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/probes.py
Peers (versions recorded in every file): scikit-learn 1.9.1 `StandardScaler`,
`LogisticRegression(C=1, solver="lbfgs")` (one per label on the observed rows for multilabel),
`KNeighborsClassifier(n_neighbors=5)`; torch (float64) for the two-layer MLP trained with
`torch.optim.Adam(weight_decay=...)` on the full batch from the initial weights written here.
Deterministic: fixed seeds; re-running regenerates identical files.
Features are rounded to 4 decimals before anything is fitted: the rounded values are the data.
"""

import json
import pathlib

import numpy as np
import sklearn
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

OUT = pathlib.Path(__file__).resolve().parents[2] / "crates" / "calibra-probe" / "tests" / "golden"
VERSIONS = {"numpy": np.__version__, "scikit-learn": sklearn.__version__, "torch": torch.__version__}


def dump(name, payload):
    payload = {"generated_by": "scripts/golden/probes.py", "versions": VERSIONS, **payload}
    path = OUT / name
    path.write_text(json.dumps(payload) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def gaussian_classes(rng, n, d, k, sep=1.0):
    """Class-dependent Gaussian features with per-column offsets and scales (so standardising matters)."""
    means = rng.normal(0.0, sep, size=(k, d))
    y = rng.integers(0, k, size=n)
    y[:k] = np.arange(k)  # every class present
    x = means[y] + rng.normal(0.0, 1.0, size=(n, d))
    offset = rng.normal(0.0, 3.0, size=d)
    scale = np.exp(rng.normal(0.0, 1.0, size=d))
    return np.round(x * scale + offset, 4), y


def flat(a):
    return [float(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def objective(x, y, coef, intercept, c, binary):
    """sklearn's lbfgs objective: mean loss + ||W||^2 / (2 C N), intercept unpenalised."""
    n = x.shape[0]
    if binary:
        z = x @ coef.ravel() + intercept[0]
        loss = np.mean(np.logaddexp(0.0, z) - y * z)
    else:
        z = x @ coef.T + intercept
        m = z.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(z - m).sum(axis=1, keepdims=True))).ravel()
        loss = np.mean(lse - z[np.arange(n), y])
    return float(loss + 0.5 / (c * n) * np.sum(coef**2))


# Converged fits (sklearn's default tol=1e-4 stops where the solver's path happens to be: on the
# multinomial case that is 7e-3 away in probability from the optimum, so it is no reference).
TIGHT = dict(tol=1e-10, max_iter=10000)


def logistic_fit(xs, y, binary, **kw):
    m = LogisticRegression(C=1.0, solver="lbfgs", **kw).fit(xs, y)
    return m, objective(xs, y, m.coef_, m.intercept_, 1.0, binary)


def logistic_case(name, rng, n, d, k, n_test, constant_column=False):
    x, y = gaussian_classes(rng, n + n_test, d, k)
    if constant_column:
        x[:, 0] = 2.5
    xtr, ytr, xte = x[:n], y[:n], x[n:]
    ytr[:k] = np.arange(k)
    scaler = StandardScaler().fit(xtr)
    s_tr, s_te = scaler.transform(xtr), scaler.transform(xte)
    binary = k == 2
    tight, tight_obj = logistic_fit(s_tr, ytr, binary, **TIGHT)
    return {
        "name": name, "n": n, "d": d, "k": k,
        "x_train": flat(xtr), "y_train": [int(v) for v in ytr], "x_test": flat(xte),
        "scaler_mean": flat(scaler.mean_), "scaler_scale": flat(scaler.scale_),
        "tight": {"coef": flat(tight.coef_), "intercept": flat(tight.intercept_), "objective": tight_obj,
                  "n_iter": int(tight.n_iter_[0]), "proba_test": flat(tight.predict_proba(s_te))},
    }


def multilabel_case(rng, n, d, n_labels, n_test, blank_rate=0.2):
    x, _ = gaussian_classes(rng, n + n_test, d, 2)
    w = rng.normal(0.0, 1.0, size=(n_labels, d))
    z = (x - x.mean(axis=0)) / x.std(axis=0) @ w.T + rng.normal(0.0, 1.0, size=(n + n_test, n_labels))
    labels = (z > 0).astype(int)
    blank = rng.random(size=labels.shape) < blank_rate
    xtr, xte, ltr, btr = x[:n], x[n:], labels[:n], blank[:n]
    scaler = StandardScaler().fit(xtr)
    s_tr, s_te = scaler.transform(xtr), scaler.transform(xte)
    out = {"tight": {"proba_test": [], "coef": [], "intercept": [], "objective": []},
}
    for l in range(n_labels):
        keep = ~btr[:, l]
        tight, obj = logistic_fit(s_tr[keep], ltr[keep, l], True, **TIGHT)
        out["tight"]["proba_test"].append(tight.predict_proba(s_te)[:, 1])
        out["tight"]["coef"].append(tight.coef_.ravel())
        out["tight"]["intercept"].append(float(tight.intercept_[0]))
        out["tight"]["objective"].append(obj)
    labels_json = [[None if btr[i, l] else bool(ltr[i, l]) for l in range(n_labels)] for i in range(n)]
    return {
        "name": "multilabel_ovr", "n": n, "d": d, "n_labels": n_labels,
        "x_train": flat(xtr), "labels_train": [v for row in labels_json for v in row], "x_test": flat(xte),
        "scaler_mean": flat(scaler.mean_), "scaler_scale": flat(scaler.scale_),
        "tight": {"proba_test": flat(np.stack(out["tight"]["proba_test"], axis=1)),
                  "coef": flat(np.stack(out["tight"]["coef"])), "intercept": out["tight"]["intercept"],
                  "objective": out["tight"]["objective"]},
    }


def logistic():
    rng = np.random.default_rng(20261130)
    cases = [
        logistic_case("multinomial", rng, 300, 20, 4, 40),
        logistic_case("binary", rng, 200, 8, 2, 40, constant_column=True),
    ]
    dump("logistic.json", {
        "note": "tight: tol=1e-10, max_iter=10000; C=1; features "
                "standardised with StandardScaler fitted on x_train; probabilities on x_test",
        "cases": cases, "multilabel": multilabel_case(rng, 200, 8, 3, 40)})


def knn_case(name, x, y, n, n_test, k):
    xtr, ytr, xte = x[:n], y[:n], x[n:n + n_test]
    scaler = StandardScaler().fit(xtr)
    s_tr, s_te = scaler.transform(xtr), scaler.transform(xte)
    probs = {}
    for algo in ["auto", "brute", "kd_tree"]:
        probs[algo] = KNeighborsClassifier(n_neighbors=5, algorithm=algo).fit(s_tr, ytr).predict_proba(s_te)
    # Independent reference of our documented rule: exact squared distances, stable sort (ties at
    # equal distance → lower training index first), counts of the 5 nearest / 5.
    d2 = ((s_te[:, None, :] - s_tr[None, :, :]) ** 2).sum(axis=2)
    order = np.argsort(d2, axis=1, kind="stable")[:, :5]
    stable = np.zeros((n_test, k))
    for i in range(n_test):
        for j in order[i]:
            stable[i, ytr[j]] += 0.2
    return {
        "name": name, "n": n, "d": x.shape[1], "k": k,
        "x_train": flat(xtr), "y_train": [int(v) for v in ytr], "x_test": flat(xte),
        "proba_sklearn": flat(probs["auto"]),
        "sklearn_brute_equals_kd_tree": bool(np.array_equal(probs["brute"], probs["kd_tree"])),
        "proba_lowest_index_ties": flat(stable),
        "sklearn_equals_lowest_index_ties": bool(np.allclose(probs["auto"], stable, atol=1e-12)),
    }


def knn():
    rng = np.random.default_rng(7)
    x, y = gaussian_classes(rng, 200, 6, 3, sep=1.0)
    continuous = knn_case("continuous", x, y, 150, 50, 3)
    assert continuous["sklearn_equals_lowest_index_ties"], "no ties expected on continuous data"
    # Integer grid features: many exactly equal distances.
    xg = rng.integers(0, 3, size=(120, 3)).astype(float)
    yg = rng.integers(0, 3, size=120)
    yg[:3] = np.arange(3)
    ties = knn_case("integer_grid_ties", xg, yg, 90, 30, 3)
    dump("knn.json", {"note": "KNeighborsClassifier(n_neighbors=5), uniform weights, Euclidean, on "
                              "StandardScaler(x_train) features; multilabel: one classifier per label "
                              "fitted on the rows where the label is observed", "cases": [continuous, ties],
                      "multilabel": knn_multilabel(rng, 120, 40, 5, 3)})


def knn_multilabel(rng, n, n_test, d, n_labels):
    x = np.round(rng.normal(size=(n + n_test, d)) * 2.0 + 1.0, 4)
    w = rng.normal(size=(n_labels, d))
    lab = ((x - 1.0) @ w.T + rng.normal(size=(n + n_test, n_labels)) > 0).astype(int)[:n]
    blank = rng.random(size=lab.shape) < 0.2
    xtr, xte = x[:n], x[n:]
    scaler = StandardScaler().fit(xtr)
    s_tr, s_te = scaler.transform(xtr), scaler.transform(xte)
    proba = np.zeros((n_test, n_labels))
    for l in range(n_labels):
        keep = ~blank[:, l]
        clf = KNeighborsClassifier(n_neighbors=5).fit(s_tr[keep], lab[keep, l])
        assert list(clf.classes_) == [0, 1]
        proba[:, l] = clf.predict_proba(s_te)[:, 1]
    labels_json = [None if blank[i, l] else bool(lab[i, l]) for i in range(n) for l in range(n_labels)]
    return {"n": n, "d": d, "n_labels": n_labels, "x_train": flat(xtr), "labels_train": labels_json,
            "x_test": flat(xte), "proba_sklearn": flat(proba)}


def mlp_case(name, rng, n, d, hidden, outputs, multilabel, steps, lr, wd, seed):
    x, y = gaussian_classes(rng, n, d, 3 if not multilabel else 2)
    scaler = StandardScaler().fit(x)
    xs = torch.tensor(scaler.transform(x), dtype=torch.float64)
    torch.manual_seed(seed)
    l1 = torch.nn.Linear(d, hidden, dtype=torch.float64)
    l2 = torch.nn.Linear(hidden, outputs, dtype=torch.float64)
    init = [flat(p.detach()) for p in (l1.weight, l1.bias, l2.weight, l2.bias)]
    if multilabel:
        w = rng.normal(size=(outputs, d))
        lab = ((scaler.transform(x) @ w.T + rng.normal(size=(n, outputs))) > 0).astype(float)
        mask = (rng.random(size=lab.shape) >= 0.2).astype(float)
        target = torch.tensor(lab)
        maskt = torch.tensor(mask)
        labels_json = [None if mask[i, l] == 0 else bool(lab[i, l]) for i in range(n) for l in range(outputs)]
    else:
        target = torch.tensor(y)
    params = list(l1.parameters()) + list(l2.parameters())
    opt = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd)
    for _ in range(steps):
        opt.zero_grad()
        z = l2(torch.relu(l1(xs)))
        if multilabel:
            bce = torch.nn.functional.binary_cross_entropy_with_logits(z, target, reduction="none")
            loss = (bce * maskt).sum() / maskt.sum()
        else:
            loss = torch.nn.functional.cross_entropy(z, target)
        loss.backward()
        opt.step()
    with torch.no_grad():
        z = l2(torch.relu(l1(xs)))
        proba = torch.sigmoid(z) if multilabel else torch.softmax(z, dim=1)
    case = {
        "name": name, "n": n, "d": d, "hidden": hidden, "outputs": outputs, "steps": steps, "lr": lr,
        "weight_decay": wd, "x": flat(x), "init": init,
        "final": [flat(p.detach()) for p in (l1.weight, l1.bias, l2.weight, l2.bias)],
        "final_loss": float(loss.detach()), "proba": flat(proba),
    }
    if multilabel:
        case["labels"] = labels_json
    else:
        case["y"] = [int(v) for v in y]
    return case


def mlp():
    rng = np.random.default_rng(11)
    cases = [
        mlp_case("multiclass", rng, 120, 10, 16, 3, False, 200, 1e-2, 1e-4, 0),
        mlp_case("multilabel", rng, 100, 8, 12, 3, True, 150, 5e-3, 1e-3, 1),
    ]
    dump("mlp.json", {"note": "torch float64: Linear(d,h) -> ReLU -> Linear(h,out); Adam(betas=(0.9,0.999), "
                              "eps=1e-8, weight_decay=wd) on all parameters; full batch; mean cross-entropy "
                              "(multiclass) or masked mean BCE-with-logits (multilabel); features = "
                              "StandardScaler(x)", "cases": cases})


if __name__ == "__main__":
    logistic()
    knn()
    mlp()
