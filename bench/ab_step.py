#!/usr/bin/env python3
"""A/B of bench/train_step builds: runs each build in turn, ROUNDS times, and
prints the medians, so that a VM's drift (±20% from one minute to the next on
the development machine) falls on both sides alike.

    python3 bench/ab_step.py ROUNDS BATCH THREADS LABEL=TRAIN_STEP [LABEL=TRAIN_STEP ...]

e.g. python3 bench/ab_step.py 6 100 1 before=/tmp/old/bench/train_step after=build/bench/train_step

OPENBLAS_CORETYPE is removed from the environment (a user's machine has none).
The ratio is each run's step GFLOP/s over its own sgemm figure (gemm_peak, the
warm best); ratio_side over the sgemm median taken between its steps (builds
that print it; nan otherwise)."""
import os
import statistics
import subprocess
import sys


def run(binary, batch, threads, env):
    out = subprocess.run([binary, "--device", "cpu", "--threads", threads, "--batch", batch,
                          "--seconds", "1.5"], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    f = out.strip().splitlines()[-1].split()
    # device threads batch samples/s step_us GFLOP/s gemm_peak ratio% [gemm_side ratio_side%]
    side = float(f[9].rstrip("%")) if len(f) > 9 else float("nan")
    return float(f[3]), float(f[4]), float(f[6]), float(f[7].rstrip("%")), side


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    rounds, batch, threads = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    builds = [a.split("=", 1) for a in sys.argv[4:]]
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    res = {label: [] for label, _ in builds}
    for _ in range(rounds):
        for label, binary in builds:
            res[label].append(run(binary, batch, threads, env))
    for label, _ in builds:
        v = res[label]
        med = [statistics.median(x[i] for x in v) for i in range(5)]
        print(f"{label}: batch {batch}, {threads} thread(s): {med[0]:.0f} samples/s, "
              f"step {med[1] / 1000:.1f} ms, sgemm {med[2]:.1f} GFLOP/s, ratio {med[3]:.0f}% "
              f"({min(x[3] for x in v):.0f}-{max(x[3] for x in v):.0f}), ratio_side "
              f"{med[4]:.0f}% ({min(x[4] for x in v):.0f}-{max(x[4] for x in v):.0f}), "
              f"{len(v)} runs")


if __name__ == "__main__":
    main()
