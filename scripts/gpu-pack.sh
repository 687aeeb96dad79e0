#!/usr/bin/env bash
# Build what the GPU check runs and pack it for a machine that cannot build
# ringtrain (nvcc, CUDA and PyTorch there; no libevent, inih, cmocka,
# OpenBLAS, SQLite, ... and nothing can be installed):
#   1. builds build-gpupack/ with nvcc for sm_90 only (H100 and H200),
#      Release with line info (-lineinfo, for ncu and compute-sanitizer);
#   2. copies the GPU tests, bench/train_step and dense_epilogue, the ringtrain binaries the
#      end-to-end GPU test runs, stripped, into DEST (default .devcarry/);
#   3. adds every shared library they need, as `ldd` finds them here, except
#      glibc's and the C++ runtime (the device's are newer) and CUDA's own
#      (cudart, cuBLAS, NCCL: taken there from the toolkit or PyTorch's
#      wheels, see run.sh), as DEST/lib.tar.gz;
#   4. writes DEST/run.sh (from scripts/gpu-run.sh), which runs the check.
# Then, with the device tool: run(command = "bash .devcarry/run.sh",
# carry = [".devcarry"]); here, `OUT=$(mktemp -d) bash .devcarry/run.sh` is
# the dry run (every GPU step "skipped: no GPU", no missing library).
# With --dataset DIR (a Rossmann dataset made by examples/rossmann/run.sh
# --small: runs/rossmann/dataset), the check also trains the small example
# with every model family on the GPU (the device has no ../shared data).
# Usage: scripts/gpu-pack.sh [--dest DIR] [--no-build] [--dataset DIR]
#   RINGTRAIN_CUDA_ARCH=80 scripts/gpu-pack.sh   another GPU architecture
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.devcarry
build=${BUILD_DIR:-build-gpupack}
do_build=1
dataset=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest=$2; shift ;;
    --no-build) do_build=0 ;;
    --dataset) dataset=$2; shift ;;
    *) echo "gpu-pack.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
# what the check runs: the GPU tests, the benchmark, and test_train_gpu.sh's
# programs (ringtrain run starts the coordinator, an agent and the workers)
tests=(test_cuda_blas test_kernels_cuda test_layers_cuda test_transport_gpu test_dp_gpu)
progs=(ringtrain ringtrain-coordinator ringtrain-agent ringtrain-launch ringtrain-worker)
if [ $do_build -eq 1 ]; then
  cmake -S . -B "$build" -DRINGTRAIN_WERROR=ON -DRINGTRAIN_CUDA=ON \
    -DRINGTRAIN_CUDA_ARCHITECTURES="${RINGTRAIN_CUDA_ARCH:-90}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_FLAGS=-lineinfo -DCMAKE_C_FLAGS=-g1 > /dev/null
  cmake --build "$build" -j"$(nproc)" --target "${tests[@]}" train_step dense_epilogue "${progs[@]}" rossmann-gen \
    > "$build/pack-build.log" 2>&1 || { tail -40 "$build/pack-build.log"; echo "gpu-pack.sh: the build failed" >&2; exit 1; }
fi
find_bin() { # the built file of target $1 under $build
  local f
  f=$(find "$build" -type f -name "$1" -perm -u+x ! -path '*/CMakeFiles/*' | head -1)
  [ -n "$f" ] || { echo "gpu-pack.sh: $1 was not built in $build" >&2; exit 1; }
  echo "$f"
}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
for t in "${tests[@]}" train_step dense_epilogue rossmann-gen "${progs[@]}"; do
  cp "$(find_bin "$t")" "$dest/bin/"
done
strip --strip-debug "$dest"/bin/*
# test_train_gpu.sh finds the programs as BUILD/bin/* and BUILD/examples/rossmann/*
mkdir -p "$dest/build/examples/rossmann"
ln -s ../bin "$dest/build/bin"
ln -s ../../../bin/rossmann-gen "$dest/build/examples/rossmann/rossmann-gen"
# the libraries: whatever ldd resolves here that is neither glibc's nor CUDA's
# (the C and C++ runtimes: the device's are newer than Debian 12's)
skip='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia-[a-z-]*)\.so'
ldd "$dest"/bin/* 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
while read -r name path; do
  if [[ $name =~ $skip ]]; then continue; fi
  cp -L "$path" "$dest/lib/$name"
done
strip --strip-unneeded "$dest"/lib/*.so* 2>/dev/null || true
# compressed (OpenBLAS alone is 35 MiB, 11 gzipped); run.sh unpacks them
printf '%s\n' "$skip" > "$dest/lib/SKIPPED"
tar -C "$dest" -czf "$dest/lib.tar.gz" lib
rm -rf "$dest/lib"
# the GPU test scripts, their Python checks, and the comparators travel with the
# working tree; run.sh is the check itself
cp scripts/gpu-run.sh "$dest/run.sh"
if [ -n "$dataset" ]; then
  [ -f "$dataset/manifest.json" ] || { echo "gpu-pack.sh: $dataset is not a dataset" >&2; exit 1; }
  mkdir -p "$dest/rossmann/data"
  cp -r "$dataset" "$dest/rossmann/dataset"
  cp "$dataset/../data/generator.json" "$dest/rossmann/data/" 2>/dev/null || true
fi
echo "built $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m)" \
  > "$dest/BUILT"
size=$(du -sm "$dest" | cut -f1)
echo "gpu-pack.sh: $dest holds $(ls "$dest/bin" | wc -l) programs and" \
     "$(tar -tzf "$dest/lib.tar.gz" | grep -c '\.so') libraries, ${size} MiB"
if [ "$size" -ge 60 ]; then
  echo "gpu-pack.sh: $dest is over 60 MiB: the device tool carries 64 MiB with the tree" >&2
  exit 1
fi
