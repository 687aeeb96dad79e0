#!/usr/bin/env bash
# The installed system, as the README's "A cluster" section sets it up:
#   - `cmake --install` into a staging root (the programs at /usr/local/...);
#   - the `ringtrain` and `ringtrain-coordinator` users made by the
#     project's own sysusers snippet;
#   - the cluster material from `ringtrain init-cluster`, installed with the
#     README's owners and modes (/etc/ringtrain 0750 root:ringtrain, the
#     agents' token 0640 root:ringtrain, the coordinator's key and admin
#     token 0640 root:ringtrain-coordinator, which the agents' user cannot
#     read), configurations from the installed *.conf.example with
#     only the addresses changed; the agents' /etc/ringtrain holds the CA and
#     the agents' token only, which the API refuses;
#   - a coordinator and two agents (one slot each), each in its own network
#     namespace joined by a bridge (three hosts: 10.77.0.1-3), each run as
#     `ringtrain` inside bubblewrap reproducing the unit's view: read-only /,
#     writable only its StateDirectory and LogsDirectory (STATE_DIRECTORY /
#     LOGS_DIRECTORY set as systemd sets them) and the shared store, a
#     private /tmp; the agents with the unit's four capabilities (ambient,
#     and the bounding set) and the example's job_uids: every job's ranks run
#     as a uid of their own;
#   - a training job (np 2: one rank per host, a real ring between hosts) and
#     an exec job succeed, and the files land where the README says;
#   - after the agents restart with two slots each, a training job of np 4
#     (two hosts of two ranks) runs the hierarchical allreduce: shared memory
#     within each host's sandbox, TCP across the bridge;
#   - a PyTorch DDP program written for torchrun (gloo, env://) runs unchanged
#     on the two hosts and its parameters equal a one-host launch with
#     torchrun's variables; when its rank 1 fails the job names it, and with
#     --max-restarts 1 the second attempt sees TORCHELASTIC_RESTART_COUNT=1;
#   - two jobs on one agent, one of them an attacker: it cannot read the
#     other's rendezvous file (key), work folder or logs, list the jobs'
#     folders, signal the other's rank, read the agent's token, nor plant a
#     link the agent follows; a token made --unix-user runs its job as that
#     Unix user.
#     (Debian's torchrun 1.13 itself does not start under Python 3.11 — its
#     Std.from_str returns None — so the one-host reference sets the same
#     variables by hand.)
# The agents get host_id set explicitly: on one machine they would otherwise
# share the machine id.  Needs root, bubblewrap, `ip netns`; exit 77 otherwise.
# Usage: test_installed.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/scripts/netns-link.sh"
skip() { echo "skipping: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (users, namespaces)"
for t in bwrap ip setpriv systemd-sysusers; do
  command -v $t > /dev/null || skip "needs $t (scripts/install-deps.sh installs bubblewrap)"
done
tag=rt$$
ip netns add $tag-sw 2> /dev/null || skip "cannot create network namespaces here"
work=$(mktemp -d /tmp/rt-installed-XXXXXX)
chmod 755 "$work"
pids=()
made=()
cleanup() {
  netns_bridge_down $tag c a1 a2
  for d in "${made[@]}"; do rmdir "$d" 2> /dev/null || true; done
  userdel $tag-alice 2> /dev/null || true
  userdel $tag-inrange 2> /dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }

# ---- install ------------------------------------------------------------------
stage=$work/root
DESTDIR=$stage cmake --install "$build" --prefix /usr/local > "$work/install.log"
systemd-sysusers "$stage/usr/local/lib/sysusers.d/ringtrain.conf"
id ringtrain > /dev/null && id ringtrain-coordinator > /dev/null ||
  fail "the sysusers snippet made no ringtrain or ringtrain-coordinator user"
bin=$stage/usr/local/bin

# ---- cluster material, as the README installs it --------------------------------
"$bin/ringtrain" init-cluster "$work/material" --san 10.77.0.1 > /dev/null
etc=$work/etc-ringtrain
install -d -m 0750 -o root -g ringtrain "$etc"        # ringtrain.tmpfiles.conf
install -m 0644 -o root -g ringtrain "$work/material/ca.crt" "$work/material/coordinator.crt" "$etc/"
install -m 0640 -o root -g ringtrain "$work/material/token" "$etc/"
install -m 0640 -o root -g ringtrain-coordinator "$work/material/coordinator.key" \
  "$work/material/admin.token" "$etc/"
# the agents' user (and so an agent on the coordinator's node) cannot read them
if setpriv --reuid=ringtrain --regid=ringtrain --init-groups cat "$etc/admin.token" > /dev/null 2>&1 ||
  setpriv --reuid=ringtrain --regid=ringtrain --init-groups cat "$etc/coordinator.key" > /dev/null 2>&1; then
  fail "user ringtrain can read the coordinator's admin token or key"
fi
# an agent's node holds the CA and the agents' token only: no API credential
etc_agent=$work/etc-ringtrain-agent
install -d -m 0750 -o root -g ringtrain "$etc_agent"
install -m 0644 -o root -g ringtrain "$work/material/ca.crt" "$etc_agent/"
install -m 0640 -o root -g ringtrain "$work/material/token" "$etc_agent/"
doc=$stage/usr/local/share/doc/ringtrain
sed -e 's/^listen = .*/listen = 10.77.0.1:7070/' -e 's/^http_listen = .*/http_listen = 10.77.0.1:7071/' \
  "$doc/coordinator.conf.example" > "$etc/coordinator.conf"
for a in a1 a2; do
  sed -e 's/^coordinator = .*/coordinator = 10.77.0.1:7070/' -e 's/^slots = .*/slots = 1/' \
    "$doc/agent.conf.example" > "$etc_agent/agent-$a.conf"
  echo "host_id = node-$a" >> "$etc_agent/agent-$a.conf"
done
chmod 0644 "$etc"/*.conf "$etc_agent"/*.conf

# ---- three hosts on one bridge (each's interface eth0: GLOO_SOCKET_IFNAME below) ----
netns_bridge_up $tag 10.77.0 c a1 a2 || fail "cannot make the hosts' namespaces"

# ---- the data every node reads, the store they write (README: /shared/...) -------
shared=$work/shared
mkdir -p "$shared/rossmann"
"$build/examples/rossmann/rossmann-gen" --out "$work/data" --stores 6 --quiet
"$bin/ringtrain" prep --input "$work/data" --sql "$src/examples/rossmann/prep.sql" \
  --out "$shared/rossmann/dataset" --partitions 4 --quiet > /dev/null # np 2 and np 4
chmod -R a+rX "$shared"
# the jobs write their stores as their own uids: a folder every job may write
# in but not replace another's files in (as /tmp), as the README says
chmod 1777 "$shared/rossmann"

# ---- the daemons, as the units run them --------------------------------------------
# the mount points the unit's view needs (a real install has them: tmpfiles
# makes /etc/ringtrain, systemd the State/Logs directories); made here only
# when missing, and removed again
for d in /etc/ringtrain /var/lib/ringtrain /var/lib/ringtrain-coordinator /var/log/ringtrain /shared; do
  if [ ! -d "$d" ]; then mkdir -p "$d"; made=("$d" "${made[@]}"); fi
done
# run_as_unit HOST NAME ETC CMD...: in HOST's namespace, as ringtrain, in the
# unit's view, with ETC as its /etc/ringtrain
run_as_unit() {
  local host=$1 name=$2 unit_etc=$3
  shift 3
  local state=$work/$name/state logs=$work/$name/logs user=ringtrain statedir=/var/lib/ringtrain
  [ "$name" = coordinator ] && user=ringtrain-coordinator statedir=/var/lib/ringtrain-coordinator
  mkdir -p "$state" "$logs"
  chown $user:$user "$state" "$logs"
  # the coordinator as ringtrain, no capability; an agent as ringtrain with
  # the unit's CapabilityBoundingSet and AmbientCapabilities (bwrap, which
  # refuses to run with capabilities as another user, runs as root and
  # setpriv inside it becomes the service user)
  local outer=(setpriv --reuid=ringtrain-coordinator --regid=ringtrain-coordinator
    --groups=ringtrain) inner=()
  if [ "$name" != coordinator ]; then
    local caps=+setuid,+setgid,+chown,+kill
    outer=()
    inner=(setpriv --reuid=ringtrain --regid=ringtrain --init-groups --inh-caps=-all,$caps
      --ambient-caps=-all,$caps --bounding-set=-all,$caps --no-new-privs)
  fi
  ip netns exec $tag-$host "${outer[@]}" \
    bwrap --ro-bind / / --dev /dev --perms 1777 --tmpfs /dev/shm --proc /proc \
      --perms 1777 --tmpfs /tmp \
      --ro-bind "$stage/usr/local/bin" /usr/local/bin \
      --ro-bind "$stage/usr/local/lib" /usr/local/lib \
      --ro-bind "$unit_etc" /etc/ringtrain \
      --bind "$state" $statedir --bind "$logs" /var/log/ringtrain \
      --bind "$shared" /shared \
      --setenv STATE_DIRECTORY $statedir --setenv LOGS_DIRECTORY /var/log/ringtrain \
      --chdir $statedir --die-with-parent \
      "${inner[@]}" "$@" > "$work/$name.log" 2>&1 &
  pids+=($!)
  disown $!
}
run_as_unit c coordinator "$etc" /usr/local/bin/ringtrain-coordinator --config /etc/ringtrain/coordinator.conf
sleep 1
run_as_unit a1 agent-a1 "$etc_agent" /usr/local/bin/ringtrain-agent --config /etc/ringtrain/agent-a1.conf
run_as_unit a2 agent-a2 "$etc_agent" /usr/local/bin/ringtrain-agent --config /etc/ringtrain/agent-a2.conf

# ---- the CLI, from the coordinator's host ------------------------------------------
cli() {
  ip netns exec $tag-c env RINGTRAIN_COORDINATOR=10.77.0.1:7071 RINGTRAIN_CA="$etc/ca.crt" \
    RINGTRAIN_TOKEN_FILE="${CLI_TOKEN:-$etc/admin.token}" RINGTRAIN_CLI_CONFIG=/nonexistent \
    timeout "${CLI_TIMEOUT:-120}" "$bin/ringtrain" "$@"
}
for _ in $(seq 100); do
  [ "$(cli nodes 2> /dev/null | grep -c ' up ')" -ge 2 ] && break
  sleep 0.2
done
cli nodes > "$work/nodes.txt" 2>&1 || true
# what a node holds is no API credential
if out=$(CLI_TOKEN=$etc_agent/token cli jobs 2>&1); then fail "the API took the agents' token"; fi
grep -q "agents' registration token" <<< "$out" || fail "refusing the agents' token, the API said: $out"
[ "$(grep -c ' up ' "$work/nodes.txt")" -ge 2 ] || { cat "$work/nodes.txt"; fail "the two agents did not come up"; }
# each node names ringtrain's GEMM kernel and the OpenBLAS kernels its ranks get
[ "$(grep -cE ' gemm:(avx512|avx2|scalar) blas:[A-Za-z0-9_>-]+( limits:[a-z,]+)?$' "$work/nodes.txt")" -ge 2 ] ||
  { cat "$work/nodes.txt"; fail "ringtrain nodes does not show the GEMM and BLAS kernels"; }

cat > "$work/job.ini" <<EOF
[job]
name = installed
type = train
np = 2
[data]
dataset = /shared/rossmann/dataset
[model]
architecture = resnet
blocks = 1
width = 16
embedding_dim = 4
sync_batch_norm = true
[train]
batch_size = 64
epochs = 1
steps_per_epoch = 20
[output]
store = /shared/rossmann/store
EOF
cli submit "$work/job.ini" --follow > "$work/train.out" 2>&1 || { cat "$work/train.out"; fail "the training job failed"; }
for f in history.jsonl best.ckpt submission.csv; do
  [ -s "$shared/rossmann/store/$f" ] || fail "the store has no $f"
done
# written by the job's own uid (job 1: the first of job_uids + 1), not ringtrain
[ "$(stat -c %u "$shared/rossmann/store/best.ckpt")" = 1900000001 ] ||
  fail "the checkpoint is uid $(stat -c %u "$shared/rossmann/store/best.ckpt")'s, not job 1's uid 1900000001"
# the checkpoint carries the network: a ResNet whose batch norm spanned both hosts
summary=$("$bin/ringtrain" model summary "$shared/rossmann/store/best.ckpt" 2>&1) ||
  { echo "$summary"; fail "ringtrain model summary of the job's checkpoint failed"; }
grep -q "^architecture resnet" <<< "$summary" && grep -q "^block_1/norm  *BatchNorm" <<< "$summary" ||
  { echo "$summary"; fail "the checkpoint does not hold the ResNet the job asked for"; }
grep -q "synchronized batch norm" "$work"/agent-a1/logs/job-1/attempt-1/rank-*.log "$work"/agent-a2/logs/job-1/attempt-1/rank-*.log ||
  fail "the ranks did not say they synchronize batch norm"
# one rank on each host: the ring crossed the bridge
ls "$work"/agent-a1/logs/job-1/attempt-1/rank-*.log "$work"/agent-a2/logs/job-1/attempt-1/rank-*.log \
  > /dev/null 2>&1 || fail "the ranks did not run one per host (logs in each agent's LogsDirectory)"
[ -d "$work/agent-a1/state/work" ] || fail "the agent's work folder is not in its StateDirectory"
[ -f "$work/coordinator/state/state.db" ] || fail "the coordinator's state.db is not in its StateDirectory"

out=$(cd / && cli exec --np 2 -- /bin/sh -c 'echo "rank $RT_RANK of $RT_SIZE as $(id -u):$(id -g) caps $(grep CapEff /proc/self/status | cut -f2)"') ||
  { echo "$out"; fail "the exec job failed"; }
echo "$out"
# job 2: uid and gid 1900000002 on both hosts, no capability left
grep -q "\[0\] rank 0 of 2 as 1900000002:1900000002 caps 0000000000000000" <<< "$out" &&
  grep -q "\[1\] rank 1 of 2 as 1900000002:1900000002 caps 0000000000000000" <<< "$out" ||
  fail "the exec job's ranks did not run as the job's uid without capabilities"
grep -q "each job runs as a uid of its own (job_uids 1900000000-1900999999" "$work/agent-a1.log" ||
  fail "the agent did not say it runs jobs as uids of their own"
# a rank cannot read the agent's token
out=$(cd / && cli exec --np 2 -- /bin/sh -c 'echo "token bytes: $(cat /etc/ringtrain/token 2> /dev/null | wc -c)"') ||
  { echo "$out"; fail "the exec job reading the token file failed"; }
[ "$(grep -c 'token bytes: 0' <<< "$out")" -eq 2 ] || { echo "$out"; fail "a rank could read the agent's token"; }
grep -qE "ranks (see an empty|cannot read) /etc/ringtrain/token" "$work/agent-a1.log" ||
  fail "the agent did not say its ranks cannot read the token"
# a second agent on host a1 whose job_uids overlap a1's would run other jobs
# as the same uids: another cluster's with the same range, this cluster's with
# another range — each refuses to start, naming the range it met
"$bin/ringtrain" init-cluster "$work/material-other" --san 10.77.0.9 > /dev/null
etc_other=$work/etc-ringtrain-other
install -d -m 0750 -o root -g ringtrain "$etc_other"
install -m 0644 -o root -g ringtrain "$work/material-other/ca.crt" "$etc_other/"
install -m 0640 -o root -g ringtrain "$work/material-other/token" "$etc_other/"
sed -e 's/^host_id = .*/host_id = node-other/' "$etc_agent/agent-a1.conf" > "$etc_other/agent-other.conf"
sed -e 's/^job_uids = .*/job_uids = 1900500000-1901499999/' -e 's/^host_id = .*/host_id = node-shifted/' \
  "$etc_agent/agent-a1.conf" > "$etc_agent/agent-shifted.conf"
chmod 0644 "$etc_other/agent-other.conf" "$etc_agent/agent-shifted.conf"
# one after the other: started together, each could meet the other's claim
# first (both refuse, rightly, but each would name the other's range)
run_as_unit a1 agent-other "$etc_other" /usr/local/bin/ringtrain-agent --config /etc/ringtrain/agent-other.conf
await_refusal() {
  for _ in $(seq 100); do
    grep -q "overlaps 1900000000-1900999999" "$work/$1.log" 2> /dev/null &&
      ! pgrep -f -- "--config /etc/ringtrain/$1.conf" > /dev/null && return 0
    sleep 0.1
  done
}
await_refusal agent-other
run_as_unit a1 agent-shifted "$etc_agent" /usr/local/bin/ringtrain-agent --config /etc/ringtrain/agent-shifted.conf
await_refusal agent-shifted
grep -q "job_uids 1900000000-1900999999 overlaps 1900000000-1900999999, the range of another ringtrain-agent on this host (another cluster's)" \
  "$work/agent-other.log" || fail "another cluster's agent with the same job_uids started on host a1"
grep -q "job_uids 1900500000-1901499999 overlaps 1900000000-1900999999, the range of another ringtrain-agent on this host (this cluster's)" \
  "$work/agent-shifted.log" || fail "an agent of this cluster with an overlapping range started on host a1"
# while this cluster's agent with the same range starts beside it (pointed at
# a port where nothing listens, so that it never joins; stopped once it is up)
sed -e 's/^coordinator = .*/coordinator = 10.77.0.1:1/' -e 's/^host_id = .*/host_id = node-twin/' \
  "$etc_agent/agent-a1.conf" > "$etc_agent/agent-twin.conf"
chmod 0644 "$etc_agent/agent-twin.conf"
run_as_unit a1 agent-twin "$etc_agent" /usr/local/bin/ringtrain-agent --config /etc/ringtrain/agent-twin.conf
for _ in $(seq 100); do
  grep -q "each job runs as a uid of its own (job_uids 1900000000-1900999999" "$work/agent-twin.log" 2> /dev/null && break
  sleep 0.1
done
grep -q "each job runs as a uid of its own (job_uids 1900000000-1900999999" "$work/agent-twin.log" ||
  fail "an agent of this cluster with the same job_uids did not start beside a1's"
pkill -TERM -f -- "--config /etc/ringtrain/agent-twin.conf" || true
for _ in $(seq 100); do pgrep -f -- "--config /etc/ringtrain/agent-twin.conf" > /dev/null || break; sleep 0.1; done
echo "job_uids: agents on one host whose ranges overlap refuse to start (another cluster's, another range); this cluster's with the same range starts"
# the unit's sandbox gives the agents no cgroup to write: a job with a memory limit is
# refused, saying why, rather than run without it
if out=$(cd / && cli exec --np 1 --memory-limit 256M -- /bin/true 2>&1); then
  fail "a job with memory_limit ran on agents that cannot enforce it"
fi
grep -q "with memory_limit, but the agents that can enforce it have 0 slots" <<< "$out" ||
  { echo "$out"; fail "refusing memory_limit, the CLI said: $out"; }

# ---- a torchrun program, unchanged ---------------------------------------------------
py=/usr/bin/python3
"$py" -c "import torch.distributed as d; assert d.is_gloo_available()" 2> /dev/null ||
  fail "no PyTorch with gloo at $py (scripts/install-deps.sh installs python3-torch)"
install -m 0644 "$src/tests/ddp_check.py" "$shared/ddp_check.py"
CLI_TIMEOUT=180
ddp=$(cd / && cli exec --np 2 --env GLOO_SOCKET_IFNAME=eth0 -- "$py" /shared/ddp_check.py 2>&1) ||
  { echo "$ddp"; fail "the DDP job failed"; }
echo "$ddp" | grep -v '^\[.\] \[agent\]'
sums=$(grep -o 'checksum .*' <<< "$ddp" | sort -u)
[ "$(grep -c 'checksum' <<< "$ddp")" -eq 2 ] && [ "$(wc -l <<< "$sums")" -eq 1 ] ||
  fail "the two ranks' parameters differ: $sums"
grep -q '\[0\] rank 0 of 2, local rank 0, restart count 0' <<< "$ddp" ||
  fail "rank 0 did not get torchrun's variables"
# the reference: one host, torchrun's variables by hand, loopback
refs=()
for r in 0 1; do
  GLOO_SOCKET_IFNAME=lo RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$((20000 + $$ % 20000)) timeout 120 "$py" "$src/tests/ddp_check.py" > "$work/ref-$r.out" 2>&1 &
  refs+=($!)
done
for p in "${refs[@]}"; do wait "$p" || { cat "$work"/ref-*.out; fail "the one-host reference run failed"; }; done
ref=$(grep -ho 'checksum .*' "$work"/ref-*.out | sort -u)
"$py" - "$sums" "$ref" <<'PY' || fail "ringtrain's DDP parameters ($sums) differ from the one-host run ($ref)"
import sys
a = [float(x) for x in sys.argv[1].split()[1:]]
b = [float(x) for x in sys.argv[2].split()[1:]]
sys.exit(0 if len(a) == len(b) == 2 and all(abs(x - y) <= 1e-5 * max(1, abs(y)) for x, y in zip(a, b)) else 1)
PY
# rank 1 fails: the job names it and its code; a restart gets RESTART_COUNT=1
if out=$(cd / && cli exec --np 2 -x GLOO_SOCKET_IFNAME=eth0 -- "$py" /shared/ddp_check.py --fail-rank 1 --code 7 2>&1); then
  echo "$out"; fail "a DDP job whose rank 1 exits 7 succeeded"
fi
grep -q 'rank 1 on host .* exited with code 7' <<< "$out" || { echo "$out"; fail "the failure does not name rank 1 and code 7"; }
out=$(cd / && cli exec --np 2 --max-restarts 1 -x GLOO_SOCKET_IFNAME=eth0 -- "$py" /shared/ddp_check.py --fail-rank 1 --code 7 2>&1) ||
  { echo "$out"; fail "the restarted DDP job failed"; }
grep -q '\[1\] rank 1 of 2, local rank 0, restart count 1' <<< "$out" || { echo "$out"; fail "attempt 2 did not see TORCHELASTIC_RESTART_COUNT=1"; }
# ---- two ranks per host: the hierarchical allreduce ----------------------------------
# the agents restarted with two slots each, as after an edit of agent.conf: four ranks
# are two hosts of two, and the ranks build a shared-memory ring on each host (in the
# unit's sandbox, as ringtrain) and a ring per local rank across the bridge
# (this test's agents only: those in its namespaces, not any other ringtrain-agent here)
agent_pids() {
  for h in a1 a2; do
    for p in $(ip netns pids $tag-$h 2> /dev/null); do
      [ "$(cat /proc/$p/comm 2> /dev/null)" = ringtrain-agent ] && echo "$p"
    done
  done
}
[ -n "$(agent_pids)" ] || fail "no ringtrain-agent runs in the test's namespaces"
kill -TERM $(agent_pids) 2> /dev/null || true
for _ in $(seq 100); do [ -z "$(agent_pids)" ] && break; sleep 0.1; done
[ -n "$(agent_pids)" ] && fail "the agents did not stop on SIGTERM"
sed -i 's/^slots = .*/slots = 2/' "$etc_agent"/agent-a1.conf "$etc_agent"/agent-a2.conf
run_as_unit a1 agent-a1 "$etc_agent" /usr/local/bin/ringtrain-agent --config /etc/ringtrain/agent-a1.conf
run_as_unit a2 agent-a2 "$etc_agent" /usr/local/bin/ringtrain-agent --config /etc/ringtrain/agent-a2.conf
for _ in $(seq 100); do
  [ "$(cli nodes 2> /dev/null | awk '$3 == "up" && $4 == 2' | wc -l)" -ge 2 ] && break
  sleep 0.2
done
[ "$(cli nodes 2> /dev/null | awk '$3 == "up" && $4 == 2' | wc -l)" -ge 2 ] ||
  { cli nodes; fail "the agents did not come back with two slots each"; }
cli submit "$work/job.ini" --np 4 --set output.store=/shared/rossmann/store-hier --follow \
  > "$work/train-hier.out" 2>&1 || { cat "$work/train-hier.out"; fail "the training job on 2 x 2 ranks failed"; }
[ -s "$shared/rossmann/store-hier/submission.csv" ] || fail "the 2 x 2 job wrote no submission.csv"
grep -rqs "hierarchical allreduce: 2 hosts x 2 ranks (shm within a host, tcp across hosts)" \
  "$work"/agent-a1/logs/job-*/attempt-1/rank-0.log ||
  { tail -n 5 "$work"/agent-a1/logs/job-*/attempt-1/rank-0.log; fail "rank 0 of the 2 x 2 job did not allreduce hierarchically"; }

# ---- two jobs on one agent: neither reaches the other --------------------------------
cli drain "node-a2/$(hostname)" > /dev/null || fail "cannot drain agent a2"
(cd / && cli exec --np 1 --name victim -- /bin/sh -c \
  'echo "secret-of-the-victim" > "$RT_WORK_DIR/secret.txt"; echo victim-ready; sleep 30' victim-marker \
  > "$work/victim.out" 2>&1 &)
victim=
for _ in $(seq 150); do
  victim=$(cd "$work/agent-a1/state/work" && ls -d job-*/work/secret.txt 2> /dev/null | sed 's,^job-\([0-9]*\)/.*,\1,' | tail -1 || true)
  [ -n "$victim" ] && break
  sleep 0.2
done
[ -n "$victim" ] || { cat "$work/victim.out"; fail "the victim job did not start on agent a1"; }
cat > "$shared/attack.sh" <<'SH'
w=/var/lib/ringtrain/work
try() { if out=$(sh -c "$2" 2>&1); then echo "LEAK $1: $out"; else echo "DENIED $1"; fi; }
try list "ls $w"
try key "cat $w/job-$VICTIM/rank-0.rendezvous"
try work "cat $w/job-$VICTIM/work/secret.txt"
try worklist "ls $w/job-$VICTIM/work"
try logs "cat /var/log/ringtrain/job-$VICTIM/attempt-1/rank-0.log"
try token "test -s /etc/ringtrain/token && cat /etc/ringtrain/token"
try plant "ln -s /etc/ringtrain/token /var/log/ringtrain/job-$RT_JOB_ID/attempt-1/rank-0.log.1"
try replace "echo x > $RT_RENDEZVOUS_FILE.new && mv $RT_RENDEZVOUS_FILE.new $RT_RENDEZVOUS_FILE"
vp=$(grep -l "victim-marke[r]" /proc/[0-9]*/cmdline 2> /dev/null | head -1 | cut -d/ -f3)
echo "victim pid ${vp:-none}"
try signal "kill -0 ${vp:-1}"
echo "own key $(wc -c < "$RT_RENDEZVOUS_FILE") bytes, own folder $(cd "$RT_WORK_DIR" && touch mine && echo writable)"
SH
chmod 0644 "$shared/attack.sh"
out=$(cd / && cli exec --np 1 -x VICTIM=$victim -- /bin/sh /shared/attack.sh 2>&1) ||
  { echo "$out"; fail "the attacking job failed"; }
echo "$out"
! grep -q LEAK <<< "$out" || fail "a job reached another job's files or the agent's"
[ "$(grep -c DENIED <<< "$out")" -eq 9 ] || fail "the attacking job's tries did not all run"
grep -q "victim pid [0-9]" <<< "$out" || fail "the attacker did not find the victim's process"
grep -q "own key [1-9][0-9]* bytes, own folder writable" <<< "$out" ||
  fail "a job cannot read its own rendezvous file or write its own folder"
attacker=$(cd "$work/agent-a1/state/work" && ls -d job-* | sed 's/job-//' | sort -n | tail -1)
[ "$attacker" != "$victim" ] || fail "the attacker ran on the other agent"
if grep -q "$(cat "$etc_agent/token")" <(cli logs "$attacker" 2>&1); then fail "the attacker's logs hold the agents' token"; fi
[ "$(cat "$etc_agent/token" | wc -c)" -gt 60 ] || fail "the agents' token file was changed"

for _ in $(seq 200); do grep -q "victim-ready" "$work/victim.out" && ! pgrep -f victim-marker > /dev/null && break; sleep 0.2; done
grep -q "victim-ready" "$work/victim.out" || { cat "$work/victim.out"; fail "the victim job did not finish"; }
# the job's work folder goes with its last rank (emptied as the job's uid)
for _ in $(seq 50); do [ ! -e "$work/agent-a1/state/work/job-$victim/work" ] && break; sleep 0.2; done
[ ! -e "$work/agent-a1/state/work/job-$victim/work/secret.txt" ] && ! ls "$work"/agent-a1/state/work/job-$victim/gone-*/secret.txt 2> /dev/null ||
  fail "the victim's work folder was left behind"

# ---- a job reads no agent memory: not a clean-up after it, nor a rank being started ----
# (the review's attack: its first attempt leaves 120,000 files and fails, so that a
# clean-up as its uid runs long; its second, the same uid, stops every other process
# of that uid it finds and reads its memory)
install -m 0644 "$src/tests/attack_memory.py" "$shared/attack_memory.py"
out=$(cd / && CLI_TIMEOUT=180 cli exec --np 1 --max-restarts 1 -- /usr/bin/python3 \
  /shared/attack_memory.py auto 120000 12 2>&1) || { echo "$out"; fail "the memory-reading job failed"; }
grep -q "filled 120000 files" <<< "$out" && grep -q "scanned:" <<< "$out" ||
  { echo "$out"; fail "the memory-reading job did not run both attempts"; }
grep "READ pid\|DENIED pid\|scanned:" <<< "$out" | sort | uniq -c | head -20
if grep -qF "$(cat "$etc_agent/token")" <<< "$out"; then
  fail "a job read the agents' token from the memory of a process running as its uid"
fi
! grep -qE "READ pid [0-9]+ \(ringtrain" <<< "$out" ||
  fail "a job read the memory of a ringtrain process running as its uid"

# ---- a job's files go with it, whatever modes it set; a job over its disk limit stops ----
# (agent a1 restarted with a small job_disk_limit: a job leaves a 0500 folder holding
# 24 MiB, files in /tmp and /dev/shm, and a folder nested 40 deep; one writes past it)
restart_a1() { # restart agent a1 with its agent.conf as it is now; $1: the log's name
  for p in $(ip netns pids $tag-a1 2> /dev/null); do
    [ "$(cat /proc/$p/comm 2> /dev/null)" = ringtrain-agent ] && kill -TERM "$p"
  done
  for _ in $(seq 100); do
    [ "$(cli nodes 2> /dev/null | awk '$1 ~ /node-a1/ && $3 == "up"' | wc -l)" -eq 0 ] && break
    sleep 0.1
  done
  run_as_unit a1 "$1" "$etc_agent" /usr/local/bin/ringtrain-agent --config /etc/ringtrain/agent-a1.conf
  for _ in $(seq 100); do
    [ "$(cli nodes 2> /dev/null | awk '$1 ~ /node-a1/ && $3 == "up"' | wc -l)" -ge 1 ] && break
    sleep 0.2
  done
}
sed -i -e 's/^job_disk_limit = .*/job_disk_limit = 64M/' -e 's/^min_free_disk = .*/min_free_disk = 16M/' \
  "$etc_agent/agent-a1.conf"
restart_a1 agent-a1d
a1pid=$(for p in $(ip netns pids $tag-a1); do [ "$(cat /proc/$p/comm)" = ringtrain-agent ] && echo $p; done | head -1)
out=$(cd / && cli exec --np 1 -- /bin/sh -c 'mkdir "$RT_WORK_DIR/keep" &&
  dd if=/dev/zero of="$RT_WORK_DIR/keep/blob" bs=1M count=24 status=none &&
  chmod 0500 "$RT_WORK_DIR/keep" && chmod 0 "$RT_WORK_DIR" &&
  echo x > /tmp/left-by-$RT_JOB_ID && echo x > /dev/shm/left-by-$RT_JOB_ID &&
  mkdir -p /tmp/deep-$RT_JOB_ID/$(printf "d/%.0s" $(seq 40)) && echo left-behind' 2>&1) ||
  { echo "$out"; fail "the job leaving files failed"; }
grep -q left-behind <<< "$out" || { echo "$out"; fail "the job leaving files did not run"; }
job=$(cli jobs 2> /dev/null | awk '$1 ~ /^[0-9]+$/ {print $1}' | sort -n | tail -1)
for _ in $(seq 50); do
  left=$( (ls -A "$work/agent-a1/state/work/job-$job/"; ls -A /proc/$a1pid/root/tmp /proc/$a1pid/root/dev/shm) 2> /dev/null |
    grep -c "^work$\|^gone-\|left-by-$job\|deep-$job" || true)
  [ "$left" -eq 0 ] && break
  sleep 0.2
done
[ "$left" -eq 0 ] || { ls -la "$work/agent-a1/state/work/job-$job/" /proc/$a1pid/root/tmp /proc/$a1pid/root/dev/shm;
  fail "job $job's files outlived it (a 0500 folder, /tmp, /dev/shm, a deep folder)"; }
if out=$(cd / && cli exec --np 1 -- /bin/sh -c 'dd if=/dev/zero of="$RT_WORK_DIR/fill" bs=1M count=100 status=none; echo wrote; sleep 30' 2>&1); then
  echo "$out"; fail "a job writing 100 MiB past its disk limit of 64M succeeded"
fi
grep -q "over its disk_limit of 64.0 MiB" <<< "$out" || { echo "$out"; fail "the disk-limit failure does not say so"; }
job=$(cli jobs 2> /dev/null | awk '$1 ~ /^[0-9]+$/ {print $1}' | sort -n | tail -1)
for _ in $(seq 50); do [ -z "$(ls -A "$work/agent-a1/state/work/job-$job/" 2> /dev/null)" ] && break; sleep 0.2; done
[ -z "$(ls -A "$work/agent-a1/state/work/job-$job/" 2> /dev/null)" ] || fail "the job stopped for its disk use left its files"

# ---- names a job gives are checked where they enter ------------------------------------
out=$(cd / && cli exec --np 1 -- /bin/sh -c 'printf "%s\n" "{\"kind\":\"epoch\",\"epoch\":1,\"val_<img src=x onerror=alert(1)>\":0.25,\"val_ok\":0.5}" >&4; sleep 1' 2>&1) ||
  { echo "$out"; fail "the job reporting a crafted metric name failed"; }
job=$(cli jobs 2> /dev/null | awk '$1 ~ /^[0-9]+$/ {print $1}' | sort -n | tail -1)
st=$(cli status "$job" --json 2>&1)
python3 - "$st" <<'PY' || fail "the coordinator kept a metric name holding markup, or not the valid one"
import json, sys
d = json.loads(sys.argv[1])
keys = {k for m in d.get("metrics", []) for k in m.get("data", {})}
ev = " ".join(e.get("message", "") for e in d.get("events", []))
print("metric keys:", sorted(keys))
sys.exit(0 if "val_ok" in keys and not any("<" in k for k in keys) and "1 progress key dropped" in ev else 1)
PY

# ---- a store another job made first is refused -------------------------------------------
out=$(cd / && cli exec --np 1 -- /bin/sh -c 'mkdir /shared/rossmann/store-squat && chmod 0777 /shared/rossmann/store-squat && echo squatted' 2>&1) ||
  { echo "$out"; fail "the squatting job failed"; }
if out=$(cli submit "$work/job.ini" --np 1 --set output.store=/shared/rossmann/store-squat --follow 2>&1); then
  echo "$out"; fail "a training job wrote into a store folder another job made"
fi
grep -q "\[output\] store: the folder /shared/rossmann/store-squat belongs to uid" <<< "$out" ||
  { echo "$out"; fail "the refused store does not say why"; }
[ -z "$(ls -A "$shared/rossmann/store-squat")" ] || fail "the job wrote into the squatted store"

# ---- a sweep: its trials and its last step run as the sweep's uid, side by side ----------
cat > "$work/sweep.ini" <<EOF
[job]
name = installed-sweep
type = sweep
np = 1
[data]
dataset = /shared/rossmann/dataset
[model]
architecture = mlp
hidden = 16
embedding_dim = 2
[train]
batch_size = 64
epochs = 2
steps_per_epoch = 10
[output]
store = /shared/rossmann/sweep
[sweep]
trials = 3
parallel = 2
grace_epochs = 1
space.train.learning_rate = loguniform(1e-4, 1e-2)
EOF
out=$(cli submit "$work/sweep.ini" --follow 2>&1) || { echo "$out"; fail "the sweep failed"; }
sweep=$(sed -n 's/.*submitted job \([0-9]*\).*/\1/p' <<< "$out" | head -1)
want_uid=$((1900000000 + sweep))
[ "$(wc -l < "$shared/rossmann/sweep/trials.jsonl")" -eq 3 ] || fail "the sweep's trials.jsonl has not 3 lines"
for f in trial-1/history.jsonl trial-3/history.jsonl best/best.ckpt best/best.ini trials.jsonl; do
  [ "$(stat -c %u "$shared/rossmann/sweep/$f")" = "$want_uid" ] ||
    fail "the sweep's $f is uid $(stat -c %u "$shared/rossmann/sweep/$f")'s, not sweep $sweep's $want_uid"
done
grep -q "uid $want_uid (sweep $sweep's)" "$work"/agent-*.log ||
  fail "no agent said it ran a trial as the sweep's uid"

# ---- a token that names a Unix user runs its jobs as that user -----------------------
useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin $tag-alice
cli token create alice --role submit --unix-user $tag-alice > "$work/alice.token" 2> /dev/null ||
  fail "cannot create a token with --unix-user"
chmod 0600 "$work/alice.token"
out=$(cd / && CLI_TOKEN=$work/alice.token cli exec --np 1 -- /bin/sh -c 'echo "as $(id -un) home $HOME user $USER"' 2>&1) ||
  { echo "$out"; fail "the job of a --unix-user token failed"; }
grep -q "as $tag-alice home /nonexistent user $tag-alice" <<< "$out" || { echo "$out"; fail "the job did not run as the token's Unix user"; }
job=$(cli jobs 2> /dev/null | awk '$1 ~ /^[0-9]+$/ {print $1}' | sort -n | tail -1)
cli status "$job" 2> /dev/null | grep -q "runs as Unix user $tag-alice" || fail "ringtrain status does not say whom the job ran as"
# a Unix user the node does not have: the job fails, saying so
cli token create bob --role submit --unix-user $tag-nobody > "$work/bob.token" 2> /dev/null ||
  fail "cannot create a token with --unix-user"
chmod 0600 "$work/bob.token"
if out=$(cd / && CLI_TOKEN=$work/bob.token cli exec --np 1 -- /bin/true 2>&1); then
  fail "a job ran as a Unix user the node does not have"
fi
grep -q "runs as Unix user '$tag-nobody' (its token's --unix-user), who has no account on this node" <<< "$out" ||
  { echo "$out"; fail "the failure does not say the Unix user is missing"; }
# an account made inside job_uids after the agent started would be some job's uid: refused
useradd --system --no-create-home -u 1900000500 --home-dir /nonexistent --shell /usr/sbin/nologin $tag-inrange
cli token create inrange --role submit --unix-user $tag-inrange > "$work/inrange.token" 2> /dev/null ||
  fail "cannot create a token with --unix-user"
chmod 0600 "$work/inrange.token"
if out=$(cd / && CLI_TOKEN=$work/inrange.token cli exec --np 1 -- /bin/true 2>&1); then
  fail "a job ran as a Unix user whose uid is in job_uids"
fi
grep -q "has uid 1900000500, inside \[agent\] job_uids" <<< "$out" || { echo "$out"; fail "the refusal does not say why"; }
userdel $tag-inrange
# an agent without job_uids, whose ranks otherwise run as ringtrain with the token
# hidden: a --unix-user job runs as its user all the same (it cannot reach the token)
sed -i '/^job_uids/d' "$etc_agent/agent-a1.conf"
restart_a1 agent-a1b
grep -q "ranks see an empty /etc/ringtrain/token" "$work/agent-a1b.log" ||
  { cat "$work/agent-a1b.log"; fail "the agent without job_uids does not hide the token"; }
out=$(cd / && CLI_TOKEN=$work/alice.token cli exec --np 1 -- /bin/sh -c 'echo "as $(id -un)"' 2>&1) ||
  { echo "$out"; fail "a --unix-user job on an agent without job_uids failed"; }
grep -q "as $tag-alice" <<< "$out" || { echo "$out"; fail "the job did not run as alice there"; }

echo "ok: installed system, 3 hosts, training, exec and PyTorch DDP jobs succeeded, each as a uid of its own;"
echo "    two jobs on one agent reached neither each other's key, files, logs nor processes, nor the token;"
echo "    a --unix-user token's job ran as that user;"
echo "    a training job of two hosts x two ranks allreduced hierarchically"
