#!/usr/bin/env bash
# bench/tabular_quality.sh — the real-data examples' test figures: each
# example as its run.sh runs it (examples/tabular.sh: prep, train, predict,
# the awk scorer) with seeds 1, 2 and 3, the test figure of each (accuracy;
# RMSE of log price for ames), their mean, the lowest recall of a class with
# 10 or more test rows, the binary AUC, the validation figure the best epoch
# (or the ensemble, or the bag) was chosen by, and the wall time per run (prep
# included).  Prints a Markdown table.
#
#   bench/tabular_quality.sh [--np N] [--seeds "1 2 3"] [--job FILE] [--set K=V]... [NAME...]
#
# NAME: satimage, shuttle, breastcancer, ames, wa_churn (default: all);
# --job: another job file than NAME/job.ini (one NAME then).  Binaries from
# $RINGTRAIN_BUILD, else build/.  Minutes, not seconds: not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
np=2 seeds="1 2 3" names=() extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    --job) extra+=(--job "$2"); shift ;;
    --set) extra+=(--set "$2"); shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) names+=("$1") ;;
  esac
  shift
done
[ ${#names[@]} -gt 0 ] || names=(satimage shuttle breastcancer ames wa_churn)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| example | np | seeds | test figure per seed | mean | lowest recall (10+ rows) | AUC (binary) | validation (chosen by) | seconds per run |"
echo "|---|---|---|---|---|---|---|---|---|"
for name in "${names[@]}"; do
  accs=() recs=() aucs=() secs=() vals=() reg=0
  for s in $seeds; do
    t0=$(date +%s.%N)
    log=$(bash "$here/examples/$name/run.sh" --np "$np" --seed "$s" --out "$out/$name-$s" \
          "${extra[@]}" 2>&1) ||
      { echo "$log" >&2; echo "tabular_quality: $name seed $s failed" >&2; exit 1; }
    secs+=("$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')")
    if grep -q 'test_rmse_log=' <<<"$log"; then
      reg=1 accs+=("$(grep -o 'test_rmse_log=[0-9.]*' <<<"$log" | cut -d= -f2)")
    else
      accs+=("$(grep -o 'test_accuracy=[0-9.]*' <<<"$log" | cut -d= -f2)")
    fi
    vals+=("$( (grep -E '^(kept epoch|ensemble validation|bag validation)' <<<"$log" || true) | tail -1 | sed 's/.*: //')")
    aucs+=("$(grep -o 'test_auc=[0-9.]*' <<<"$log" | cut -d= -f2 || true)")
    recs+=("$( (grep '^recall' <<<"$log" || true) | tr -d '()%' |
              awk '$NF >= 10 && (m == "" || $(NF - 3) < m) { m = $(NF - 3) } END { print m }')")
  done
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$np" "$seeds" \
    "$(printf '%s ' "${accs[@]}" | awk -v reg=$reg '{ for (i = 1; i <= NF; i++)
        if (reg) printf "%s%.4f", (i > 1 ? ", " : ""), $i; else printf "%s%.2f%%", (i > 1 ? ", " : ""), 100 * $i }')" \
    "$(printf '%s\n' "${accs[@]}" | awk -v reg=$reg '{ s += $1 } END { if (reg) printf "%.4f", s / NR; else printf "%.2f%%", 100 * s / NR }')" \
    "$(printf '%s\n' "${recs[@]}" | sort -g | head -1 | awk 'NF { print $1 "%" } !NF { print "-" }')" \
    "$(printf '%s\n' "${aucs[@]}" | awk 'NF { s += $1; n++ } END { if (n) printf "%.4f", s / n; else print "-" }')" \
    "$(printf '%s ' "${vals[@]}")" \
    "$(printf '%s\n' "${secs[@]}" | awk '{ s += $1 } END { printf "%.1f", s / NR }')"
done
