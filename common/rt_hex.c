/* rt_hex.c — see rt_hex.h. */
#include "rt_hex.h"

#include <openssl/rand.h>
#include <string.h>

void rt_hex_encode(const uint8_t *in, size_t len, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = d[in[i] >> 4];
        out[2 * i + 1] = d[in[i] & 15];
    }
    out[2 * len] = '\0';
}

int rt_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

rt_status rt_hex_decode(const char *in, uint8_t *out, size_t len)
{
    if (!in || strlen(in) != 2 * len)
        return RT_ERR_INVALID;
    for (size_t i = 0; i < len; i++) {
        int hi = rt_hex_digit(in[2 * i]), lo = rt_hex_digit(in[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return RT_ERR_INVALID;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return RT_OK;
}

void rt_random_bytes(uint8_t *out, size_t len)
{
    RT_ASSERT(RAND_bytes(out, (int)len) == 1);
}
