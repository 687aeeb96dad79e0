/* graph.cpp — stream capture and CUDA graphs.  While a stream captures,
 * what is enqueued on it becomes a node (a closure holding the arguments
 * as they were at capture time, so a replay uses them again) depending on
 * the stream's previous nodes; an event recorded in the capture and waited
 * on by another stream brings that stream into the capture (fork), and the
 * origin stream must wait on the forked streams' work before the capture
 * ends (join), else cudaStreamEndCapture fails with
 * cudaErrorStreamCaptureUnjoined.  Calls that CUDA prohibits while
 * capturing (synchronising a capturing stream, allocating in global or
 * thread-local mode, copies with pageable memory) invalidate the capture.
 *
 * A launch runs the nodes in a topological order picked at instantiation:
 * by default a random one (seeded by CUDAEMU_SEED), so that a dependency
 * missing from the graph changes results here as it would on a GPU, where
 * independent nodes run concurrently; CUDAEMU_GRAPH_ORDER=capture runs them
 * in capture order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graph.h"

namespace cudaemu {

struct gnode {
    std::function<void()> fn;
    std::vector<int> deps;
    std::string what;
    CUevent_st *event = nullptr; /* an event record node's event */
};

struct capture {
    CUstream_st *origin;
    cudaStreamCaptureMode mode;
    std::thread::id thread;
    bool blocking_origin;
    bool active = true;
    bool invalid = false;
    std::string why;
    std::vector<gnode> nodes;
    std::vector<CUstream_st *> streams;
};

static std::mutex g_mu;
/* never freed (events may still name them) nor destroyed at exit */
static std::vector<capture *> &g_caps = *new std::vector<capture *>;

cudaError_t graph_add_node(CUstream_st *s, std::function<void()> fn, const char *what)
{
    std::lock_guard<std::mutex> l(g_mu);
    capture *c = stream_capture(s);
    if (c->invalid)
        return set_error(cudaErrorStreamCaptureInvalidated);
    c->nodes.push_back(gnode{std::move(fn), stream_tail(s), what});
    stream_tail(s) = {(int)c->nodes.size() - 1};
    return cudaSuccess;
}

cudaError_t graph_add_event_node(CUstream_st *s, CUevent_st *e)
{
    std::lock_guard<std::mutex> l(g_mu);
    capture *c = stream_capture(s);
    if (c->invalid)
        return cudaErrorStreamCaptureInvalidated;
    c->nodes.push_back(gnode{[e] { event_stamp(e); }, stream_tail(s), "event record", e});
    stream_tail(s) = {(int)c->nodes.size() - 1};
    return cudaSuccess;
}

cudaError_t graph_wait_event(CUstream_st *s, CUevent_st *e)
{
    std::lock_guard<std::mutex> l(g_mu);
    capture *ec = event_capture(e), *sc = stream_capture(s);
    if (ec && !ec->active)
        ec = nullptr; /* recorded in a capture that has ended: nothing to wait for */
    if (!ec) {
        if (!sc)
            return cudaSuccess;
        /* a captured stream waiting on work outside the capture */
        sc->invalid = true;
        sc->why = "cudaStreamWaitEvent on an event recorded outside the capture";
        return cudaErrorStreamCaptureIsolation;
    }
    if (!sc) { /* fork: s joins the capture after the event's nodes */
        stream_capture(s) = ec;
        ec->streams.push_back(s);
        stream_tail(s) = event_nodes(e);
        return cudaSuccess;
    }
    if (sc != ec) {
        sc->invalid = ec->invalid = true;
        sc->why = ec->why = "cudaStreamWaitEvent merges two captures";
        return cudaErrorStreamCaptureMerge;
    }
    std::vector<int> &t = stream_tail(s);
    for (int n : event_nodes(e))
        if (std::find(t.begin(), t.end(), n) == t.end())
            t.push_back(n);
    return cudaSuccess;
}

bool capturing(cudaStream_t st)
{
    CUstream_st *s = stream_resolve(st);
    std::lock_guard<std::mutex> l(g_mu);
    return stream_capture(s) != nullptr;
}

cudaError_t invalidate_capture(cudaStream_t st, const char *what)
{
    CUstream_st *s = stream_resolve(st);
    std::lock_guard<std::mutex> l(g_mu);
    capture *c = stream_capture(s);
    if (c && !c->invalid) {
        c->invalid = true;
        c->why = what;
        fprintf(stderr, "cudaemu: %s on a capturing stream: the capture is invalidated\n", what);
    }
    return cudaErrorStreamCaptureUnsupported;
}

cudaError_t capture_prohibits(const char *what)
{
    std::lock_guard<std::mutex> l(g_mu);
    const std::thread::id me = std::this_thread::get_id();
    cudaError_t e = cudaSuccess;
    for (capture *c : g_caps) {
        if (!c->active || c->mode == cudaStreamCaptureModeRelaxed)
            continue;
        if (c->thread == me || c->mode == cudaStreamCaptureModeGlobal) {
            if (!c->invalid) {
                c->invalid = true;
                c->why = what;
                fprintf(stderr, "cudaemu: %s while a stream captures: the capture is invalidated\n", what);
            }
            e = cudaErrorStreamCaptureUnsupported;
        }
    }
    return e;
}

bool capture_active_global(void)
{
    std::lock_guard<std::mutex> l(g_mu);
    for (capture *c : g_caps)
        if (c->active && c->blocking_origin)
            return true;
    return false;
}

bool capture_active_any(void)
{
    std::lock_guard<std::mutex> l(g_mu);
    for (capture *c : g_caps)
        if (c->active)
            return true;
    return false;
}

} /* namespace cudaemu */

using namespace cudaemu;

struct CUgraph_st {
    std::vector<gnode> nodes;
};

struct CUgraphExec_st {
    std::shared_ptr<std::vector<gnode>> nodes;
    std::vector<int> order;
};

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t st, enum cudaStreamCaptureMode mode)
{
    if (!st)
        return set_error(cudaErrorStreamCaptureUnsupported); /* the legacy stream cannot capture */
    if (!stream_known(st))
        return set_error(cudaErrorInvalidResourceHandle);
    CUstream_st *s = stream_resolve(st);
    std::lock_guard<std::mutex> l(g_mu);
    if (stream_capture(s))
        return set_error(cudaErrorIllegalState);
    capture *c = new capture;
    c->origin = s;
    c->mode = mode;
    c->thread = std::this_thread::get_id();
    c->blocking_origin = stream_blocking(s);
    c->streams.push_back(s);
    g_caps.push_back(c);
    stream_capture(s) = c;
    stream_tail(s).clear();
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t st, enum cudaStreamCaptureStatus *status)
{
    CUstream_st *s = stream_resolve(st);
    std::lock_guard<std::mutex> l(g_mu);
    capture *c = stream_capture(s);
    *status = !c ? cudaStreamCaptureStatusNone
                 : c->invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t st, cudaGraph_t *g)
{
    *g = NULL;
    if (!st || !stream_known(st))
        return set_error(cudaErrorInvalidResourceHandle);
    CUstream_st *s = stream_resolve(st);
    std::lock_guard<std::mutex> l(g_mu);
    capture *c = stream_capture(s);
    if (!c)
        return set_error(cudaErrorIllegalState);
    if (c->origin != s)
        return set_error(cudaErrorStreamCaptureUnmatched);
    if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
        return set_error(cudaErrorStreamCaptureWrongThread);
    /* every node must lead to the origin's last nodes: else some forked
     * stream's work was never joined back */
    std::vector<char> reach(c->nodes.size(), 0);
    std::vector<int> work = stream_tail(s);
    while (!work.empty()) {
        int n = work.back();
        work.pop_back();
        if (reach[(size_t)n])
            continue;
        reach[(size_t)n] = 1;
        for (int d : c->nodes[(size_t)n].deps)
            work.push_back(d);
    }
    bool unjoined = std::find(reach.begin(), reach.end(), 0) != reach.end();
    for (CUstream_st *o : c->streams) {
        stream_capture(o) = nullptr;
        stream_tail(o).clear();
    }
    c->active = false;
    if (c->invalid) {
        fprintf(stderr, "cudaemu: capture invalidated earlier by %s\n", c->why.c_str());
        c->nodes.clear();
        return set_error(cudaErrorStreamCaptureInvalidated);
    }
    if (unjoined) {
        c->nodes.clear();
        return set_error(cudaErrorStreamCaptureUnjoined);
    }
    *g = new CUgraph_st{std::move(c->nodes)};
    c->nodes.clear();
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *out, cudaGraph_t g, unsigned long long flags)
{
    (void)flags;
    *out = NULL;
    if (!g)
        return set_error(cudaErrorInvalidValue);
    static unsigned long long seed = (unsigned long long)option_int("CUDAEMU_SEED", 1) * 0x9e3779b97f4a7c15ull + 1;
    static std::mutex seed_mu;
    const char *mode = getenv("CUDAEMU_GRAPH_ORDER");
    const bool in_order = mode && strcmp(mode, "capture") == 0;
    CUgraphExec_st *x = new CUgraphExec_st;
    x->nodes = std::make_shared<std::vector<gnode>>(g->nodes);
    const size_t n = g->nodes.size();
    std::vector<int> missing(n, 0);
    std::vector<std::vector<int>> users(n);
    for (size_t i = 0; i < n; i++)
        for (int d : g->nodes[i].deps) {
            missing[i]++;
            users[(size_t)d].push_back((int)i);
        }
    std::vector<int> ready;
    for (size_t i = 0; i < n; i++)
        if (!missing[i])
            ready.push_back((int)i);
    std::lock_guard<std::mutex> l(seed_mu);
    while (!ready.empty()) {
        size_t pick = 0;
        if (!in_order) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            pick = (size_t)(seed >> 33) % ready.size();
        } else {
            pick = (size_t)(std::min_element(ready.begin(), ready.end()) - ready.begin());
        }
        int v = ready[pick];
        ready.erase(ready.begin() + (long)pick);
        x->order.push_back(v);
        for (int u : users[(size_t)v])
            if (--missing[(size_t)u] == 0)
                ready.push_back(u);
    }
    *out = x;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t st)
{
    if (!x || !stream_known(st))
        return set_error(cudaErrorInvalidResourceHandle);
    if (capturing(st))
        return set_error(cudaErrorNotSupported); /* graphs into captures: not emulated */
    std::shared_ptr<std::vector<gnode>> nodes = x->nodes;
    std::vector<int> order = x->order;
    CUstream_st *s = stream_resolve(st);
    const uint64_t seq = stream_push_graph(s, [nodes, order] {
        for (int i : order)
            if ((*nodes)[(size_t)i].fn)
                (*nodes)[(size_t)i].fn();
    });
    for (const gnode &n : *nodes) /* reached when the launch is done */
        if (n.event)
            event_bind(n.event, s, seq);
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    delete g;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    delete x;
    return cudaSuccess;
}

} /* extern "C" */
