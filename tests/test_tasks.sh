#!/usr/bin/env bash
# test_tasks.sh BUILD — classification from prep to predictions on the real
# data sets (../shared/data/tabular), and the task's bad inputs:
#   - prep infers binary / multiclass and writes the classes; a text label
#     forced to regression, and a class only validation rows have, are refused;
#   - training (np = 2, few epochs) writes val_<metric> for every metric,
#     early stopping stops every rank after the same epoch and says why;
#   - submission.csv has the class name and p_<class> columns, --proba false
#     only the class; `ringtrain predict` writes the same file;
#   - a loss for another task, class weights of the wrong count, a monitor
#     the job does not compute: errors naming the key and what would fit.
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/../shared/data/tabular
rt=$build/bin/ringtrain
if [ ! -f "$data/breastcancer.csv.gz" ]; then
  echo "SKIP: $data has no breastcancer.csv.gz"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/bc" "$tmp/sat"
ln -s "$data/breastcancer.csv.gz" "$tmp/bc/"
ln -s "$data/satimage.csv.gz" "$tmp/sat/"
out=$(timeout 120 "$rt" prep --input "$tmp/bc" --sql "$root/examples/breastcancer/prep.sql" \
  --out "$tmp/bcds" --partitions 2 --quiet)
grep -q "(binary, 2 classes, inferred" <<<"$out" || fail "prep did not infer binary: $out"
grep -q '"class_rows"' "$tmp/bcds/manifest.json" || fail "no class_rows in the manifest"

# a text label as a regression is refused naming the value
sed "s/('validation', 'is_val')/('validation', 'is_val'), ('task', 'regression'), ('max_label', '1')/" \
  "$root/examples/breastcancer/prep.sql" > "$tmp/reg.sql"
if timeout 120 "$rt" prep --input "$tmp/bc" --sql "$tmp/reg.sql" --out "$tmp/x" --quiet 2> "$tmp/err"; then
  fail "a text label was taken as a regression"
fi
grep -q "holds text ('benign')" "$tmp/err" || fail "text label: $(cat "$tmp/err")"
# a class in validation rows only
sed "s/\"Class\" AS label/CASE WHEN CAST(_line AS INTEGER) % 5 = 0 AND \"Class\" = 'malignant' THEN 'rare' ELSE \"Class\" END AS label/" \
  "$root/examples/breastcancer/prep.sql" > "$tmp/rare.sql"
if timeout 120 "$rt" prep --input "$tmp/bc" --sql "$tmp/rare.sql" --out "$tmp/x" --quiet 2> "$tmp/err"; then
  fail "a validation-only class was accepted"
fi
grep -q "class 'rare' of the label label is in validation rows only" "$tmp/err" || fail "$(cat "$tmp/err")"

# training: binary, early stopping after 2 epochs without a better val_auc
job=$root/examples/breastcancer/job.ini
timeout 300 "$rt" run "$job" --np 2 --set data.dataset="$tmp/bcds" --set output.store="$tmp/bcs" \
  --set train.epochs=40 --set train.early_stopping_patience=2 --set train.learning_rate=0.2 \
  > "$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; fail "the binary job failed"; }
hist=$tmp/bcs/history.jsonl
grep -q '"val_auc"' "$hist" || fail "no val_auc in the history"
grep -q '"val_log_loss"' "$hist" || fail "no val_log_loss in the history"
last=$(tail -1 "$hist")
grep -q '"stopped":"early stopping: val_auc has not improved for 2 epochs' <<<"$last" ||
  fail "the last epoch does not say it stopped early: $last"
[ "$(wc -l < "$hist")" -lt 40 ] || fail "early stopping did not stop"
head -1 "$tmp/bcs/submission.csv" | grep -qx 'Id,label,p_benign,p_malignant' ||
  fail "header: $(head -1 "$tmp/bcs/submission.csv")"
[ "$(wc -l < "$tmp/bcs/submission.csv")" -eq 175 ] || fail "not 174 predictions"
# ringtrain predict from the best checkpoint writes the same file; --proba false the class only
"$rt" predict --model "$tmp/bcs/best.ckpt" --dataset "$tmp/bcds" --out "$tmp/p.csv" > /dev/null
cmp -s "$tmp/p.csv" "$tmp/bcs/submission.csv" || fail "predict differs from the job's submission"
"$rt" predict --model "$tmp/bcs/best.ckpt" --dataset "$tmp/bcds" --out "$tmp/p2.csv" --proba false > /dev/null
head -2 "$tmp/p2.csv" | tail -1 | grep -Eq '^[0-9]+,(benign|malignant)$' || fail "--proba false: $(head -2 "$tmp/p2.csv")"

# multiclass: the bad inputs, checked before anything trains
timeout 120 "$rt" prep --input "$tmp/sat" --sql "$root/examples/satimage/prep.sql" --out "$tmp/satds" \
  --partitions 2 --quiet > /dev/null
sat=$root/examples/satimage/job.ini
check_bad() { # expected-text, --set...
  local want=$1; shift
  if timeout 120 "$rt" run "$sat" --np 1 --set data.dataset="$tmp/satds" --set output.store="$tmp/ss" \
      --set train.epochs=1 "$@" > "$tmp/bad.log" 2>&1; then
    fail "accepted $*"
  fi
  grep -qF "$want" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "no '$want' for $*"; }
}
check_bad "bce does not fit" --set train.loss=bce
check_bad "2 weights for 6 classes (cotton crop, damp grey soil, grey soil, red soil, vegetation stubble, very damp grey soil" \
  --set train.class_weights=1,2
check_bad "'val_r2' is not computed by this job" --set train.monitor=val_r2
check_bad "'rmse' is not a multiclass metric" --set train.metrics=rmse
echo "ok: tasks"
