/* ghash.h — private to transport/: AES-GMAC (GCM's tag over authenticated
 * data only, NIST SP 800-38D) with GHASH run on VPCLMULQDQ over 512-bit
 * vectors, up to 256 blocks per reduction, where the CPU has it (AVX-512 with
 * VPCLMULQDQ: AMD Zen 4 on, Intel Ice Lake and Sapphire Rapids on).
 * OpenSSL 3.0's GHASH uses 128-bit PCLMULQDQ only (8 GB/s on Zen 4); this
 * one computes the same function, bit for bit (test_transport checks it
 * against OpenSSL's tags), so the two ends of a ring need not agree on which
 * ran.  The block cipher is OpenSSL's AES-256 (two blocks per frame: the
 * hash key once, the tag's mask per frame). */
#ifndef RT_GHASH_H
#define RT_GHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rt_gmac rt_gmac;

/* True when this CPU runs the vector GHASH (and RT_GHASH is not "openssl",
 * which benchmarks set to compare). */
bool rt_gmac_available(void);
/* A context for key (AES-256); NULL where !rt_gmac_available() or out of
 * memory. */
rt_gmac *rt_gmac_create(const uint8_t key[32]);
void rt_gmac_destroy(rt_gmac *m);
/* The 16-byte tag of the data a (a 16-byte block, e.g. a frame header) then
 * b (blen bytes) under the 96-bit iv, as AES-256-GCM with a, b as its
 * additional data and no plaintext would make it. */
void rt_gmac_tag(rt_gmac *m, const uint8_t iv[12], const uint8_t a[16], const void *b, size_t blen,
                 uint8_t tag[16]);
/* The name of the GHASH that ran ("vpclmulqdq-512" or "openssl"), for logs
 * and benchmarks. */
const char *rt_gmac_impl(void);

#endif
