#!/usr/bin/env bash
# Collectives over a real link: two "hosts" in network namespaces of this
# test's own making, joined by a veth pair whose ends each send at most
# 2 Gbit/s (tbf), so that sends meet full socket buffers as they do between
# machines (loopback rarely shows it: a sealed frame re-sealed after EAGAIN
# failed authentication only here).  bench/allreduce --check runs np = 2, 4,
# 6 and 8 as two hosts of np/2 ranks, every result compared exactly, with
# the default integrity tags, encrypted and plain frames, flat and
# hierarchical; sizes cover the small path, one frame per chunk, halving
# (np 4) and the chunked ring.  Needs root and `ip`/`tc`; exit 77 otherwise.
# Usage: test_netns_ring.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: test_netns_ring.sh BUILD_DIR}
ar="$build/bench/allreduce"
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (ip netns)"; exit 77; }
command -v ip > /dev/null && command -v tc > /dev/null || { echo "skip: no ip/tc"; exit 77; }
[ -x "$ar" ] || { echo "FAIL: no $ar"; exit 1; }
. "$(dirname "$0")/../scripts/netns-link.sh"
tag=rtnr$$
trap 'netns_link_down $tag' EXIT
netns_link_up $tag 10.79.0 2> /dev/null || { echo "skip: cannot make network namespaces"; exit 77; }
netns_link_rate $tag 2gbit || echo "note: no tbf here: the link runs at veth speed"

fails=0 runs=0
check() { # np, then options for bench/allreduce
  local np=$1
  shift
  local out
  runs=$((runs + 1))
  if out=$(timeout 120 "$ar" --np "$np" --hosts $((np / 2)) --host $tag-a=10.79.0.1 \
             --host $tag-b=10.79.0.2 --check --iters 15 --bytes 4096 --bytes 65536 \
             --bytes 262144 --bytes 4194304 "$@" 2>&1); then
    echo "ok: np $np $*"
  else
    fails=$((fails + 1))
    echo "FAIL: np $np $*: $(echo "$out" | grep -v '^ ' | tail -3)"
  fi
}
check 2
check 2 --encrypt
check 2 --no-integrity
check 4
check 4 --hier 2
check 4 --encrypt --hier 2
check 6
check 6 --hier 3 --no-integrity
check 8
check 8 --hier 4
check 8 --encrypt
# the link carried the cross-host traffic (a run that bypassed it shows 0)
sent=$(netns_link_sent $tag a)
echo "host a sent ${sent:-?} bytes over the link"
if [ "${sent:-0}" -lt 100000000 ]; then
  echo "FAIL: less than 100 MB crossed the link between the hosts"
  fails=$((fails + 1))
fi
[ $fails -eq 0 ] || { echo "FAIL: $fails of $runs runs"; exit 1; }
echo "ok: $runs runs over a 2 Gbit/s link between network namespaces"
