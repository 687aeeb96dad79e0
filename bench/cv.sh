#!/usr/bin/env bash
# bench/cv.sh — k-fold cross-validation of one of the real-data examples'
# recipes on its training rows: examples/tabular.sh with the example's
# validation split replaced by fold K of F (`ringtrain prep --fold K/F`:
# within each class, every F-th row from the K-th in prep's hash order),
# for K = 0 .. F-1.  Prints each fold's monitored validation figure at the
# kept epoch and their mean: what to choose a recipe by where one split's
# few hundred rows rank recipes by the split more than by the model (ames:
# bench/RESULTS.md).  Each fold's test figure is printed too, for the
# record; never choose by it.
#
#   bench/cv.sh NAME [--folds F] [--seed S] [--job FILE] [--set K=V]...
#
# Binaries from $RINGTRAIN_BUILD, else build/.  Minutes: not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in -h | --help) sed -n '2,15p' "$0"; exit 0 ;; esac
name=${1:?usage: bench/cv.sh NAME [--folds F] [--seed S] [--job FILE] [--set K=V]...}
shift
folds=5 seed=1 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --folds) folds=$2; shift ;;
    --seed) seed=$2; shift ;;
    --job) extra+=(--job "$2"); shift ;;
    --set) extra+=(--set "$2"); shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "cv.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if ! [[ $folds =~ ^[0-9]+$ ]] || [ "$folds" -lt 2 ]; then
  echo "cv.sh: --folds must be a number, 2 or more" >&2
  exit 2
fi
[ -f "$here/examples/$name/prep.sql" ] || { echo "cv.sh: no examples/$name/prep.sql" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| data set | fold | validation (monitored, kept epoch) | test (never choose by it) |"
echo "|---|---|---|---|"
vals=()
for ((k = 0; k < folds; k++)); do
  run=$out/run-$k
  log=$(bash "$here/examples/tabular.sh" "$name" --seed "$seed" --out "$run" \
          --fold "$k/$folds" "${extra[@]}" 2>&1) ||
    { echo "$log" | tail -20 >&2; echo "cv.sh: $name fold $k failed" >&2; exit 1; }
  # the monitored figure of the epoch the run kept (tabular.sh's line)
  v=$(grep -E '^(kept epoch|ensemble validation)' <<<"$log" | tail -1 | sed 's/.*: //') ||
    { echo "cv.sh: $name fold $k: no validation figure kept (tabular.sh's 'kept epoch' or 'ensemble validation')" >&2; exit 1; }
  vals+=("${v#*=}")
  t=$(grep -o 'test_[a-z_]*=[0-9.]*' <<<"$log" | grep -v rows | tr '\n' ' ')
  echo "| $name | $k of $folds | $v | $t|"
  rm -rf "$run"
done
printf '| %s | mean | %s | |\n' "$name" \
  "$(printf '%s\n' "${vals[@]}" | awk '{ s += $1 } END { printf "%.5f", s / NR }')"
