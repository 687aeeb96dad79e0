#!/usr/bin/env bash
# bench/tabular_quality.sh — the classification examples' test figures, as
# issue 27's targets state them: each example (examples/tabular.sh: prep,
# train, predict, the awk scorer) with seeds 1, 2 and 3, their mean, the
# lowest recall of a class with 10 or more test rows, the binary AUC and the
# wall time per run (prep included).  Prints a Markdown table.
#
#   bench/tabular_quality.sh [--np N] [--seeds "1 2 3"] [NAME...]
#
# NAME: satimage, shuttle, breastcancer (default: all three).  Binaries
# from $RINGTRAIN_BUILD, else build/.  Minutes, not seconds: not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
np=2 seeds="1 2 3" names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) names+=("$1") ;;
  esac
  shift
done
[ ${#names[@]} -gt 0 ] || names=(satimage shuttle breastcancer)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| example | np | seeds | test accuracy per seed | mean | lowest recall (10+ rows) | AUC (binary) | seconds per run |"
echo "|---|---|---|---|---|---|---|---|"
for name in "${names[@]}"; do
  accs=() recs=() aucs=() secs=()
  for s in $seeds; do
    t0=$(date +%s.%N)
    log=$(bash "$here/examples/tabular.sh" "$name" --np "$np" --seed "$s" --out "$out/$name-$s" 2>&1) ||
      { echo "$log" >&2; echo "tabular_quality: $name seed $s failed" >&2; exit 1; }
    secs+=("$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')")
    accs+=("$(grep -o 'test_accuracy=[0-9.]*' <<<"$log" | cut -d= -f2)")
    aucs+=("$(grep -o 'test_auc=[0-9.]*' <<<"$log" | cut -d= -f2 || true)")
    recs+=("$(grep '^recall' <<<"$log" | tr -d '()%' |
              awk '$NF >= 10 && (m == "" || $(NF - 3) < m) { m = $(NF - 3) } END { print m }')")
  done
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$np" "$seeds" \
    "$(printf '%s ' "${accs[@]}" | awk '{ for (i = 1; i <= NF; i++) printf "%s%.2f%%", (i > 1 ? ", " : ""), 100 * $i }')" \
    "$(printf '%s\n' "${accs[@]}" | awk '{ s += $1 } END { printf "%.2f%%", 100 * s / NR }')" \
    "$(printf '%s\n' "${recs[@]}" | sort -g | head -1)%" \
    "$(printf '%s\n' "${aucs[@]}" | awk 'NF { s += $1; n++ } END { if (n) printf "%.4f", s / n; else print "-" }')" \
    "$(printf '%s\n' "${secs[@]}" | awk '{ s += $1 } END { printf "%.1f", s / NR }')"
done
