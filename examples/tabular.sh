#!/usr/bin/env bash
# examples/tabular.sh — one of the real classification examples end to end:
#   1. ringtrain prep runs NAME/prep.sql over ../shared/data/tabular/NAME.csv.gz
#      (or NAME.csv)
#      (its is_test rows become the test table; every 5th training row is
#      the validation split);
#   2. ringtrain run NAME/job.ini --np N trains (coordinator and agent on
#      loopback), keeps the best epoch, writes submission.csv;
#   3. an awk scorer that knows nothing of the trainer compares the
#      submission's classes with the CSV's labels of the test rows and
#      prints the test accuracy last (a binary task: before it the ROC AUC
#      of the second class's probability, ties counted half).
#
#   examples/tabular.sh NAME [--np N] [--seed S] [--out DIR] [--data DIR]
#                       [--set SECTION.KEY=VALUE]...
# Everything it writes goes to --out (default: a new folder in /tmp, named
# on the first line), never into the checkout.  Binaries come from
# $RINGTRAIN_BUILD when set, else build/ of this repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
name=${1:?usage: examples/tabular.sh NAME [--np N] [--seed S] [--out DIR]}
shift
np=2 seed=42 out= data="$root/../shared/data/tabular" sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift ;;
    --seed) seed=$2; shift ;;
    --out) out=$2; shift ;;
    --data) data=$2; shift ;;
    --set) sets+=(--set "$2"); shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
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
"$ringtrain" prep --input "$out/in" --sql "$here/$name/prep.sql" --out "$out/dataset" \
  --partitions "$np" --quiet
echo "== 2. train: ringtrain run $name/job.ini --np $np (seed $seed)"
"$ringtrain" run "$here/$name/job.ini" --np "$np" --set data.dataset="$out/dataset" \
  --set output.store="$out/store" --set train.seed="$seed" "${sets[@]}"
echo "== 3. score the test rows (is_test = 1) against submission.csv"
# the CSV's row r (1-based, after the header) is the submission's Id r
{ case "$csv" in *.gz) gzip -dc "$csv" ;; *) cat "$csv" ;; esac; } | awk -F, -v subf="$out/store/submission.csv" '
  function unq(s) { gsub(/^"|"$/, "", s); return s }
  BEGIN {
    while ((getline line < subf) > 0) {
      nf = split(line, f, ",")
      if (n++ == 0) { binary = nf == 4; pos = substr(unq(f[4]), 3); continue }
      pred[f[1]] = unq(f[2]); p1[f[1]] = f[4]
    }
  }
  NR == 1 { for (i = 1; i <= NF; i++) if (unq($i) == "is_test") t = i; next }
  unq($t) == 1 {
    id = NR - 1; y = unq($(t - 1)); total++; cls[y]++
    if (!(id in pred)) { missing++; next }
    if (pred[id] == y) { right++; hit[y]++ }
    score[total] = p1[id]; lab[total] = y
  }
  END {
    if (missing) { printf "scorer: %d test rows have no prediction\n", missing; exit 1 }
    for (c in cls) printf "recall %-22s %6.2f%% (%d of %d)\n", c, 100 * hit[c] / cls[c], hit[c], cls[c]
    if (binary) { # ROC AUC of p_<second class>: the pairs ranked right, ties half
      for (i = 1; i <= total; i++) if (lab[i] == pos) for (j = 1; j <= total; j++) if (lab[j] != pos) {
        pairs++; good += (score[i] + 0 > score[j] + 0) ? 1 : (score[i] + 0 == score[j] + 0) ? 0.5 : 0
      }
      printf "test_auc=%.4f (%s against the rest)\n", good / pairs, pos
    }
    printf "test_rows=%d test_accuracy=%.4f\n", total, right / total
  }'
