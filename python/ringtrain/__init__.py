"""ringtrain — the Run API from Python: a program started by `ringtrain exec`
joins its job's ring and runs collectives on NumPy arrays.

    import numpy as np
    import ringtrain

    ringtrain.init()                      # from the environment the agent set
    grad = np.ones(1000, dtype=np.float32)
    ringtrain.allreduce(grad, op="avg")   # in place, every rank gets the same
    ringtrain.report_progress({"kind": "step", "step": 1, "steps": 10})
    ringtrain.report_result({"rank": ringtrain.rank(), "loss": 0.25})
    ringtrain.shutdown()

A thin layer over libringtrain (rt_comm.h) with ctypes: no compiled extension.
The library is found from RINGTRAIN_LIBRARY, then RT_LIBRARY (the library of
the ringtrain whose agent started this rank: installed beside it, or in its
build folder), then the system's library path (libringtrain.so.0), then
/usr/local/lib and /usr/lib.  Errors raise
RingtrainError carrying ringtrain's message (which names the rank and address
that failed); after a failed collective the communicator is broken and every
later call raises the first error, as in C.  Collectives block (the GIL is
released meanwhile) and are called from one thread at a time.
"""
import ctypes
import ctypes.util
import json
import os

__all__ = ["RingtrainError", "init", "shutdown", "initialized", "rank", "size", "local_rank",
           "local_size", "cross_rank", "cross_size", "job_id", "attempt", "transport",
           "allreduce", "broadcast", "allgather", "barrier", "report_progress", "report_result",
           "version"]


def __getattr__(name):
    """ringtrain.__version__: the version of the libringtrain in use (one
    version for the project, CMakeLists.txt's)."""
    if name == "__version__":
        return version()
    raise AttributeError("module 'ringtrain' has no attribute %r" % name)


_ERR_LEN = 512
_CTYPES = {"float32": 0, "float64": 1, "int32": 2, "int64": 3}
_OPS = {"sum": 0, "avg": 1, "max": 2, "min": 3}


class RingtrainError(RuntimeError):
    """A ringtrain call failed; str() is ringtrain's message, .status its code."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class _RankInfo(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int), ("size", ctypes.c_int), ("local_rank", ctypes.c_int),
                ("local_size", ctypes.c_int), ("cross_rank", ctypes.c_int),
                ("cross_size", ctypes.c_int), ("job_id", ctypes.c_int64),
                ("attempt", ctypes.c_int64), ("transport", ctypes.c_char * 16),
                ("collective_timeout_us", ctypes.c_int64)]


_lib = None
_comm = None
_info = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    names = []
    for var in ("RINGTRAIN_LIBRARY", "RT_LIBRARY"):
        if os.environ.get(var):
            names.append(os.environ[var])
    found = ctypes.util.find_library("ringtrain")
    names += [n for n in (found, "libringtrain.so.0", "/usr/local/lib/libringtrain.so.0",
                          "/usr/lib/libringtrain.so.0") if n]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError as e:
            tried.append("%s (%s)" % (name, e))
    else:
        raise RingtrainError("cannot load libringtrain: tried " + "; ".join(tried) +
                             " (set RINGTRAIN_LIBRARY to the library's path)")
    vp, sz, i, cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p
    lib.rt_init_from_env.argtypes = [ctypes.POINTER(vp), ctypes.POINTER(_RankInfo), cp]
    lib.rt_init_from_env.restype = i
    lib.rt_comm_destroy.argtypes = [vp]
    lib.rt_comm_destroy.restype = None
    lib.rt_comm_last_error.argtypes = [vp]
    lib.rt_comm_last_error.restype = cp
    lib.rt_allreduce.argtypes = [vp, vp, sz, i, i]
    lib.rt_allreduce.restype = i
    lib.rt_broadcast.argtypes = [vp, vp, sz, i]
    lib.rt_broadcast.restype = i
    lib.rt_allgather.argtypes = [vp, vp, vp, sz]
    lib.rt_allgather.restype = i
    lib.rt_barrier.argtypes = [vp]
    lib.rt_barrier.restype = i
    lib.rt_report_progress.argtypes = [cp]
    lib.rt_report_progress.restype = None
    lib.rt_report_result.argtypes = [cp, cp]
    lib.rt_report_result.restype = i
    lib.rt_strerror.argtypes = [i]
    lib.rt_strerror.restype = cp
    lib.rt_version.argtypes = []
    lib.rt_version.restype = cp
    _lib = lib
    return lib


def version():
    """The version of the libringtrain in use."""
    return _load().rt_version().decode()


def init():
    """Join this job's ring from the environment the agent set (RT_* and the
    rendezvous file).  Blocks until every rank has joined or the job's
    collective timeout passes.  Calling it again is a no-op."""
    global _comm, _info
    if _comm is not None:
        return
    lib = _load()
    comm, info = ctypes.c_void_p(), _RankInfo()
    err = ctypes.create_string_buffer(_ERR_LEN)
    st = lib.rt_init_from_env(ctypes.byref(comm), ctypes.byref(info), err)
    if st != 0:
        raise RingtrainError(err.value.decode(errors="replace"), st)
    _comm, _info = comm, info


def initialized():
    return _comm is not None


def shutdown():
    """Leave the ring (close its connections).  Calling it again is a no-op."""
    global _comm
    if _comm is not None:
        _lib.rt_comm_destroy(_comm)
        _comm = None


def _need():
    if _comm is None:
        raise RingtrainError("ringtrain.init() has not been called")
    return _info


def rank():
    return _need().rank


def size():
    return _need().size


def local_rank():
    return _need().local_rank


def local_size():
    return _need().local_size


def cross_rank():
    return _need().cross_rank


def cross_size():
    return _need().cross_size


def job_id():
    return _need().job_id


def attempt():
    return _need().attempt


def transport():
    return _need().transport.decode()


def _check(st):
    if st != 0:
        msg = _lib.rt_comm_last_error(_comm)
        msg = msg.decode(errors="replace") if msg else ""
        raise RingtrainError(msg or _lib.rt_strerror(st).decode(), st)


def _np():
    try:
        import numpy
    except ImportError as e:
        raise RingtrainError("collectives on arrays need NumPy (python3-numpy): %s" % e)
    return numpy


def _work(arr):
    """(buffer to hand to C, whether to copy it back into arr)."""
    np = _np()
    if not isinstance(arr, np.ndarray):
        raise TypeError("expected a numpy.ndarray, got %s" % type(arr).__name__)
    if arr.flags.c_contiguous and arr.flags.writeable and arr.dtype.isnative:
        return arr, False
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("=")), True


def allreduce(arr, op="sum"):
    """Reduce arr over every rank, in place (op: "sum", "avg", "max", "min";
    dtypes float32, float64, int32, int64).  Contiguous arrays are used
    without a copy.  The result is identical on every rank.  Returns arr."""
    _need()
    name = arr.dtype.name if hasattr(arr, "dtype") else type(arr).__name__
    if name not in _CTYPES:
        raise TypeError("allreduce supports float32, float64, int32 and int64, not %s" % name)
    if op not in _OPS:
        raise ValueError("op must be one of %s, not %r" % (", ".join(_OPS), op))
    buf, back = _work(arr)
    _check(_lib.rt_allreduce(_comm, buf.ctypes.data, buf.size, _CTYPES[name], _OPS[op]))
    if back:
        arr[...] = buf
    return arr


def broadcast(arr, root=0):
    """arr on every rank becomes root's (same shape and dtype everywhere).
    In place; returns arr."""
    info = _need()
    if not 0 <= root < info.size:
        raise ValueError("root %d is not a rank (size %d)" % (root, info.size))
    buf, back = _work(arr)
    _check(_lib.rt_broadcast(_comm, buf.ctypes.data, buf.nbytes, root))
    if back:
        arr[...] = buf
    return arr


def allgather(arr):
    """Every rank's arr (same shape and dtype everywhere), stacked in rank
    order: a new array of shape (size,) + arr.shape."""
    info = _need()
    np = _np()
    send, _ = _work(arr)
    out = np.empty((info.size,) + send.shape, dtype=send.dtype)
    _check(_lib.rt_allgather(_comm, send.ctypes.data, out.ctypes.data, send.nbytes))
    return out


def barrier():
    """Return when every rank has entered it."""
    _need()
    _check(_lib.rt_barrier(_comm))


def report_progress(data):
    """Send a progress report (a dict, e.g. {"kind": "step", "step": 3,
    "steps": 10} or {"kind": "epoch", "epoch": 2, "loss": 0.4}) to the agent;
    rank 0's shows in `ringtrain status` and the CLI's progress line.  Best
    effort; a no-op when not started by an agent."""
    if not isinstance(data, dict):
        raise TypeError("a progress report is a dict")
    _load().rt_report_progress(json.dumps(data, separators=(",", ":")).encode())


def report_result(value):
    """Report this rank's result (anything json.dumps takes, at most 60 KiB),
    kept with the job's attempt: `ringtrain status JOB --results`, and
    "results" in GET /v1/jobs/ID.  A later call replaces it."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    err = ctypes.create_string_buffer(_ERR_LEN)
    st = _load().rt_report_result(text.encode(), err)
    if st != 0:
        raise RingtrainError(err.value.decode(errors="replace"), st)
