/* exec.cpp — runs a kernel's blocks.  Each CUDA thread of a block is a fiber
 * (fiber.h); the block's threads run round-robin on one OS thread, each
 * until it exits or waits:
 *   __syncthreads   waits until every thread of the block that has not
 *                   exited waits at a barrier (Volta semantics: exited
 *                   threads do not count); threads waiting at different
 *                   __syncthreads calls are an error;
 *   warp intrinsics wait for exactly the lanes in their mask; a lane of the
 *                   mask that has exited, or a mask that leaves out the
 *                   calling lane, is an error; a value read from a lane
 *                   outside the mask is all ones (NaN for floats);
 *   nothing can run but threads wait: a deadlock, reported with where each
 *                   group of threads waits, then abort (a GPU would hang).
 * Blocks run one after another, or on CUDAEMU_BLOCK_THREADS OS threads so
 * that atomics from different blocks contend for real. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "emu.h"
#include "fiber.h"

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace cudaemu {

namespace {

enum tstate : unsigned char { T_NEW, T_RUN, T_BAR, T_WARP, T_DONE };

struct ethread {
    emu_fiber *fib;
    uint3 tid;
    tstate st;
    const char *file;
    int line;
    warp_kind wk;
    unsigned wmask;
    uint64_t wval, wres;
    int wbytes, warg, wwidth;
};

struct eblock {
    const kernel_launch *k;
    int n, live, at_bar;
    std::vector<ethread> t;
    std::vector<unsigned char> smem;
    ethread *cur;
    emu_fiber_host host;
    std::vector<emu_fiber *> pool; /* stacks of finished threads, reused */
    ~eblock()
    {
        for (emu_fiber *f : pool) {
            emu_fiber_free(f);
            delete f;
        }
    }
};

thread_local eblock *tl_block;

const char *kind_name(warp_kind k)
{
    switch (k) {
    case W_SHFL: return "__shfl_sync";
    case W_SHFL_UP: return "__shfl_up_sync";
    case W_SHFL_DOWN: return "__shfl_down_sync";
    case W_SHFL_XOR: return "__shfl_xor_sync";
    case W_BALLOT: return "__ballot_sync";
    case W_ANY: return "__any_sync";
    case W_ALL: return "__all_sync";
    case W_SYNC: return "__syncwarp";
    }
    return "?";
}

size_t stack_bytes()
{
    static const size_t kb = (size_t)option_int("CUDAEMU_STACK_KB", 256);
    return kb * 1024;
}

emu_fiber *get_stack(eblock *b)
{
    if (!b->pool.empty()) {
        emu_fiber *f = b->pool.back();
        b->pool.pop_back();
        return f;
    }
    emu_fiber *f = new emu_fiber;
    if (!emu_fiber_alloc(f, stack_bytes()))
        fatal("cannot map a %zu-byte stack for a CUDA thread", stack_bytes());
    return f;
}

void thread_main(void *)
{
    eblock *b = tl_block;
    b->k->tramp(b->k->closure.get());
    ethread *t = b->cur;
    t->st = T_DONE;
    emu_fiber_yield(&b->host, t->fib, true);
}

int linear(const eblock *b, const ethread *t) { return (int)(t - b->t.data()); }

[[noreturn]] void block_fatal(const eblock *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void block_fatal(const eblock *b, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fatal("kernel %s, block (%u,%u,%u) of (%u,%u,%u), %d threads: %s", b->k->name, blockIdx.x,
          blockIdx.y, blockIdx.z, gridDim.x, gridDim.y, gridDim.z, b->n, msg);
}

/* Complete the warp operation of `warp` when every lane of its mask waits in
 * it; true when it completed. */
bool try_complete_warp(eblock *b, int warp, ethread *caller)
{
    const unsigned mask = caller->wmask;
    const int base = warp * 32;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1))
            continue;
        if (base + l >= b->n)
            block_fatal(b, "%s:%d: %s names lane %d with mask 0x%08x, but warp %d has no thread %d",
                        caller->file, caller->line, kind_name(caller->wk), l, mask, warp, l);
        ethread *o = &b->t[base + l];
        if (o->st == T_DONE)
            block_fatal(b, "%s:%d: %s waits for lane %d (mask 0x%08x), which has exited: a GPU hangs here",
                        caller->file, caller->line, kind_name(caller->wk), l, mask);
        if (o->st != T_WARP)
            return false;
        if (o->wk != caller->wk || o->wmask != mask)
            block_fatal(b, "divergent warp-synchronous calls in warp %d: lane %d at %s:%d (%s, mask 0x%08x), "
                        "lane %d at %s:%d (%s, mask 0x%08x)", warp, linear(b, caller) - base,
                        caller->file, caller->line, kind_name(caller->wk), mask, l, o->file, o->line,
                        kind_name(o->wk), o->wmask);
    }
    const int width = caller->wwidth;
    if (width < 1 || width > 32 || (width & (width - 1)))
        block_fatal(b, "%s:%d: %s width %d is not a power of two in [1, 32]", caller->file,
                    caller->line, kind_name(caller->wk), width);
    unsigned votes = 0;
    for (int l = 0; l < 32; l++)
        if ((mask >> l & 1) && b->t[base + l].wval)
            votes |= 1u << l;
    const uint64_t undefined = caller->wbytes == 8 ? ~(uint64_t)0 : 0xffffffffu;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1))
            continue;
        ethread *o = &b->t[base + l];
        const int seg = l / width * width;
        int src = l;
        switch (o->wk) {
        case W_SHFL: src = seg + (((o->warg % width) + width) % width); break;
        case W_SHFL_UP: src = l - o->warg >= seg ? l - o->warg : l; break;
        case W_SHFL_DOWN: src = l + o->warg < seg + width ? l + o->warg : l; break;
        case W_SHFL_XOR: {
            int x = l ^ o->warg;
            src = x >= seg && x < seg + width ? x : l;
            break;
        }
        case W_BALLOT: o->wres = votes; break;
        case W_ANY: o->wres = votes != 0; break;
        case W_ALL: o->wres = votes == mask; break;
        case W_SYNC: o->wres = 0; break;
        }
        if (o->wk <= W_SHFL_XOR)
            o->wres = (mask >> src & 1) ? b->t[base + src].wval : undefined;
        o->st = T_RUN;
    }
    return true;
}

/* After thread t exited: a lane of its warp waiting for it can never go on. */
void check_exit(eblock *b, ethread *t)
{
    const int me = linear(b, t), warp = me / 32, base = warp * 32;
    for (int l = 0; l < 32 && base + l < b->n; l++) {
        ethread *o = &b->t[base + l];
        if (o->st == T_WARP && (o->wmask >> (me - base) & 1))
            block_fatal(b, "thread %d exited while lane %d waits for it in %s at %s:%d (mask 0x%08x): "
                        "a GPU hangs here", me, l, kind_name(o->wk), o->file, o->line, o->wmask);
    }
}

void release_barrier(eblock *b)
{
    const ethread *first = NULL;
    for (ethread &t : b->t) {
        if (t.st != T_BAR)
            continue;
        if (!first)
            first = &t;
        else if (t.line != first->line || strcmp(t.file, first->file) != 0)
            block_fatal(b, "threads wait at different __syncthreads: thread %d at %s:%d, thread %d at %s:%d",
                        linear(b, first), first->file, first->line, linear(b, &t), t.file, t.line);
    }
    for (ethread &t : b->t)
        if (t.st == T_BAR)
            t.st = T_RUN;
    b->at_bar = 0;
}

[[noreturn]] void deadlock(eblock *b)
{
    char msg[900];
    size_t len = 0;
    for (size_t i = 0; i < b->t.size() && len < sizeof msg - 120; i++) {
        const ethread &t = b->t[i];
        if (t.st != T_BAR && t.st != T_WARP)
            continue;
        bool seen = false; /* one line per distinct place */
        for (size_t j = 0; j < i && !seen; j++)
            seen = b->t[j].st == t.st && b->t[j].line == t.line && strcmp(b->t[j].file, t.file) == 0;
        if (seen)
            continue;
        int count = 0;
        for (const ethread &o : b->t)
            count += o.st == t.st && o.line == t.line && strcmp(o.file, t.file) == 0;
        len += (size_t)snprintf(msg + len, sizeof msg - len, "; %d thread(s) from %zu in %s at %s:%d", count,
                                i, t.st == T_BAR ? "__syncthreads" : kind_name(t.wk), t.file, t.line);
    }
    block_fatal(b, "deadlock: no thread can go on, %d have not exited%s", b->live, msg);
}

void run_block(eblock *b)
{
    const dim3 bd = b->k->block;
    for (int i = 0; i < b->n; i++) {
        ethread &t = b->t[i];
        t.fib = NULL;
        t.tid = uint3{(unsigned)i % bd.x, (unsigned)i / bd.x % bd.y, (unsigned)i / (bd.x * bd.y)};
        t.st = T_NEW;
    }
    if (!b->smem.empty())
        memset(b->smem.data(), 0xff, b->smem.size()); /* uninitialised: NaN */
    b->live = b->n;
    b->at_bar = 0;
    while (b->live > 0) {
        bool progress = false;
        for (int i = 0; i < b->n; i++) {
            ethread *t = &b->t[i];
            if (t->st == T_NEW) {
                t->fib = get_stack(b);
                emu_fiber_prepare(t->fib, thread_main, NULL);
                t->st = T_RUN;
            }
            if (t->st != T_RUN)
                continue;
            progress = true;
            threadIdx = t->tid;
            b->cur = t;
            emu_fiber_resume(&b->host, t->fib);
            if (t->st == T_DONE) {
                b->live--;
                b->pool.push_back(t->fib);
                t->fib = NULL;
                check_exit(b, t);
            }
            if (b->at_bar > 0 && b->at_bar == b->live)
                release_barrier(b);
        }
        if (!progress)
            deadlock(b);
    }
    b->cur = NULL;
}

eblock *this_block()
{
    eblock *b = tl_block;
    if (!b || !b->cur)
        fatal("a device function was called outside a kernel");
    return b;
}

void run_blocks(const kernel_launch &k, std::atomic<long> *next, long total)
{
    static thread_local eblock blk;
    blk.k = &k;
    blk.n = (int)(k.block.x * k.block.y * k.block.z);
    blk.t.resize((size_t)blk.n);
    blk.smem.assign((k.shared + 15) / 16 * 16, 0);
    eblock *saved = tl_block;
    tl_block = &blk;
    gridDim = k.grid;
    blockDim = k.block;
    for (long i; (i = next->fetch_add(1)) < total;) {
        blockIdx = uint3{(unsigned)(i % k.grid.x), (unsigned)(i / k.grid.x % k.grid.y),
                         (unsigned)(i / ((long)k.grid.x * k.grid.y))};
        run_block(&blk);
    }
    tl_block = saved;
}

/* Helper OS threads for CUDAEMU_BLOCK_THREADS > 1: one launch at a time
 * uses them; a launch from another stream meanwhile runs on its own. */
struct helpers {
    std::mutex busy, mu;
    std::condition_variable cv;
    const kernel_launch *k = nullptr;
    std::atomic<long> *next = nullptr;
    long total = 0;
    uint64_t gen = 0;
    int running = 0, count = 0;

    void start(int n)
    {
        count = n;
        for (int i = 0; i < n; i++)
            std::thread([this] { loop(); }).detach();
    }
    void loop()
    {
        uint64_t seen = 0;
        std::unique_lock<std::mutex> l(mu);
        for (;;) {
            cv.wait(l, [&] { return gen != seen; });
            seen = gen;
            const kernel_launch *kk = k;
            std::atomic<long> *nx = next;
            long tot = total;
            l.unlock();
            run_blocks(*kk, nx, tot);
            l.lock();
            if (--running == 0)
                cv.notify_all();
        }
    }
};

} /* namespace */

void run_kernel(const kernel_launch &k)
{
    static const int nthreads = option_int("CUDAEMU_BLOCK_THREADS", 1);
    static helpers *pool = nullptr;
    static std::once_flag once;
    const long total = (long)k.grid.x * k.grid.y * k.grid.z;
    std::atomic<long> next{0};
    if (nthreads > 1 && total > 1) {
        std::call_once(once, [] {
            pool = new helpers;
            pool->start(nthreads - 1);
        });
        std::unique_lock<std::mutex> own(pool->busy, std::try_to_lock);
        if (own.owns_lock()) {
            {
                std::lock_guard<std::mutex> l(pool->mu);
                pool->k = &k;
                pool->next = &next;
                pool->total = total;
                pool->running = pool->count;
                pool->gen++;
            }
            pool->cv.notify_all();
            run_blocks(k, &next, total);
            std::unique_lock<std::mutex> l(pool->mu);
            pool->cv.wait(l, [&] { return pool->running == 0; });
            return;
        }
    }
    run_blocks(k, &next, total);
}

void syncthreads(const char *file, int line)
{
    eblock *b = this_block();
    ethread *t = b->cur;
    t->st = T_BAR;
    t->file = file;
    t->line = line;
    b->at_bar++;
    emu_fiber_yield(&b->host, t->fib, false);
}

uint64_t warp_op(warp_kind kind, const char *file, int line, unsigned mask, uint64_t value, int bytes,
                 int arg, int width)
{
    eblock *b = this_block();
    ethread *t = b->cur;
    const int me = linear(b, t), lane = me % 32;
    if (!(mask >> lane & 1))
        block_fatal(b, "%s:%d: lane %d calls %s with mask 0x%08x, which leaves it out", file, line,
                    lane, kind_name(kind), mask);
    t->st = T_WARP;
    t->file = file;
    t->line = line;
    t->wk = kind;
    t->wmask = mask;
    t->wval = value;
    t->wbytes = bytes;
    t->warg = arg;
    t->wwidth = width;
    if (!try_complete_warp(b, me / 32, t))
        emu_fiber_yield(&b->host, t->fib, false);
    return t->wres;
}

unsigned activemask()
{
    eblock *b = this_block();
    const int base = linear(b, b->cur) / 32 * 32;
    unsigned m = 0;
    for (int l = 0; l < 32 && base + l < b->n; l++)
        if (b->t[base + l].st != T_DONE)
            m |= 1u << l;
    return m;
}

void *dynamic_shared()
{
    eblock *b = this_block();
    return b->smem.empty() ? NULL : b->smem.data();
}

} /* namespace cudaemu */
