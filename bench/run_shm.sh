#!/usr/bin/env bash
# Issue 13.5: ranks of one host.  Our allreduce over shared memory (shm)
# next to our TCP ring on loopback and Open MPI's shared-memory BTL (vader),
# np=2 and np=4, R interleaved rounds, the median round reported (the VM's
# speed drifts).  Open MPI comes from Debian's openmpi-bin (not needed by
# the tests; --install-baselines fetches it).
#   bench/run_shm.sh [--rounds R] [--build DIR] [--install-baselines]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
build=${RINGTRAIN_BUILD:-build}
install=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --build) build=$2; shift ;;
    --install-baselines) install=1 ;;
    *) echo "usage: bench/run_shm.sh [--rounds R] [--build DIR] [--install-baselines]" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$build/bench/allreduce" ] || bash scripts/build.sh >/dev/null
if [ $install -eq 1 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
bl="$build/bench/baselines"
mkdir -p "$bl"
have_mpi=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  mpicc -O2 bench/baselines/mpi_allreduce.c -o "$bl/mpi_allreduce" && have_mpi=1
fi
sizes=(4096 65536 1048576 67108864)
iters() { case $1 in 4096) echo 10000 ;; 65536) echo 5000 ;; 1048576) echo 500 ;; *) echo 6 ;; esac; }
ours() { timeout 300 "$build/bench/allreduce" --np "$1" --bytes "$2" --iters "$(iters "$2")" --transport "$3" |
  sed -n 's/^usec_per_iter=//p'; }
mpi() { timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$1" --mca pml ob1 --mca btl vader,self \
  "$bl/mpi_allreduce" --bytes "$2" --iters "$(iters "$2")" 2>/dev/null | sed -n 's/^usec_per_iter=//p'; }
declare -A R
impls=(shm tcp); [ $have_mpi -eq 1 ] && impls+=(mpi)
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $rounds rounds" >&2
for round in $(seq 1 "$rounds"); do
  for np in 2 4; do
    for b in "${sizes[@]}"; do
      R[shm,$np,$b,$round]=$(ours "$np" "$b" shm)
      R[tcp,$np,$b,$round]=$(ours "$np" "$b" tcp)
      [ $have_mpi -eq 1 ] && R[mpi,$np,$b,$round]=$(mpi "$np" "$b")
    done
  done
  echo "round $round: shm np=2 4K ${R[shm,2,4096,$round]} us" >&2
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '| np | bytes | ours shm us | ours tcp us | Open MPI vader us | shm / vader |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n'
for np in 2 4; do
  for b in "${sizes[@]}"; do
    for i in "${impls[@]}"; do
      declare "m_$i=$(med $(for r in $(seq 1 "$rounds"); do echo "${R[$i,$np,$b,$r]}"; done))"
    done
    awk -v np="$np" -v b="$b" -v s="$m_shm" -v t="$m_tcp" -v m="${m_mpi:-}" 'BEGIN {
      printf "| %d | %d | %.1f | %.1f | %s | %s |\n", np, b, s, t, m == "" ? "-" : sprintf("%.1f", m),
             m == "" ? "-" : sprintf("%.2fx", s / m) }'
  done
done
