#!/usr/bin/env bash
# The README's main job, examples/rossmann/run.sh --small (generate, prep,
# train with 2 ranks on a local cluster, predict), must reach a validation
# exp-RMSPE within 15% of the generator's noise floor and below the
# store-and-weekday-mean baseline, which must be at least 1.5x the floor
# (the ground truth is not trivially learnable).
# Usage: test_rossmann_small.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/rt-rossmann-XXXXXX")
trap 'rm -rf "$out"' EXIT
log=$out/run.log
if ! RINGTRAIN_BUILD=$build bash "$here/../examples/rossmann/run.sh" --small --np 2 --out "$out/run" > "$log" 2>&1; then
  echo "FAIL: run.sh --small failed:"; tail -40 "$log"; exit 1
fi
tail -4 "$log"
line=$(grep '^val_exp_rmspe=' "$log" | tail -1)
val=$(sed 's/.*val_exp_rmspe=\([0-9.e-]*\).*/\1/' <<< "$line")
floor=$(sed 's/.*noise_floor=\([0-9.e-]*\).*/\1/' <<< "$line")
base=$(sed 's/.*baseline=\([0-9.e-]*\).*/\1/' <<< "$line")
rows=$(($(wc -l < "$out/run/store/submission.csv") - 1))
test_rows=$(sed -n 's/.*"rows":{"train":[0-9]*,"validation":[0-9]*,"test":\([0-9]*\)}.*/\1/p' \
            "$out/run/dataset/manifest.json")
awk -v v="$val" -v f="$floor" -v b="$base" -v r="$rows" -v t="$test_rows" 'BEGIN {
  printf "val_exp_rmspe %.4f = %.3f x the noise floor %.4f; baseline %.4f = %.2f x; %d predictions of %d test rows\n", v, v / f, f, b, b / f, r, t
  ok = (v > 0 && v <= 1.15 * f && v < b && b >= 1.5 * f && r == t && r > 0)
  exit ok ? 0 : 1 }' || { echo "FAIL: the targets above are not met"; exit 1; }
