#!/usr/bin/env bash
# Allreduces between hosts: 2 "hosts" x L ranks whose link is a network of a
# given rate.  --compare hier (issue 13.5, the default): flat ring vs
# hierarchical (shared memory within a host, one ring per local rank across
# hosts).  --compare bf16: float32 buffers sent as they are vs as
# [train] allreduce_precision = bf16 sends a gradient bucket (rounded to
# bfloat16, allreduced in bf16, widened back; bench/allreduce --bf16, the
# conversions timed).  Each with the default integrity tags and with plain
# frames.
#
# Every rank runs on this machine: host A's L ranks (default 2) in one network
# namespace, host B's in another, joined by a veth pair whose two ends each
# send at most RATE (tbf: a full-duplex link of that rate); ranks of one host
# reach each other over that namespace's lo and shared memory, unlimited.
# bench/allreduce --hosts 2 puts the ranks there.  The kernel here has no
# netem, so the link has a rate but no added latency.  Variants are
# alternated ROUNDS times (bench/ab_allreduce.py), medians and ratios.
#   bench/hier_link.sh [--compare hier|bf16] [--rounds R] [--rate 1gbit,10gbit]
#                      [--sizes B,B] [--per-host L] [--build DIR]
# Needs root (ip netns, tc); makes and removes its own namespaces only.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 rates="1gbit,10gbit" per_host=2 sizes="65536,1048576,16777216,67108864" compare=hier
build=${RINGTRAIN_BUILD:-build}
while [ $# -gt 0 ]; do
  case "$1" in
    --compare) compare=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --rate) rates=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --per-host) per_host=$2; shift ;;
    --build) build=$2; shift ;;
    *) echo "usage: bench/hier_link.sh [--compare hier|bf16] [--rounds R] [--rate R,R]" \
            "[--sizes B,B] [--per-host L] [--build DIR]" >&2
       exit 2 ;;
  esac
  shift
done
case "$compare" in
  hier|bf16) ;;
  *) echo "bench/hier_link.sh: --compare is hier or bf16, not '$compare'" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "bench/hier_link.sh: needs root (ip netns, tc)" >&2; exit 2; }
[ -x "$build/bench/allreduce" ] ||
  { echo "bench/hier_link.sh: no $build/bench/allreduce" >&2; exit 2; }
. scripts/netns-link.sh
tag=rtbhl$$
trap 'netns_link_down $tag' EXIT
netns_link_up $tag 10.78.0
ar="$build/bench/allreduce"
hosts="--hosts,$per_host,--host,$tag-a=10.78.0.1,--host,$tag-b=10.78.0.2"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "# $cpu, $(nproc) cores; np = $((2 * per_host)) as 2 hosts x $per_host"
IFS=, read -ra rate_list <<< "$rates"
for rate in "${rate_list[@]}"; do
  netns_link_rate $tag "$rate" || { echo "bench/hier_link.sh: no tbf in this kernel" >&2; exit 2; }
  echo "## link between the hosts: $rate each way"
  if [ "$compare" = bf16 ]; then
    variants=("fp32=$ar,$hosts" "bf16=$ar,$hosts,--bf16" "fp32-plain=$ar,$hosts,--no-integrity"
              "bf16-plain=$ar,$hosts,--no-integrity,--bf16")
  else
    variants=("flat=$ar,$hosts" "hier=$ar,$hosts,--hier,$per_host"
              "flat-plain=$ar,$hosts,--no-integrity"
              "hier-plain=$ar,$hosts,--hier,$per_host,--no-integrity")
  fi
  timeout 1800 python3 bench/ab_allreduce.py "$rounds" $((2 * per_host)) "$sizes" "${variants[@]}"
  # what crossed the link (a run that bypassed it would show nothing)
  for h in a b; do echo "  host $h sent $(netns_link_sent $tag $h) bytes over the link"; done
done
