#!/usr/bin/env bash
# bench/train.sh — end-to-end training throughput: the Rossmann job through
# the whole system (ringtrain run: coordinator, agent, workers, data loading,
# the fused gradient allreduce, Adam), samples/s of the training loop as the
# trainer measures it (all ranks, the second epoch: the first one warms up),
# for
#   np=1, 1 thread     the baseline
#   np=2, 1 thread each    -> scaling efficiency = samples/s / (2 x baseline)
#                         (transport auto: shared memory, both ranks on this host)
#   np=2 over TCP      the same with transport = tcp
#   np=1, 2 threads    the same cores as np=2 in one process (for comparison)
# and, when a GPU is visible, np=1 on the GPU (np=2 with two GPUs).
#
#   bench/train.sh [--batch B] [--steps S] [--stores N] [--hidden LIST] [--json]
#
# Defaults: the seed's model (1000-1000-1000-500), batch 100 per rank (the
# seed's), 300 steps per epoch, 2 epochs, 200 synthetic stores.  Binaries
# from $RINGTRAIN_BUILD or build/.  Run with OPENBLAS_CORETYPE unset.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}
batch=100 steps=300 stores=200 hidden="1000,1000,1000,500" json=0
while [ $# -gt 0 ]; do
  case "$1" in
    --batch) batch=$2; shift ;;
    --steps) steps=$2; shift ;;
    --stores) stores=$2; shift ;;
    --hidden) hidden=$2; shift ;;
    --json) json=1 ;;
    *) echo "bench/train.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -n "${OPENBLAS_CORETYPE:-}" ] && echo "bench/train.sh: note: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE is set (run with env -u OPENBLAS_CORETYPE)" >&2
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench-train-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/examples/rossmann/rossmann-gen" --out "$work/data" --stores "$stores" --quiet
"$build/bin/ringtrain" prep --input "$work/data" --sql "$root/examples/rossmann/prep.sql" \
  --out "$work/ds" --partitions 2 --quiet > /dev/null

# run NAME NP THREADS DEVICE [TRANSPORT]: prints samples/s of epoch 2
run() {
  local name=$1 np=$2 threads=$3 device=$4 transport=${5:-auto}
  "$build/bin/ringtrain" run "$root/examples/rossmann/job.ini" --np "$np" --set job.transport="$transport" \
    --set data.dataset="$work/ds" --set output.store="$work/$name" \
    --set model.hidden="$hidden" --set model.threads="$threads" --set model.device="$device" \
    --set train.batch_size="$batch" --set train.steps_per_epoch="$steps" --set train.epochs=2 \
    --set output.predict=false --set job.max_restarts=0 > "$work/$name.log" 2>&1 ||
    { echo "bench/train.sh: $name failed:" >&2; tail -20 "$work/$name.log" >&2; exit 1; }
  sed -n '2s/.*"samples_per_s":\([0-9.]*\).*/\1/p' "$work/$name/history.jsonl"
}

one=$(run np1_t1 1 1 cpu)
two=$(run np2_t1 2 1 cpu)
two_tcp=$(run np2_t1_tcp 2 1 cpu tcp)
wide=$(run np1_t2 1 2 cpu)
gpu1="" gpu2=""
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  gpu1=$(run gpu_np1 1 0 cuda)
  [ "$(nvidia-smi -L | wc -l)" -ge 2 ] && gpu2=$(run gpu_np2 2 0 cuda)
fi
eff=$(awk -v a="$one" -v b="$two" 'BEGIN { printf "%.3f", b / (2 * a) }')
vs_wide=$(awk -v a="$wide" -v b="$two" 'BEGIN { printf "%.3f", b / a }')
if [ "$json" = 1 ]; then
  printf '{"batch":%s,"steps":%s,"hidden":"%s","np1_t1":%s,"np2_t1":%s,"np1_t2":%s,' \
    "$batch" "$steps" "$hidden" "$one" "$two" "$wide"
  printf '"np2_t1_tcp":%s,' "$two_tcp"
  printf '"scaling_efficiency":%s,"np2_vs_np1_t2":%s,"gpu_np1":%s,"gpu_np2":%s}\n' \
    "$eff" "$vs_wide" "${gpu1:-null}" "${gpu2:-null}"
else
  echo "model $hidden, batch $batch per rank, $steps steps per epoch (epoch 2 measured)"
  printf '%-28s %12s\n' "configuration" "samples/s"
  printf '%-28s %12.0f\n' "np=1, 1 thread" "$one" "np=2, 1 thread each" "$two" \
    "np=2, over TCP" "$two_tcp" "np=1, 2 threads" "$wide"
  [ -n "$gpu1" ] && printf '%-28s %12.0f\n' "np=1, GPU" "$gpu1"
  [ -n "$gpu2" ] && printf '%-28s %12.0f\n' "np=2, 2 GPUs" "$gpu2"
  echo "scaling efficiency np=2 vs np=1 (1 thread per rank): $eff"
  echo "np=2 (1 thread each) vs np=1 with both threads: $vs_wide"
fi
