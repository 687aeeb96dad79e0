#!/usr/bin/env bash
# bench/s3_bench.sh — object storage against the loopback S3 server
# (scripts/s3-server.sh), each figure beside its baseline measured in the
# same run:
#   1. put: MIB of data as 16 objects (bench/s3_get --put: multipart, 16 MiB
#      parts) against writing the same bytes to a local file (cp + sync);
#   2. read: the objects with curl (its own Signature V4, one keep-alive
#      connection, -K) against bench/s3_get whole (a shard read in memory)
#      and in 16 MiB ranges (the streaming reader's blocks);
#   3. training: the Rossmann example's generated data (--stores 60),
#      prepped into a folder and into S3, 3 epochs streamed
#      (stream_rows 4096) from each: samples/s of the last 2 epochs.
# Minutes, not seconds: not a test.  Binaries from $RINGTRAIN_BUILD, else build/.
#   bench/s3_bench.sh [--mib 1024]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${RINGTRAIN_BUILD:-$here/build}
mib=1024
[ "${1:-}" = --mib ] && mib=$2
out=$(mktemp -d "${TMPDIR:-/tmp}/rt-s3-bench-XXXXXX")
trap '"$here/scripts/s3-server.sh" stop "$out/s3" || true; rm -rf "$out"' EXIT
"$here/scripts/s3-server.sh" start "$out/s3" > /dev/null
# shellcheck disable=SC1091
. "$out/s3/env"
per=$((mib / 16))
head -c $((per << 20)) /dev/urandom > "$out/blob"
t() { local s; s=$(date +%s.%N); "$@" > "$out/t.out"; awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }

echo "== 1. put $mib MiB as 16 objects of $per MiB"
local_s=$(t sh -c "for i in \$(seq 16); do cp '$out/blob' '$out/copy'; sync '$out/copy'; done")
put=$("$build/bench/s3_get" --put "$out/blob" 16 s3://ringtrain/bench/obj)
echo "local write (cp + sync): ${local_s} s ($(awk -v m="$mib" -v s="$local_s" 'BEGIN { printf "%.0f", m * 1.048576 / s }') MB/s)"
echo "rt_s3 multipart put:     $put"

echo "== 2. read them back"
urls=()
for i in $(seq 0 15); do urls+=("url = \"$AWS_ENDPOINT_URL/ringtrain/bench/obj-$i\"" "output = /dev/null"); done
printf '%s\n' "${urls[@]}" > "$out/curl.cfg"
empty=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
best() { sort -t= -k2 -n | head -1; } # the fastest of 3 rounds (the server warms up)
curl_s=$(for r in 1 2 3; do t curl -sf -K "$out/curl.cfg" -H "x-amz-content-sha256: $empty" \
  --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"; echo; done | sort -n | head -1)
uris=()
for i in $(seq 0 15); do uris+=("s3://ringtrain/bench/obj-$i"); done
whole=$(for r in 1 2 3; do "$build/bench/s3_get" "${uris[@]}"; done | sort -t= -k3 -n | head -1)
ranged=$(for r in 1 2 3; do "$build/bench/s3_get" --ranges "${uris[@]}"; done | sort -t= -k3 -n | head -1)
curl_mbps=$(awk -v m="$mib" -v s="$curl_s" 'BEGIN { printf "%.1f", m * 1.048576 / s }')
echo "curl:                ${curl_s} s, ${curl_mbps} MB/s"
echo "rt_s3 whole objects: $whole ($(awk -v c="$curl_mbps" -v l="$whole" 'BEGIN { split(l, a, "MBps="); printf "%.2fx curl", a[2] / c }'))"
echo "rt_s3 16 MiB ranges: $ranged ($(awk -v c="$curl_mbps" -v l="$ranged" 'BEGIN { split(l, a, "MBps="); printf "%.2fx curl", a[2] / c }'))"

echo "== 3. training streamed from a folder and from S3"
"$build/examples/rossmann/rossmann-gen" --out "$out/data" --stores 60 --quiet
"$build/bin/ringtrain" prep --input "$out/data" --sql "$here/examples/rossmann/prep.sql" \
  --out "$out/ds" --partitions 2 --quiet > /dev/null
"$build/bin/ringtrain" prep --input "$out/data" --sql "$here/examples/rossmann/prep.sql" \
  --out s3://ringtrain/bench/ds --partitions 2 --quiet > /dev/null
for where in "$out/ds" s3://ringtrain/bench/ds; do
  store=$out/store-$(echo "$where" | tr -c 'a-z0-9' _)
  "$build/bin/ringtrain" run "$here/examples/rossmann/job.ini" --np 2 --set data.dataset="$where" \
    --set output.store="$store" --set train.epochs=3 --set data.stream_rows=4096 \
    --set output.predict=false > /dev/null 2>&1
  sps=$(tail -2 "$store/history.jsonl" | sed -n 's/.*"samples_per_s":\([0-9.e+]*\).*/\1/p' |
    awk '{ s += $1 } END { printf "%.0f", s / NR }')
  echo "$where: $sps samples/s (epochs 2-3)"
done
