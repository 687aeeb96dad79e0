/* bench_launch.h — shared by the ring benchmarks: start N rank processes on
 * 127.0.0.1 (or as hosts in network namespaces) with pre-bound listening
 * sockets, collect one fixed-size result record per rank through a pipe,
 * reap every child. */
#ifndef RT_BENCH_LAUNCH_H
#define RT_BENCH_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

/* The rank body: rank r of n, its listening socket, every address; writes
 * `rec_size` bytes of result into rec.  Returns the process exit code. */
typedef int (*bl_rank_fn)(int r, int n, int listen_fd, char **addrs, void *rec, void *arg);

/* Fork n ranks running fn; recs receives n records of rec_size bytes in rank
 * order.  Returns 0 when every rank exited 0 and reported. */
int bl_launch(int n, bl_rank_fn fn, void *arg, void *recs, size_t rec_size, int timeout_s);

/* Ranks as hosts of per_host: rank r runs in the network namespace named
 * netns[r / per_host] (as `ip netns` names it) and listens on addr[r /
 * per_host] there, instead of on 127.0.0.1 in the caller's (nhosts names
 * each).  Returns false, saying why on stderr, when a name is missing or
 * a namespace cannot be opened. */
bool bl_hosts(int per_host, int nhosts, char *const *netns, char *const *addr);

#endif
