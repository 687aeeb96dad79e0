#!/usr/bin/env bash
# bench/data_scale.sh — data beyond memory: wall time and peak resident
# memory of `ringtrain prep` and of one training epoch, at a size you pick.
#
#   bench/data_scale.sh [--stores N] [--days D] [--db auto|memory|disk] [--stream ROWS]
#
# rossmann-gen makes the Kaggle-format files (synthetic auxiliary tables)
# for N stores x D days (1115 x 942 ~ 1.05M training rows; 10620 x 942 ~
# 10M); prep runs examples/rossmann/prep.sql over them (2 partitions); then
# one epoch of a small model (64-32, batch 1024, np = 1), once with the rows
# in memory ([data] stream_rows = 0) and once streamed (stream_rows = ROWS,
# default 65536).  Peak memory is GNU time's maximum resident set size of
# the command, which covers its waited-for descendants: for `ringtrain run`
# the largest of coordinator, agent and the rank.  Binaries from
# $RINGTRAIN_BUILD or build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
stores=1115 days=942 db=auto stream=65536
while [ $# -gt 0 ]; do
  case "$1" in
    --stores) stores=$2; shift ;;
    --days) days=$2; shift ;;
    --db) db=$2; shift ;;
    --stream) stream=$2; shift ;;
    *) echo "bench/data_scale.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
command -v /usr/bin/time > /dev/null || { echo "bench/data_scale.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/var/tmp}/rt-bench-scale-XXXXXX")
trap 'rm -rf "$work"' EXIT
measure() { # label, command...: prints "label: S s, M MiB"
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
  read -r secs kb < "$work/time"
  printf '%-34s %8.1f s %8.0f MiB\n' "$label" "$secs" "$((kb / 1024))"
}
"$build/examples/rossmann/rossmann-gen" --out "$work/in" --stores "$stores" --days "$days" --quiet
rows=$(($(wc -l < "$work/in/train.csv") - 1))
echo "data: $stores stores x $days days = $rows rows in train.csv ($(du -sh "$work/in" | cut -f1) of CSV); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
measure "prep (--db $db)" "$build/bin/ringtrain" prep --input "$work/in" \
  --sql "$root/examples/rossmann/prep.sql" --out "$work/ds" --partitions 2 --db "$db"
grep -h "^prep: SQLite" "$work/out" | sed 's/^/  /'
tail -1 "$work/out" | sed 's/^/  /'
cat > "$work/job.ini" <<JOB
[job]
name = scale
np = 1
[data]
dataset = $work/ds
[model]
hidden = 64, 32
threads = $(nproc)
[train]
epochs = 1
batch_size = 1024
[output]
store = $work/store
JOB
for s in 0 "$stream"; do
  rm -rf "$work/store"
  measure "1 epoch, stream_rows = $s" "$build/bin/ringtrain" run "$work/job.ini" \
    --set data.stream_rows="$s"
done
