/* rt_endian.h — little-endian integers in byte buffers, the one definition
 * for every on-disk and on-wire format (checkpoints, shards, Parquet,
 * data-plane frames, sockets' handshakes, verbs' connection info): byte by
 * byte, so alignment and the host's byte order never matter. */
#ifndef RT_ENDIAN_H
#define RT_ENDIAN_H

#include <stdint.h>

static inline void rt_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void rt_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void rt_put_le64(uint8_t *p, uint64_t v)
{
    rt_put_le32(p, (uint32_t)v);
    rt_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t rt_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t rt_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rt_get_le64(const uint8_t *p)
{
    return (uint64_t)rt_get_le32(p) | (uint64_t)rt_get_le32(p + 4) << 32;
}

#endif
