#!/usr/bin/env python3
"""Markdown tables for scripts/gpu-run.sh's report.

    gpu_report.py BENCH.jsonl      ringtrain (train_step --json) against PyTorch
                                   eager and CUDA graphs (torch_step_gpu.py), and
                                   the step's GEMM rate against cuBLAS's beside it
    gpu_report.py --ncu NCU.csv    per-kernel times (ncu --csv --page raw with
                                   gpu__time_duration.sum), largest total first"""
import csv
import json
import sys
from collections import defaultdict


def bench(path):
    rt, pt = {}, {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            math = ("BF16" if r.get("precision") == "bf16" else "TF32" if r["tf32"] else "FP32")
            key = (r["architecture"], r["batch"], math)
            if r.get("framework") == "pytorch":
                pt[key + (r["mode"],)] = r["step_us"]
            elif r.get("device") == "cuda":
                rt[key] = r
    print()
    print("| architecture | batch | math | ringtrain µs | PyTorch eager µs | PyTorch graphs µs "
          "| × eager | × graphs | ringtrain GFLOP/s | cuBLAS GFLOP/s (B×1000×1000) | % of cuBLAS |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(rt, key=lambda k: (k[0], k[2], k[1])):
        r = rt[key]
        e, g = pt.get(key + ("eager",)), pt.get(key + ("graphs",))
        us = r["step_us"]

        def ratio(x):
            return f"{x / us:.2f}" if x else "—"

        def num(x):
            return f"{x:.1f}" if x else "—"
        peak = r.get("gemm_peak_gflops") or 0
        print(f"| {key[0]} | {key[1]} | {key[2]} | {us:.1f} | {num(e)} | {num(g)} "
              f"| {ratio(e)} | {ratio(g)} | {r['gflops']:.0f} | {peak:.0f} "
              f"| {100 * r['gflops'] / peak if peak else 0:.0f}% |")
    pairs = [(k, rt[k], rt.get((k[0], k[1], "TF32"))) for k in sorted(rt) if k[2] == "BF16"]
    if pairs:  # [model] precision = bf16 against TF32 (issue 48: >= 1.5x at batch 8192)
        print()
        print("| architecture | batch | TF32 µs | bf16 µs | bf16 speed-up |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for k, b, t in pairs:
            bus = b["step_us"]
            tus = f"{t['step_us']:.1f}" if t else "—"
            up = f"{t['step_us'] / bus:.2f}x" if t else "—"
            print(f"| {k[0]} | {k[1]} | {tus} | {bus:.1f} | {up} |")


def ncu(path):
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        print(f"\n{path}: no kernels profiled")
        return
    head, units = rows[0], rows[1]
    name_i = head.index("Kernel Name")
    t_i = head.index("gpu__time_duration.sum")
    scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(units[t_i], 1e-3)
    total = defaultdict(float)
    count = defaultdict(int)
    for r in rows[2:]:
        try:
            t = float(r[t_i].replace(",", "")) * scale
        except ValueError:
            continue
        name = r[name_i].split("(")[0][:70]
        total[name] += t
        count[name] += 1
    s = sum(total.values())
    print(f"\n{path.rsplit('/', 1)[-1]}: {sum(count.values())} kernels, {s:.1f} µs in all")
    print()
    print("| kernel | launches | µs in all | µs each | share |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in sorted(total, key=total.get, reverse=True)[:25]:
        print(f"| `{name}` | {count[name]} | {total[name]:.1f} | {total[name] / count[name]:.2f} "
              f"| {100 * total[name] / s:.0f}% |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--ncu":
        ncu(sys.argv[2])
    elif len(sys.argv) == 2:
        bench(sys.argv[1])
    else:
        sys.exit(__doc__)
