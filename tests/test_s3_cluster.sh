#!/usr/bin/env bash
# Object storage on a cluster of hosts with no folder in common (issue 46's
# acceptance): three "hosts" in network namespaces of this test's making on
# one bridge — c (coordinator, the S3 server, the CLI), a1 and a2 (an agent
# each, one slot, their own work and log folders).  The Rossmann example's
# data is prepped straight into S3; a job of 2 ranks, one per host, reads
# it from S3 and keeps its store in S3.  In the middle of training the agent
# of rank 0 is SIGKILLed: the job restarts on the other host (min_np 1),
# resumes from the newest complete checkpoint in S3 (each epoch once in the
# history), finishes, and its predictions land in S3.  The job names no
# endpoint (its submitter has none in the environment): the ranks reach the
# server through their agents' agent.conf [s3].  Needs root and `ip`; exit 77
# otherwise.
# Usage: test_s3_cluster.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: test_s3_cluster.sh BUILD_DIR}
bin=$build/bin
src=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (ip netns)"; exit 77; }
command -v ip > /dev/null || { echo "skip: no ip"; exit 77; }
. "$src/scripts/netns-link.sh"
tag=rts3$$
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-s3-cluster-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  ip netns exec $tag-c "$src/scripts/s3-server.sh" stop "$work/s3" 2> /dev/null || true
  netns_bridge_down $tag c a1 a2 2> /dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $f"; tail -15 "$f"; done
  exit 1
}
netns_bridge_up $tag 10.76.0 c a1 a2 2> /dev/null || { echo "skip: cannot make network namespaces"; exit 77; }

# ---- the S3 server on c; the CLI's settings and credentials -------------------------------
ip netns exec $tag-c "$src/scripts/s3-server.sh" start "$work/s3" --address 10.76.0.1 > /dev/null ||
  fail "the S3 server did not start"
# shellcheck disable=SC1091
. "$work/s3/env"
objects=$work/s3/data/ringtrain

# ---- the cluster: coordinator on c, an agent on a1 and on a2, nothing shared -------------
"$bin/ringtrain" init-cluster "$work/c" --san 10.76.0.1 > /dev/null
cat > "$work/c/coordinator.conf" <<EOF
[coordinator]
listen = 10.76.0.1:7070
http_listen = 10.76.0.1:7071
cert = coordinator.crt
key = coordinator.key
token_file = token
admin_token_file = admin.token
state_db = state.db
heartbeat_interval = 1s
heartbeat_timeout = 5s
EOF
for h in a1 a2; do
  n=$([ $h = a1 ] && echo 2 || echo 3)
  mkdir -p "$work/$h"
  cp "$work/c/ca.crt" "$work/c/token" "$work/$h/"
  cat > "$work/$h/agent.conf" <<EOF
[agent]
coordinator = 10.76.0.1:7070
ca = ca.crt
token_file = token
name = $h
host_id = node-$h
data_address = 10.76.0.$n
slots = 1
work_dir = work
log_dir = logs
reconnect_max = 1s
allow_root_jobs = true
[s3]
endpoint = $AWS_ENDPOINT_URL
addressing = path
EOF
done
ip netns exec $tag-c timeout 600 "$bin/ringtrain-coordinator" --config "$work/c/coordinator.conf" \
  > "$work/coordinator.log" 2>&1 &
pids+=($!)
sleep 0.5
start_agent() {
  ip netns exec $tag-$1 env -u AWS_ENDPOINT_URL timeout 600 "$bin/ringtrain-agent" \
    --config "$work/$1/agent.conf" \
    > "$work/agent-$1.log" 2>&1 &
  pids+=($!)
}
start_agent a1
start_agent a2
cli() {
  ip netns exec $tag-c env -u AWS_ENDPOINT_URL RINGTRAIN_COORDINATOR=10.76.0.1:7071 \
    RINGTRAIN_CA="$work/c/ca.crt" \
    RINGTRAIN_TOKEN_FILE="$work/c/admin.token" RINGTRAIN_CLI_CONFIG=/nonexistent \
    timeout 120 "$bin/ringtrain" "$@"
}
for _ in $(seq 100); do
  [ "$(cli nodes 2> /dev/null | grep -c ' up ')" -ge 2 ] && break
  sleep 0.2
done
[ "$(cli nodes 2> /dev/null | grep -c ' up ')" -ge 2 ] || fail "the two agents did not come up"

# ---- the Rossmann data, prepped straight into S3 -------------------------------------------
"$build/examples/rossmann/rossmann-gen" --out "$work/data" --stores 6 --quiet
ip netns exec $tag-c "$bin/ringtrain" prep --input "$work/data" --sql "$src/examples/rossmann/prep.sql" \
  --out s3://ringtrain/rossmann/ds --partitions 2 --quiet > "$work/prep.log" 2>&1 ||
  fail "prep into S3"
rm -rf "$work/data"
[ -f "$objects/rossmann/ds/manifest.json._S3rver_object" ] || fail "no manifest in S3"

cat > "$work/job.ini" <<EOF
[job]
name = s3-cluster
np = 2
min_np = 1
max_restarts = 2
[data]
dataset = s3://ringtrain/rossmann/ds
[model]
hidden = 500, 250
threads = 1
[train]
batch_size = 64
epochs = 8
steps_per_epoch = 80
[output]
store = s3://ringtrain/rossmann/store
EOF
hist=$objects/rossmann/store/history.jsonl._S3rver_object
cli submit "$work/job.ini" > "$work/submit.log" 2>&1 || fail "the job was not submitted"
# ---- rank 0's agent SIGKILLed once the store in S3 holds 2 epochs ---------------------------
for _ in $(seq 600); do
  [ -f "$hist" ] && [ "$(grep -c . "$hist")" -ge 2 ] && break
  sleep 0.1
done
[ -f "$hist" ] && [ "$(grep -c . "$hist")" -ge 2 ] || fail "the job wrote no 2 epochs to S3"
victim=""
for h in a1 a2; do
  ls "$work/$h"/logs/job-1/attempt-1/rank-0.log > /dev/null 2>&1 && victim=$h
done
[ -n "$victim" ] || fail "no host ran rank 0"
other=$([ $victim = a1 ] && echo a2 || echo a1)
done_before=$(grep -c . "$hist")
for p in $(ip netns pids $tag-$victim); do # the agent itself (not the timeout above it)
  [ "$(cat /proc/$p/comm 2> /dev/null)" = ringtrain-agent ] && kill -KILL "$p"
done
echo "SIGKILLed the agent of rank 0 on $victim after $done_before epochs in S3"
# ---- the job finishes on the other host, from the checkpoint in S3 -------------------------
state=""
for _ in $(seq 1200); do
  state=$(cli jobs 2> /dev/null | awk '$1 == 1 {print $4}')
  case "$state" in succeeded | failed | cancelled) break ;; esac
  sleep 0.1
done
[ "$state" = succeeded ] || { cli status 1 > "$work/status.log" 2>&1 || true; fail "job 1 is $state"; }
ls "$work/$other"/logs/job-1/attempt-2/rank-0.log > /dev/null 2>&1 ||
  fail "attempt 2's rank 0 did not run on $other"
[ -d "$work/$victim/logs/job-1/attempt-2" ] && fail "attempt 2 ran on the killed host $victim"
python3 - "$hist" "$done_before" <<'PY' || fail "the history in S3 does not show one run resumed"
import json, sys
ep = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
epochs = [e["epoch"] for e in ep]
attempts = [e["attempt"] for e in ep]
print("history in S3: epochs", epochs, "attempts", attempts)
# every epoch once, 1..8; attempt 2 went on from a checkpoint of attempt 1's (the last
# one complete in S3: the epoch it was killed in, or the one before), not from epoch 1
first2 = attempts.index(2) + 1 if 2 in attempts else 0
ok = epochs == list(range(1, 9)) and attempts[0] == 1 and attempts[-1] == 2 and \
     2 <= first2 <= int(sys.argv[2]) + 1
sys.exit(0 if ok else 1)
PY
for f in last.ckpt best.ckpt submission.csv; do
  [ -s "$objects/rossmann/store/$f._S3rver_object" ] || fail "no $f in the S3 store"
done
rows=$(($(wc -l < "$objects/rossmann/store/submission.csv._S3rver_object") - 1))
[ "$rows" -gt 0 ] || fail "the predictions in S3 are empty"
echo "resumed on $other from the checkpoint in S3; $rows predictions in s3://ringtrain/rossmann/store"
echo "PASS"
