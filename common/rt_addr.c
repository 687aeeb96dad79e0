/* rt_addr.c — see rt_addr.h. */
#include "rt_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
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

bool rt_loopback_ports(int n, int *ports)
{
    int fd[8];
    if (n < 1 || n > 8)
        return false;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof a;
        fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ports[i] = -1;
        if (fd[i] >= 0 && bind(fd[i], (struct sockaddr *)&a, sizeof a) == 0 &&
            getsockname(fd[i], (struct sockaddr *)&a, &l) == 0)
            ports[i] = ntohs(a.sin_port);
        ok = ok && ports[i] > 0;
    }
    for (int i = 0; i < n; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    return ok;
}
