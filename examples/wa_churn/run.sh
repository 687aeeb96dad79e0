#!/usr/bin/env bash
# examples/wa_churn/run.sh — telecom churn end to end (binary, scored by ROC AUC
# and accuracy): examples/tabular.sh wa_churn with these arguments (--out,
# --seed, --set, --np).
exec "$(cd "$(dirname "$0")/.." && pwd)/tabular.sh" wa_churn "$@"
