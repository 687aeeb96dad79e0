#!/usr/bin/env bash
# The one command to run the day a machine with an NVIDIA GPU is available:
#   1. builds build/ with nvcc (every .cu for sm_80 and sm_90, warnings as
#      errors) and the NCCL backend;
#   2. runs the GPU tests on the real device (CTest label gpu:
#      test_kernels_cuda, test_transport_gpu, test_dp_gpu — 2 GPUs —, and
#      test_train_gpu, the Rossmann job with device = cuda against the CPU job);
#   3. runs bench/train_step --device cuda at batch 100, 1024 and 8192 with
#      TF32 off and on;
#   4. writes a report (GPU, driver, CUDA, NCCL, what passed, the figures) to
#      bench/gpu-check-<host>-<date>.md and prints it.
# Usage: scripts/gpu-check.sh [--seconds S]   (seconds per benchmark point, default 3)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift ;;
    *) echo "gpu-check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "gpu-check.sh: no NVIDIA GPU here (nvidia-smi -L fails); the emulated suite is" \
       "bash scripts/test.sh --gpu-emu" >&2
  exit 2
fi
report=bench/gpu-check-$(hostname -s)-$(date -u +%Y%m%d-%H%M).md
log=$(mktemp)
trap 'rm -f "$log"' EXIT

bash scripts/build.sh -- -DRINGTRAIN_CUDA=ON > "$log" 2>&1 || { tail -40 "$log"; echo "gpu-check.sh: the build failed"; exit 1; }
ctest --test-dir build -L gpu --output-on-failure > "$log.tests" 2>&1
tests_rc=$?
bench=()
for tf in "" "--tf32"; do
  for b in 100 1024 8192; do
    bench+=("$(build/bench/train_step --device cuda --batch $b --seconds "$seconds" $tf 2>&1 | grep '^cuda')  ${tf:-fp32}")
  done
done
{
  echo "# GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname -s)"
  echo
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -4 | tr '\n' ';')"
  echo "- CUDA: $(nvcc --version | tail -1)"
  echo "- NCCL: $(grep -h '#define NCCL_\(MAJOR\|MINOR\|PATCH\)' /usr/local/cuda/include/nccl.h /usr/include/nccl.h 2>/dev/null | awk '{printf "%s.", $3}' | sed 's/\.$//')"
  echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo
  echo "## Tests (ctest -L gpu): $([ $tests_rc -eq 0 ] && echo passed || echo FAILED)"
  echo
  echo '```'
  grep -E 'Test +#|tests passed|Skipped|Failed' "$log.tests"
  echo '```'
  echo
  echo "## bench/train_step --device cuda (Rossmann model, graph replay)"
  echo
  echo '```'
  echo "device threads  batch    samples/s    step_us   GFLOP/s  gemm_peak  ratio  math"
  printf '%s\n' "${bench[@]}"
  echo '```'
} > "$report"
rm -f "$log.tests"
cat "$report"
echo "gpu-check.sh: report written to $report"
exit $tests_rc
