#!/usr/bin/env bash
# examples/tabular.sh — one of the real-data examples end to end:
#   1. ringtrain prep runs NAME/prep.sql over ../shared/data/tabular/NAME.csv.gz
#      (or NAME.csv)
#      (its is_test rows become the test table; every 5th training row is
#      the validation split);
#   2. ringtrain run NAME/job.ini --np N trains (coordinator and agent on
#      loopback), keeps the best epoch, writes submission.csv, and this prints
#      `kept epoch E: MONITOR=VALUE`, the validation figure it was kept by;
#   3. examples/score.sh, which knows nothing of the trainer, compares the
#      submission with the CSV's labels of the test rows and prints last
#      test_accuracy (a binary task: test_auc, the ROC AUC of the second
#      class's probability, ties counted half, then test_accuracy; a
#      regression: test_rmse_log, the RMSE of log prediction against log label).
#
#   examples/tabular.sh NAME [--np N] [--seed S] [--out DIR] [--data DIR]
#                       [--job FILE] [--prep FILE] [--set SECTION.KEY=VALUE]...
# (--job: another job file than NAME/job.ini, on the same data and scorer;
# --prep: another feature script than NAME/prep.sql, e.g. another validation
# split: bench/cv.sh.)
# Everything it writes goes to --out (default: a new folder in /tmp, named
# on the first line), never into the checkout.  Binaries come from
# $RINGTRAIN_BUILD when set, else build/ of this repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
name=${1:?usage: examples/tabular.sh NAME [--np N] [--seed S] [--out DIR]}
shift
np=2 seed=42 out='' data="$root/../shared/data/tabular" sets=() job='' prep=''
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift ;;
    --seed) seed=$2; shift ;;
    --out) out=$2; shift ;;
    --data) data=$2; shift ;;
    --job) job=$2; shift ;;
    --prep) prep=$2; shift ;;
    --set) sets+=(--set "$2"); shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "tabular.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
ringtrain=$build/bin/ringtrain
csv=$data/$name.csv.gz
[ -f "$csv" ] || csv=$data/$name.csv
[ -x "$ringtrain" ] || { echo "tabular.sh: $ringtrain is missing: build first (bash scripts/build.sh)" >&2; exit 1; }
[ -f "$csv" ] || { echo "tabular.sh: neither $data/$name.csv.gz nor $name.csv is there (the shared data sets: ../shared/data/tabular)" >&2; exit 1; }
if [ -z "$out" ]; then
  out=$(mktemp -d "/tmp/ringtrain-$name-XXXXXX")
  echo "== the run's files go to $out (--out DIR chooses)"
fi

rm -rf "$out"
mkdir -p "$out/in"
ln -s "$csv" "$out/in/${csv##*/}"
echo "== 1. prep: $csv -> $out/dataset ($np partitions)"
"$ringtrain" prep --input "$out/in" --sql "${prep:-$here/$name/prep.sql}" --out "$out/dataset" \
  --partitions "$np" --quiet
job=${job:-$here/$name/job.ini}
echo "== 2. train: ringtrain run ${job#"$here"/} --np $np (seed $seed)"
"$ringtrain" run "$job" --np "$np" --set data.dataset="$out/dataset" \
  --set output.store="$out/store" --set train.seed="$seed" "${sets[@]}"
# the figure the kept epoch was chosen by: --set train.monitor, else the job's
# [train] monitor, else ringtrain's default (val_loss); one line that
# bench/tabular_quality.sh, family_inputs.sh and cv.sh read
monitor=$(awk -F= '/^\[/ { sec = $0 } sec == "[train]" && $1 ~ /^ *monitor *$/ { gsub(/ /, "", $2); m = $2 }
                  END { print m }' "$job")
for ((i = 1; i < ${#sets[@]}; i += 2)); do
  [[ ${sets[i]} == train.monitor=* ]] && monitor=${sets[i]#*=}
done
python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "\"best\":true" in l]
v = rows[-1].get(sys.argv[2]) if rows else None
if v is not None:  # no validation rows: ringtrain kept the epoch by another figure
    print("kept epoch %d: %s=%.6f" % (rows[-1]["epoch"], sys.argv[2], v))' \
  "$out/store/history.jsonl" "${monitor:-val_loss}"
echo "== 3. score the test rows (is_test = 1) against submission.csv"
manifest=$out/dataset/manifest.json
task=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["task"])' "$manifest")
if [ "$task" = regression ]; then # the label by name (the log of it is what trained)
  label=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["label"])' "$manifest")
  bash "$here/score.sh" "$csv" "$out/store/submission.csv" "$label" regression
else # the label by name when the CSV has it (wa_churn's is its first column), else the
  # column before is_test (the label the other examples' prep.sql renamed)
  label=$(python3 -c 'import gzip, json, sys
label = json.load(open(sys.argv[1]))["label"]
f = gzip.open(sys.argv[2], "rt") if sys.argv[2].endswith(".gz") else open(sys.argv[2])
head = [c.strip("\"") for c in f.readline().strip().split(",")]
print(label if label in head else "-")' "$manifest" "$csv")
  bash "$here/score.sh" "$csv" "$out/store/submission.csv" "$label" classification
fi
