/* ghash.c — see ghash.h.
 *
 * GHASH in the byte-reflected representation of Gueron and Kounavis
 * ("Intel Carry-Less Multiplication Instruction and its Usage for Computing
 * the GCM Mode"): each block's bytes reversed, a product of two such values
 * is the 256-bit carry-less product shifted left by one bit and reduced
 * modulo x^128 + x^7 + x^2 + x + 1 in two phases of shifts.  Up to 256
 * blocks go per reduction: Y' = Y·H^256 ^ X0·H^256 ^ X1·H^255 ^ ... ^ X255·H
 * (the shift and the reduction are linear, so the products are summed
 * unreduced), four blocks per 512-bit VPCLMULQDQ, whose lanes are summed at
 * the end; only Y's own product waits for the previous reduction.  On Zen 4
 * (one 256 KiB tag): 16 blocks per reduction ran at 16.4 GB/s, 32 at 20.3,
 * 64 at 22.8, 128 at 24.4, 256 at 25.6: a reduction with Y's product costs
 * about what eight blocks' products do.  What is left is the carry-less
 * multiplies, four per 64 bytes: with two (wrong tags, timing only) the loop
 * ran at 38.7 GB/s, with none at 73.6; Karatsuba's three products and the
 * extra shuffle and XOR they need ran at 26.7 (4%, not worth a second table
 * of powers).  A message of fewer blocks (a frame's tail, a small frame)
 * takes the last powers, H^(4v) ... H, in one reduction.  The
 * tag is then GCM's: GHASH over the data, zero-padded to a block, and the
 * lengths block, XORed with E_K(IV || 1). */
#include "ghash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1")))

enum { GROUP = 256 }; /* blocks per reduction */

struct rt_gmac {
    uint8_t pow[GROUP][16]; /* H^256, H^255, ..., H^1, reflected: lane order of a group */
    EVP_CIPHER_CTX *ecb;    /* AES-256 of single blocks */
};

static const uint8_t REVERSE[16] = {15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0};

/* The 256-bit product hi:lo of a and b, its middle term folded in */
TGT static inline void mul256(__m128i a, __m128i b, __m128i *lo, __m128i *hi)
{
    __m128i l = _mm_clmulepi64_si128(a, b, 0x00), h = _mm_clmulepi64_si128(a, b, 0x11);
    __m128i m = _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x10), _mm_clmulepi64_si128(a, b, 0x01));
    *lo = _mm_xor_si128(l, _mm_slli_si128(m, 8));
    *hi = _mm_xor_si128(h, _mm_srli_si128(m, 8));
}

/* hi:lo shifted left one bit (the reflection) and reduced to 128 bits */
TGT static inline __m128i reduce(__m128i lo, __m128i hi)
{
    __m128i c_lo = _mm_srli_epi32(lo, 31), c_hi = _mm_srli_epi32(hi, 31);
    lo = _mm_slli_epi32(lo, 1);
    hi = _mm_slli_epi32(hi, 1);
    __m128i carry = _mm_srli_si128(c_lo, 12); /* lo's top bit into hi */
    lo = _mm_or_si128(lo, _mm_slli_si128(c_lo, 4));
    hi = _mm_or_si128(_mm_or_si128(hi, _mm_slli_si128(c_hi, 4)), carry);
    /* first phase */
    __m128i t = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(lo, 31), _mm_slli_epi32(lo, 30)),
                              _mm_slli_epi32(lo, 25));
    __m128i rest = _mm_srli_si128(t, 4);
    lo = _mm_xor_si128(lo, _mm_slli_si128(t, 12));
    /* second phase */
    __m128i u = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(lo, 1), _mm_srli_epi32(lo, 2)),
                              _mm_srli_epi32(lo, 7));
    u = _mm_xor_si128(u, rest);
    return _mm_xor_si128(hi, _mm_xor_si128(lo, u));
}

TGT static inline __m128i gfmul(__m128i a, __m128i b)
{
    __m128i lo, hi;
    mul256(a, b, &lo, &hi);
    return reduce(lo, hi);
}

TGT static inline __m128i fold4(__m512i v)
{
    __m256i t = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    return _mm_xor_si128(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

/* y after the nv vectors (4 blocks each) at p, one reduction: Y·H^(4nv) ^
 * X0·H^(4nv) ^ ... ^ X_last·H, the blocks' powers the last 4nv of m->pow */
TGT static inline __attribute__((always_inline)) __m128i
ghash_group(const rt_gmac *m, __m128i y, const uint8_t *p, int nv, __m512i rev4)
{
    __m512i lo = _mm512_setzero_si512(), hi = lo, mid = lo;
    const uint8_t *pw = m->pow[GROUP - 4 * nv];
    for (int i = 0; i < nv; i++) {
        __m512i d = _mm512_shuffle_epi8(_mm512_loadu_si512(p + 64 * i), rev4);
        __m512i w = _mm512_loadu_si512(pw + 64 * i);
        lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(d, w, 0x00));
        hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(d, w, 0x11));
        mid = _mm512_ternarylogic_epi64(mid, _mm512_clmulepi64_epi128(d, w, 0x10),
                                        _mm512_clmulepi64_epi128(d, w, 0x01), 0x96);
    }
    const __m128i hn = _mm_loadu_si128((const __m128i *)pw);
    /* y's term, y·H^(4nv), apart: the products of the blocks do not wait
     * for the last reduction */
    __m128i yl, yh;
    mul256(y, hn, &yl, &yh);
    __m128i l = fold4(lo), h = fold4(hi), md = fold4(mid);
    return reduce(_mm_xor_si128(_mm_xor_si128(l, _mm_slli_si128(md, 8)), yl),
                  _mm_xor_si128(_mm_xor_si128(h, _mm_srli_si128(md, 8)), yh));
}

/* y after n whole blocks at p */
TGT static __m128i ghash_blocks(const rt_gmac *m, __m128i y, const uint8_t *p, size_t n)
{
    const __m128i rev = _mm_loadu_si128((const __m128i *)REVERSE);
    const __m128i h1 = _mm_loadu_si128((const __m128i *)m->pow[GROUP - 1]);
    if (n >= 4) {
        const __m512i rev4 = _mm512_broadcast_i32x4(rev);
        for (; n >= GROUP; n -= GROUP, p += 16 * GROUP)
            y = ghash_group(m, y, p, GROUP / 4, rev4);
        if (n >= 4) { /* the rest's whole vectors, on the last powers */
            const int nv = (int)(n / 4);
            y = ghash_group(m, y, p, nv, rev4);
            n -= 4 * (size_t)nv, p += 64 * (size_t)nv;
        }
    }
    for (; n > 0; n--, p += 16)
        y = gfmul(_mm_xor_si128(y, _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)p), rev)), h1);
    return y;
}

static void aes_block(rt_gmac *m, const uint8_t in[16], uint8_t out[16])
{
    int n = 0;
    EVP_EncryptUpdate(m->ecb, out, &n, in, 16);
}

static bool cpu_ok(void)
{
    const char *want = getenv("RT_GHASH");
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq") &&
           __builtin_cpu_supports("pclmul") && !(want && !strcmp(want, "openssl"));
}

bool rt_gmac_available(void) { return cpu_ok(); }

const char *rt_gmac_impl(void) { return cpu_ok() ? "vpclmulqdq-512" : "openssl"; }

TGT static void make_powers(rt_gmac *m, const uint8_t hkey[16])
{
    const __m128i rev = _mm_loadu_si128((const __m128i *)REVERSE);
    const __m128i h = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)hkey), rev);
    __m128i x = h;
    for (int i = GROUP - 1; i >= 0; i--) { /* pow[GROUP - 1] = H, pow[GROUP - 2] = H^2, ... */
        _mm_storeu_si128((__m128i *)m->pow[i], x);
        x = gfmul(x, h);
    }
}

rt_gmac *rt_gmac_create(const uint8_t key[32])
{
    if (!cpu_ok())
        return NULL;
    rt_gmac *m = calloc(1, sizeof *m);
    if (!m || !(m->ecb = EVP_CIPHER_CTX_new()) ||
        EVP_EncryptInit_ex(m->ecb, EVP_aes_256_ecb(), NULL, key, NULL) != 1 ||
        EVP_CIPHER_CTX_set_padding(m->ecb, 0) != 1) {
        rt_gmac_destroy(m);
        return NULL;
    }
    uint8_t zero[16] = {0}, hkey[16];
    aes_block(m, zero, hkey);
    make_powers(m, hkey);
    OPENSSL_cleanse(hkey, sizeof hkey);
    return m;
}

void rt_gmac_destroy(rt_gmac *m)
{
    if (!m)
        return;
    EVP_CIPHER_CTX_free(m->ecb);
    OPENSSL_cleanse(m->pow, sizeof m->pow);
    free(m);
}

TGT void rt_gmac_tag(rt_gmac *m, const uint8_t iv[12], const uint8_t a[16], const void *b,
                     size_t blen, uint8_t tag[16])
{
    const __m128i rev = _mm_loadu_si128((const __m128i *)REVERSE);
    __m128i y = ghash_blocks(m, _mm_setzero_si128(), a, 1);
    const uint8_t *pb = b;
    const size_t whole = blen / 16;
    y = ghash_blocks(m, y, pb, whole);
    uint8_t last[16] = {0};
    if (blen % 16) { /* the last partial block, zero-padded */
        memcpy(last, pb + whole * 16, blen % 16);
        y = ghash_blocks(m, y, last, 1);
    }
    uint8_t lens[16] = {0}; /* the data's length in bits, big-endian; the (empty) plaintext's */
    const uint64_t bits = ((uint64_t)blen + 16) * 8;
    for (int i = 0; i < 8; i++)
        lens[i] = (uint8_t)(bits >> (56 - 8 * i));
    y = ghash_blocks(m, y, lens, 1);
    uint8_t j0[16], mask[16];
    memcpy(j0, iv, 12);
    memcpy(j0 + 12, "\0\0\0\1", 4);
    aes_block(m, j0, mask);
    __m128i s = _mm_xor_si128(_mm_shuffle_epi8(y, rev), _mm_loadu_si128((const __m128i *)mask));
    _mm_storeu_si128((__m128i *)tag, s);
}

#else

bool rt_gmac_available(void) { return false; }
const char *rt_gmac_impl(void) { return "openssl"; }
rt_gmac *rt_gmac_create(const uint8_t key[32])
{
    (void)key;
    return NULL;
}
void rt_gmac_destroy(rt_gmac *m) { (void)m; }
void rt_gmac_tag(rt_gmac *m, const uint8_t iv[12], const uint8_t a[16], const void *b, size_t blen,
                 uint8_t tag[16])
{
    (void)m, (void)iv, (void)a, (void)b, (void)blen, (void)tag;
}

#endif
