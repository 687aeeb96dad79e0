#!/usr/bin/env bash
# The RDMA transport with ranks as real processes, each with its own
# (emulated) adapter: bench/allreduce --check (integer data, every result
# compared exactly) over {2, 3, 5, 8} ranks, from 4 bytes to 1 MiB, with
# integrity tags (the default), encryption and neither; and the hierarchy
# (hosts of 2: shared memory within, RDMA across).  Built and run only in
# the RDMA-emulation build (CTest label rdma-emu: scripts/test.sh
# --rdma-emu); on a real adapter the same commands run unchanged.
# Usage: test_rdma_processes.sh ALLREDUCE
set -euo pipefail
bin=$1
run() {
  if ! out=$(timeout 120 "$bin" --transport rdma --check --iters 3 "$@" 2>&1); then
    echo "FAIL: allreduce --transport rdma $*"
    echo "$out" | tail -20
    exit 1
  fi
}
for n in 2 3 5 8; do
  for b in 4 4096 1048576; do
    run --np $n --bytes $b
  done
done
run --np 3 --bytes 262144 --encrypt
run --np 3 --bytes 262144 --no-integrity
run --np 4 --bytes 1048576 --hier 2
echo "ok: RDMA allreduce over 2, 3, 5, 8 processes (4 B - 1 MiB), encrypted, plain, 2 x 2"
