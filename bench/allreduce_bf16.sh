#!/usr/bin/env bash
# [train] allreduce_precision = bf16 between hosts: np ranks as 2 "hosts"
# (network namespaces joined by a veth pair of a given rate, tbf on each
# end; no netem here, so rate but no added latency), bench/allreduce of
# float32 buffers sent as they are against rounded to bfloat16, allreduced
# in bf16 and widened back (--bf16, the conversions timed), with the
# default integrity tags and with plain frames.  Variants alternated ROUNDS
# times (bench/ab_allreduce.py), medians and ratios to fp32's.
#   bench/allreduce_bf16.sh [--rounds R] [--rate 1gbit,10gbit] [--sizes B,B] [--per-host L]
#                           [--build DIR]
# Needs root (ip netns, tc); makes and removes its own namespaces only.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 rates="1gbit,10gbit" per_host=1 sizes="1048576,16777216"
build=${RINGTRAIN_BUILD:-build}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --rate) rates=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --per-host) per_host=$2; shift ;;
    --build) build=$2; shift ;;
    *) echo "usage: bench/allreduce_bf16.sh [--rounds R] [--rate R,R] [--sizes B,B]" \
            "[--per-host L] [--build DIR]" >&2
       exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "bench/allreduce_bf16.sh: needs root (ip netns, tc)" >&2; exit 2; }
[ -x "$build/bench/allreduce" ] ||
  { echo "bench/allreduce_bf16.sh: no $build/bench/allreduce" >&2; exit 2; }
. scripts/netns-link.sh
tag=rtbbf$$
trap 'netns_link_down $tag' EXIT
netns_link_up $tag 10.79.0
ar="$build/bench/allreduce"
hosts="--hosts,$per_host,--host,$tag-a=10.79.0.1,--host,$tag-b=10.79.0.2"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "# $cpu, $(nproc) cores; np = $((2 * per_host)) as 2 hosts x $per_host"
IFS=, read -ra rate_list <<< "$rates"
for rate in "${rate_list[@]}"; do
  netns_link_rate $tag "$rate" ||
    { echo "bench/allreduce_bf16.sh: no tbf in this kernel" >&2; exit 2; }
  echo "## link between the hosts: $rate each way"
  timeout 1800 python3 bench/ab_allreduce.py "$rounds" $((2 * per_host)) "$sizes" \
    "fp32=$ar,$hosts" "bf16=$ar,$hosts,--bf16" \
    "fp32-plain=$ar,$hosts,--no-integrity" "bf16-plain=$ar,$hosts,--no-integrity,--bf16"
  for h in a b; do echo "  host $h sent $(netns_link_sent $tag $h) bytes over the link"; done
done
