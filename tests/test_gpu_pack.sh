#!/usr/bin/env bash
# The GPU check's pack, proved without a GPU: scripts/gpu-pack.sh builds for
# sm_90 and packs the programs with the libraries the device machine lacks
# (.devcarry/); its run.sh then runs here as the dry run: every library found
# from the pack (or left to the device: C/C++ runtimes, CUDA's), every GPU
# step "skipped: no GPU", the spec files written, nothing failed.  Exits 77
# where there is no nvcc (the pack needs it).
# Usage: test_gpu_pack.sh   (from anywhere; builds build-gpupack/)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvcc > /dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "no nvcc: skipping"; exit 77; }
export PATH=$PATH:/usr/local/cuda/bin
bash scripts/gpu-pack.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if nvidia-smi -L > /dev/null 2>&1; then
  echo "a GPU is here: the dry run would run the whole check; run it instead:"
  echo "  OUT=\$(mktemp -d) bash .devcarry/run.sh"
  exit 77
fi
OUT=$out timeout 120 bash .devcarry/run.sh > "$out/stdout" 2>&1 || { cat "$out/stdout"; echo "FAIL: run.sh failed"; exit 1; }
cat "$out/report.md"
grep -q "^- libraries: every program's found" "$out/report.md" || { echo "FAIL: the libraries"; exit 1; }
if grep -E "MISSING|NOT PACKED|FAILED|TIMED OUT" "$out/report.md"; then
  echo "FAIL: the dry run reported the lines above"; exit 1
fi
skipped=$(grep -c "skipped: no GPU" "$out/report.md")
[ "$skipped" -ge 10 ] || { echo "FAIL: only $skipped GPU steps said 'skipped: no GPU'"; exit 1; }
echo "ok: the pack holds every library; $skipped GPU steps skipped without a GPU"
