#!/usr/bin/env bash
# Build ringtrain and run its whole test suite (the README's test command).
#   scripts/test.sh              # build/ and every test; GPU/RDMA tests skip without hardware
#   scripts/test.sh --sanitize   # the same tests in the ASan+UBSan build (build-asan/),
#                                # but for the long Rossmann quality run
#   scripts/test.sh --gpu-emu    # the GPU tests (CTest label gpu-emu) with the CUDA code
#                                # run on the CPU by tools/cudaemu, ASan+UBSan (build-gpu-emu/)
#   scripts/test.sh --rdma-emu   # the RDMA suite (CTest label rdma-emu) over tools/verbsemu's
#                                # emulated adapter, ASan+UBSan (build-rdma-emu/)
# Arguments after -- go to ctest (e.g. -- -R config).
set -euo pipefail
cd "$(dirname "$0")/.."

# ASan keeps freed memory unused in a quarantine (256 MB a process by
# default) to catch a use after free, and every new block is a fresh page
# to fault in: on a VM whose page faults are dear the sanitized suite spent
# 9 of its 24 CPU-minutes in the kernel.  64 MB still holds every block
# freed in the last 64 MB of frees; prep --from of a 9,000-column table:
# 627,000 -> 321,000 page faults, 1.7 -> 0.9 GB resident (the suite, with
# -O1 beside it: 867 -> 807 s, 2026-12-02).
asan_options=detect_leaks=1:abort_on_error=1:quarantine_size_mb=64
build_args=()
ctest_args=()
gpu_emu=0
rdma_emu=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) build_args+=(--sanitize) ;;
    --gpu-emu) gpu_emu=1 ;;
    --rdma-emu) rdma_emu=1 ;;
    --) shift; ctest_args+=("$@"); break ;;
    *) echo "test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

if [ $rdma_emu -eq 1 ]; then
  bash scripts/build.sh --rdma-emu --sanitize
  dir=${BUILD_DIR:-build-rdma-emu}
  export ASAN_OPTIONS=${ASAN_OPTIONS:-$asan_options}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  exec ctest --test-dir "$dir" --output-on-failure -j"$((2 * $(nproc)))" -L rdma-emu \
    "${ctest_args[@]}"
fi
if [ $gpu_emu -eq 1 ]; then
  bash scripts/build.sh --gpu-emu --sanitize
  dir=${BUILD_DIR:-build-gpu-emu}
  export ASAN_OPTIONS=${ASAN_OPTIONS:-$asan_options}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  exec env -u OPENBLAS_CORETYPE ctest --test-dir "$dir" --output-on-failure -j"$((2 * $(nproc)))" \
    -L gpu-emu "${ctest_args[@]}"
fi
bash scripts/build.sh "${build_args[@]}"
if [ ${#build_args[@]} -gt 0 ]; then
  dir=${BUILD_DIR:-build-asan}
  # the Rossmann quality run (label long) takes 9 minutes under ASan and runs
  # the same code as test_train_job: it runs in the plain build only
  ctest_args=(-LE long "${ctest_args[@]}")
  export ASAN_OPTIONS=${ASAN_OPTIONS:-$asan_options}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
else
  dir=${BUILD_DIR:-build}
fi
# Two tests per core (here and in the emulated suites above: each starts
# its ranks on ephemeral loopback ports): most of them wait on daemons, sockets and deadlines
# (at -j2 on 2 cores the release suite kept them 40% busy).  2 cores, Intel
# Xeon: release 344 s at -j2, 271 s at -j4; the ASan suite 431 s at -j4
# (1,396 s of tests; 78% busy).  Unset OPENBLAS_CORETYPE so that OpenBLAS
# picks its kernels as on a user's machine.
env -u OPENBLAS_CORETYPE ctest --test-dir "$dir" --output-on-failure -j"$((2 * $(nproc)))" \
  "${ctest_args[@]}"
