#!/usr/bin/env bash
# bench/sweep_overhead.sh — what a sweep costs beyond its trials' training:
# a coordinator and one agent (2 slots) on loopback, a sweep of N trials
# (default 200, scheduler random, parallel 2) of a tiny job — one epoch of
# 5 steps of an 8-unit MLP on satimage, each trial mostly process start and
# data loading — and from the coordinator's records:
#   - trials started per second over the sweep;
#   - the coordinator's CPU time per trial (/proc/PID/stat, utime + stime);
#   - the gap between a trial's end and the start of the one that took its
#     slot (median and 95th percentile: the scheduler, the agent's launch,
#     the rank's start);
#   - a bare job's (no sweep) wall time, for scale.
#
#   bench/sweep_overhead.sh [TRIALS]
# Binaries from $RINGTRAIN_BUILD or build/.  A minute or two: not a test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
bin=$build/bin
trials=${1:-200}
data=$root/../shared/data/tabular/satimage.csv.gz
work=$(mktemp -d "${TMPDIR:-/var/tmp}/rt-bench-sweep-XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do { kill -KILL "$p" && wait "$p"; } 2> /dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
ports() { python3 -c 'import socket; s=[socket.socket() for _ in range(2)]; [x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])'; }
"$bin/ringtrain" init-cluster "$work" > /dev/null
read -r cport hport < <(ports)
printf '[coordinator]\nlisten = 127.0.0.1:%s\nhttp_listen = 127.0.0.1:%s\nstate_db = state.db\n' \
  "$cport" "$hport" > "$work/coordinator.conf"
printf '[agent]\ncoordinator = 127.0.0.1:%s\nname = a1\nhost_id = bench\ndata_address = 127.0.0.1\nslots = 2\nallow_root_jobs = true\n' \
  "$cport" > "$work/agent.conf"
"$bin/ringtrain-coordinator" --config "$work/coordinator.conf" > "$work/coordinator.log" 2>&1 &
cpid=$!
pids+=($cpid)
sleep 0.3
"$bin/ringtrain-agent" --config "$work/agent.conf" > "$work/agent.log" 2>&1 &
pids+=($!)
export RINGTRAIN_COORDINATOR=127.0.0.1:$hport RINGTRAIN_CA=$work/ca.crt \
  RINGTRAIN_TOKEN_FILE=$work/admin.token RINGTRAIN_CLI_CONFIG=/nonexistent
for _ in $(seq 100); do "$bin/ringtrain" nodes 2> /dev/null | grep -q ' up ' && break; sleep 0.2; done
"$bin/ringtrain" prep --from "$data" --label classes --test-column is_test --out "$work/ds" --quiet > /dev/null 2>&1
common="[data]
dataset = $work/ds
[model]
architecture = mlp
hidden = 8
threads = 1
[train]
epochs = 1
steps_per_epoch = 5
batch_size = 64
[output]
predict = false"
printf '[job]\nname = bare\nnp = 1\n%s\nstore = %s/bare\n' "$common" "$work" > "$work/bare.ini"
t0=$(date +%s.%N)
"$bin/ringtrain" submit "$work/bare.ini" --follow > /dev/null 2>&1
bare=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
printf '[job]\nname = overhead\ntype = sweep\nnp = 1\n%s\nstore = %s/sweep\n[sweep]\ntrials = %s\nparallel = 2\nscheduler = random\nmax_failed_trials = 0\nspace.train.learning_rate = loguniform(1e-4, 1e-2)\n' \
  "$common" "$work" "$trials" > "$work/sweep.ini"
cpu0=$(awk '{ print $14 + $15 }' /proc/$cpid/stat)
t0=$(date +%s.%N)
"$bin/ringtrain" submit "$work/sweep.ini" --follow > "$work/sweep.out" 2>&1 || { tail "$work/sweep.out"; exit 1; }
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
cpu1=$(awk '{ print $14 + $15 }' /proc/$cpid/stat)
hz=$(getconf CLK_TCK)
"$bin/ringtrain" jobs --json --limit 1000 > "$work/jobs.json"
python3 - "$work/jobs.json" "$trials" "$wall" "$bare" "$(( cpu1 - cpu0 ))" "$hz" <<'PY'
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
n, wall, bare, ticks, hz = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
sweep = [j for j in jobs if j["type"] == "sweep"][0]
trials = sorted((j for j in jobs if j.get("sweep") == sweep["id"] and j.get("trial", 0) > 0), key=lambda j: j["started"])
assert len(trials) == n, f"{len(trials)} trial jobs for {n} trials"
ends = sorted(j["finished"] for j in trials)
gaps = []
for j in trials[2:]:  # each later trial took the slot of the latest end before it
    before = [e for e in ends if e <= j["started"]]
    if before:
        gaps.append(j["started"] - before[-1])
gaps.sort()
span = trials[-1]["started"] - trials[0]["started"]
print(f"{n} trials of a 5-step job (parallel 2, 2 slots) in {wall:.1f} s; a bare job alone {bare:.2f} s (submit to end)")
print(f"trials started per second: {(n - 1) / span:.2f}")
print(f"coordinator CPU per trial: {1000 * ticks / hz / n:.2f} ms ({ticks / hz:.2f} s for the sweep)")
print(f"gap from a trial's end to the next start on its slot: median {1000 * gaps[len(gaps) // 2]:.0f} ms, "
      f"95th percentile {1000 * gaps[int(len(gaps) * 0.95)]:.0f} ms")
PY
