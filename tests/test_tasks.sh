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
#     the job does not compute: errors naming the key and what would fit;
#   - sample weights with classes, streamed (stream_rows): one window gives
#     the predictions of the rows in memory, small windows train too; a
#     negative weight is refused naming its row;
#   - a log label's predictions are named for the target (log_pix -> pix).
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
  --set train.monitor=val_auc \
  > "$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; fail "the binary job failed"; }
hist=$tmp/bcs/history.jsonl
grep -q '"val_auc"' "$hist" || fail "no val_auc in the history"
grep -q '"val_log_loss"' "$hist" || fail "no val_log_loss in the history"
last=$(tail -1 "$hist")
grep -q '"stopped":"early stopping: val_auc has not improved for 2 epochs' <<<"$last" ||
  fail "the last epoch does not say it stopped early: $last"
[ "$(wc -l < "$hist")" -lt 40 ] || fail "early stopping did not stop"
# off a terminal the follower prints one line per epoch, however fast they go
shown=$(grep -cE '^epoch [0-9]+/40 ' "$tmp/run.log" || true)
[ "$shown" -eq "$(wc -l < "$hist")" ] ||
  fail "the follower printed $shown epoch lines for $(wc -l < "$hist") epochs: $(cat "$tmp/run.log")"
head -1 "$tmp/bcs/submission.csv" | grep -qx 'Id,label,p_benign,p_malignant' ||
  fail "header: $(head -1 "$tmp/bcs/submission.csv")"
[ "$(wc -l < "$tmp/bcs/submission.csv")" -eq 175 ] || fail "not 174 predictions"
# ringtrain predict from the best checkpoint writes the same file; --proba false the class only
"$rt" predict --model "$tmp/bcs/best.ckpt" --dataset "$tmp/bcds" --out "$tmp/p.csv" > /dev/null
cmp -s "$tmp/p.csv" "$tmp/bcs/submission.csv" || fail "predict differs from the job's submission"
"$rt" predict --model "$tmp/bcs/best.ckpt" --dataset "$tmp/bcds" --out "$tmp/p2.csv" --proba false > /dev/null
head -2 "$tmp/p2.csv" | tail -1 | grep -Eq '^[0-9]+,(benign|malignant)$' || fail "--proba false: $(head -2 "$tmp/p2.csv")"

# prep --from a CSV file, no SQL: the same roles and checks as Parquet
gzip -dc "$data/satimage.csv.gz" | awk -F, 'NR == 1 || $NF == 0' | sed '1s/"x\.\([0-9]*\)"/x\1/g' > "$tmp/sat.csv"
out=$(timeout 120 "$rt" prep --from "$tmp/sat.csv" --label classes --continuous x1,x2,x3 --out "$tmp/csvds" 2>&1)
grep -q "prepared .* (multiclass, 6 classes, inferred" <<<"$out" || fail "prep --from CSV: $out"
if timeout 120 "$rt" prep --from "$tmp/sat.csv" --label classes --continuous x1,x99 --out "$tmp/x" > "$tmp/err" 2>&1; then
  fail "prep --from CSV took a missing column"
fi
grep -q "x99" "$tmp/err" || fail "prep --from CSV, missing column: $(cat "$tmp/err")"
# ... and a folder of CSV part files (as Spark writes one: a header in each,
# _SUCCESS and .crc files beside): the same rows, the same dataset
mkdir -p "$tmp/satparts"
head -1 "$tmp/sat.csv" > "$tmp/hdr"
tail -n +2 "$tmp/sat.csv" | split -l 1000 - "$tmp/satparts/body-"
for f in "$tmp"/satparts/body-*; do
  cat "$tmp/hdr" "$f" > "$tmp/satparts/part-$(basename "$f").csv" && rm "$f"
done
gzip "$tmp/satparts/part-body-aa.csv" # a compressed part among plain ones
touch "$tmp/satparts/_SUCCESS" "$tmp/satparts/.part-body-ab.csv.crc"
out=$(timeout 120 "$rt" prep --from "$tmp/satparts" --label classes --continuous x1,x2,x3 --out "$tmp/csvds2" 2>&1) ||
  fail "prep --from a CSV folder: $out"
grep -q "prepared .* (multiclass, 6 classes, inferred" <<<"$out" || fail "prep --from a CSV folder: $out"
[ "$(grep -o '"rows":{[^}]*}' "$tmp/csvds/manifest.json")" = "$(grep -o '"rows":{[^}]*}' "$tmp/csvds2/manifest.json")" ] &&
  grep -q '"rows":{"train":[1-9]' "$tmp/csvds2/manifest.json" ||
  fail "the CSV folder's dataset has other rows than the file's"
sed -i '1s/x3/x33/' "$tmp/satparts/part-body-ac.csv"
if out=$(timeout 120 "$rt" prep --from "$tmp/satparts" --label classes --continuous x1,x2 --out "$tmp/x" 2>&1); then
  fail "prep --from took a CSV folder whose parts' headers differ"
fi
grep -q "part-body-ac.csv:1: its header differs" <<<"$out" || fail "a differing header, prep said: $out"

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
check_bad "(use cross_entropy)" --set train.loss=mse
check_bad "2 weights for 6 classes (cotton crop, damp grey soil, grey soil, red soil, vegetation stubble, very damp grey soil" \
  --set train.class_weights=1,2
check_bad "'val_r2' is not computed by this job" --set train.monitor=val_r2
check_bad "'' is not computed by this job (it computes loss, val_loss, val_accuracy," --set train.monitor=
# class weights: balanced (scikit-learn's) and balanced_sqrt, its square root, in the log
weights() { # class_weights value -> the log's "class weights:" line
  sed "s|^dataset = .*|dataset = $tmp/satds|; s|^store = .*|store = $tmp/cw|; s|^epochs = .*|epochs = 1|" \
    "$sat" > "$tmp/cw.ini"
  printf '\n[train]\nclass_weights = %s\n' "$1" >> "$tmp/cw.ini"
  rm -rf "$tmp/cw"
  timeout 120 "$build/bin/ringtrain-worker" "$tmp/cw.ini" 2>&1 | grep 'class weights:' || true
}
# threads by default: the CPUs the rank may run on (its affinity mask here), said why
if command -v taskset > /dev/null; then
  weights balanced > /dev/null
  line=$(taskset -c 0 "$build/bin/ringtrain-worker" "$tmp/cw.ini" 2>&1 | grep 'CPU, ' || true)
  grep -q "CPU, 1 thread (1 usable CPU (affinity 1 of" <<<"$line" || fail "threads under taskset -c 0: $line"
fi
b=$(weights balanced) q=$(weights balanced_sqrt)
[ -n "$b" ] && [ -n "$q" ] || fail "no class weights in the log: '$b' '$q'"
grep -q "cotton crop" <<<"$b" || fail "class weights without the class names: $b"
paste <(tr ',' '\n' <<<"${b#*:}" | awk '{print $NF}') <(tr ',' '\n' <<<"${q#*:}" | awk '{print $NF}') |
  awk '{ if ($2 * $2 < $1 * 0.999 || $2 * $2 > $1 * 1.001) bad = 1 } END { exit bad }' ||
  fail "balanced_sqrt is not the square root of balanced: $b / $q"
check_bad "'rmse' is not a multiclass metric (accuracy, balanced_accuracy, macro_f1, log_loss or auc)" \
  --set train.metrics=rmse
# more ranks than training partitions: refused before anything is queued
if timeout 120 "$rt" run "$sat" --np 4 --set data.dataset="$tmp/satds" --set output.store="$tmp/ss" \
    > "$tmp/bad.log" 2>&1; then
  fail "np 4 on 2 partitions was accepted"
fi
grep -q "np = 4 ranks, but .* has 2 training partitions" "$tmp/bad.log" &&
  grep -q "nothing was submitted" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "np vs partitions"; }
# no validation rows: no val_loss (null, not the training loss), the loss picks the best
sed "s/, ('validation', 'is_val')//" "$root/examples/breastcancer/prep.sql" > "$tmp/noval.sql"
timeout 120 "$rt" prep --input "$tmp/bc" --sql "$tmp/noval.sql" --out "$tmp/nvds" --quiet > /dev/null
timeout 300 "$rt" run "$job" --np 1 --set data.dataset="$tmp/nvds" --set output.store="$tmp/nvs" \
  --set train.epochs=2 --set train.monitor=loss > "$tmp/nv.log" 2>&1 || { cat "$tmp/nv.log"; fail "no validation rows"; }
grep -q '"val_loss":null' "$tmp/nvs/history.jsonl" || fail "val_loss without validation rows: $(head -1 "$tmp/nvs/history.jsonl")"
! grep -q 'val_loss' "$tmp/nv.log" || fail "the follower shows a val_loss without validation rows: $(cat "$tmp/nv.log")"

# sample weights (1 to 3 by row) with classes, in memory and streamed
sed "s/CAST(is_test AS INTEGER) AS is_test,/CAST(is_test AS INTEGER) AS is_test, 1 + CAST(_line AS INTEGER) % 3 AS w,/; \
     s/('validation', 'is_val')/('validation', 'is_val'), ('weight', 'w')/" \
  "$root/examples/satimage/prep.sql" > "$tmp/w.sql"
timeout 120 "$rt" prep --input "$tmp/sat" --sql "$tmp/w.sql" --out "$tmp/wds" --partitions 2 --quiet > /dev/null
grep -q '"role":"weight"' "$tmp/wds/manifest.json" || grep -q '"weight"' "$tmp/wds/manifest.json" ||
  fail "no weight column in the manifest"
for rows in 0 100000 300; do
  timeout 300 "$rt" run "$sat" --np 2 --set data.dataset="$tmp/wds" --set output.store="$tmp/ws$rows" \
    --set train.epochs=2 --set data.stream_rows=$rows > "$tmp/w.log" 2>&1 ||
    { cat "$tmp/w.log"; fail "weighted multiclass, stream_rows = $rows"; }
  grep -q '"val_accuracy"' "$tmp/ws$rows/history.jsonl" || fail "stream_rows $rows: no val_accuracy"
done
cmp -s "$tmp/ws0/submission.csv" "$tmp/ws100000/submission.csv" ||
  fail "one streamed window predicts otherwise than the rows in memory"
head -1 "$tmp/ws300/submission.csv" | grep -q '^Id,label,p_cotton crop,' || fail "streamed: $(head -1 "$tmp/ws300/submission.csv")"
sed "s/1 + CAST(_line AS INTEGER) % 3 AS w/CASE WHEN _line = '77' THEN -1 ELSE 1 END AS w/" "$tmp/w.sql" > "$tmp/neg.sql"
if timeout 120 "$rt" prep --input "$tmp/sat" --sql "$tmp/neg.sql" --out "$tmp/x" --quiet 2> "$tmp/err"; then
  fail "a negative weight was accepted"
fi
grep -q "weight" "$tmp/err" && grep -q -- "-1" "$tmp/err" || fail "negative weight: $(cat "$tmp/err")"

# a regression on a log label: the predictions are the target's, named for it
sed "s/\"classes\" AS label/ln(CAST(\"x.17\" AS REAL) + 1) AS log_pix/; \
     s/('label', 'label')/('label', 'log_pix'), ('label_transform', 'log'), ('max_label', '160')/" \
  "$root/examples/satimage/prep.sql" > "$tmp/log.sql"
out=$(timeout 120 "$rt" prep --input "$tmp/sat" --sql "$tmp/log.sql" --out "$tmp/lds" --quiet)
grep -q "regression" <<<"$out" || fail "log label: $out"
timeout 300 "$rt" run "$sat" --np 1 --set data.dataset="$tmp/lds" --set output.store="$tmp/ls" \
  --set train.epochs=1 --set train.loss=auto --set train.metrics= --set train.monitor=val_loss \
  --set train.label_smoothing=0 > "$tmp/l.log" 2>&1 || { cat "$tmp/l.log"; fail "log regression"; }
head -1 "$tmp/ls/submission.csv" | grep -qx 'Id,pix' || fail "log label header: $(head -1 "$tmp/ls/submission.csv")"
echo "ok: tasks"
