#!/usr/bin/env python3
"""A/B of bench/allreduce builds (and Open MPI): each variant in turn, ROUNDS
times per size, then the medians and their ratios, so that a VM's drift (2x
between runs at 64 KiB, np = 4 on the 2-core development machine) falls on
every variant alike.

    python3 bench/ab_allreduce.py ROUNDS NP SIZES LABEL=ALLREDUCE[,ARG...] [...] [mpi]

SIZES is comma-separated bytes; ARGs go to that variant's bench/allreduce
(commas for spaces), e.g.

    python3 bench/ab_allreduce.py 5 4 4096,65536 before=/tmp/old/bench/allreduce \\
        after=build/bench/allreduce plain=build/bench/allreduce,--no-integrity mpi

`mpi` adds Open MPI over its TCP BTL on `lo` (bench/baselines/mpi_allreduce.c,
built into $TMPDIR when mpicc is there).  Iterations per run: enough for
~0.3 s at 1 GB/s, at least 20 (--iters; fewer runs gave 2x spreads at 64 KiB).
The ratios are each variant's median over the first variant's."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def iters_for(size):
    return max(20, min(5000, int(0.3e9 / max(size, 1))))


def mpi_binary():
    if not shutil.which("mpicc") or not shutil.which("mpirun"):
        sys.exit("mpi: mpicc/mpirun not found (bench/run_transport.sh --install-baselines)")
    out = os.path.join(tempfile.gettempdir(), "rt_ab_mpi_allreduce")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baselines", "mpi_allreduce.c")
    subprocess.run(["mpicc", "-O2", src, "-o", out], check=True)
    return out


def usec(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout
    for line in out.splitlines():
        if line.startswith("usec_per_iter="):
            return float(line.split("=", 1)[1])
    sys.exit(f"no usec_per_iter from {' '.join(cmd)}")


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    rounds, np_ = int(sys.argv[1]), sys.argv[2]
    sizes = [int(s) for s in sys.argv[3].split(",")]
    variants = []
    for a in sys.argv[4:]:
        if a == "mpi":
            variants.append(("mpi", ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", np_,
                                     "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                                     "--mca", "btl_tcp_if_include", "lo", mpi_binary()]))
        else:
            label, spec = a.split("=", 1)
            binary, *args = spec.split(",")
            variants.append((label, [binary, "--np", np_] + args))
    for size in sizes:
        res = {label: [] for label, _ in variants}
        sized = ["--bytes", str(size), "--iters", str(iters_for(size))]
        for _ in range(rounds):
            for label, cmd in variants:
                res[label].append(usec(cmd + sized))
        base = statistics.median(res[variants[0][0]])
        print(f"np {np_}, {size} bytes, {rounds} rounds:")
        for label, _ in variants:
            v = res[label]
            m = statistics.median(v)
            print(f"  {label}: median {m:.1f} us ({min(v):.1f}-{max(v):.1f}), {m / base:.2f}x")


if __name__ == "__main__":
    main()
