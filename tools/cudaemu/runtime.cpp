/* runtime.cpp — cudaemu's CUDA runtime: devices, errors, memory, streams,
 * events and kernel launches.  Graph capture is in graph.cpp.
 *
 * Streams: each stream has a worker thread that runs its operations in issue
 * order; the legacy default stream (0) orders itself against the blocking
 * streams of its device as CUDA documents.  Memory: cudaMalloc is an
 * exact-size host allocation (AddressSanitizer sees overruns) that the
 * runtime remembers, so copies, memsets and the libraries check that device
 * pointers are device pointers.  Copies from or to pageable host memory
 * complete before the call returns, as CUDA's do; copies with pinned memory
 * are asynchronous, so a program that reuses a pinned buffer too early reads
 * the wrong data here too. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "emu.h"
#include "graph.h"

namespace cudaemu {

int option_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1 << 20)
        fatal("%s=%s is not a number in [0, 1048576]", name, v);
    return (int)x;
}

void fatal(const char *fmt, ...)
{
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cudaemu: %s\n", msg);
    fflush(stderr);
    abort();
}

static std::atomic<int> g_sticky{cudaSuccess};
static thread_local cudaError_t tl_last = cudaSuccess;
static std::atomic<unsigned long long> g_launches{0};

void device_fault(cudaError_t err, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cudaemu: device fault (%s): %s\n", cudaGetErrorName(err), msg);
    int ok = cudaSuccess;
    g_sticky.compare_exchange_strong(ok, err);
}

cudaError_t set_error(cudaError_t e)
{
    if (e != cudaSuccess)
        tl_last = e;
    return e;
}

/* Every API call starts here: a sticky error fails everything after it. */
static cudaError_t sticky(void)
{
    int s = g_sticky.load();
    return s == cudaSuccess ? cudaSuccess : set_error((cudaError_t)s);
}

#define CHECK_STICKY()                                                                             \
    do {                                                                                           \
        cudaError_t se_ = sticky();                                                                \
        if (se_ != cudaSuccess)                                                                    \
            return se_;                                                                            \
    } while (0)

/* ---- devices ----------------------------------------------------------------- */

struct devices {
    int physical;
    std::vector<int> visible; /* visible index -> physical */
};

static const devices &devs(void)
{
    static devices d;
    static std::once_flag once;
    std::call_once(once, [] {
        d.physical = option_int("CUDAEMU_DEVICES", 2);
        const char *v = getenv("CUDA_VISIBLE_DEVICES");
        if (!v) {
            for (int i = 0; i < d.physical; i++)
                d.visible.push_back(i);
            return;
        }
        /* as CUDA: a comma-separated list, cut at the first invalid entry */
        const char *p = v;
        while (*p) {
            char *end;
            long x = strtol(p, &end, 10);
            if (end == p || x < 0 || x >= d.physical || (*end && *end != ','))
                break;
            bool dup = false;
            for (int o : d.visible)
                dup |= o == x;
            if (dup)
                break;
            d.visible.push_back((int)x);
            p = *end ? end + 1 : end;
        }
    });
    return d;
}

static thread_local int tl_device = 0;

int physical_device(void)
{
    const devices &d = devs();
    return tl_device < (int)d.visible.size() ? d.visible[(size_t)tl_device] : -1;
}

} /* namespace cudaemu */

using namespace cudaemu;

extern "C" {

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
#define N(x) case x: return #x
        N(cudaSuccess); N(cudaErrorInvalidValue); N(cudaErrorMemoryAllocation);
        N(cudaErrorInitializationError); N(cudaErrorInvalidConfiguration);
        N(cudaErrorInvalidDevicePointer); N(cudaErrorInvalidMemcpyDirection); N(cudaErrorNoDevice);
        N(cudaErrorInvalidDevice); N(cudaErrorInvalidResourceHandle); N(cudaErrorIllegalState); N(cudaErrorNotReady);
        N(cudaErrorIllegalAddress); N(cudaErrorLaunchOutOfResources); N(cudaErrorAssert);
        N(cudaErrorLaunchFailure); N(cudaErrorNotSupported); N(cudaErrorStreamCaptureUnsupported);
        N(cudaErrorStreamCaptureInvalidated); N(cudaErrorStreamCaptureMerge);
        N(cudaErrorStreamCaptureUnmatched); N(cudaErrorStreamCaptureUnjoined);
        N(cudaErrorStreamCaptureIsolation); N(cudaErrorStreamCaptureImplicit);
        N(cudaErrorCapturedEvent); N(cudaErrorStreamCaptureWrongThread); N(cudaErrorUnknown);
#undef N
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorAssert: return "device-side assert triggered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureMerge: return "operation would result in a merge of separate capture sequences";
    case cudaErrorStreamCaptureUnmatched: return "capture was not ended in the same stream as it began";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    default: return "unknown error";
    }
}

cudaError_t cudaGetLastError(void)
{
    int s = g_sticky.load();
    if (s != cudaSuccess)
        return (cudaError_t)s;
    cudaError_t e = tl_last;
    tl_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    int s = g_sticky.load();
    return s != cudaSuccess ? (cudaError_t)s : tl_last;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = (int)devs().visible.size();
    return *n > 0 ? cudaSuccess : set_error(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int dev)
{
    if (dev < 0 || dev >= (int)devs().visible.size())
        return set_error(devs().visible.empty() ? cudaErrorNoDevice : cudaErrorInvalidDevice);
    tl_device = dev;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev)
{
    if (devs().visible.empty())
        return set_error(cudaErrorNoDevice);
    *dev = tl_device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev)
{
    if (dev < 0 || dev >= (int)devs().visible.size())
        return set_error(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "cudaemu %d (CPU emulation)", devs().visible[(size_t)dev]);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    p->totalGlobalMem = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize / 2 : (size_t)8 << 30;
    p->sharedMemPerBlock = 48 << 10;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 0x7fffffff;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = option_int("CUDAEMU_BLOCK_THREADS", 1);
    p->pciBusID = devs().visible[(size_t)dev] + 1;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, tl_device);
    *total_bytes = p.totalGlobalMem;
    *free_bytes = p.totalGlobalMem / 2;
    return cudaSuccess;
}

} /* extern "C" */

/* ---- streams ------------------------------------------------------------------ */

namespace {

struct stream_op {
    std::function<void()> fn;
    std::vector<std::pair<CUstream_st *, uint64_t>> waits; /* run after these */
};

} /* namespace */

struct CUstream_st {
    int device = 0;
    unsigned flags = 0;
    bool legacy = false;
    bool destroyed = false;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<stream_op> q;
    uint64_t enq = 0, done = 0;
    capture *cap = nullptr;      /* the capture this stream records into */
    std::vector<int> tail;       /* its last nodes there */
};

namespace cudaemu {

static std::mutex g_streams_mu;
/* never freed (nor its streams: events and waits may name them), and never
 * destroyed at exit, so that leak checkers see them as reachable */
static std::vector<CUstream_st *> &g_streams = *new std::vector<CUstream_st *>;

static void wait_seq(CUstream_st *s, uint64_t seq)
{
    std::unique_lock<std::mutex> l(s->mu);
    s->cv.wait(l, [&] { return s->done >= seq; });
}

static void worker(CUstream_st *s)
{
    std::unique_lock<std::mutex> l(s->mu);
    for (;;) {
        s->cv.wait(l, [&] { return !s->q.empty() || s->destroyed; });
        if (s->q.empty())
            return; /* destroyed and drained */
        stream_op op = std::move(s->q.front());
        s->q.pop_front();
        l.unlock();
        for (auto &w : op.waits)
            wait_seq(w.first, w.second);
        if (op.fn)
            op.fn();
        l.lock();
        s->done++;
        s->cv.notify_all();
    }
}

static CUstream_st *new_stream(int device, unsigned flags, bool legacy)
{
    CUstream_st *s = new CUstream_st;
    s->device = device;
    s->flags = flags;
    s->legacy = legacy;
    std::thread(worker, s).detach();
    std::lock_guard<std::mutex> l(g_streams_mu);
    g_streams.push_back(s);
    return s;
}

static CUstream_st *resolve(cudaStream_t s)
{
    if (s)
        return s;
    static CUstream_st *legacy[64];
    static std::mutex mu;
    std::lock_guard<std::mutex> l(mu);
    int d = tl_device & 63;
    if (!legacy[d])
        legacy[d] = new_stream(tl_device, 0, true);
    return legacy[d];
}

static bool known_stream(cudaStream_t s)
{
    if (!s)
        return true;
    std::lock_guard<std::mutex> l(g_streams_mu);
    for (CUstream_st *o : g_streams)
        if (o == s && !o->destroyed)
            return true;
    return false;
}

/* Push onto a stream's queue; returns the op's sequence number. */
static uint64_t push(CUstream_st *s, stream_op op)
{
    /* the legacy stream waits for the device's blocking streams and they for it */
    std::vector<std::pair<CUstream_st *, uint64_t>> extra;
    {
        std::lock_guard<std::mutex> g(g_streams_mu);
        for (CUstream_st *o : g_streams) {
            if (o == s || o->device != s->device || o->destroyed)
                continue;
            bool relevant = s->legacy ? !(o->flags & cudaStreamNonBlocking) && !o->legacy
                                      : o->legacy && !(s->flags & cudaStreamNonBlocking);
            if (relevant) {
                std::lock_guard<std::mutex> l(o->mu);
                if (o->enq > o->done)
                    extra.push_back({o, o->enq});
            }
        }
    }
    op.waits.insert(op.waits.end(), extra.begin(), extra.end());
    std::lock_guard<std::mutex> l(s->mu);
    s->q.push_back(std::move(op));
    s->cv.notify_all();
    return ++s->enq;
}

cudaError_t enqueue(cudaStream_t st, std::function<void()> fn, const char *what)
{
    CHECK_STICKY();
    if (!known_stream(st))
        return set_error(cudaErrorInvalidResourceHandle);
    CUstream_st *s = resolve(st);
    if (s->cap)
        return graph_add_node(s, std::move(fn), what);
    if (s->legacy && capture_active_global())
        return set_error(cudaErrorStreamCaptureImplicit);
    g_launches++;
    push(s, stream_op{std::move(fn), {}});
    return cudaSuccess;
}

/* Host waits for everything on s enqueued so far. */
static void drain(CUstream_st *s)
{
    uint64_t seq;
    {
        std::lock_guard<std::mutex> l(s->mu);
        seq = s->enq;
    }
    wait_seq(s, seq);
}

static void drain_device(int device)
{
    std::vector<CUstream_st *> all;
    {
        std::lock_guard<std::mutex> l(g_streams_mu);
        all = g_streams;
    }
    for (CUstream_st *s : all)
        if (s->device == device)
            drain(s);
}

/* The graph module's view of a stream. */
capture *&stream_capture(CUstream_st *s) { return s->cap; }
std::vector<int> &stream_tail(CUstream_st *s) { return s->tail; }
uint64_t stream_push_graph(CUstream_st *s, std::function<void()> fn)
{
    g_launches++;
    return push(s, stream_op{std::move(fn), {}});
}
CUstream_st *stream_resolve(cudaStream_t s) { return resolve(s); }
bool stream_known(cudaStream_t s) { return known_stream(s); }
bool stream_blocking(CUstream_st *s) { return !(s->flags & cudaStreamNonBlocking); }

/* ---- memory -------------------------------------------------------------------- */

namespace {
struct allocation {
    size_t size;
    mem_kind kind;
};
std::mutex g_mem_mu;
std::map<uintptr_t, allocation> g_mem;
} /* namespace */

mem_kind classify(const void *p, size_t bytes, bool *partial)
{
    if (partial)
        *partial = false;
    uintptr_t a = (uintptr_t)p;
    std::lock_guard<std::mutex> l(g_mem_mu);
    auto it = g_mem.upper_bound(a);
    if (it == g_mem.begin())
        return MEM_PAGEABLE;
    --it;
    if (a >= it->first + it->second.size)
        return MEM_PAGEABLE;
    if (a + bytes > it->first + it->second.size && partial)
        *partial = true;
    return it->second.kind;
}

static cudaError_t mem_alloc(void **out, size_t bytes, mem_kind kind, const char *what)
{
    CHECK_STICKY();
    cudaError_t ce = capture_prohibits(what);
    if (ce != cudaSuccess)
        return set_error(ce);
    *out = NULL;
    if (bytes == 0)
        return cudaSuccess;
    void *p = NULL;
    /* exact size, 256-byte aligned as cudaMalloc promises */
    if (posix_memalign(&p, 256, bytes) != 0)
        return set_error(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> l(g_mem_mu);
    g_mem[(uintptr_t)p] = allocation{bytes, kind};
    *out = p;
    return cudaSuccess;
}

static cudaError_t mem_free(void *p, mem_kind kind, const char *what)
{
    CHECK_STICKY();
    if (!p)
        return cudaSuccess;
    cudaError_t ce = capture_prohibits(what);
    if (ce != cudaSuccess)
        return set_error(ce);
    {
        std::lock_guard<std::mutex> l(g_mem_mu);
        auto it = g_mem.find((uintptr_t)p);
        if (it == g_mem.end() || it->second.kind != kind) {
            fprintf(stderr, "cudaemu: %s(%p): not an allocation of that kind\n", what, p);
            return set_error(cudaErrorInvalidValue);
        }
    }
    drain_device(tl_device); /* cudaFree and cudaFreeHost synchronise the device */
    {
        std::lock_guard<std::mutex> l(g_mem_mu);
        g_mem.erase((uintptr_t)p);
    }
    free(p);
    return cudaSuccess;
}

static const char *kind_word(mem_kind k)
{
    return k == MEM_DEVICE ? "device" : k == MEM_PINNED ? "pinned host" : "pageable host";
}

} /* namespace cudaemu */

extern "C" {

cudaError_t cudaMalloc(void **p, size_t bytes) { return mem_alloc(p, bytes, MEM_DEVICE, "cudaMalloc"); }
cudaError_t cudaFree(void *p) { return mem_free(p, MEM_DEVICE, "cudaFree"); }
cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    return mem_alloc(p, bytes, MEM_PINNED, "cudaMallocHost");
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    (void)flags;
    return mem_alloc(p, bytes, MEM_PINNED, "cudaHostAlloc");
}
cudaError_t cudaFreeHost(void *p) { return mem_free(p, MEM_PINNED, "cudaFreeHost"); }

int cudaemuIsDevicePointer(const void *p, size_t bytes)
{
    bool partial;
    return classify(p, bytes, &partial) == MEM_DEVICE && !partial;
}

unsigned long long cudaemuLaunchCount(void) { return g_launches.load(); }

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    CHECK_STICKY();
    if (bytes == 0)
        return cudaSuccess;
    if (!dst || !src)
        return set_error(cudaErrorInvalidValue);
    bool pd, ps;
    mem_kind kd = classify(dst, bytes, &pd), ks = classify(src, bytes, &ps);
    bool dd = kd == MEM_DEVICE, sd = ks == MEM_DEVICE;
    bool ok = kind == cudaMemcpyDefault || (kind == cudaMemcpyHostToDevice && dd && !sd) ||
              (kind == cudaMemcpyDeviceToHost && !dd && sd) ||
              (kind == cudaMemcpyDeviceToDevice && dd && sd) ||
              (kind == cudaMemcpyHostToHost && !dd && !sd);
    if (!ok || (dd && pd) || (sd && ps)) {
        fprintf(stderr, "cudaemu: cudaMemcpyAsync(%p <- %p, %zu bytes, kind %d): destination is %s%s, "
                "source is %s%s\n", dst, src, bytes, (int)kind, kind_word(kd), pd ? " (runs past its end)" : "",
                kind_word(ks), ps ? " (runs past its end)" : "");
        return set_error(cudaErrorInvalidValue);
    }
    bool pageable = kd == MEM_PAGEABLE || ks == MEM_PAGEABLE;
    if (pageable && capturing(s))
        return set_error(invalidate_capture(s, "cudaMemcpyAsync with pageable host memory"));
    if (ks == MEM_PAGEABLE && kd != MEM_PAGEABLE) {
        /* from pageable memory: CUDA copies the source to a staging buffer
         * and returns; the caller may reuse it at once */
        std::shared_ptr<std::vector<unsigned char>> staged =
            std::make_shared<std::vector<unsigned char>>((const unsigned char *)src,
                                                         (const unsigned char *)src + bytes);
        return enqueue(s, [=] { memcpy(dst, staged->data(), bytes); }, "cudaMemcpyAsync");
    }
    cudaError_t e = enqueue(s, [=] { memmove(dst, src, bytes); }, "cudaMemcpyAsync");
    if (e == cudaSuccess && kd == MEM_PAGEABLE)
        drain(resolve(s)); /* to pageable memory: returns once the copy is done */
    return e;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, 0);
    if (e == cudaSuccess)
        drain(resolve(0));
    return e;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
    CHECK_STICKY();
    if (bytes == 0)
        return cudaSuccess;
    bool partial;
    if (classify(p, bytes, &partial) != MEM_DEVICE || partial) {
        fprintf(stderr, "cudaemu: cudaMemsetAsync(%p, %zu bytes): not inside one device allocation\n", p,
                bytes);
        return set_error(cudaErrorInvalidValue);
    }
    return enqueue(s, [=] { memset(p, value, bytes); }, "cudaMemsetAsync");
}

cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    cudaError_t e = cudaMemsetAsync(p, value, bytes, 0);
    if (e == cudaSuccess)
        drain(resolve(0));
    return e;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    CHECK_STICKY();
    if (devs().visible.empty())
        return set_error(cudaErrorNoDevice);
    *s = new_stream(tl_device, flags, false);
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!s || !known_stream(s))
        return set_error(cudaErrorInvalidResourceHandle);
    if (s->cap)
        return set_error(invalidate_capture(s, "cudaStreamDestroy"));
    std::lock_guard<std::mutex> l(s->mu);
    s->destroyed = true; /* its work still completes, as on a GPU */
    s->cv.notify_all();
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    CHECK_STICKY();
    if (!known_stream(s))
        return set_error(cudaErrorInvalidResourceHandle);
    if (capturing(s))
        return set_error(invalidate_capture(s, "cudaStreamSynchronize"));
    drain(resolve(s));
    return sticky();
}

cudaError_t cudaStreamQuery(cudaStream_t st)
{
    CHECK_STICKY();
    if (!known_stream(st))
        return set_error(cudaErrorInvalidResourceHandle);
    if (capturing(st))
        return set_error(invalidate_capture(st, "cudaStreamQuery"));
    CUstream_st *s = resolve(st);
    std::lock_guard<std::mutex> l(s->mu);
    return s->done >= s->enq ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaDeviceSynchronize(void)
{
    CHECK_STICKY();
    if (capture_active_any())
        return set_error(cudaErrorStreamCaptureUnsupported);
    drain_device(tl_device);
    return sticky();
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *user)
{
    return enqueue(s, [=] { fn(user); }, "cudaLaunchHostFunc");
}

} /* extern "C" */

/* ---- events -------------------------------------------------------------------- */

struct CUevent_st {
    unsigned flags = 0;
    std::mutex mu;
    CUstream_st *s = nullptr; /* last recorded on, outside capture */
    uint64_t seq = 0;
    double when = 0;          /* seconds, when the record ran */
    capture *cap = nullptr;   /* recorded in this capture */
    std::vector<int> nodes;   /* ... after these nodes */
};

namespace cudaemu {
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
capture *&event_capture(CUevent_st *e) { return e->cap; }
void event_stamp(CUevent_st *e) { e->when = now_s(); }
void event_bind(CUevent_st *e, CUstream_st *s, uint64_t seq)
{
    std::lock_guard<std::mutex> l(e->mu);
    e->cap = nullptr;
    e->s = s;
    e->seq = seq;
}
std::vector<int> &event_nodes(CUevent_st *e) { return e->nodes; }
} /* namespace cudaemu */

extern "C" {

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    CHECK_STICKY();
    *e = new CUevent_st;
    (*e)->flags = flags;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!e)
        return set_error(cudaErrorInvalidResourceHandle);
    if (e->s)
        wait_seq(e->s, e->seq); /* a pending record still writes it */
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t st)
{
    CHECK_STICKY();
    if (!e || !known_stream(st))
        return set_error(cudaErrorInvalidResourceHandle);
    CUstream_st *s = resolve(st);
    if (s->cap) {
        std::lock_guard<std::mutex> l(e->mu);
        e->cap = s->cap;
        e->nodes = s->tail;
        return cudaSuccess;
    }
    std::lock_guard<std::mutex> l(e->mu);
    e->cap = nullptr;
    e->s = s;
    e->seq = push(s, stream_op{[e] { e->when = now_s(); }, {}});
    return cudaSuccess;
}

/* External: recorded in a capture, an event record node of the graph (each
 * launch records it), not a dependency for other captured streams.  As
 * CUDA (seen on an H100): the flag is invalid outside a capture. */
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t st, unsigned int flags)
{
    if (!(flags & cudaEventRecordExternal))
        return cudaEventRecord(e, st);
    CHECK_STICKY();
    if (!e || !known_stream(st))
        return set_error(cudaErrorInvalidResourceHandle);
    CUstream_st *s = resolve(st);
    if (!s->cap)
        return set_error(cudaErrorIllegalState);
    return set_error(graph_add_event_node(s, e));
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    CHECK_STICKY();
    if (!e)
        return set_error(cudaErrorInvalidResourceHandle);
    if (e->cap)
        return set_error(cudaErrorCapturedEvent);
    if (!e->s)
        return cudaSuccess;
    std::lock_guard<std::mutex> l(e->s->mu);
    return e->s->done >= e->seq ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    CHECK_STICKY();
    if (!e)
        return set_error(cudaErrorInvalidResourceHandle);
    if (e->cap)
        return set_error(cudaErrorCapturedEvent);
    if (e->s)
        wait_seq(e->s, e->seq);
    return sticky();
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    CHECK_STICKY();
    if (!a || !b || !a->s || !b->s || (a->flags & cudaEventDisableTiming) ||
        (b->flags & cudaEventDisableTiming))
        return set_error(cudaErrorInvalidResourceHandle);
    if (cudaEventQuery(a) != cudaSuccess || cudaEventQuery(b) != cudaSuccess)
        return set_error(cudaErrorNotReady);
    *ms = (float)((b->when - a->when) * 1e3);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t e, unsigned int flags)
{
    (void)flags;
    CHECK_STICKY();
    if (!e || !known_stream(st))
        return set_error(cudaErrorInvalidResourceHandle);
    CUstream_st *s = resolve(st);
    if (e->cap || s->cap)
        return set_error(graph_wait_event(s, e));
    if (!e->s)
        return cudaSuccess; /* never recorded: nothing to wait for */
    g_launches++;
    push(s, stream_op{nullptr, {{e->s, e->seq}}});
    return cudaSuccess;
}

} /* extern "C" */

/* ---- kernel launch ------------------------------------------------------------- */

namespace cudaemu {

cudaError_t launch(const char *name, dim3 g, dim3 b, size_t shared, cudaStream_t s,
                   std::shared_ptr<const void> closure, tramp_fn tramp)
{
    CHECK_STICKY();
    unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
    if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024 ||
        g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
        return set_error(cudaErrorInvalidConfiguration);
    if (shared > (48u << 10))
        return set_error(cudaErrorInvalidValue); /* above 48 KiB needs an opt-in we do not emulate */
    kernel_launch k{name, g, b, shared, std::move(closure), tramp};
    return enqueue(s, [k] { run_kernel(k); }, name);
}

} /* namespace cudaemu */
