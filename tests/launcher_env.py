"""launcher_env.py — what test_cluster's test_launcher_env runs on every rank
with `ringtrain exec`: prints the torchrun / horovodrun variables it was given
and then does what torch.distributed's env:// rendezvous does — rank 0 opens a
store at MASTER_ADDR:MASTER_PORT, every other rank connects to it — summing
the ranks there.  Standard library only."""
import os
import socket
import sys
import time

KEYS = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
        "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
        "HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE",
        "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE", "FOO", "BAR", "PYTHONPATH",
        "CUDA_VISIBLE_DEVICES"]

env = os.environ
print("env " + " ".join("%s=%s" % (k, env.get(k, "-")) for k in KEYS), flush=True)
addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
rank, size = int(env["RANK"]), int(env["WORLD_SIZE"])
deadline = time.time() + 30
if rank == 0:
    server = socket.create_server((addr, port))  # fails if anyone holds the port
    server.settimeout(30)
    peers, total = [], 0
    for _ in range(size - 1):
        conn, _ = server.accept()
        f = conn.makefile("rw")
        total += int(f.readline())
        peers.append((conn, f))
    for conn, f in peers:
        f.write("%d\n" % total)
        f.flush()
        conn.close()
else:
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
    f = conn.makefile("rw")
    f.write("%d\n" % rank)
    f.flush()
    total = int(f.readline())
print("store total %d" % total, flush=True)
sys.exit(0)
