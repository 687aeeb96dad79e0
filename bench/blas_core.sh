#!/usr/bin/env bash
# blas_core.sh — is the OpenBLAS core type ringtrain chooses the best one?
#
#   bash bench/blas_core.sh [--rounds R] [--threads T] [--batch B]
#
# Runs build/bench/train_step's sgemm baseline (OpenBLAS sgemm on the
# model's B x 1000 x 1000 shape, 1 thread by default) R times (default 3),
# interleaved, with OPENBLAS_CORETYPE unset — what a user gets: OpenBLAS's
# own pick, or the core ringtrain sets where that pick is worse
# (kernels/cpu_blas.c) — and forced to every core type this CPU can run.
# Prints each one's best GFLOP/s and the ratio of the unset run to the best
# forced one (the target is >= 0.95).  Uses $RINGTRAIN_BUILD or build/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${RINGTRAIN_BUILD:-build}
rounds=3 threads=1 batch=1024
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    *) echo "usage: bench/blas_core.sh [--rounds R] [--threads T] [--batch B]" >&2; exit 2 ;;
  esac
done
exe=$build/bench/train_step
[ -x "$exe" ] || { echo "blas_core.sh: no $exe (bash scripts/build.sh first)" >&2; exit 1; }
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
cores=(Prescott)
has avx && cores+=(Sandybridge)
has avx2 fma && cores+=(Haswell Zen)
has avx512f avx512bw avx512dq avx512vl && cores+=(SkylakeX)

declare -A best core_of
run() { # NAME [CORE]: one measurement
  local out
  out=$(if [ -n "${2:-}" ]; then OPENBLAS_CORETYPE=$2 "$exe" --device cpu --threads "$threads" \
          --batch "$batch" --seconds 1 --json 2> /dev/null
        else env -u OPENBLAS_CORETYPE "$exe" --device cpu --threads "$threads" --batch "$batch" \
          --seconds 1 --json 2> /dev/null; fi)
  local g c
  g=$(grep -o '"gemm_peak_gflops":[0-9.]*' <<< "$out" | cut -d: -f2)
  c=$(grep -o '"blas_core":"[^"]*"' <<< "$out" | cut -d'"' -f4)
  core_of[$1]=$c
  if [ -z "${best[$1]:-}" ] || awk -v a="$g" -v b="${best[$1]}" 'BEGIN{exit !(a>b)}'; then
    best[$1]=$g
  fi
}
for ((r = 0; r < rounds; r++)); do
  run unset
  for c in "${cores[@]}"; do run "$c" "$c"; done
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); OpenBLAS sgemm" \
     "B=$batch x 1000 x 1000, $threads thread(s), best of $rounds"
printf "%-28s %-14s %10s\n" "OPENBLAS_CORETYPE" "kernels ran" "GFLOP/s"
printf "%-28s %-14s %10s\n" "unset (what users get)" "${core_of[unset]}" "${best[unset]}"
top=0 topc=""
for c in "${cores[@]}"; do
  printf "%-28s %-14s %10s\n" "$c" "${core_of[$c]}" "${best[$c]}"
  if awk -v a="${best[$c]}" -v b="$top" 'BEGIN{exit !(a>b)}'; then top=${best[$c]} topc=$c; fi
done
awk -v a="${best[unset]}" -v b="$top" -v c="$topc" \
  'BEGIN{printf "unset / best forced (%s): %.2fx (target >= 0.95)\n", c, a / b}'
