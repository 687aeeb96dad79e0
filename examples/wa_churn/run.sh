#!/usr/bin/env bash
# examples/wa_churn/run.sh — telecom churn end to end (binary, scored by ROC AUC
# and accuracy): examples/tabular.sh wa_churn --folds 5 with these arguments
# (--out, --seed, --set, --np; --folds 0: one job on the usual split) — the
# job trained on each of 5 cross-validation folds of the training rows and
# the 5 models averaged by `ringtrain ensemble --bag`.
exec "$(cd "$(dirname "$0")/.." && pwd)/tabular.sh" wa_churn --folds 5 "$@"
