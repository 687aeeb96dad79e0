#!/usr/bin/env bash
# bench/wide.sh — wide tables: wall time and peak resident memory of
# `ringtrain prep --from` (inference, script, shards), of training (an mlp,
# np = 1, a few epochs), of `ringtrain predict` over the held-out rows, and
# of scoring them as new rows (the label and test flag taken off) through
# the dataset's score.sql, for tables of a growing number of columns and the
# same rows, so that growth in the width shows (it should be linear).
#
#   bench/wide.sh [--rows N] [--epochs E] [COLUMNS...]
#
# COLUMNS default: 250 500 1000 2000 4096.  Each table: N rows (default
# 5000) of random numbers in [0, 1), a tenth of the columns integers 0..4
# (categorical), and a binary label planted in the first 8 continuous
# columns; 20% of the rows are the test rows (is_test).  Peak memory is GNU
# time's maximum resident set size (for `ringtrain run`: the largest of
# coordinator, agent and the rank).  Binaries from $RINGTRAIN_BUILD or
# build/.  Minutes at 4096 columns: not a test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
rows=5000 epochs=3 widths=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "bench/wide.sh: unknown argument '$1'" >&2; exit 2 ;;
    *) widths+=("$1") ;;
  esac
  shift
done
[ ${#widths[@]} -gt 0 ] || widths=(250 500 1000 2000 4096)
command -v /usr/bin/time > /dev/null || { echo "bench/wide.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/var/tmp}/rt-bench-wide-XXXXXX")
trap 'rm -rf "$work"' EXIT
measure() { # command...: sets secs, mib
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
  read -r secs kb < "$work/time"
  mib=$((kb / 1024))
}
echo "$rows rows, $epochs epochs of an mlp (256-128, batch 256, np = 1); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
echo "| columns | CSV MiB | prep s | prep MiB | train s | train MiB | predict s | predict MiB | score.sql s | score.sql MiB | test accuracy |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for w in "${widths[@]}"; do
  d="$work/$w"
  mkdir -p "$d"
  python3 - "$d/t.csv" "$w" "$rows" <<'PY'
import random, sys
path, width, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(width)
ncat = width // 10
with open(path, "w") as f:
    f.write(",".join(["y", "is_test"] + [f"c{i}" for i in range(ncat)] +
                     [f"x{i}" for i in range(width - ncat)]) + "\n")
    for i in range(rows):
        x = [r.random() for _ in range(width - ncat)]
        y = int(sum(x[:8]) + 0.3 * r.gauss(0, 1) > 4)
        f.write(",".join([str(y), str(int(i % 5 == 0))] +
                         [str(r.randrange(5)) for _ in range(ncat)] +
                         [f"{v:.4f}" for v in x]) + "\n")
PY
  csv=$(du -m "$d/t.csv" | cut -f1)
  measure "$build/bin/ringtrain" prep --from "$d/t.csv" --label y --test-column is_test \
    --categorical "$(seq -s, -f 'c%g' 0 $((w / 10 - 1)))" --out "$d/ds"
  line="| $w | $csv | $secs | $mib"
  printf '[model]\narchitecture = mlp\nhidden = 256, 128\nthreads = %s\n[train]\nepochs = %s\nbatch_size = 256\nlearning_rate = 1e-3\n' \
    "$(nproc)" "$epochs" > "$d/job.ini"
  measure "$build/bin/ringtrain" run "$d/job.ini" --np 1 --set data.dataset="$d/ds" \
    --set output.store="$d/store"
  line="$line | $secs | $mib"
  awk -F, 'NR > 1 && $2 == 1 { print $1 }' "$d/t.csv" > "$d/truth"
  measure "$build/bin/ringtrain" predict --model "$d/store/best.ckpt" --dataset "$d/ds" \
    --out "$d/pred.csv"
  line="$line | $secs | $mib"
  { head -1 "$d/t.csv"; awk -F, 'NR > 1 && $2 == 1' "$d/t.csv"; } | cut -d, -f3- > "$d/new.csv"
  measure "$build/bin/ringtrain" predict --model "$d/store/best.ckpt" --input "$d/new.csv" \
    --sql "$d/ds/score.sql" --out "$d/score.csv"
  cmp -s <(cut -d, -f2- "$d/pred.csv") <(cut -d, -f2- "$d/score.csv") ||
    { echo "bench/wide.sh: $w columns: score.sql's predictions are not predict --dataset's" >&2; exit 1; }
  acc=$(python3 - "$d/pred.csv" "$d/truth" <<'PY'
import csv, sys
pred = list(csv.DictReader(open(sys.argv[1])))
truth = [int(l) for l in open(sys.argv[2])]
col = [k for k in pred[0] if k not in ("id", "Id")][0]
ok = sum(int(float(p[col]) == t) for p, t in zip(pred, truth))
print(f"{ok / len(truth):.3f}")
PY
)
  echo "$line | $secs | $mib | $acc |"
  rm -rf "$d"
done
