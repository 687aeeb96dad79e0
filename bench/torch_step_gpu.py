#!/usr/bin/env python3
"""The baseline of bench/train_step --device cuda: one training step
(forward, MAE loss, backward, Adam) of each ringtrain family in PyTorch on
the same GPU, in the same call (scripts/gpu-run.sh), two ways:

  eager   the step as a PyTorch user writes it (torch.optim.Adam's default
          multi-tensor implementation on CUDA);
  graphs  the whole step captured once with torch.cuda.graph and replayed
          (Adam(capturable=True)), as PyTorch's documentation does it: the
          counterpart of ringtrain's captured step.

    torch_step_gpu.py SPEC.json... [--batches 100,1024,8192] [--seconds S] [--json]
                      [--math fp32,tf32,bf16]

Each SPEC.json is `train_step --architecture NAME --print-spec`; the
network is bench/torch_models.py's, the data one fixed random batch, as
train_step's.  --math (default fp32,tf32): TF32 off (FP32) and on, as
train_step without and with --tf32; bf16 the forward and loss under
torch.autocast("cuda", dtype=torch.bfloat16), as train_step --precision
bf16 (autocast's weight cache off: it may not live across a graph's
replays).  Times are CUDA-event times per step over about S seconds."""
import contextlib
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def batch_for(spec, b, dev):
    g = torch.Generator().manual_seed(1)
    cats = spec["categorical"]
    cat = (torch.stack([torch.randint(0, c["vocab"], (b,), generator=g) for c in cats], 1)
           if cats else torch.zeros(b, 0, dtype=torch.long))
    cont = torch.randn(b, spec["n_cont"], generator=g)
    label = 7.0 + torch.rand(b, generator=g) * 2
    return cat.to(dev), cont.to(dev), label.to(dev)


def per_step_us(fn, seconds):
    """CUDA-event time of one call of fn, over about `seconds`."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(3):
        fn()
    b.record()
    b.synchronize()
    one_ms = max(a.elapsed_time(b) / 3, 1e-3)
    n = int(min(max(seconds * 1e3 / one_ms, 10), 100000))
    a.record()
    for _ in range(n):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3 / n


def measure(spec, b, mode, math, seconds):
    tf32 = math != "fp32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch_models.build(spec).to(dev)
    model.train()
    cat, cont, label = batch_for(spec, b, dev)
    graphs = mode == "graphs"
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, eps=1e-3, capturable=graphs)

    def loss_of():  # tabm: the members' mean loss, as ringtrain trains it
        with (torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False)
              if math == "bf16" else contextlib.nullcontext()):
            if hasattr(model, "members"):
                return (model.members(cat, cont).float() - label[:, None]).abs().mean()
            return (model(cat, cont).float() - label).abs().mean()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_of()
        loss.backward()
        opt.step()

    if not graphs:
        return per_step_us(step, seconds)
    # warm up on a side stream, then capture the whole step (PyTorch's
    # "whole network capture"): the gradients stay allocated between replays
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss = loss_of()
        loss.backward()
        opt.step()
    return per_step_us(g.replay, seconds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--batches", default="100,1024,8192")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--math", default="fp32,tf32")
    a = ap.parse_args()
    maths = a.math.split(",")
    if not set(maths) <= {"fp32", "tf32", "bf16"}:
        ap.error("--math: a list of fp32, tf32, bf16")
    if not torch.cuda.is_available():
        print("torch_step_gpu.py: PyTorch sees no CUDA device", file=sys.stderr)
        sys.exit(77)
    name = torch.cuda.get_device_name(0)
    for path in a.specs:
        with open(path) as f:
            spec = json.load(f)
        for math in maths:
            for b in (int(x) for x in a.batches.split(",")):
                for mode in ("eager", "graphs"):
                    try:
                        us = measure(spec, b, mode, math, a.seconds)
                    except Exception as e:  # one failing point must not hide the others
                        print(f"torch_step_gpu.py: {spec['architecture']} batch {b} {mode}: {e}",
                              file=sys.stderr)
                        continue
                    out = {"framework": "pytorch", "version": torch.__version__, "gpu": name,
                           "architecture": spec["architecture"], "device": "cuda", "mode": mode,
                           "tf32": math != "fp32", "precision": "bf16" if math == "bf16" else "fp32",
                           "batch": b, "step_us": round(us, 2),
                           "samples_per_s": round(b / (us * 1e-6), 1)}
                    if a.json:
                        print(json.dumps(out))
                    else:
                        print(f"pytorch {mode:6s} {spec['architecture']:15s} batch {b:5d} "
                              f"{math}: {us:9.1f} us/step")


if __name__ == "__main__":
    main()
