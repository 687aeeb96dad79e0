#!/usr/bin/env bash
# Configure and build ringtrain.
#   scripts/build.sh                 # build/ (CUDA and RDMA parts when present)
#   scripts/build.sh --sanitize      # build-asan/ with ASan+UBSan, CPU only
#   scripts/build.sh --gpu-emu       # build-gpu-emu/: the CUDA code run on the CPU
#                                    # (tools/cudaemu), with ASan+UBSan
#   scripts/build.sh --rdma-emu      # build-rdma-emu/: the RDMA transport over an
#                                    # emulated adapter (tools/verbsemu), with ASan+UBSan
#   BUILD_DIR=dir scripts/build.sh   # another folder
# Extra arguments after -- go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=0
gpu_emu=0
rdma_emu=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --gpu-emu) gpu_emu=1 ;;
    --rdma-emu) rdma_emu=1 ;;
    --) shift; extra+=("$@"); break ;;
    *) echo "build.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

args=(-DRINGTRAIN_WERROR=ON)
if [ $rdma_emu -eq 1 ]; then
  BUILD_DIR=${BUILD_DIR:-build-rdma-emu}
  args+=(-DRINGTRAIN_VERBS=EMU -DRINGTRAIN_CUDA=OFF)
  if [ $sanitize -eq 1 ]; then
    args+=(-DRINGTRAIN_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug)
  fi
elif [ $gpu_emu -eq 1 ]; then
  BUILD_DIR=${BUILD_DIR:-build-gpu-emu}
  args+=(-DRINGTRAIN_CUDA=EMU -DRINGTRAIN_VERBS=OFF)
  if [ $sanitize -eq 1 ]; then
    args+=(-DRINGTRAIN_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug)
  fi
elif [ $sanitize -eq 1 ]; then
  BUILD_DIR=${BUILD_DIR:-build-asan}
  # The CUDA runtime and ASan's shadow memory do not mix; the sanitizer build
  # checks the CPU code paths, which are the reference for the CUDA ones.
  args+=(-DRINGTRAIN_SANITIZE=address,undefined -DRINGTRAIN_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug)
else
  BUILD_DIR=${BUILD_DIR:-build}
fi
cmake -S . -B "$BUILD_DIR" "${args[@]}" "${extra[@]}" >/dev/null
if [ $rdma_emu -eq 1 ]; then
  # only what differs from the sanitizer build: the transport over verbsemu
  # and the programs that run it
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target test_verbsemu test_transport_rdma \
    test_transport_fail test_transport_kill allreduce
elif [ $gpu_emu -eq 1 ]; then
  # only what the GPU-emulation suite (CTest label gpu-emu) runs: its tests,
  # and the programs test_train_gpu.sh's `ringtrain run` starts
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target test_kernels_cuda test_layers_cuda \
    test_cudaemu test_transport_gpu test_dp_gpu ringtrain ringtrain-coordinator ringtrain-agent \
    ringtrain-launch ringtrain-worker rossmann-gen
else
  cmake --build "$BUILD_DIR" -j"$(nproc)"
fi
echo "build.sh: built in $BUILD_DIR"
