#!/usr/bin/env bash
# examples/tabular.sh — one of the real-data examples end to end:
#   1. ringtrain prep runs NAME/prep.sql over ../shared/data/tabular/NAME.csv.gz
#      (or NAME.csv)
#      (its is_test rows become the test table; a fifth of the training
#      rows, by class, the validation split);
#   2. ringtrain run NAME/job.ini --np N trains (coordinator and agent on
#      loopback), keeps the best epoch, writes submission.csv, and this prints
#      `kept epoch E: MONITOR=VALUE`, the validation figure it was kept by;
#      an example with NAME/members.txt (a list of job files) trains each of
#      them instead, with [output] predict_validation = true, and `ringtrain
#      ensemble` weighs their predictions by the validation rows (printing
#      `ensemble validation: METRIC=VALUE`) into submission.csv;
#      with --folds F, the job is trained F times, on the validation split
#      made fold K of F (`ringtrain prep --fold K/F`; K = 0..F-1), and `ringtrain
#      ensemble --bag` averages the F models into submission.csv, printing
#      `bag validation (out of fold): METRIC=VALUE` — every training row
#      scored by the model that did not train on it;
#   3. examples/score.sh, which knows nothing of the trainer, compares the
#      submission with the CSV's labels of the test rows and prints last
#      test_accuracy (a binary task: test_auc, the ROC AUC of the second
#      class's probability, ties counted half, then test_accuracy; a
#      regression: test_rmse_log, the RMSE of log prediction against log label).
#
#   examples/tabular.sh NAME [--np N] [--seed S] [--out DIR] [--data DIR]
#                       [--job FILE | --single] [--prep FILE]
#                       [--folds F | --fold K/F] [--set SECTION.KEY=VALUE]...
# (--job: another job file than NAME/job.ini, on the same data and scorer;
# --single: NAME/job.ini alone where the example is an ensemble;
# --prep: another feature script than NAME/prep.sql; --fold K/F: its
# validation split made fold K of F, as --folds does for each fold (one
# fold's run: bench/cv.sh); --set: to every job.)
# Everything it writes goes to --out (default: a new folder in /tmp, named
# on the first line), never into the checkout.  Binaries come from
# $RINGTRAIN_BUILD when set, else build/ of this repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
case "${1:-}" in -h | --help) sed -n '2,35p' "$0"; exit 0 ;; esac
name=${1:?usage: examples/tabular.sh NAME [--np N] [--seed S] [--out DIR] (--help)}
shift
np=2 seed=42 out='' data="$root/../shared/data/tabular" sets=() job='' prep='' single=0 folds=0 fold=()
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift ;;
    --seed) seed=$2; shift ;;
    --out) out=$2; shift ;;
    --data) data=$2; shift ;;
    --job) job=$2; shift ;;
    --prep) prep=$2; shift ;;
    --single) single=1 ;;
    --folds) folds=$2; shift ;;
    --fold) fold=(--fold "$2"); shift ;;
    --set) sets+=(--set "$2"); shift ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "tabular.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if ! [[ $folds =~ ^[0-9]+$ ]] || [ "$folds" = 1 ]; then
  echo "tabular.sh: --folds $folds: a number of folds, 2 or more" >&2
  exit 2
fi
if [ "$folds" -gt 0 ] && [ ${#fold[@]} -gt 0 ]; then
  echo "tabular.sh: --folds F trains every fold; --fold K/F one of them: give one" >&2
  exit 2
fi
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
echo "== 1. prep: $csv -> $out/dataset ($np partitions)${fold[1]:+, validation fold ${fold[1]}}"
"$ringtrain" prep --input "$out/in" --sql "${prep:-$here/$name/prep.sql}" --out "$out/dataset" \
  --partitions "$np" --quiet "${fold[@]}"
# train JOB into STORE (extra --set arguments after them) and print the
# figure its kept epoch was chosen by: --set train.monitor, else the job's
# [train] monitor, else ringtrain's default (val_loss); one line that
# bench/tabular_quality.sh, family_inputs.sh and cv.sh read.  The dataset:
# $dataset (default $out/dataset).
# print "LABEL: METRIC=VALUE", the figure $out/store/ensemble.json was fitted by
ensemble_line() {
  python3 -c 'import json, sys
r = json.load(open(sys.argv[2]))
m = r["metric"]
print("%s: %s=%.6f" % (sys.argv[1], m, r["val_" + m]))' "$1" "$out/store/ensemble.json"
}
monitor_of() {
  local monitor
  monitor=$(awk -F= '/^\[/ { sec = $0 } sec == "[train]" && $1 ~ /^ *monitor *$/ { gsub(/ /, "", $2); m = $2 }
                    END { print m }' "$1")
  for ((i = 1; i < ${#sets[@]}; i += 2)); do
    [[ ${sets[i]} == train.monitor=* ]] && monitor=${sets[i]#*=}
  done
  echo "${monitor:-val_loss}"
}
train() {
  local job=$1 store=$2
  shift 2
  "$ringtrain" run "$job" --np "$np" --set data.dataset="${dataset:-$out/dataset}" \
    --set output.store="$store" --set train.seed="$seed" "${sets[@]}" "$@"
  python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "\"best\":true" in l]
v = rows[-1].get(sys.argv[2]) if rows else None
if v is not None:  # no validation rows: ringtrain kept the epoch by another figure
    print("kept epoch %d: %s=%.6f" % (rows[-1]["epoch"], sys.argv[2], v))' \
    "$store/history.jsonl" "$(monitor_of "$job")"
}
members=()
if [ -z "$job" ] && [ "$single" = 0 ] && [ -f "$here/$name/members.txt" ]; then
  while read -r m; do members+=("$here/$name/$m"); done < <(sed 's/[;#].*//; /^[[:space:]]*$/d' "$here/$name/members.txt")
fi
if [ "$folds" -gt 0 ]; then
  if [ ${#members[@]} -gt 0 ]; then
    echo "tabular.sh: --folds bags one job; $name is an ensemble: add --single or --job FILE" >&2
    exit 2
  fi
  job=${job:-$here/$name/job.ini}
  # the bag is scored by the job's monitored figure where ensemble knows it
  metric=$(monitor_of "$job")
  metric=${metric#val_}
  case "$metric" in log_loss | accuracy | auc | rmse | mae | rmse_log) bag=(--metric "$metric") ;; *) bag=() ;; esac
  stores=()
  for ((k = 0; k < folds; k++)); do
    echo "== 2.$((k + 1)) fold $((k + 1)) of $folds: ringtrain run ${job#"$here"/} --np $np (seed $seed) on validation fold $k"
    "$ringtrain" prep --input "$out/in" --sql "${prep:-$here/$name/prep.sql}" --fold "$k/$folds" \
      --out "$out/dataset-$k" --partitions "$np" --quiet
    dataset=$out/dataset-$k train "$job" "$out/fold-$k" --set output.predict_validation=true |
      sed "s/^kept epoch/fold $((k + 1)): kept epoch/"
    stores+=("$out/fold-$k")
  done
  echo "== 2.$((k + 1)) ringtrain ensemble --bag: the $folds models averaged"
  "$ringtrain" ensemble --bag "${bag[@]}" "${stores[@]}" --out "$out/store" | tee "$out/ensemble.txt"
  ensemble_line "bag validation (out of fold)"
elif [ ${#members[@]} -eq 0 ]; then
  job=${job:-$here/$name/job.ini}
  echo "== 2. train: ringtrain run ${job#"$here"/} --np $np (seed $seed)"
  train "$job" "$out/store"
else
  stores=()
  for ((k = 0; k < ${#members[@]}; k++)); do
    echo "== 2.$((k + 1)) train member $((k + 1)) of ${#members[@]}: ringtrain run ${members[k]#"$here"/} --np $np (seed $seed)"
    train "${members[k]}" "$out/member-$((k + 1))" --set output.predict_validation=true |
      sed "s/^kept epoch/member $((k + 1)): kept epoch/"
    stores+=("$out/member-$((k + 1))")
  done
  echo "== 2.$((k + 1)) ringtrain ensemble: the members' predictions weighted by the validation rows"
  "$ringtrain" ensemble "${stores[@]}" --out "$out/store" | tee "$out/ensemble.txt"
  ensemble_line "ensemble validation"
fi
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
