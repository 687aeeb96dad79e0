#!/usr/bin/env python3
"""Every model family's training step in ringtrain and in PyTorch, side by
side on this machine: bench/train_step (the job file's defaults for the
family, on the Rossmann columns) and bench/torch_step.py (the same network,
bench/torch_models.py), alternated ROUNDS times per configuration so that a
VM's drift falls on both alike; medians.  OPENBLAS_CORETYPE is removed from
the environment (a user's machine has none).  PyTorch runs with glibc's
malloc told to keep freed memory (MALLOC_MMAP_THRESHOLD_ at its 32 MiB
ceiling, no trimming): it allocates its activations anew each step, and
on a VM where a page fault is dear (the Zen 5 development machine) the
defaults cost it 3.4x (rossmann, batch 256: 2,321 samples/s, 7,917 so);
ringtrain allocates once.  --plain-malloc runs it with the defaults.

    families.py [--build DIR] [--python PY] [--rounds N] [--seconds S]
                [--families a,b] [--batches 256,4096] [--threads 1,2] [--set KEY=VALUE]...
                [--plain-malloc]

Prints a Markdown table: samples/s of both, their ratio, the step's GEMM
rate and its fraction of the machine's sgemm rate (train_step's gemm_side:
OpenBLAS on B x 1000 x 1000 between the steps)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"families.py: {' '.join(cmd)} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--families", default="rossmann,mlp,resnet,dcn2,ft_transformer,tabm")
    ap.add_argument("--batches", default="256,4096")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--plain-malloc", action="store_true")
    a = ap.parse_args()
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    torch_env = dict(env)
    if not a.plain_malloc:
        torch_env.update(MALLOC_MMAP_THRESHOLD_=str(32 << 20), MALLOC_TRIM_THRESHOLD_=str(1 << 40),
                         MALLOC_TOP_PAD_=str(256 << 20))
    step = os.path.join(a.build, "bench", "train_step")
    sets = [x for s in a.set for x in ("--set", s)]
    print("| family | threads | batch | ringtrain samples/s | PyTorch samples/s | ratio | "
          "GFLOP/s | of sgemm |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for fam in a.families.split(","):
        spec = subprocess.run([step, "--architecture", fam, "--print-spec"] + sets,
                              capture_output=True, text=True, check=True).stdout
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(spec)
            path = f.name
        for threads in a.threads.split(","):
            for batch in a.batches.split(","):
                ours, theirs = [], []
                for _ in range(a.rounds):
                    ours.append(run([step, "--architecture", fam, "--device", "cpu", "--threads",
                                     threads, "--batch", batch, "--seconds", str(a.seconds),
                                     "--json"] + sets, env))
                    theirs.append(run([a.python, os.path.join(HERE, "torch_step.py"), path,
                                       "--batch", batch, "--threads", threads, "--seconds",
                                       str(a.seconds), "--json"], torch_env))
                o = statistics.median(r["samples_per_s"] for r in ours)
                t = statistics.median(r["samples_per_s"] for r in theirs)
                gf = statistics.median(r["gflops"] for r in ours)
                side = statistics.median(r["gemm_side_gflops"] for r in ours)
                print(f"| {fam} | {threads} | {batch} | {o:,.0f} | {t:,.0f} | {o / t:.2f}x | "
                      f"{gf:.1f} | {100 * gf / side:.0f}% |", flush=True)
        os.unlink(path)
    r = ours[-1]
    print(f"\nringtrain GEMM kernel {r['gemm_kernel']}, OpenBLAS {r['blas_core']}; "
          f"PyTorch {theirs[-1]['version']}, glibc malloc "
          f"{'defaults' if a.plain_malloc else 'keeping freed memory'}")


if __name__ == "__main__":
    main()
