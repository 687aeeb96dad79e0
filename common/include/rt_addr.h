/* rt_addr.h — the one parser of "host:port" addresses (configuration keys,
 * command-line flags, the peers of a ring): "name:7070", "10.0.0.5:7070",
 * "[fe80::1]:7070".  The host is returned without brackets. */
#ifndef RT_ADDR_H
#define RT_ADDR_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Split addr into host (hostlen bytes) and port.  The port must be a
 * decimal number in [1, 65535], or 0 too when allow_port0 (listen on any
 * port).  RT_ERR_INVALID with "'ADDR' is not host:port (...)" otherwise;
 * callers prefix what the address is for. */
rt_status rt_addr_parse(const char *addr, bool allow_port0, char *host, size_t hostlen, int *port,
                        char *err);

/* n (at most 8) distinct TCP ports free on 127.0.0.1 now, for daemons about
 * to be started on them: every probe socket stays bound until all are known
 * (closed one at a time, the kernel may hand the same port out twice).
 * Drawn at random below the kernel's ephemeral range (net.ipv4.
 * ip_local_port_range), where no outgoing connection takes them, else the
 * kernel's pick.  Another program binding ports of its own may still take
 * one before the daemon does: a caller that starts a daemon on them retries
 * with new ports if it exits.  false when the probe fails. */
bool rt_loopback_ports(int n, int *ports);

#ifdef __cplusplus
}
#endif
#endif
