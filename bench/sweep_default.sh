#!/usr/bin/env bash
# bench/sweep_default.sh — a shared data set tuned by the one command a user
# with their own table has (docs/sweeps.md, "The default space"): prep
# --from the CSV (its is_test rows the test rows), a sweep given by --set
# alone — no space.* line, so the family's default space — and the best
# trial's predictions scored on the test rows by examples/score.sh (after
# the choice, never used for it).  Prints one Markdown row: the sweep, how
# many trials completed, the best validation value, the test score, wall.
#
#   bench/sweep_default.sh NAME LABEL classification|regression FAMILY TRIALS
#                          [--search random|tpe] [--set SECTION.KEY=VALUE]...
#   e.g. bench/sweep_default.sh satimage classes classification mlp 100 \
#            --search tpe --set train.monitor=val_accuracy
# Binaries from $RINGTRAIN_BUILD or build/; data from ../shared/data/tabular.
# Minutes: not a test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
[ $# -ge 5 ] || { sed -n '2,15p' "$0"; exit 2; }
name=$1 label=$2 task=$3 family=$4 trials=$5
shift 5
search=random sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --search) search=$2; shift ;;
    --set) sets+=(--set "$2"); shift ;;
    *) echo "sweep_default: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
csv=$root/../shared/data/tabular/$name.csv.gz
[ -f "$csv" ] || { echo "sweep_default: no $csv" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/var/tmp}/rt-bench-default-XXXXXX")
trap 'rm -rf "$work"' EXIT
rt=$build/bin/ringtrain
"$rt" prep --from "$csv" --label "$label" --test-column is_test --out "$work/ds" \
  --partitions 2 --quiet > "$work/prep.log" 2>&1 ||
  { tail -5 "$work/prep.log" >&2; echo "sweep_default: prep failed" >&2; exit 1; }
t0=$(date +%s.%N)
"$rt" run --np 1 --set job.type=sweep --set "sweep.trials=$trials" --set sweep.parallel=2 \
  --set "sweep.search=$search" --set "data.dataset=$work/ds" --set "output.store=$work/st" \
  --set "model.architecture=$family" "${sets[@]}" > "$work/run.log" 2>&1 ||
  { tail -20 "$work/run.log" >&2; echo "sweep_default: the sweep failed" >&2; exit 1; }
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
# the table's first trial row: TRIAL JOB STATE RUNG EPOCHS VALUE AT VALUES...
best=$(awk '/^  TRIAL / { getline; print $6; exit }' "$work/run.log")
monitor=$(awk '/^  TRIAL / { print $6; exit }' "$work/run.log")
done_=$(awk '/^  TRIAL / { t = 1; next } t && $3 == "completed" { n++ } END { print n + 0 }' "$work/run.log")
test=$(bash "$root/examples/score.sh" "$csv" "$work/st/best/submission.csv" "$label" "$task" |
  tail -1)
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "| $name ($family) | $trials, $search | $done_ | $monitor $best | $test | $secs s |"
