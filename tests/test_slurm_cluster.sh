#!/usr/bin/env bash
# ringtrain inside a real Slurm (22.05, Debian's packages): a cluster of the
# test's own — munged with a test key, slurmctld on host "ctl" and slurmd
# on hosts "n1" and "n2", three network namespaces on a bridge
# (10.78.0.1-3), each with its own hostname, config, state and spool under
# a temporary folder, /etc/hosts seen only by this test (a mount namespace)
# — and, as a Slurm user meets it:
#   - the C Run API probe under `srun -N 2 -n 4` (block and cyclic task
#     layouts: Horovod's ranks), and the Python binding's collectives;
#   - a task that exits 7 fails the step, srun naming the node, task and code;
#   - `srun -N 2 -n 4 ringtrain worker` trains a Rossmann job whose history
#     and predictions equal `ringtrain run --np 4`'s within float tolerance;
#   - examples/rossmann/slurm.sbatch, requeued with `scontrol requeue` after
#     a few epochs, resumes from last.ckpt: the history's epochs continue;
#   - `ringtrain worker` run by the batch script itself (no srun) fails at
#     once, saying to start it with srun (not waiting for 3 tasks to come).
# Needs root, Slurm's daemons and client, munge, ip/nsenter/unshare; exit 77
# (skip, saying what is missing) otherwise.  Every wait is bounded; the
# daemons and namespaces are removed at the end.
# Usage: test_slurm_cluster.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "${1:?usage: test_slurm_cluster.sh BUILD_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: test_slurm_cluster.sh BUILD_DIR SOURCE_DIR}" && pwd)
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (namespaces, Slurm's daemons)"
for t in slurmctld slurmd srun sbatch scontrol sinfo munged ip nsenter unshare; do
  command -v $t > /dev/null || skip "no $t (scripts/install-deps.sh installs slurmd slurmctld slurm-client munge)"
done
# /etc/hosts names the test's hosts only inside a mount namespace of its own
if [ -z "${RT_SLURM_TEST_NS:-}" ]; then
  RT_SLURM_TEST_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

. "$src/scripts/netns-link.sh"
tag=rtsl$$
t=$(mktemp -d /tmp/rt-slurm.XXXXXX)
chmod 755 "$t"
cleanup() {
  netns_bridge_down $tag ctl n1 n2
  [ -f "$t/munge/pid" ] && kill "$(cat "$t/munge/pid")" 2> /dev/null || true
  rm -rf "$t"
}
trap cleanup EXIT
ip netns add $tag-sw 2> /dev/null || skip "cannot create network namespaces here"
netns_bridge_up $tag 10.78.0 ctl n1 n2 || fail "cannot make the hosts' namespaces"
printf '127.0.0.1 localhost\n10.78.0.1 ctl\n10.78.0.2 n1\n10.78.0.3 n2\n' > "$t/hosts"
mount --bind "$t/hosts" /etc/hosts
# on HOST (its network and hostname; /sys as it is: slurmd reads the cgroups)
on() { local h=$1; shift; nsenter --net=/run/netns/$tag-$h unshare -u sh -c 'hostname "$0"; exec "$@"' "$h" "$@"; }

mkdir -p "$t/munge" "$t/ctl" "$t/spool/n1" "$t/spool/n2" "$t/home" "$t/shared"
head -c 1024 /dev/urandom > "$t/munge/munge.key"
chmod 400 "$t/munge/munge.key"
munged --force --key-file="$t/munge/munge.key" --socket="$t/munge/sock" --pid-file="$t/munge/pid" \
  --log-file="$t/munge/log" --seed-file="$t/munge/seed" 2> /dev/null || skip "munged does not start"
cat > "$t/slurm.conf" << EOF
ClusterName=rttest
SlurmctldHost=ctl(10.78.0.1)
AuthType=auth/munge
AuthInfo=socket=$t/munge/sock
CredType=cred/munge
MailProg=/bin/true
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$t/ctl
SlurmdSpoolDir=$t/spool/%n
SlurmctldPidFile=$t/ctl/slurmctld.pid
SlurmdPidFile=$t/spool/slurmd.%n.pid
SlurmctldLogFile=$t/ctl/slurmctld.log
SlurmdLogFile=$t/spool/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
NodeName=n1 NodeAddr=10.78.0.2 CPUs=2 State=UNKNOWN
NodeName=n2 NodeAddr=10.78.0.3 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$t/slurm.conf HOME=$t/home
export PATH="$build/bin:$PATH" PYTHONPATH="$src/python" RINGTRAIN_LIBRARY="$build/transport/libringtrain.so.0"
on ctl slurmctld -D -i > "$t/ctl/out" 2>&1 &
for n in n1 n2; do on $n slurmd -D -N $n > "$t/spool/out.$n" 2>&1 & done
for _ in $(seq 60); do
  [ "$(on ctl sinfo -h -o '%t' 2> /dev/null | sort -u)" = idle ] && break
  sleep 0.5
done
if [ "$(on ctl sinfo -h -o '%t' 2> /dev/null | sort -u)" != idle ]; then
  tail -n 5 "$t/ctl/out" "$t/spool/out.n1" "$t/spool/out.n2" 2> /dev/null
  skip "Slurm's nodes did not come up here (above: the daemons' last words)"
fi
echo "ok: slurmctld on ctl, slurmd on n1 and n2: $(on ctl sinfo -h -o '%D nodes %t')"
srun_() { on ctl timeout 120 srun "$@"; }

# ---- the Run API: the C probe and the Python binding -------------------------------
out=$(srun_ -N 2 -n 4 -l "$build/tests/rt_probe" 2>&1) || { echo "$out"; fail "rt_probe under srun"; }
for want in "0: rank=0 size=4 local_rank=0 local_size=2 cross_rank=0 cross_size=2" \
            "2: rank=2 size=4 local_rank=0 local_size=2 cross_rank=1 cross_size=2" \
            "3: rank=3 size=4 local_rank=1 local_size=2 cross_rank=1 cross_size=2"; do
  grep -qF "$want" <<< "$out" || { echo "$out"; fail "no '$want' (block layout)"; }
done
[ "$(grep -c 'allreduce ok: sum 10' <<< "$out")" = 4 ] || { echo "$out"; fail "allreduce under srun"; }
grep -q "hierarchical allreduce: 2 hosts x 2 ranks" <<< "$out" || { echo "$out"; fail "not hierarchical"; }
out=$(srun_ -N 2 -n 4 -m cyclic -l "$build/tests/rt_probe" 2>&1) || { echo "$out"; fail "cyclic"; }
grep -qF "1: rank=1 size=4 local_rank=0 local_size=2 cross_rank=1 cross_size=2" <<< "$out" ||
  { echo "$out"; fail "cyclic layout: rank 1 is n2's first task"; }
echo "ok: rt_probe under srun -N 2 -n 4, block and cyclic: Horovod's ranks, allreduce 10"
py=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy' 2> /dev/null; then py=$(command -v "$p"); break; fi
done
if [ -n "$py" ]; then
  # the sanitizer build: the ASan runtime first (RT_PRELOAD), no leak report of python
  pre=(env)
  [ -n "${RT_PRELOAD:-}" ] && pre=(env LD_PRELOAD="$RT_PRELOAD" ASAN_OPTIONS=detect_leaks=0)
  out=$(srun_ -N 2 -n 4 -l "${pre[@]}" "$py" "$src/tests/binding_check.py" no-agent 2>&1) ||
    { echo "$out"; fail "the Python binding under srun"; }
  [ "$(grep -c 'binding ok: rank' <<< "$out")" = 4 ] || { echo "$out"; fail "binding: 4 ranks"; }
  echo "ok: the Python binding's collectives under srun -N 2 -n 4"
else
  echo "note: no numpy: the Python binding was not run under srun"
fi

# ---- a task that fails fails the step, named -----------------------------------------
if out=$(srun_ -N 2 -n 4 --kill-on-bad-exit=1 "$build/tests/rt_probe" --fail-rank 3 --code 7 2>&1); then
  echo "$out"
  fail "a step whose task 3 exited 7 succeeded"
fi
grep -q "n2: task 3: Exited with exit code 7" <<< "$out" || { echo "$out"; fail "task 3's exit not named"; }
echo "ok: task 3 exiting 7 failed the step: $(grep 'exit code 7' <<< "$out" | head -1)"

# ---- training: srun ringtrain worker == ringtrain run --np 4 -------------------------
"$build/examples/rossmann/rossmann-gen" --out "$t/data" --stores 6 --quiet
ringtrain prep --input "$t/data" --sql "$src/examples/rossmann/prep.sql" --out "$t/shared/ds" \
  --partitions 4 --quiet > /dev/null
sets=(--set data.dataset="$t/shared/ds" --set train.epochs=3 --set model.threads=1
      --set model.hidden=64,32 --set train.batch_size=64)
out=$(srun_ -N 2 -n 4 ringtrain worker "$src/examples/rossmann/job.ini" "${sets[@]}" \
        --set output.store="$t/shared/slurm" 2>&1) || { echo "$out"; fail "srun ringtrain worker"; }
grep -q "trainer: done: epochs 1..3" <<< "$out" || { echo "$out"; fail "no 'done' from rank 0"; }
timeout 300 ringtrain run "$src/examples/rossmann/job.ini" --np 4 "${sets[@]}" \
  --set output.store="$t/run" > "$t/run.log" 2>&1 || { cat "$t/run.log"; fail "ringtrain run --np 4"; }
num() { grep -o "\"$1\":[-0-9.eE+]*" "$2" | cut -d: -f2; }
for k in loss val_loss; do
  paste <(num $k "$t/shared/slurm/history.jsonl") <(num $k "$t/run/history.jsonl") |
    awk -v k=$k 'NF != 2 { bad = 1 } { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * ($2 < 0 ? -$2 : $2) + 1e-6) bad = 1; n++ }
                 END { if (bad || n != 3) { print "FAIL: " k " differs: " n " epochs"; exit 1 } }' ||
    { paste "$t/shared/slurm/history.jsonl" "$t/run/history.jsonl"; fail "histories differ"; }
done
paste -d, "$t/shared/slurm/submission.csv" "$t/run/submission.csv" | awk -F, '
  NR == 1 { next } { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-3 * $4 + 1e-3) bad++ }
  END { if (bad || n < 10) { print "FAIL: predictions: " bad " of " n " differ"; exit 1 } }' ||
  fail "submission.csv under Slurm differs from ringtrain run's"
echo "ok: srun ringtrain worker over n1, n2 = ringtrain run --np 4 (3 epochs' loss/val_loss to 1e-4, $(($(wc -l < "$t/run/submission.csv") - 1)) predictions)"

# ---- sbatch --requeue: the example's batch script resumes from last.ckpt -------------
cd "$t/shared"
jid=$(on ctl env DATASET="$t/shared/ds" STORE="$t/shared/req" JOB="$src/examples/rossmann/job.ini" \
        RINGTRAIN="$build/bin/ringtrain" sbatch --parsable "$src/examples/rossmann/slurm.sbatch" \
        --set train.epochs=40 --set model.threads=1 --set model.hidden=64,32 --set train.batch_size=64)
jid=${jid%%;*}
state() { on ctl scontrol show job "$jid" 2> /dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
for _ in $(seq 240); do
  [ -f req/history.jsonl ] && [ "$(wc -l < req/history.jsonl)" -ge 3 ] && break
  sleep 0.25
done
before=$(wc -l < req/history.jsonl 2> /dev/null || echo 0)
[ "$before" -ge 3 ] || { cat rossmann-$jid.out 2> /dev/null; fail "the batch job wrote no 3 epochs ($(state))"; }
on ctl scontrol requeue "$jid"
for _ in $(seq 20); do
  s=$(state)
  [ "$s" = PENDING ] || [ "$s" = RUNNING ] && break
  sleep 0.25
done
on ctl scontrol update JobId="$jid" StartTime=now 2> /dev/null || true # past the requeue's hold-off
for _ in $(seq 480); do
  s=$(state)
  [ "$s" = COMPLETED ] || [ "$s" = FAILED ] || [ "$s" = CANCELLED ] && break
  sleep 0.5
done
[ "$s" = COMPLETED ] || { tail -n 20 rossmann-$jid.out; fail "the requeued job ended $s"; }
grep -q "restart 1" rossmann-$jid.out || { cat rossmann-$jid.out; fail "the job was not run again"; }
grep -q "trainer: resumed from .*last.ckpt after epoch" rossmann-$jid.out ||
  { cat rossmann-$jid.out; fail "the requeued job did not resume from last.ckpt"; }
epochs=$(num epoch req/history.jsonl | tr '\n' ' ')
[ "$epochs" = "$(seq -s ' ' 1 40) " ] || fail "history's epochs after the requeue: $epochs"
echo "ok: sbatch --requeue: requeued after $before epochs, $(grep -o 'resumed from .*' rossmann-$jid.out | head -1 | sed 's|.*/||'), epochs 1..40 once each"

# ---- `ringtrain worker` in a batch script without srun: told to use srun ------------
jid=$(on ctl sbatch --parsable -N 2 -n 4 -o "$t/shared/nosrun-%j.out" --wrap \
        "$build/bin/ringtrain worker $src/examples/rossmann/job.ini --set data.dataset=$t/shared/ds --set output.store=$t/shared/nosrun")
jid=${jid%%;*}
for _ in $(seq 120); do
  s=$(state)
  [ "$s" = COMPLETED ] || [ "$s" = FAILED ] && break
  sleep 0.5
done
[ "$s" = FAILED ] && grep -q "the batch script of Slurm job $jid .*start the program with srun" nosrun-$jid.out ||
  { cat nosrun-$jid.out; fail "ringtrain worker without srun ended $s"; }
echo "ok: ringtrain worker in the batch script without srun fails at once, saying to use srun"
echo "ok: ringtrain under a real Slurm 22.05 (2 slurmd hosts in network namespaces)"
