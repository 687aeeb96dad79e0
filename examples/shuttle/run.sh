#!/usr/bin/env bash
# examples/shuttle/run.sh — prep, train (np = 2) and score the shuttle example:
# examples/tabular.sh shuttle --folds 5 with these arguments (--np, --seed,
# --out, --set; --folds 0: one job on the usual split) — the job trained on
# each of 5 cross-validation folds of the training rows and the 5 models
# averaged by `ringtrain ensemble --bag`.
exec "$(cd "$(dirname "$0")/.." && pwd)/tabular.sh" shuttle --folds 5 "$@"
