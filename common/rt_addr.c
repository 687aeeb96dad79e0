/* rt_addr.c — see rt_addr.h. */
#include "rt_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

rt_status rt_addr_parse(const char *addr, bool allow_port0, char *host, size_t hostlen, int *port,
                        char *err)
{
    if (!addr)
        addr = "";
    const char *h = addr, *colon;
    size_t hl;
    if (addr[0] == '[') { /* [v6]:port */
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':')
            return rt_err(err, RT_ERR_INVALID, "'%s' is not host:port (expected [v6-address]:port)",
                          addr);
        h = addr + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return rt_err(err, RT_ERR_INVALID, "'%s' is not host:port (no port)", addr);
        hl = (size_t)(colon - addr);
        if (memchr(addr, ':', hl))
            return rt_err(err, RT_ERR_INVALID,
                          "'%s' is not host:port (write an IPv6 address in brackets)", addr);
    }
    if (hl == 0)
        return rt_err(err, RT_ERR_INVALID, "'%s' is not host:port (no host)", addr);
    if (hl >= hostlen)
        return rt_err(err, RT_ERR_INVALID, "'%s' is not host:port (the host name is too long)",
                      addr);
    const char *p = colon + 1;
    long v = 0;
    size_t digits = 0;
    for (; p[digits] >= '0' && p[digits] <= '9' && digits < 6; digits++)
        v = v * 10 + (p[digits] - '0');
    if (digits == 0 || p[digits] != '\0' || v > 65535 || (v == 0 && !allow_port0))
        return rt_err(err, RT_ERR_INVALID, "'%s' is not host:port (the port must be %s to 65535)",
                      addr, allow_port0 ? "0" : "1");
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)v;
    return RT_OK;
}

/* The first port of the kernel's ephemeral range (what connect() and a
 * bind to port 0 take from); 32768 when it cannot be read. */
static int ephemeral_low(void)
{
    int lo = 32768, hi = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2)
            lo = 32768;
        fclose(f);
    }
    return lo;
}

/* Bind fd to 127.0.0.1:port (0: the kernel's pick); the port bound, or -1. */
static int bind_loopback(int fd, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &l) != 0)
        return -1;
    return ntohs(a.sin_port);
}

bool rt_loopback_ports(int n, int *ports)
{
    int fd[8];
    if (n < 1 || n > 8)
        return false;
    /* from below the ephemeral range where there is room: no process's
     * outgoing connection can take such a port before the daemon binds it,
     * nor while a restarted daemon is away from it */
    const int lo = ephemeral_low(), base = 10000;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ports[i] = -1;
        for (int t = 0; fd[i] >= 0 && ports[i] < 0 && lo - base >= 1000 && t < 64; t++) {
            uint32_t r = 0;
            if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
                break;
            ports[i] = bind_loopback(fd[i], base + (int)(r % (uint32_t)(lo - base)));
        }
        if (fd[i] >= 0 && ports[i] < 0)
            ports[i] = bind_loopback(fd[i], 0);
        ok = ok && ports[i] > 0;
    }
    for (int i = 0; i < n; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    return ok;
}
