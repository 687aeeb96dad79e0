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
import os
import sys

import numpy as np
import xgboost as xgb

from tabular_data import DATA, SETS, csv_path, load, mean_line, targets, write_and_score


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=sorted(SETS))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--data", default=DATA)
    a = ap.parse_args()
    label, task = SETS[a.name]
    path = csv_path(a.data, a.name)
    out = a.out or f"/tmp/xgb-{a.name}"
    x, _, y_text, test = load(path, label)
    train_idx = np.flatnonzero(~test)
    cut = int(len(train_idx) * 0.9)  # early stopping: the last 10% of the training rows
    fit, stop = train_idx[:cut], train_idx[cut:]
    y, classes = targets(y_text, task)
    tidx = np.flatnonzero(test)
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
        pred = model.predict(xgb.DMatrix(x[tidx]), iteration_range=trees)
        if task == "binary":
            pred = np.stack([1 - pred, pred], 1)
        last, figures = write_and_score(path, os.path.join(out, f"seed{seed}"), label, task,
                                        classes, tidx, pred)
        scores.append(figures)
        print(f"seed {seed}: {trees[1]} trees: {last}")
    print(mean_line("xgboost %s, %d seeds:" % (a.name, len(scores)), scores))

if __name__ == "__main__":
    sys.exit(main())
