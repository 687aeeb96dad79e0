"""bench/tabular_data.py — what the baselines of the real-data examples
(bench/xgb_baseline.py, bench/linear_baseline.py) share: the shared CSVs read
as a user would read them, the same test rows (is_test = 1), submissions in
the examples' layout, scored by examples/score.sh (which reads only the
submission and the CSV's labels)."""
import csv
import gzip
import math
import os
import subprocess

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "..", "shared", "data", "tabular")
# the label column and the task of each example (its prep.sql's)
SETS = {"satimage": ("classes", "multiclass"), "shuttle": ("Class", "multiclass"),
        "breastcancer": ("Class", "binary"), "ames": ("Sale_Price", "regression"),
        "wa_churn": ("churn", "binary")}
MISSING = {"", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", "?", "#N/A"}


def number(v):
    try:
        x = float(v)
        return x if math.isfinite(x) else None
    except ValueError:
        return None


def csv_path(data, name):
    path = os.path.join(data, name + ".csv.gz")
    return path if os.path.exists(path) else path[:-3]


def load(path, label):
    """(columns, names, labels as text, test mask): per feature a numeric
    column (missing values NaN), or the 0/1 columns of a text one's levels."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    head, rows = rows[0], rows[1:]
    li, ti = head.index(label), head.index("is_test")
    cols, names = [], []
    for i in range(len(head)):
        if i in (li, ti):
            continue
        vals = [r[i] for r in rows]
        if all(v in MISSING or number(v) is not None for v in vals):
            cols.append(np.array([np.nan if v in MISSING else number(v) for v in vals]))
            names.append(head[i])
        else:
            for level in sorted(set(vals)):
                cols.append(np.array([1.0 if v == level else 0.0 for v in vals]))
                names.append(head[i] + "=" + level)
    test = np.array([r[ti] == "1" for r in rows])
    return np.stack(cols, 1), names, [r[li] for r in rows], test


def targets(y_text, task):
    """The label as a model fits it: log of the price for a regression, else
    the class index; and the classes (None for a regression)."""
    if task == "regression":
        return np.log(np.array([float(v) for v in y_text])), None
    classes = sorted(set(y_text))
    return np.array([classes.index(v) for v in y_text], dtype=float), classes


def write_and_score(path, out, label, task, classes, test_idx, pred):
    """out/submission.csv from pred (a regression: log predictions; else each
    row's class probabilities), scored; the scorer's figures."""
    os.makedirs(out, exist_ok=True)
    sub = os.path.join(out, "submission.csv")
    with open(sub, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        if task == "regression":
            w.writerow(["Id", label])
            for i, p in zip(test_idx, pred):
                w.writerow([i + 1, f"{math.exp(p):.6f}"])
        else:
            w.writerow(["Id", "label"] + ["p_" + c for c in classes])
            for i, p in zip(test_idx, pred):
                w.writerow([i + 1, classes[int(np.argmax(p))]] + [f"{v:.6g}" for v in p])
    r = subprocess.run(["bash", os.path.join(ROOT, "examples", "score.sh"), path, sub, label,
                        "regression" if task == "regression" else "classification"],
                       capture_output=True, text=True, check=True)
    last = r.stdout.strip().splitlines()[-1]
    return last, dict(kv.split("=") for kv in last.split() if "=" in kv)


def mean_line(what, scores):
    keys = [k for k in scores[0] if k != "test_rows"]
    return what + " " + " ".join(f"{k}={np.mean([float(s[k]) for s in scores]):.4f}" for k in keys)
