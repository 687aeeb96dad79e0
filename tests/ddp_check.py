"""ddp_check.py — a PyTorch DistributedDataParallel program written for
torchrun (gloo, init_method="env://"), run by test_installed.sh under
`ringtrain exec` on two hosts and under torchrun on one: each rank trains a
small model on its own data for a few steps and prints a checksum of the
parameters, which must be equal on every rank and under both launchers.

  --fail-rank R --code C   rank R exits with C in attempt 1 (restart count 0)
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fail-rank", type=int, default=-1)
p.add_argument("--code", type=int, default=7)
p.add_argument("--steps", type=int, default=5)
args = p.parse_args()

dist.init_process_group("gloo", init_method="env://")
rank, size = dist.get_rank(), dist.get_world_size()
restarts = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
print("rank %d of %d, local rank %s, restart count %d" %
      (rank, size, os.environ.get("LOCAL_RANK"), restarts), flush=True)
if rank == args.fail_rank and restarts == 0:
    print("rank %d failing on purpose with code %d" % (rank, args.code), flush=True)
    # at once, as a crash does: after sys.exit the interpreter's teardown closes
    # gloo's sockets first, and the peer failing on them may exit before this
    # process does -- the job then names the peer (the first failure is the
    # first exit to reach the coordinator; torchrun's has the same race)
    os._exit(args.code)
if args.fail_rank >= 0 and restarts == 0:
    # the others wait before their first collective: a peer blocked in one
    # when the failing rank's sockets close fails on them at once, and even
    # os._exit did not always make the failing rank's exit reach the
    # coordinator first (3 ms behind its peer's once, on CI)
    time.sleep(1)

torch.manual_seed(0)  # the same initial model on every rank
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
gen = torch.Generator().manual_seed(100 + rank)  # each rank its own data
for step in range(args.steps):
    x = torch.randn(32, 8, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(ddp(x), y)
    loss.backward()
    opt.step()
flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()]).double()
print("checksum %.10e %.10e" % (flat.sum().item(), (flat * flat).sum().item()), flush=True)
dist.destroy_process_group()
