#!/usr/bin/env python3
"""The gradient-boosted-trees baseline of the real-data examples: XGBoost
(Debian's python3-xgboost, which scripts/install-deps.sh installs; its
native API, no scikit-learn) on the same CSV, the same test rows (is_test = 1)
and the same scorer as examples/tabular.sh (examples/score.sh reads only the
submission and the CSV's labels).

    bench/xgb_baseline.py NAME [--seeds N] [--out DIR]
        NAME: satimage, shuttle, breastcancer, ames, wa_churn
        (../shared/data/tabular/NAME.csv.gz)

What a tabular user would run: numeric columns as they are (missing values
as NaN, which XGBoost routes itself), every text column one-hot, the label
as the example's (log of the price for ames); early stopping on the last 10%
of the training rows (never the test rows), learning rate 0.05, depth 6, 80%
row and column subsampling (so the seeds differ), at most 4000 trees.  Each
seed writes DIR/seedS/submission.csv and prints the scorer's last line; the
mean over the seeds comes last."""
import argparse
import csv
import gzip
import math
import os
import subprocess
import sys

import numpy as np
import xgboost as xgb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
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


def load(path, label):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    head, rows = rows[0], rows[1:]
    li, ti = head.index(label), head.index("is_test")
    feats = [i for i in range(len(head)) if i not in (li, ti)]
    cols = []  # per feature: a numeric column, or the one-hot columns of a text one
    for i in feats:
        vals = [r[i] for r in rows]
        if all(v in MISSING or number(v) is not None for v in vals):
            cols.append(np.array([np.nan if v in MISSING else number(v) for v in vals]))
        else:
            for level in sorted(set(vals)):
                cols.append(np.array([1.0 if v == level else 0.0 for v in vals]))
    x = np.stack(cols, 1)
    test = np.array([r[ti] == "1" for r in rows])
    return x, [r[li] for r in rows], test


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=sorted(SETS))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "tabular"))
    a = ap.parse_args()
    label, task = SETS[a.name]
    path = os.path.join(a.data, a.name + ".csv.gz")
    if not os.path.exists(path):
        path = path[:-3]
    out = a.out or f"/tmp/xgb-{a.name}"
    x, y_text, test = load(path, label)
    train_idx = np.flatnonzero(~test)
    cut = int(len(train_idx) * 0.9)  # early stopping: the last 10% of the training rows
    fit, stop = train_idx[:cut], train_idx[cut:]
    if task == "regression":
        y = np.log(np.array([float(v) for v in y_text]))
        classes = None
    else:
        classes = sorted(set(y_text))
        y = np.array([classes.index(v) for v in y_text], dtype=float)
    scores = []
    for seed in range(1, a.seeds + 1):
        params = {"eta": 0.05, "max_depth": 6, "subsample": 0.8, "colsample_bytree": 0.8,
                  "seed": seed, "tree_method": "hist", "nthread": os.cpu_count()}
        if task == "regression":
            params["objective"] = "reg:squarederror"
        elif task == "binary":
            params["objective"] = "binary:logistic"
        else:
            params.update(objective="multi:softprob", num_class=len(classes))
        dfit, dstop = xgb.DMatrix(x[fit], label=y[fit]), xgb.DMatrix(x[stop], label=y[stop])
        model = xgb.train(params, dfit, num_boost_round=4000, evals=[(dstop, "stop")],
                          early_stopping_rounds=100, verbose_eval=False)
        trees = (0, model.best_iteration + 1)
        d = os.path.join(out, f"seed{seed}")
        os.makedirs(d, exist_ok=True)
        sub = os.path.join(d, "submission.csv")
        tidx = np.flatnonzero(test)
        with open(sub, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            if task == "regression":
                w.writerow(["Id", label])
                for i, p in zip(tidx, model.predict(xgb.DMatrix(x[tidx]), iteration_range=trees)):
                    w.writerow([i + 1, f"{math.exp(p):.6f}"])
            else:
                w.writerow(["Id", "label"] + ["p_" + c for c in classes])
                probs = model.predict(xgb.DMatrix(x[tidx]), iteration_range=trees)
                if task == "binary":
                    probs = np.stack([1 - probs, probs], 1)
                for i, p in zip(tidx, probs):
                    w.writerow([i + 1, classes[int(np.argmax(p))]] + [f"{v:.6g}" for v in p])
        r = subprocess.run(["bash", os.path.join(ROOT, "examples", "score.sh"), path, sub,
                            label,
                            "regression" if task == "regression" else "classification"],
                           capture_output=True, text=True, check=True)
        lines = r.stdout.strip().splitlines()
        figures = dict(kv.split("=") for kv in lines[-1].split() if "=" in kv)
        scores.append(figures)
        print(f"seed {seed}: {trees[1]} trees: {lines[-1]}")
    keys = [k for k in scores[0] if k != "test_rows"]
    print("xgboost %s, %d seeds: " % (a.name, len(scores))
          + " ".join(f"{k}={np.mean([float(s[k]) for s in scores]):.4f}" for k in keys))


if __name__ == "__main__":
    sys.exit(main())
