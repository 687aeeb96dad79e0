#!/usr/bin/env bash
# examples/sweep.sh — an example's sweep end to end:
#   1. ringtrain prep runs NAME/prep.sql over ../shared/data/tabular/NAME.csv.gz
#      (its is_test rows become the test table, never trained on nor used to
#      choose);
#   2. ringtrain run NAME/sweep.ini trains the trials on this machine
#      (coordinator and agent on loopback, slots = np x parallel), ASHA
#      stopping the weak ones; the best trial's checkpoint, history,
#      predictions and job file land in STORE/best/;
#   3. examples/score.sh scores best/submission.csv against the test labels,
#      then one line sums it up:
#        best_trial=N trials=T epochs_run=E val_<monitor>=X test_<metric>=Y
#      (the test figure is computed after the choice, never used for it).
#
#   examples/sweep.sh NAME [--out DIR] [--scheduler asha|random|grid]
#                          [--seed S] [--data DIR] [--job FILE] [--set SECTION.KEY=VALUE]...
# --job: another sweep file than NAME/sweep.ini (NAME/sweep_tabm.ini: TabM's space).
# Everything it writes goes to --out (default: a new folder in /tmp).
# Binaries come from $RINGTRAIN_BUILD when set, else build/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
name=${1:?usage: examples/sweep.sh NAME [--out DIR] [--scheduler S] [--seed S]}
shift
out= data="$root/../shared/data/tabular" sets=() job=
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift ;;
    --data) data=$2; shift ;;
    --job) job=$2; shift ;;
    --scheduler) sets+=(--set "sweep.scheduler=$2"); shift ;;
    --seed) sets+=(--set "sweep.seed=$2"); shift ;;
    --set) sets+=(--set "$2"); shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "sweep.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
ringtrain=$build/bin/ringtrain
csv=$data/$name.csv.gz
[ -f "$csv" ] || csv=$data/$name.csv
[ -x "$ringtrain" ] || { echo "sweep.sh: $ringtrain is missing: build first (bash scripts/build.sh)" >&2; exit 1; }
[ -f "$csv" ] || { echo "sweep.sh: neither $data/$name.csv.gz nor $name.csv is there" >&2; exit 1; }
if [ -z "$out" ]; then
  out=$(mktemp -d "/tmp/ringtrain-$name-sweep-XXXXXX")
  echo "== the sweep's files go to $out (--out DIR chooses)"
fi
rm -rf "$out"
mkdir -p "$out/in"
ln -s "$csv" "$out/in/${csv##*/}"
echo "== 1. prep: $csv -> $out/dataset"
"$ringtrain" prep --input "$out/in" --sql "$here/$name/prep.sql" --out "$out/dataset" \
  --partitions 2 --quiet
job=${job:-$here/$name/sweep.ini}
echo "== 2. sweep: ringtrain run ${job#$here/}"
"$ringtrain" run "$job" --set data.dataset="$out/dataset" \
  --set output.store="$out/store" "${sets[@]}"
echo "== 3. score the best trial's predictions on the test rows (is_test = 1)"
task=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["task"])' "$out/dataset/manifest.json")
if [ "$task" = regression ]; then
  label=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["label"])' "$out/dataset/manifest.json")
  score=$(bash "$here/score.sh" "$csv" "$out/store/best/submission.csv" "$label" regression)
else
  score=$(bash "$here/score.sh" "$csv" "$out/store/best/submission.csv" - classification)
fi
echo "$score"
python3 - "$out/store/trials.jsonl" "${score##*$'\n'}" <<'PY'
import json, sys
trials = [json.loads(l) for l in open(sys.argv[1])]
done = [t for t in trials if t["best"] is not None]
mon = trials[0]["monitor"]
best = (max if mon.startswith("val_") and not any(k in mon for k in ("loss", "rmse", "mae", "rmspe"))
        else min)(done, key=lambda t: t["best"])
test = sys.argv[2].split()[-1]  # test_accuracy=... or test_rmse_log=...
print(f"best_trial={best['trial']} trials={len(trials)} epochs_run={sum(t['epochs'] for t in trials)} "
      f"{mon}={best['best']:.6g} {test}")
PY
