#!/usr/bin/env bash
# bench/sync_bn.sh — quality at np = 2 with and without synchronized batch
# norm (issue 14.5): the Rossmann example's --small configuration (real
# auxiliary files when ../shared/data/rossmann exists, 100 stores, 512-256
# model, 20 epochs) trained with the same global batch three ways — np = 1
# with batch 2B, np = 2 with batch B each, np = 2 with B each and
# [model] sync_batch_norm — for each seed; prints each run's best validation
# exp-RMSPE and np = 2's ratio to np = 1.  About 10 minutes on 2 cores.
#   bench/sync_bn.sh [--seeds "1 2 3"] [--batch B] [--epochs E]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
seeds="1 2 3" batch=128 epochs=20
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift ;;
    --batch) batch=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    *) echo "bench/sync_bn.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench-syncbn-XXXXXX")
trap 'rm -rf "$work"' EXIT
aux=$root/../shared/data/rossmann
mkdir -p "$work/data"
if [ -d "$aux" ]; then
  for f in store store_states state_names googletrend weather test; do
    src=$(ls "$aux/$f.csv" "$aux/$f.csv.gz" 2>/dev/null | head -1 || true)
    ln -s "$src" "$work/data/$(basename "$src")"
  done
  "$build/examples/rossmann/rossmann-gen" --out "$work/data" --aux "$aux" --stores 100 > /dev/null
else
  "$build/examples/rossmann/rossmann-gen" --out "$work/data" --stores 100 > /dev/null
fi
"$build/bin/ringtrain" prep --input "$work/data" --sql "$root/examples/rossmann/prep.sql" \
  --out "$work/ds" --partitions 2 --quiet > /dev/null

# run NAME NP BATCH SYNC SEED: prints the best epoch's val_exp_rmspe
run() {
  "$build/bin/ringtrain" run "$root/examples/rossmann/job.ini" --np "$2" \
    --set data.dataset="$work/ds" --set output.store="$work/$1" --set train.epochs="$epochs" \
    --set model.hidden=512,256 --set model.dropout=0.3 --set model.l2=1e-6 \
    --set train.learning_rate=1e-3 --set train.lr_schedule=cosine --set train.batch_size="$3" \
    --set model.sync_batch_norm="$4" --set train.seed="$5" --set output.predict=false \
    --set job.max_restarts=0 > "$work/$1.log" 2>&1 ||
    { echo "bench/sync_bn.sh: $1 failed:" >&2; tail -20 "$work/$1.log" >&2; exit 1; }
  grep '"best":true' "$work/$1/history.jsonl" | tail -1 | sed -n 's/.*"val_exp_rmspe":\([-0-9.eE+]*\).*/\1/p'
}
printf '| seed | np=1, batch %d | np=2, batch %d each | np=2, sync BN | ratio without | ratio with |\n' \
  $((2 * batch)) "$batch"
printf '| ---: | ---: | ---: | ---: | ---: | ---: |\n'
for s in $seeds; do
  one=$(run one_$s 1 $((2 * batch)) false "$s")
  two=$(run two_$s 2 "$batch" false "$s")
  sync=$(run sync_$s 2 "$batch" true "$s")
  awk -v s="$s" -v a="$one" -v b="$two" -v c="$sync" 'BEGIN {
    printf "| %d | %.4f | %.4f | %.4f | %.3f | %.3f |\n", s, a, b, c, b / a, c / a }'
done
