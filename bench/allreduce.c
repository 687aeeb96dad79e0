/* allreduce — the allreduce benchmark (nccl-tests style):
 *
 *   allreduce --np N [--bytes B | sweep] [--iters K] [--transport tcp|shm|loopback|rdma|nccl]
 *             [--sockets S] [--segment BYTES] [--small BYTES] [--spin-us US]
 *             [--yield-us US] [--hier L] [--sockbuf BYTES]
 *             [--hosts L --host NS=ADDR --host NS=ADDR ...]
 *             [--encrypt | --no-integrity] [--openssl-ghash] [--bf16]
 *             [--check] [--json]
 *
 * Launches N ranks on 127.0.0.1 (processes; threads for --transport
 * loopback), runs K timed float32 sum allreduces per size after warm-up,
 * and prints per size the median microseconds per iteration (the slowest
 * rank's median), algbw = bytes / time and busbw = algbw * 2(n-1)/n, the
 * nccl-tests definition: the per-link rate a ring must sustain.  With a
 * single --bytes the last line is usec_per_iter=X; --json prints one object
 * per size instead of the table.  As ringtrain's launcher sets them: ranks
 * busy-poll for 50 us before sleeping when each can have a core; when they
 * share cores they do not spin but yield the core for up to 1 ms before
 * sleeping (--spin-us and --yield-us override).  --hier L: the ranks form
 * hosts of L (rank r is local rank r % L) and allreduce hierarchically
 * (rt_comm_hierarchy: shared memory within a "host", the transport across;
 * on one machine every link is local, so this measures the algorithm and
 * the shared-memory hops, not a network).  --hosts L: ranks as hosts of L,
 * host h's ranks in the network namespace NS of the h-th --host and
 * listening on its ADDR there (namespaces joined by links of a chosen
 * rate: bench/hier_link.sh).  --sockbuf: fixed socket buffers
 * (rt_comm_opts.socket_buffer) instead of the kernel's autotuning.
 * --openssl-ghash: the integrity tags made by OpenSSL's GHASH where the
 * CPU would run ringtrain's vector one (RT_GHASH=openssl; A/B of the two).
 * --bf16: the float32 buffer goes as [train] allreduce_precision = bf16
 * sends a gradient bucket, and is timed so: rounded to bfloat16,
 * allreduced in bf16 (half the bytes), widened back in place.
 * --check: every timed allreduce starts from integers and its result is
 * compared exactly (outside the timing); a wrong element fails the run. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_launch.h"
#include "rt_comm.h"
#include "rt_log.h"
#include "rt_time.h"

#ifdef RT_HAVE_CUDA /* from rt_build_config.h */
#include <cuda_runtime_api.h>
#endif

#define MAX_SIZES 24

typedef struct cfg {
    bool nccl; /* device buffers through NCCL (bootstrapped over the TCP ring) */
    int np, iters, sockets, nsizes;
    int hier;  /* ranks per host of a hierarchy, 0: none */
    int hosts; /* ranks per host in namespaces (--hosts), 0: all on 127.0.0.1 */
    int nhosts;
    char *netns[64], *addr[64]; /* --host NS=ADDR, one per host */
    int64_t spin_us;  /* -1: spin only when every rank can have a core */
    int64_t yield_us; /* -1: yield only when ranks share cores (as rt_init) */
    size_t sizes[MAX_SIZES];
    size_t segment;
    size_t sockbuf;  /* SO_SNDBUF/SO_RCVBUF, 0: the kernel's autotuning */
    size_t small;    /* small_bytes, when small_set */
    bool small_set;
    bool encrypt, plain, json; /* plain: integrity off (unsealed frames) */
    bool check; /* verify every result (integer data) */
    bool bf16;  /* as allreduce_precision = bf16: round, allreduce in bf16, widen */
    rt_transport_kind kind;
} cfg;

typedef struct rec {
    int ok;
    double median_us[MAX_SIZES];
    char err[256];
} rec;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int iters_for(const cfg *c, size_t bytes)
{
    if (c->iters > 0)
        return c->iters;
    /* about a second of work per size, between 5 and 2000 iterations */
    double est_us = 20.0 + (double)bytes / 1000.0; /* ~1 GB/s guess */
    int k = (int)(1e6 / est_us);
    return k < 5 ? 5 : (k > 2000 ? 2000 : k);
}

#ifdef RT_HAVE_CUDA
/* NCCL: one GPU per rank (rank r on device r % devices), median of the
 * enqueue + wait of each allreduce. */
static void run_sizes_nccl(rt_comm *comm, const cfg *c, int r, rec *out)
{
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    cudaSetDevice(r % (ndev > 0 ? ndev : 1));
    cudaStream_t s;
    cudaStreamCreate(&s);
    size_t maxb = 0;
    for (int k = 0; k < c->nsizes; k++)
        maxb = c->sizes[k] > maxb ? c->sizes[k] : maxb;
    void *d = NULL;
    rt_nccl *n = NULL;
    if (cudaMalloc(&d, maxb) != cudaSuccess || rt_nccl_create(comm, s, &n, out->err) != RT_OK) {
        if (!out->err[0])
            snprintf(out->err, sizeof out->err, "cudaMalloc of %zu bytes failed", maxb);
        goto done;
    }
    cudaMemset(d, 0, maxb);
    for (int k = 0; k < c->nsizes; k++) {
        size_t count = c->sizes[k] / 4;
        int it = iters_for(c, c->sizes[k]);
        double *t = malloc((size_t)it * sizeof(double));
        for (int i = -3; i < it; i++) {
            int64_t t0 = rt_now_ns();
            if (rt_nccl_allreduce(n, d, count, RT_C_F32, RT_SUM, out->err) != RT_OK ||
                rt_nccl_wait(n, 120000000, out->err) != RT_OK) {
                free(t);
                goto done;
            }
            if (i >= 0)
                t[i] = (double)(rt_now_ns() - t0) / 1e3;
        }
        qsort(t, (size_t)it, sizeof *t, cmp_double);
        out->median_us[k] = t[it / 2];
        free(t);
    }
    out->ok = 1;
done:
    rt_nccl_destroy(n);
    if (d)
        cudaFree(d);
    cudaStreamDestroy(s);
}
#endif

/* --check: integers (exact in float32 for any order of summation), rank r
 * contributing (r + 1)(i % 13 + 1) to element i */
static void check_fill(float *buf, size_t count, int rank)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = (float)((rank + 1) * (int)(i % 13 + 1));
}

static bool check_sum(const float *buf, size_t count, int n, rec *out)
{
    for (size_t i = 0; i < count; i++)
        if (buf[i] != (float)(n * (n + 1) / 2 * (int)(i % 13 + 1))) {
            snprintf(out->err, sizeof out->err,
                     "--check: element %zu of %zu is %g, not %d", i, count, (double)buf[i],
                     n * (n + 1) / 2 * (int)(i % 13 + 1));
            return false;
        }
    return true;
}

/* One allreduce of count floats, in bf16 on the wire when c->bf16 (half
 * holds count bf16 values). */
static rt_status allreduce_once(rt_comm *comm, const cfg *c, float *buf, uint16_t *half,
                                size_t count)
{
    if (!c->bf16)
        return rt_allreduce(comm, buf, count, RT_C_F32, RT_SUM);
    rt_bf16_from_f32(half, buf, count);
    rt_status st = rt_allreduce(comm, half, count, RT_C_BF16, RT_SUM);
    rt_bf16_to_f32(buf, half, count);
    return st;
}

static void run_sizes(rt_comm *comm, const cfg *c, int rank, rec *out)
{
    size_t maxb = 0;
    for (int s = 0; s < c->nsizes; s++)
        maxb = c->sizes[s] > maxb ? c->sizes[s] : maxb;
    float *buf = malloc(maxb + 4);
    uint16_t *half = malloc(maxb / 2 + 2);
    for (size_t i = 0; i < maxb / 4; i++)
        buf[i] = (float)(i % 100) * 0.01f;
    for (int s = 0; s < c->nsizes; s++) {
        size_t count = c->sizes[s] / 4;
        int k = iters_for(c, c->sizes[s]);
        double *t = malloc((size_t)k * sizeof(double));
        for (int w = 0; w < 3; w++)
            if (allreduce_once(comm, c, buf, half, count) != RT_OK)
                goto fail;
        for (int i = 0; i < k; i++) {
            if (c->check)
                check_fill(buf, count, rank);
            int64_t t0 = rt_now_ns();
            if (allreduce_once(comm, c, buf, half, count) != RT_OK) {
                free(t);
                goto fail;
            }
            t[i] = (double)(rt_now_ns() - t0) / 1e3;
            if (c->check && !check_sum(buf, count, c->np, out)) {
                free(t);
                free(buf);
                free(half);
                return;
            }
        }
        qsort(t, (size_t)k, sizeof *t, cmp_double);
        out->median_us[s] = t[k / 2];
        free(t);
    }
    out->ok = 1;
    free(buf);
    free(half);
    return;
fail:
    snprintf(out->err, sizeof out->err, "%s", rt_comm_last_error(comm));
    free(buf);
    free(half);
}

static void base_opts(const cfg *c, rt_comm_opts *o)
{
    rt_comm_opts_defaults(o);
    o->job_id = 1;
    memset(o->key, 3, sizeof o->key);
    o->sockets = c->sockets;
    o->encrypt = c->encrypt;
    o->integrity = !c->plain;
    if (c->segment)
        o->max_segment_bytes = c->segment;
    o->socket_buffer = c->sockbuf;
    if (c->small_set)
        o->small_bytes = c->small;
    o->timeout_us = 120000000;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o->spin_us = c->spin_us >= 0 ? c->spin_us : (c->np <= cores ? 50 : 0);
    o->yield_us = c->yield_us >= 0 ? c->yield_us : (c->np <= cores ? 0 : RT_COMM_SHARED_YIELD_US);
}

static int tcp_rank(int r, int n, int listen_fd, char **addrs, void *vrec, void *arg)
{
    const cfg *c = arg;
    rec *out = vrec;
    rt_comm_opts o;
    base_opts(c, &o);
    o.transport = c->kind;
    o.rank = r;
    o.size = n;
    o.peers = (const char *const *)addrs;
    o.listen_fd = listen_fd;
    rt_comm *comm;
    if (rt_comm_create(&o, &comm, out->err) != RT_OK)
        return 1;
    if (c->hier > 0 && (rt_comm_hierarchy(comm, r % c->hier, c->hier, out->err) != RT_OK ||
                        rt_comm_hierarchy_local_size(comm) != c->hier)) {
        if (!out->err[0])
            snprintf(out->err, sizeof out->err, "%d ranks do not form hosts of %d", n, c->hier);
        rt_comm_destroy(comm);
        return 1;
    }
#ifdef RT_HAVE_CUDA
    if (c->nccl)
        run_sizes_nccl(comm, c, r, out);
    else
#endif
        run_sizes(comm, c, r, out);
    rt_comm_destroy(comm);
    return out->ok ? 0 : 1;
}

typedef struct lb_arg {
    const cfg *c;
    rt_loopback_world *w;
    int rank;
    rec out;
} lb_arg;

static void *lb_rank(void *p)
{
    lb_arg *a = p;
    rt_comm_opts o;
    base_opts(a->c, &o);
    o.transport = RT_TRANSPORT_LOOPBACK;
    o.world = a->w;
    o.rank = a->rank;
    o.size = a->c->np;
    rt_comm *comm;
    if (rt_comm_create(&o, &comm, a->out.err) == RT_OK) {
        run_sizes(comm, a->c, a->rank, &a->out);
        rt_comm_destroy(comm);
    }
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: allreduce --np N [--bytes B] [--iters K] [--transport tcp|shm|loopback|"
                    "rdma|nccl] [--sockets S] [--segment BYTES]\n"
                    "                 [--small BYTES] [--spin-us US] [--yield-us US] [--hier L]\n"
                    "                 [--sockbuf BYTES] [--hosts L --host NS=ADDR ...]\n"
                    "                 [--encrypt | --no-integrity] [--openssl-ghash] [--bf16] "
                    "[--check] [--json]\n");
    return 2;
}

int main(int argc, char **argv)
{
    cfg c = {.np = 2, .sockets = 1, .kind = RT_TRANSPORT_TCP, .spin_us = -1, .yield_us = -1};
    const char *transport = "tcp";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--np") && v) {
            c.np = atoi(v);
            i++;
        } else if (!strcmp(a, "--bytes") && v) {
            if (c.nsizes < MAX_SIZES)
                c.sizes[c.nsizes++] = (size_t)strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--iters") && v) {
            c.iters = atoi(v);
            i++;
        } else if (!strcmp(a, "--sockets") && v) {
            c.sockets = atoi(v);
            i++;
        } else if (!strcmp(a, "--segment") && v) {
            c.segment = (size_t)strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--transport") && v) {
            transport = v;
            i++;
        } else if (!strcmp(a, "--spin-us") && v) {
            c.spin_us = atoll(v);
            i++;
        } else if (!strcmp(a, "--small") && v) {
            c.small = (size_t)strtoull(v, NULL, 0);
            c.small_set = true;
            i++;
        } else if (!strcmp(a, "--yield-us") && v) {
            c.yield_us = atoll(v);
            i++;
        } else if (!strcmp(a, "--sockbuf") && v) {
            c.sockbuf = (size_t)strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--hier") && v) {
            c.hier = atoi(v);
            i++;
        } else if (!strcmp(a, "--hosts") && v) {
            c.hosts = atoi(v);
            i++;
        } else if (!strcmp(a, "--host") && v && strchr(v, '=') && c.nhosts < 64) {
            c.netns[c.nhosts] = strdup(v);
            c.addr[c.nhosts] = strchr(c.netns[c.nhosts], '=');
            *c.addr[c.nhosts]++ = '\0';
            c.nhosts++;
            i++;
        } else if (!strcmp(a, "--encrypt")) {
            c.encrypt = true;
        } else if (!strcmp(a, "--no-integrity")) {
            c.plain = true;
        } else if (!strcmp(a, "--openssl-ghash")) {
            setenv("RT_GHASH", "openssl", 1); /* the ranks inherit it */
        } else if (!strcmp(a, "--bf16")) {
            c.bf16 = true;
        } else if (!strcmp(a, "--check")) {
            c.check = true;
        } else if (!strcmp(a, "--json")) {
            c.json = true;
        } else {
            return usage();
        }
    }
    if (c.np < 1 || c.np > 256 || c.hier < 0 || c.hosts < 0 || (c.hosts > 0) != (c.nhosts > 0) ||
        (c.hier > 0 && strcmp(transport, "tcp") != 0 && strcmp(transport, "rdma") != 0))
        return usage();
    if (!strcmp(transport, "loopback"))
        c.kind = RT_TRANSPORT_LOOPBACK;
    else if (!strcmp(transport, "rdma"))
        c.kind = RT_TRANSPORT_RDMA;
    else if (!strcmp(transport, "shm"))
        c.kind = RT_TRANSPORT_SHM;
    else if (!strcmp(transport, "nccl")) {
        /* NCCL moves the data; our TCP ring only bootstraps it */
        if (!rt_nccl_available()) {
            fprintf(stderr, "allreduce: --transport nccl needs a CUDA build with NCCL and a GPU\n");
            return 77;
        }
        c.nccl = true;
    } else if (strcmp(transport, "tcp") != 0)
        return usage();
    if (c.nsizes == 0) /* sweep 4 KiB .. 256 MiB */
        for (size_t b = 4096; b <= (256u << 20) && c.nsizes < MAX_SIZES; b *= 4)
            c.sizes[c.nsizes++] = b;
    for (int s = 0; s < c.nsizes; s++)
        c.sizes[s] = c.sizes[s] / 4 * 4;
    rt_log_set_level(RT_LL_ERROR);

    rec *recs = calloc((size_t)c.np, sizeof *recs);
    int status;
    if (c.kind == RT_TRANSPORT_LOOPBACK) {
        rt_loopback_world *w;
        rt_loopback_world_create(c.np, &w);
        lb_arg *la = calloc((size_t)c.np, sizeof *la);
        pthread_t *th = calloc((size_t)c.np, sizeof *th);
        for (int r = 0; r < c.np; r++) {
            la[r] = (lb_arg){&c, w, r, {0}};
            pthread_create(&th[r], NULL, lb_rank, &la[r]);
        }
        status = 0;
        for (int r = 0; r < c.np; r++) {
            pthread_join(th[r], NULL);
            recs[r] = la[r].out;
            status |= !recs[r].ok;
        }
        rt_loopback_world_destroy(w);
        free(la);
        free(th);
    } else {
        if (c.hosts > 0 && c.nhosts * c.hosts != c.np) {
            fprintf(stderr, "allreduce: --np %d as hosts of %d needs %d --host (got %d)\n", c.np,
                    c.hosts, c.np / c.hosts, c.nhosts);
            return 2;
        }
        if (c.hosts > 0 && !bl_hosts(c.hosts, c.nhosts, c.netns, c.addr))
            return 2;
        status = bl_launch(c.np, tcp_rank, &c, recs, sizeof *recs, 3600);
    }
    for (int r = 0; r < c.np; r++)
        if (!recs[r].ok) {
            fprintf(stderr, "allreduce: rank %d failed: %s\n", r, recs[r].err);
            return 1;
        }
    if (status)
        return 1;
    if (!c.json)
        printf("# allreduce float32 sum, np=%d, transport=%s, sockets=%d%s%s\n"
               "%12s %12s %10s %10s\n",
               c.np, transport, c.sockets, c.hier ? ", hierarchical" : "",
               c.encrypt ? ", encrypted" : c.plain ? ", plain frames" : ", GMAC frames", "bytes", "usec",
               "algbw GB/s", "busbw GB/s");
    double last = 0;
    for (int s = 0; s < c.nsizes; s++) {
        double us = 0;
        for (int r = 0; r < c.np; r++)
            us = recs[r].median_us[s] > us ? recs[r].median_us[s] : us;
        double algbw = (double)c.sizes[s] / (us * 1e-6) / 1e9;
        double busbw = algbw * 2.0 * (c.np - 1) / c.np;
        last = us;
        if (c.json)
            printf("{\"np\":%d,\"transport\":\"%s\",\"sockets\":%d,\"encrypt\":%s,"
                   "\"integrity\":%s,\"bytes\":%zu,\"usec\":%.2f,\"algbw_gbps\":%.4f,"
                   "\"busbw_gbps\":%.4f}\n",
                   c.np, transport, c.sockets, c.encrypt ? "true" : "false",
                   c.plain ? "false" : "true", c.sizes[s], us, algbw, busbw);
        else
            printf("%12zu %12.1f %10.3f %10.3f\n", c.sizes[s], us, algbw, busbw);
    }
    if (c.nsizes == 1 && !c.json)
        printf("usec_per_iter=%.2f\n", last);
    free(recs);
    return 0;
}
