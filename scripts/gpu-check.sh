#!/usr/bin/env bash
# The GPU check on a machine of your own with an NVIDIA GPU and the build
# dependencies: the same check the lent device machine runs, built and run
# here.  scripts/gpu-pack.sh builds for sm_90 (set RINGTRAIN_CUDA_ARCH to
# another, e.g. 80) and packs the programs; .devcarry/run.sh runs the GPU
# tests, bench/train_step --device cuda against PyTorch eager and CUDA
# graphs (when python3 has torch), the end-to-end job, ncu and
# compute-sanitizer when installed; the report and logs go to
# bench/gpu-check-<host>-<date>/.
# Usage: scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "gpu-check.sh: no NVIDIA GPU here (nvidia-smi -L fails); the emulated suite is" \
       "bash scripts/test.sh --gpu-emu; the lent machine's check: README.md, GPUs" >&2
  exit 2
fi
bash scripts/gpu-pack.sh
out=bench/gpu-check-$(hostname -s)-$(date -u +%Y%m%d-%H%M)
mkdir -p "$out"
OUT=$out bash .devcarry/run.sh
echo "gpu-check.sh: report in $out/report.md"
