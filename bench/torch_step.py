#!/usr/bin/env python3
"""samples/s of one training step (forward, MAE loss, backward, Adam) of a
ringtrain model family in PyTorch: the baseline bench/train_step is compared
with, the same network (bench/torch_models.py) on the same machine and
threads, in the same run (bench/families.sh).

    torch_step.py SPEC.json --batch B --threads T [--seconds S] [--precision fp32|bf16] [--json]

SPEC.json is `train_step --architecture NAME --print-spec`.  The step is
what ringtrain's is: train mode (batch statistics, dropout on), the loss
and its backward, torch.optim.Adam with ringtrain's epsilon, zero_grad with
set_to_none; the data is one fixed random batch, as train_step's.
--precision bf16 runs the forward and the loss under
torch.autocast("cpu", dtype=torch.bfloat16) (the mixed-precision recipe
of PyTorch's CPU documentation), as train_step --precision bf16 is
ringtrain's; the output names the oneDNN ISA PyTorch could use."""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    with open(a.spec) as f:
        spec = json.load(f)
    model = torch_models.build(spec)
    model.train()
    g = torch.Generator().manual_seed(1)
    cats = spec["categorical"]
    cat = (torch.stack([torch.randint(0, c["vocab"], (a.batch,), generator=g) for c in cats], 1)
           if cats else torch.zeros(a.batch, 0, dtype=torch.long))
    cont = torch.randn(a.batch, spec["n_cont"], generator=g)
    label = 7.0 + torch.rand(a.batch, generator=g) * 2
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, eps=1e-3)

    bf16 = a.precision == "bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            if hasattr(model, "members"):  # tabm: the members' mean loss, as ringtrain trains it
                loss = (model.members(cat, cont).float() - label[:, None]).abs().mean()
            else:
                loss = (model(cat, cont).float() - label).abs().mean()
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    times = []
    until = time.perf_counter() + a.seconds
    while time.perf_counter() < until or len(times) < 5:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    out = {"framework": "pytorch", "version": torch.__version__, "architecture": spec["architecture"],
           "threads": a.threads, "batch": a.batch, "samples_per_s": a.batch / med,
           "step_us": med * 1e6, "steps": len(times), "precision": a.precision,
           "cpu_capability": torch.backends.cpu.get_cpu_capability()
           if hasattr(torch.backends, "cpu") and hasattr(torch.backends.cpu, "get_cpu_capability")
           else ""}
    if a.json:
        print(json.dumps(out))
    else:
        print(f"pytorch {torch.__version__} {spec['architecture']} {a.precision}: {a.threads} "
              f"thread(s), batch {a.batch}: {out['samples_per_s']:.0f} samples/s, step "
              f"{med * 1e3:.2f} ms ({len(times)} steps)")


if __name__ == "__main__":
    main()
