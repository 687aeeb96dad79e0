# netns-link.sh — sourced by tests/test_netns_ring.sh and bench/hier_link.sh:
# two "hosts" on this machine, network namespaces TAG-a and TAG-b joined by a
# veth pair (TAG-ea in TAG-a, TAG-eb in TAG-b), lo up in both.  Only the
# namespaces and links named by TAG are made or removed.
#   netns_link_up TAG NET      NET.1 on TAG-a's end, NET.2 on TAG-b's (/24)
#   netns_link_rate TAG RATE   each end sends at most RATE (tbf, e.g. 2gbit);
#                              fails where the kernel has no tbf
#   netns_link_sent TAG H      bytes host H (a or b) has sent over the link
#   netns_link_down TAG
# and several "hosts" on one bridge (tests/test_installed.sh, test_slurm_cluster.sh):
#   netns_bridge_up TAG NET HOST...   namespaces TAG-HOST joined by a bridge in
#                                     TAG-sw (made here unless it exists); the
#                                     k-th HOST gets NET.k/24 on its eth0, lo up
#   netns_bridge_down TAG HOST...     kills what runs in them, removes them and TAG-sw

netns_link_up() {
  local tag=$1 net=$2
  ip netns add "$tag-a" || return 1
  ip netns add "$tag-b" || return 1
  ip link add "$tag-ea" netns "$tag-a" type veth peer name "$tag-eb" netns "$tag-b" || return 1
  ip -n "$tag-a" addr add "$net.1/24" dev "$tag-ea"
  ip -n "$tag-b" addr add "$net.2/24" dev "$tag-eb"
  local h
  for h in a b; do
    ip -n "$tag-$h" link set lo up
    ip -n "$tag-$h" link set "$tag-e$h" up
  done
}

netns_link_rate() {
  local tag=$1 rate=$2 h
  for h in a b; do
    ip netns exec "$tag-$h" tc qdisc replace dev "$tag-e$h" root tbf rate "$rate" burst 256kb \
      latency 50ms 2> /dev/null || return 1
  done
}

netns_link_sent() {
  ip netns exec "$1-$2" tc -s qdisc show dev "$1-e$2" | awk '/Sent/{print $2; exit}'
}

netns_link_down() {
  ip netns del "$1-a" 2> /dev/null || true
  ip netns del "$1-b" 2> /dev/null || true
}

netns_bridge_up() {
  local tag=$1 net=$2 i=1 h
  shift 2
  ip netns add "$tag-sw" 2> /dev/null # may exist: the caller's check that it can
  ip -n "$tag-sw" link add br0 type bridge || return 1
  ip -n "$tag-sw" link set br0 up
  for h in "$@"; do
    ip netns add "$tag-$h" || return 1
    ip link add "$tag-$h-e" netns "$tag-$h" type veth peer name "p$h" netns "$tag-sw" || return 1
    ip -n "$tag-sw" link set "p$h" master br0 up
    ip -n "$tag-$h" link set "$tag-$h-e" name eth0 # as on a real host
    ip -n "$tag-$h" addr add "$net.$i/24" dev eth0
    ip -n "$tag-$h" link set eth0 up
    ip -n "$tag-$h" link set lo up
    i=$((i + 1))
  done
}

netns_bridge_down() {
  local tag=$1 h p
  shift
  for h in "$@"; do
    for p in $(ip netns pids "$tag-$h" 2> /dev/null); do kill -KILL "$p" 2> /dev/null || true; done
    ip netns del "$tag-$h" 2> /dev/null || true
  done
  ip netns del "$tag-sw" 2> /dev/null || true
}
