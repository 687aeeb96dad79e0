#!/usr/bin/env python3
"""The linear baseline of the real-data examples: L2-regularised logistic
regression (binary, or multinomial for several classes) or ridge regression
(ames: of the log of the price), on the same CSV, the same test rows
(is_test = 1) and the same scorer as examples/tabular.sh — the model the
issues' "logistic regression gets 0.836" and "ridge regression gets 0.159"
mean, as one command (numpy only: Newton's method, closed-form ridge).

    bench/linear_baseline.py NAME [--log] [--out DIR]
        NAME: satimage, shuttle, breastcancer, ames, wa_churn

What a tabular user would run (scikit-learn's LogisticRegressionCV / RidgeCV
over a pipeline): every text column one-hot; numeric columns with missing
values filled by the training rows' mean plus a 0/1 "was missing" column,
then standardised by the training rows; --log first replaces each
non-negative numeric column whose training values are skewed (skewness
above 1) by log(1 + x).  The L2 weight is chosen by 5-fold cross-validation
on the training rows (log loss, or RMSE), never by the test rows; the model
is then fitted on every training row.  Deterministic: no seeds."""
import argparse
import os
import sys

import numpy as np

from tabular_data import DATA, SETS, csv_path, load, targets, write_and_score

LAMBDAS = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]  # the penalty: lambda/2 |w|^2 on the summed loss


def features(x, train, log):
    """The design matrix: an intercept, then the columns as the docstring says."""
    cols = [np.ones(len(x))]
    for c in x.T:
        t = c[train]
        numeric = not np.all(np.isin(c[~np.isnan(c)], (0.0, 1.0)))
        miss = np.isnan(c)
        if numeric and log and np.nanmin(t) >= 0:
            s = np.nanstd(t)
            skew = np.nanmean((t - np.nanmean(t)) ** 3) / s ** 3 if s > 0 else 0
            if skew > 1:
                c, t = np.log1p(c), np.log1p(t)
        mean = np.nanmean(t) if np.any(~np.isnan(t)) else 0.0
        c = np.where(miss, mean, c)
        if miss[train].any():
            cols.append(miss.astype(float))
        sd = c[train].std()
        if sd > 0:
            cols.append((c - c[train].mean()) / sd if numeric else c)
    return np.stack(cols, 1)


def softmax(z):
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def fit_logistic(x, y, k, lam):
    """Multinomial (k > 2) or binary logistic regression by damped Newton;
    the intercept (column 0) is not penalised.  Weights d x (k or 1)."""
    n, d = x.shape
    kk = k if k > 2 else 1
    w = np.zeros((d, kk))
    pen = np.full(d, lam)
    pen[0] = 1e-8
    onehot = np.eye(k)[y.astype(int)] if kk > 1 else y[:, None]

    def objective(w):
        z = x @ w
        if kk == 1:
            ll = np.sum(np.logaddexp(0, z[:, 0]) - y * z[:, 0])
        else:
            zm = z.max(1)
            ll = np.sum(zm + np.log(np.exp(z - zm[:, None]).sum(1)) - (z * onehot).sum(1))
        return ll + 0.5 * np.sum(pen[:, None] * w * w)

    f = objective(w)
    for _ in range(100):
        z = x @ w
        p = 1 / (1 + np.exp(-z)) if kk == 1 else softmax(z)
        g = (x.T @ (p - onehot) + pen[:, None] * w).ravel(order="F")
        h = np.zeros((d * kk, d * kk))
        for a in range(kk):
            for b in range(a, kk):
                s = p[:, a] * ((a == b) - p[:, b]) if kk > 1 else p[:, 0] * (1 - p[:, 0])
                blk = (x * s[:, None]).T @ x
                h[a * d:(a + 1) * d, b * d:(b + 1) * d] = blk
                h[b * d:(b + 1) * d, a * d:(a + 1) * d] = blk
        h[np.diag_indices_from(h)] += np.tile(pen, kk)
        step = np.linalg.solve(h, g).reshape((d, kk), order="F")
        t = 1.0
        while t > 1e-6:  # halve the step until the objective falls
            fn = objective(w - t * step)
            if fn <= f:
                break
            t /= 2
        w, f_old, f = w - t * step, f, fn
        if f_old - f < 1e-9 * max(1.0, abs(f)):
            break
    return w


def predict(x, w, task):
    if task == "regression":
        return x @ w
    z = x @ w
    if z.shape[1] == 1:
        p = 1 / (1 + np.exp(-z[:, 0]))
        return np.stack([1 - p, p], 1)
    return softmax(z)


def fit(x, y, task, k, lam):
    if task == "regression":
        pen = np.full(x.shape[1], lam)
        pen[0] = 0
        return np.linalg.solve(x.T @ x + np.diag(pen), x.T @ y)
    return fit_logistic(x, y, k, lam)


def loss(p, y, task):
    if task == "regression":
        return float(np.sqrt(np.mean((p - y) ** 2)))
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y.astype(int)], 1e-15, 1))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=sorted(SETS))
    ap.add_argument("--log", action="store_true", help="log(1 + x) of skewed non-negative columns")
    ap.add_argument("--out", default=None)
    ap.add_argument("--data", default=DATA)
    a = ap.parse_args()
    label, task = SETS[a.name]
    path = csv_path(a.data, a.name)
    raw, _, y_text, test = load(path, label)
    y, classes = targets(y_text, task)
    k = len(classes) if classes else 0
    train = ~test
    x = features(raw, train, a.log)
    tr, te = np.flatnonzero(train), np.flatnonzero(test)
    fold = np.random.default_rng(0).permutation(len(tr)) % 5
    cv = []
    for lam in LAMBDAS:
        losses = []
        for f in range(5):
            fit_rows, val_rows = tr[fold != f], tr[fold == f]
            w = fit(x[fit_rows], y[fit_rows], task, k, lam)
            losses.append(loss(predict(x[val_rows], w, task), y[val_rows], task))
        cv.append(np.mean(losses))
        print(f"lambda {lam:g}: 5-fold {'RMSE' if task == 'regression' else 'log loss'} "
              f"{cv[-1]:.5f}")
    lam = LAMBDAS[int(np.argmin(cv))]
    w = fit(x[tr], y[tr], task, k, lam)
    out = a.out or f"/tmp/linear-{a.name}"
    last, _ = write_and_score(path, out, label, task, classes, te, predict(x[te], w, task))
    print(f"linear {a.name}{' --log' if a.log else ''} ({x.shape[1] - 1} features, lambda "
          f"{lam:g} by 5-fold cross-validation): {last}")


if __name__ == "__main__":
    sys.exit(main())
