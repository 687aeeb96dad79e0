/* rt_addr.c — see rt_addr.h. */
#include "rt_addr.h"

#include <string.h>

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
