#!/usr/bin/env bash
# examples/score.sh — scores predictions against the held-out labels,
# knowing nothing of the trainer: the CSV's row r (1-based, after the
# header) with is_test = 1 is the submission's Id r.
#
#   examples/score.sh DATA.csv[.gz] SUBMISSION.csv LABEL classification|regression
#
# LABEL "-": the column before is_test (the classification examples').
# classification: the recall of each class, then "test_rows=N
# test_accuracy=A" — a binary task's "test_rows=N test_auc=U
# test_accuracy=A", U the ROC AUC of the second class's probability (ties
# counted half); regression: "test_rows=N test_rmse_log=R"
# (RMSE of log prediction against log label, the usual score of house
# prices) and test_rmse in the label's unit.
set -euo pipefail
csv=${1:?usage: score.sh DATA.csv SUBMISSION.csv LABEL classification|regression}
sub=${2:?} label=${3:?} task=${4:?}
{ case "$csv" in *.gz) gzip -dc "$csv" ;; *) cat "$csv" ;; esac; } |
awk -F, -v subf="$sub" -v label="$label" -v task="$task" '
  function unq(s) { gsub(/^"|"$/, "", s); return s }
  BEGIN {
    while ((getline line < subf) > 0) {
      nf = split(line, f, ",")
      if (n++ == 0) { binary = nf == 4; pos = substr(unq(f[4]), 3); continue }
      pred[f[1]] = unq(f[2]); p1[f[1]] = f[4]
    }
    if (n == 0) { printf "scorer: %s is empty or missing\n", subf; exit 1 }
  }
  NR == 1 {
    cols = NF
    for (i = 1; i <= NF; i++) { if (unq($i) == "is_test") t = i; if (unq($i) == label) l = i }
    if (label == "-" && t > 1) l = t - 1
    if (!t || !l) { printf "scorer: the CSV has no is_test or %s column\n", label; bad = 1; exit 1 }
    next
  }
  NF != cols { printf "scorer: line %d has %d fields, the header %d\n", NR, NF, cols; bad = 1; exit 1 }
  unq($t) == 1 {
    id = NR - 1; y = unq($l); total++
    if (!(id in pred)) { missing++; next }
    if (task == "regression") {
      d = log(pred[id]) - log(y); sl += d * d; e = pred[id] - y; se += e * e
      next
    }
    cls[y]++
    if (pred[id] == y) { right++; hit[y]++ }
    score[total] = p1[id]; lab[total] = y
  }
  END {
    if (bad) exit 1
    if (missing) { printf "scorer: %d test rows have no prediction\n", missing; exit 1 }
    if (task == "regression") {
      printf "test_rmse=%.1f (in the label'"'"'s unit)\n", sqrt(se / total)
      printf "test_rows=%d test_rmse_log=%.5f\n", total, sqrt(sl / total)
      exit 0
    }
    for (c in cls) printf "recall %-22s %6.2f%% (%d of %d)\n", c, 100 * hit[c] / cls[c], hit[c], cls[c]
    if (binary) {
      for (i = 1; i <= total; i++) if (lab[i] == pos) for (j = 1; j <= total; j++) if (lab[j] != pos) {
        pairs++; good += (score[i] + 0 > score[j] + 0) ? 1 : (score[i] + 0 == score[j] + 0) ? 0.5 : 0
      }
      printf "auc of the probability of %s (against the rest)\n", pos
      printf "test_rows=%d test_auc=%.4f test_accuracy=%.4f\n", total, good / pairs, right / total
      exit 0
    }
    printf "test_rows=%d test_accuracy=%.4f\n", total, right / total
  }'
