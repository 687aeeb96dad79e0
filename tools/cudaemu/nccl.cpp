/* nccl.cpp — cudaemu's NCCL stand-in.  Ranks (threads or processes) form a
 * ring of loopback TCP connections; the emulated device memory is host
 * memory, so a collective is a ring all-reduce (reduce-scatter, then
 * all-gather; every rank ends with the same bits) run on the stream like a
 * NCCL kernel.
 *
 * Bootstrap: ncclGetUniqueId opens a listening socket on 127.0.0.1 and puts
 * its port and a random nonce in the id; a thread of that process collects
 * every rank's hello (rank, ring port, device, host) and answers with the
 * table, or with the error NCCL would report (duplicate GPU, duplicate
 * rank).  Then each rank connects to the next one's ring port.
 *
 * Semantics kept from NCCL's documentation: non-blocking initialisation
 * (ncclInProgress until ncclCommGetAsyncError says otherwise); a collective
 * whose peer vanished or failed sets the asynchronous error and, like a
 * NCCL kernel, does not finish until ncclCommAbort; collectives have no
 * timeout of their own; ncclCommFinalize and ncclCommDestroy wait for the
 * outstanding collectives (so they hang where NCCL would); any call on a
 * destroyed or aborted communicator aborts the process with a message
 * (NCCL would use freed memory). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emu.h"
#include "graph.h"
#include "nccl.h"

using namespace cudaemu;

namespace {

const char ID_MAGIC[8] = {'c', 'u', 'e', 'm', 'u', 'n', 'c', '1'};

struct id_body {
    char magic[8];
    uint16_t port;
    unsigned char nonce[16];
};

struct hello {
    unsigned char nonce[16];
    int32_t nranks, rank, ring_port, device;
    char host[64];
};

struct reply {
    int32_t result;            /* ncclResult_t */
    char msg[200];
};

double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int listen_loopback(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

int connect_loopback(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (connect(fd, (sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Wait for fd to be ready for ev until deadline or *stop; 1 ready, 0 timeout/stop, -1 error. */
int wait_fd(int fd, short ev, double deadline, const std::atomic<bool> *stop)
{
    for (;;) {
        if (stop && stop->load())
            return 0;
        double left = deadline - now_s();
        if (left <= 0)
            return 0;
        pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

bool read_full(int fd, void *buf, size_t len, double deadline, const std::atomic<bool> *stop)
{
    char *p = (char *)buf;
    while (len > 0) {
        if (wait_fd(fd, POLLIN, deadline, stop) != 1)
            return false;
        ssize_t n = recv(fd, p, len, 0);
        if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN)))
            return false;
        if (n > 0)
            p += n, len -= (size_t)n;
    }
    return true;
}

bool write_full(int fd, const void *buf, size_t len, double deadline, const std::atomic<bool> *stop)
{
    const char *p = (const char *)buf;
    while (len > 0) {
        if (wait_fd(fd, POLLOUT, deadline, stop) != 1)
            return false;
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return false;
        p += n, len -= (size_t)n;
    }
    return true;
}

double bootstrap_timeout() { return (double)option_int("CUDAEMU_NCCL_BOOTSTRAP_S", 120); }

/* The id creator's thread: collect nranks hellos, check them, answer. */
void bootstrap_server(int lfd, id_body id)
{
    const double deadline = now_s() + bootstrap_timeout();
    std::vector<int> fds;
    std::vector<hello> hs;
    int nranks = -1;
    while (nranks < 0 || (int)hs.size() < nranks) {
        if (wait_fd(lfd, POLLIN, deadline, nullptr) != 1)
            break;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        hello h;
        if (!read_full(fd, &h, sizeof h, deadline, nullptr) || memcmp(h.nonce, id.nonce, 16) != 0) {
            close(fd);
            continue;
        }
        if (nranks < 0)
            nranks = h.nranks;
        fds.push_back(fd);
        hs.push_back(h);
    }
    close(lfd);
    reply r{};
    r.result = ncclSuccess;
    if (nranks < 0 || (int)hs.size() < nranks) {
        r.result = ncclSystemError;
        snprintf(r.msg, sizeof r.msg, "bootstrap: %zu of %d ranks arrived within %.0f s", hs.size(), nranks,
                 bootstrap_timeout());
    }
    std::vector<int32_t> ports((size_t)(nranks > 0 ? nranks : 0), -1);
    for (size_t i = 0; i < hs.size() && r.result == ncclSuccess; i++) {
        const hello &h = hs[i];
        if (h.nranks != nranks || h.rank < 0 || h.rank >= nranks) {
            r.result = ncclInvalidArgument;
            snprintf(r.msg, sizeof r.msg, "rank %d of %d joined a communicator of %d ranks", h.rank, h.nranks,
                     nranks);
        } else if (ports[(size_t)h.rank] >= 0) {
            r.result = ncclInvalidUsage;
            snprintf(r.msg, sizeof r.msg, "rank %d joined twice", h.rank);
        } else {
            ports[(size_t)h.rank] = h.ring_port;
        }
        for (size_t j = 0; j < i && r.result == ncclSuccess; j++)
            if (hs[j].device == h.device && strcmp(hs[j].host, h.host) == 0) {
                r.result = ncclInvalidUsage;
                snprintf(r.msg, sizeof r.msg, "Duplicate GPU detected : rank %d and rank %d both on CUDA device %d",
                         h.rank, hs[j].rank, h.device);
            }
    }
    for (int fd : fds) {
        if (write_full(fd, &r, sizeof r, deadline, nullptr) && r.result == ncclSuccess)
            write_full(fd, ports.data(), ports.size() * sizeof(int32_t), deadline, nullptr);
        close(fd);
    }
}

/* The ring and the state the stream's collectives share with the handle. */
struct ring {
    int rank = 0, nranks = 1, device = -1;
    int fd_next = -1, fd_prev = -1;
    std::atomic<bool> aborted{false};
    std::atomic<int> async{ncclSuccess};
    std::mutex mu;
    std::condition_variable cv;
    int pending = 0;
    bool nonblocking = false, finalizing = false;
    std::string last_error;

    /* the first error wins; later calls keep it */
    void fail(ncclResult_t res, const char *msg)
    {
        int cur = async.load();
        while ((cur == ncclSuccess || cur == ncclInProgress) && !async.compare_exchange_weak(cur, res))
            ;
        {
            std::lock_guard<std::mutex> l(mu);
            if (last_error.empty())
                last_error = msg;
        }
        fprintf(stderr, "cudaemu NCCL WARN rank %d: %s\n", rank, msg);
    }
    ~ring()
    {
        if (fd_next >= 0)
            close(fd_next);
        if (fd_prev >= 0)
            close(fd_prev);
    }
};

} /* namespace */

struct ncclComm {
    std::shared_ptr<ring> r;
    std::thread init;
};

namespace {

std::mutex g_live_mu;
std::set<ncclComm *> g_live;
thread_local std::string tl_last_error;

ncclComm *live(ncclComm *c, const char *fn)
{
    std::lock_guard<std::mutex> l(g_live_mu);
    if (!g_live.count(c))
        fatal("%s(%p): not a live communicator (destroyed, aborted or never created); NCCL would use freed memory",
              fn, (void *)c);
    return c;
}

void init_ring(std::shared_ptr<ring> r, id_body id)
{
    const double deadline = now_s() + bootstrap_timeout();
    uint16_t ring_port = 0;
    int lfd = -1, bfd = -1;
    reply rep{};
    std::vector<int32_t> ports;
    hello h{};
    if (r->nranks > 1 && (lfd = listen_loopback(&ring_port)) < 0) {
        r->fail(ncclSystemError, "bootstrap: cannot listen on 127.0.0.1");
        return;
    }
    memcpy(h.nonce, id.nonce, 16);
    h.nranks = r->nranks;
    h.rank = r->rank;
    h.ring_port = ring_port;
    h.device = r->device;
    gethostname(h.host, sizeof h.host - 1);
    bfd = connect_loopback(id.port);
    if (bfd < 0 || !write_full(bfd, &h, sizeof h, deadline, &r->aborted) ||
        !read_full(bfd, &rep, sizeof rep, deadline, &r->aborted)) {
        r->fail(ncclSystemError, "bootstrap: the rank that created the unique id did not answer");
        goto out;
    }
    if (rep.result != ncclSuccess) {
        rep.msg[sizeof rep.msg - 1] = 0;
        r->fail((ncclResult_t)rep.result, rep.msg);
        goto out;
    }
    ports.resize((size_t)r->nranks);
    if (!read_full(bfd, ports.data(), ports.size() * sizeof(int32_t), deadline, &r->aborted)) {
        r->fail(ncclSystemError, "bootstrap: the rank table did not arrive");
        goto out;
    }
    if (r->nranks > 1) {
        int next = (r->rank + 1) % r->nranks;
        r->fd_next = connect_loopback((uint16_t)ports[(size_t)next]);
        int32_t me = r->rank, who = -1;
        if (r->fd_next < 0 || !write_full(r->fd_next, &me, sizeof me, deadline, &r->aborted)) {
            r->fail(ncclSystemError, "bootstrap: cannot connect to the next rank");
            goto out;
        }
        if (wait_fd(lfd, POLLIN, deadline, &r->aborted) != 1 ||
            (r->fd_prev = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0 ||
            !read_full(r->fd_prev, &who, sizeof who, deadline, &r->aborted) ||
            who != (r->rank + r->nranks - 1) % r->nranks) {
            r->fail(ncclSystemError, "bootstrap: the previous rank did not connect");
            goto out;
        }
        int one = 1;
        setsockopt(r->fd_prev, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    {
        int expect = ncclInProgress;
        r->async.compare_exchange_strong(expect, ncclSuccess);
    }
out:
    if (bfd >= 0)
        close(bfd);
    if (lfd >= 0)
        close(lfd);
}

size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclInt32: case ncclUint32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    case ncclFloat32: return 4;
    case ncclFloat16: return 0; /* not emulated */
    case ncclBfloat16:
        return 2;
    }
    return 0;
}

/* bfloat16 as NCCL's kernels treat it: widened to float, reduced, rounded
 * back to nearest even (__float2bfloat16_rn) at each hop */
float bf16_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t float_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fff; /* NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

template <class T> void reduce_as(T *dst, const T *src, size_t n, ncclRedOp_t op)
{
    for (size_t i = 0; i < n; i++) {
        switch (op) {
        case ncclSum: case ncclAvg: dst[i] = dst[i] + src[i]; break;
        case ncclProd: dst[i] = dst[i] * src[i]; break;
        case ncclMax: dst[i] = src[i] > dst[i] ? src[i] : dst[i]; break;
        case ncclMin: dst[i] = src[i] < dst[i] ? src[i] : dst[i]; break;
        }
    }
}

template <class T> void scale_as(T *p, size_t n, int div)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (T)(p[i] / (T)div);
}

void reduce_bf16(uint16_t *dst, const uint16_t *src, size_t n, ncclRedOp_t op)
{
    for (size_t i = 0; i < n; i++) {
        float d = bf16_float(dst[i]);
        const float v = bf16_float(src[i]);
        reduce_as(&d, &v, 1, op);
        dst[i] = float_bf16(d);
    }
}

void reduce(void *dst, const void *src, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8: reduce_as((int8_t *)dst, (const int8_t *)src, n, op); break;
    case ncclUint8: reduce_as((uint8_t *)dst, (const uint8_t *)src, n, op); break;
    case ncclInt32: reduce_as((int32_t *)dst, (const int32_t *)src, n, op); break;
    case ncclUint32: reduce_as((uint32_t *)dst, (const uint32_t *)src, n, op); break;
    case ncclInt64: reduce_as((int64_t *)dst, (const int64_t *)src, n, op); break;
    case ncclUint64: reduce_as((uint64_t *)dst, (const uint64_t *)src, n, op); break;
    case ncclFloat32: reduce_as((float *)dst, (const float *)src, n, op); break;
    case ncclFloat64: reduce_as((double *)dst, (const double *)src, n, op); break;
    case ncclBfloat16:
        reduce_bf16((uint16_t *)dst, (const uint16_t *)src, n, op);
        break;
    default: break;
    }
}

void average(void *p, size_t n, ncclDataType_t t, int div)
{
    switch (t) {
    case ncclInt32: scale_as((int32_t *)p, n, div); break;
    case ncclInt64: scale_as((int64_t *)p, n, div); break;
    case ncclFloat32: scale_as((float *)p, n, div); break;
    case ncclFloat64: scale_as((double *)p, n, div); break;
    case ncclBfloat16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)p)[i] = float_bf16(bf16_float(((uint16_t *)p)[i]) / (float)div);
        break;
    default: break;
    }
}

/* Send sb to the next rank while receiving rb from the previous one. */
bool exchange(ring *r, const void *sb, size_t sl, void *rb, size_t rl)
{
    const char *s = (const char *)sb;
    char *d = (char *)rb;
    while ((sl > 0 || rl > 0) && !r->aborted) {
        pollfd p[2] = {{r->fd_next, (short)(sl ? POLLOUT : 0), 0}, {r->fd_prev, (short)(rl ? POLLIN : 0), 0}};
        int n = poll(p, 2, 100);
        if (n < 0 && errno != EINTR)
            return false;
        if (sl && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t k = send(r->fd_next, s, sl, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k < 0 && errno != EAGAIN && errno != EINTR)
                return false;
            if (k > 0)
                s += k, sl -= (size_t)k;
        }
        if (rl && (p[1].revents & (POLLIN | POLLERR | POLLHUP))) {
            ssize_t k = recv(r->fd_prev, d, rl, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                return false;
            if (k > 0)
                d += k, rl -= (size_t)k;
        }
    }
    return !r->aborted;
}

void chunk(size_t count, int parts, int i, size_t *off, size_t *len)
{
    size_t base = count / (size_t)parts, extra = count % (size_t)parts;
    *off = (size_t)i * base + ((size_t)i < extra ? (size_t)i : extra);
    *len = base + ((size_t)i < extra ? 1 : 0);
}

/* A failed collective behaves like a NCCL kernel whose peer is gone: it
 * reports the error and spins until the communicator is aborted. */
void fail_and_wait(ring *r, const char *what)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s: a peer closed its connection or the network failed (rank %d of %d)", what,
             r->rank, r->nranks);
    if (!r->aborted)
        r->fail(ncclRemoteError, msg);
    while (!r->aborted)
        usleep(1000);
}

void run_allreduce(ring *r, const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op)
{
    const size_t es = type_size(t);
    if (r->aborted || r->async.load() != ncclSuccess)
        return;
    if (send != recv)
        memmove(recv, send, count * es);
    const int n = r->nranks, me = r->rank;
    if (n > 1) {
        size_t maxlen = count / (size_t)n + 1;
        std::vector<char> tmp(maxlen * es);
        char *buf = (char *)recv;
        for (int s = 0; s < n - 1; s++) { /* reduce-scatter */
            size_t so, sl, ro, rl;
            chunk(count, n, ((me - s) % n + n) % n, &so, &sl);
            chunk(count, n, ((me - s - 1) % n + n) % n, &ro, &rl);
            if (!exchange(r, buf + so * es, sl * es, tmp.data(), rl * es))
                return fail_and_wait(r, "ncclAllReduce");
            reduce(buf + ro * es, tmp.data(), rl, t, op);
        }
        size_t oo, ol;
        chunk(count, n, (me + 1) % n, &oo, &ol);
        if (op == ncclAvg)
            average(buf + oo * es, ol, t, n);
        for (int s = 0; s < n - 1; s++) { /* all-gather */
            size_t so, sl, ro, rl;
            chunk(count, n, ((me + 1 - s) % n + n) % n, &so, &sl);
            chunk(count, n, ((me - s) % n + n) % n, &ro, &rl);
            if (!exchange(r, buf + so * es, sl * es, buf + ro * es, rl * es))
                return fail_and_wait(r, "ncclAllReduce");
        }
    }
}

void run_broadcast(ring *r, const void *send, void *recv, size_t bytes, int root)
{
    if (r->aborted || r->async.load() != ncclSuccess)
        return;
    if (r->rank == root && send != recv)
        memmove(recv, send, bytes);
    if (r->nranks == 1)
        return;
    const int next = (r->rank + 1) % r->nranks;
    if (r->rank != root && !exchange(r, NULL, 0, recv, bytes))
        return fail_and_wait(r, "ncclBroadcast");
    if (next != root && !exchange(r, recv, bytes, NULL, 0))
        return fail_and_wait(r, "ncclBroadcast");
}

/* Enqueue a collective.  `pending` counts collectives enqueued and not
 * finished (what finalize flushes); one captured into a graph counts from
 * when a launch of the graph runs it. */
ncclResult_t submit(ncclComm *c, cudaStream_t s, std::function<void(ring *)> body, const char *what)
{
    std::shared_ptr<ring> r = c->r;
    int a = r->async.load();
    if (a == ncclInProgress)
        return ncclInvalidUsage; /* initialisation has not completed */
    if (a != ncclSuccess)
        return (ncclResult_t)a;
    const bool captured = capturing(s);
    if (!captured) {
        std::lock_guard<std::mutex> l(r->mu);
        r->pending++;
    }
    cudaError_t e = enqueue(s, [r, body, captured] {
        if (captured) {
            std::lock_guard<std::mutex> l(r->mu);
            r->pending++;
        }
        body(r.get());
        std::lock_guard<std::mutex> l(r->mu);
        r->pending--;
        r->cv.notify_all();
    }, what);
    if (e != cudaSuccess) {
        std::lock_guard<std::mutex> l(r->mu);
        if (!captured)
            r->pending--;
        return ncclUnhandledCudaError;
    }
    return ncclSuccess;
}

bool device_buffer(const void *p, size_t bytes, const char *fn, const char *which)
{
    if (bytes == 0 || cudaemuIsDevicePointer(p, bytes))
        return true;
    tl_last_error = std::string(fn) + ": " + which + " is not device memory of the size given";
    fprintf(stderr, "cudaemu NCCL WARN %s\n", tl_last_error.c_str());
    return false;
}

void wait_pending(ring *r)
{
    std::unique_lock<std::mutex> l(r->mu);
    r->cv.wait(l, [&] { return r->pending == 0; });
}

} /* namespace */

extern "C" {

ncclResult_t ncclGetVersion(int *v)
{
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    }
    return "unknown result code";
}

const char *ncclGetLastError(ncclComm_t comm)
{
    if (comm) {
        live(comm, "ncclGetLastError");
        std::lock_guard<std::mutex> l(comm->r->mu);
        if (!comm->r->last_error.empty()) {
            tl_last_error = comm->r->last_error;
        }
    }
    return tl_last_error.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *out)
{
    id_body id{};
    memcpy(id.magic, ID_MAGIC, sizeof id.magic);
    if (getrandom(id.nonce, sizeof id.nonce, 0) != (ssize_t)sizeof id.nonce)
        return ncclSystemError;
    int lfd = listen_loopback(&id.port);
    if (lfd < 0)
        return ncclSystemError;
    std::thread(bootstrap_server, lfd, id).detach();
    memset(out, 0, sizeof *out);
    memcpy(out->internal, &id, sizeof id);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks, ncclUniqueId uid, int rank, ncclConfig_t *cfg)
{
    *out = NULL;
    id_body id;
    memcpy(&id, uid.internal, sizeof id);
    if (memcmp(id.magic, ID_MAGIC, sizeof id.magic) != 0) {
        tl_last_error = "ncclCommInitRank: the unique id was not made by ncclGetUniqueId";
        return ncclInvalidArgument;
    }
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        tl_last_error = "ncclCommInitRank: rank out of range";
        return ncclInvalidArgument;
    }
    if (cfg && cfg->magic != 0xcafebeef) {
        tl_last_error = "ncclCommInitRankConfig: the config was not set with NCCL_CONFIG_INITIALIZER";
        return ncclInvalidArgument;
    }
    int dev = physical_device();
    if (dev < 0)
        return ncclUnhandledCudaError;
    const bool blocking = !cfg || cfg->blocking != 0; /* NCCL_CONFIG_UNDEF_INT means blocking */
    ncclComm *c = new ncclComm;
    c->r = std::make_shared<ring>();
    c->r->rank = rank;
    c->r->nranks = nranks;
    c->r->device = dev;
    c->r->async = ncclInProgress;
    c->r->nonblocking = !blocking;
    {
        std::lock_guard<std::mutex> l(g_live_mu);
        g_live.insert(c);
    }
    *out = c;
    if (blocking) {
        init_ring(c->r, id);
        int a = c->r->async.load();
        if (a != ncclSuccess) {
            tl_last_error = c->r->last_error;
            std::lock_guard<std::mutex> l(g_live_mu);
            g_live.erase(c);
            delete c;
            *out = NULL;
            return (ncclResult_t)a;
        }
        return ncclSuccess;
    }
    c->init = std::thread(init_ring, c->r, id);
    return ncclInProgress;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank)
{
    return ncclCommInitRankConfig(out, nranks, id, rank, NULL);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async_error)
{
    live(comm, "ncclCommGetAsyncError");
    ring *r = comm->r.get();
    *async_error = (ncclResult_t)r->async.load();
    if (*async_error == ncclSuccess && r->finalizing) { /* a non-blocking finalize in progress */
        std::lock_guard<std::mutex> l(r->mu);
        if (r->pending > 0)
            *async_error = ncclInProgress;
    }
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    live(comm, "ncclCommCount");
    *count = comm->r->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    live(comm, "ncclCommUserRank");
    *rank = comm->r->rank;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    live(comm, "ncclCommCuDevice");
    *device = comm->r->device;
    return ncclSuccess;
}

static void release(ncclComm *c)
{
    {
        std::lock_guard<std::mutex> l(g_live_mu);
        g_live.erase(c);
    }
    if (c->init.joinable())
        c->init.join();
    delete c;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    live(comm, "ncclCommAbort");
    ring *r = comm->r.get();
    r->aborted = true;
    if (r->fd_next >= 0)
        shutdown(r->fd_next, SHUT_RDWR);
    if (r->fd_prev >= 0)
        shutdown(r->fd_prev, SHUT_RDWR);
    release(comm); /* collectives still queued see `aborted` and return */
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    live(comm, "ncclCommFinalize");
    if (comm->init.joinable())
        comm->init.join();
    ring *r = comm->r.get();
    if (r->nonblocking) { /* completes in the background; ncclCommGetAsyncError tells */
        std::lock_guard<std::mutex> l(r->mu);
        r->finalizing = true;
        return r->pending > 0 ? ncclInProgress : (ncclResult_t)r->async.load();
    }
    wait_pending(r); /* flushes outstanding collectives: hangs if a peer is gone */
    return (ncclResult_t)r->async.load();
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    live(comm, "ncclCommDestroy");
    if (comm->init.joinable())
        comm->init.join();
    wait_pending(comm->r.get());
    release(comm);
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
    live(comm, "ncclAllReduce");
    size_t es = type_size(type);
    if (es == 0 || (unsigned)op > ncclAvg) {
        tl_last_error = "ncclAllReduce: data type or reduction not supported";
        return ncclInvalidArgument;
    }
    if (!device_buffer(send, count * es, "ncclAllReduce", "sendbuff") ||
        !device_buffer(recv, count * es, "ncclAllReduce", "recvbuff"))
        return ncclInvalidArgument;
    return submit(comm, stream, [=](ring *r) { run_allreduce(r, send, recv, count, type, op); }, "ncclAllReduce");
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    live(comm, "ncclBroadcast");
    size_t es = type_size(type);
    if (es == 0 || root < 0 || root >= comm->r->nranks) {
        tl_last_error = "ncclBroadcast: data type or root out of range";
        return ncclInvalidArgument;
    }
    if ((comm->r->rank == root && !device_buffer(send, count * es, "ncclBroadcast", "sendbuff")) ||
        !device_buffer(recv, count * es, "ncclBroadcast", "recvbuff"))
        return ncclInvalidArgument;
    size_t bytes = count * es;
    return submit(comm, stream, [=](ring *r) { run_broadcast(r, send, recv, bytes, root); }, "ncclBroadcast");
}

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

} /* extern "C" */
