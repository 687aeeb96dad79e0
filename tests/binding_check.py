"""binding_check.py — what test_cluster's test_python_binding runs on every
rank with `ringtrain exec`: the Python binding's collectives on NumPy arrays
of each dtype against a serial reference computed from every rank's data.

  binding_check.py collectives   all of them, then report_result
  binding_check.py dead-peer     the last rank leaves after init; the others'
                                 allreduce must raise RingtrainError naming it
  binding_check.py no-agent      the collectives, without the agent's reports
                                 (test_slurm_cluster runs it under srun)
"""
import os
import sys

import numpy as np

import ringtrain as rt

mode = sys.argv[1] if len(sys.argv) > 1 else "collectives"
rt.init()
r, n = rt.rank(), rt.size()
print("rank %d of %d (local %d/%d, attempt %d, %s, library %s)" %
      (r, n, rt.local_rank(), rt.local_size(), rt.attempt(), rt.transport(), rt.version()),
      flush=True)

if mode == "dead-peer":
    if r == n - 1:
        os._exit(0)  # gone without a word: the kernel closes its sockets
    try:
        rt.allreduce(np.ones(1 << 16, dtype=np.float32))
        print("rank %d: allreduce with a dead peer returned" % r, flush=True)
        sys.exit(1)
    except rt.RingtrainError as e:
        print("rank %d caught: %s" % (r, e), flush=True)
    try:
        rt.barrier()
        sys.exit(1)
    except rt.RingtrainError as e:  # broken now: the first error again
        print("rank %d then: %s" % (r, e), flush=True)
    sys.exit(0)

checks = 0
for dt in (np.float32, np.float64, np.int32, np.int64):
    for count in (1000, 100003):  # small (gather) and chunked ring paths
        data = [np.random.default_rng(10 * k + count).integers(-50, 50, size=count).astype(dt)
                for k in range(n)]
        stack = np.stack(data)
        ops = {"sum": stack.sum(0), "max": stack.max(0), "min": stack.min(0)}
        if np.issubdtype(dt, np.floating):
            ops["avg"] = stack.sum(0) / n
        for op, ref in ops.items():
            a = data[r].copy()
            out = rt.allreduce(a, op=op)
            assert out is a, "allreduce is in place"
            if op == "avg":
                assert np.allclose(a, ref, rtol=1e-6), (dt, count, op)
            else:
                assert np.array_equal(a, ref.astype(dt)), (dt, count, op)
            checks += 1
# a strided view: reduced in place through a copy
base = np.arange(20, dtype=np.float64) * (r + 1)
view = base[::2]
rt.allreduce(view)
assert np.array_equal(base[::2], np.arange(0, 20, 2) * (n * (n + 1) / 2))
assert np.array_equal(base[1::2], np.arange(1, 20, 2) * (r + 1)), "the other elements are untouched"
# broadcast from the last rank, allgather, barrier
b = np.full((3, 4), r, dtype=np.int32)
rt.broadcast(b, root=n - 1)
assert (b == n - 1).all()
g = rt.allgather(np.array([r, r * r], dtype=np.int64))
assert g.shape == (n, 2) and [tuple(x) for x in g] == [(k, k * k) for k in range(n)]
rt.barrier()
for bad, exc in ((np.ones(4, dtype=np.float16), TypeError), ([1.0, 2.0], TypeError)):
    try:
        rt.allreduce(bad)
        sys.exit("allreduce accepted %r" % (bad,))
    except exc:
        pass
try:
    rt.allreduce(np.ones(4, dtype=np.float32), op="mean")
    sys.exit("allreduce accepted op mean")
except ValueError:
    pass
if mode != "no-agent":
    rt.report_progress({"kind": "step", "step": 1, "steps": 1})
    rt.report_result({"rank": r, "checks": checks, "gathered": g[:, 1].tolist()})
rt.shutdown()
print("binding ok: rank %d, %d reductions" % (r, checks), flush=True)
