/* graph.h — cudaemu's stream capture and graphs (graph.cpp), and what
 * runtime.cpp gives them of its streams and events. */
#ifndef CUDAEMU_GRAPH_H
#define CUDAEMU_GRAPH_H

#include <functional>
#include <vector>

#include "emu.h"

namespace cudaemu {

struct capture;

/* runtime.cpp */
capture *&stream_capture(CUstream_st *s);
std::vector<int> &stream_tail(CUstream_st *s);
uint64_t stream_push_graph(CUstream_st *s, std::function<void()> fn); /* its sequence number */
CUstream_st *stream_resolve(cudaStream_t s);
bool stream_known(cudaStream_t s);
bool stream_blocking(CUstream_st *s); /* not cudaStreamNonBlocking */
capture *&event_capture(CUevent_st *e);
std::vector<int> &event_nodes(CUevent_st *e);
/* an event record node: its replay stamps the time; a launch binds the
 * event to the launch's stream operation (query, synchronize) */
void event_stamp(CUevent_st *e);
void event_bind(CUevent_st *e, CUstream_st *s, uint64_t seq);

/* graph.cpp */
cudaError_t graph_add_node(CUstream_st *s, std::function<void()> fn, const char *what);
cudaError_t graph_wait_event(CUstream_st *s, CUevent_st *e);
/* cudaEventRecordExternal in a capture: an event record node */
cudaError_t graph_add_event_node(CUstream_st *s, CUevent_st *e);
bool capturing(cudaStream_t s);
/* A call not allowed on a capturing stream: invalidates its capture and
 * returns the error for the call. */
cudaError_t invalidate_capture(cudaStream_t s, const char *what);
/* For "potentially unsafe" calls (allocation, freeing): the error when the
 * capture rules prohibit them now, after invalidating the capture. */
cudaError_t capture_prohibits(const char *what);
/* A capture from a blocking stream is active (the legacy stream may not be used). */
bool capture_active_global(void);
bool capture_active_any(void);

} /* namespace cudaemu */

#endif
