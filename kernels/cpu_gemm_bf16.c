/* cpu_gemm_bf16.c — the matrix multiply of `[model] precision = bf16` on
 * CPUs with AVX512_BF16 (AMD Zen 4 on, Intel Cooper Lake and Sapphire Rapids
 * on), with AMX's tiles where the CPU has them (Intel Sapphire Rapids on;
 * below): C (fp32) = op(A) · op(B) with A and B rounded to bf16 (round to
 * nearest even, as PyTorch's autocast rounds) and every sum in fp32.
 *
 * It is cpu_gemm.c's blocked product with another kernel (cpu_gemm_impl.h):
 * the packing rounds to bf16 as it copies — no pass of its own over the
 * operands, which stay fp32 in the model, but for the tensors a model keeps
 * in bf16 already (RT_BF16, rt_gemm_ex: rounded the same way by the layer
 * that wrote them, packed as they are) — and stores pairs of k, (k, k+1)
 * of one row or column, as the two halves of 32 bits; the 12 x 32
 * micro-kernel broadcasts a pair of A and runs vdpbf16ps on two vectors of
 * B's pairs: 32 multiply-adds per instruction where vfmadd231ps does 16, and
 * half the bytes through the caches.  vdpbf16ps adds the odd pair's product,
 * then the even one's, to the fp32 sum (each product is exact in fp32), so
 * an element of C is again one chain over k in a fixed order: its bits do
 * not depend on the batch, the row's position or the thread count, as the
 * fp32 kernels' (test_gemm_cpu).  Inputs and outputs below fp32's normal
 * range are flushed to zero by the instructions (DAZ, FTZ). */
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_gemm_impl.h"
#include "cpu_simd.h"
#include "rt_status.h"

#if defined(__x86_64__) && defined(__GNUC__)

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* Pairs (x[i], y[i]) of 16 floats each, x in the low half (the even k):
 * both converted at once (words x0..x15, y0..y15), then interleaved */
TGT static inline __m512i bf16_pairs(__m512 x, __m512 y)
{
    const __m512i interleave =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(y, x));
}

/* The first n (0..16) floats at p, the rest zero.  Whole vectors are read
 * without a mask, here and below: on AMD Zen 5 the masked loads of words
 * (vmovdqu16) held TabM's dW up — in bf16 1.14x fp32's rate with them,
 * 1.64-1.83x with plain loads where all 16 or 32 elements are wanted. */
TGT static inline __m512 load_n(const float *p, int n)
{
    return n >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}

/* r[c] = column c of the 16 x 16 block of 32-bit elements in r[0..15]
 * (unpacks build 4 x 4 blocks in each 128-bit lane, two lane shuffles
 * gather each column's four lanes) */
TGT static inline void transpose16(__m512i r[16])
{
    __m512i t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* r[4i+j], lane L: column 4L+j of rows 4i..4i+3 */
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            t[8 * i + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
            t[8 * i + 4 + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0x88);
        r[j + 8] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0xdd);
    }
}

/* A source of the packing: fp32 values (rounded as they are packed), or
 * values stored in bf16 already (RT_BF16 tensors: rounded the same way by
 * whoever wrote them, so the panels hold the same bits) */
typedef struct src {
    const char *p;
    bool h; /* bf16 (2 bytes a value), else fp32 */
} src;

static inline const char *at(src s, int64_t i) { return s.p + i * (s.h ? 2 : 4); }

/* The pairs of n (0..32) consecutive k-values at p, the rest zero: fp32
 * converted in one instruction (vcvtne2ps2bf16 keeps neighbours together);
 * bf16 values already are their pairs, two to 32 bits */
TGT static inline __m512i row_pairs(const char *p, bool h, int n)
{
    if (h)
        return n >= 32 ? _mm512_loadu_si512(p)
                       : _mm512_maskz_loadu_epi16(((__mmask32)1 << n) - 1, p);
    const float *f = (const float *)p;
    return (__m512i)_mm512_cvtne2ps_pbh(load_n(f + 16, n > 16 ? n - 16 : 0),
                                        load_n(f, n < 16 ? n : 16));
}

/* The pairs (r0[c], r1[c]) of m (0..16) columns, r1 NULL for zeros */
TGT static inline __m512i col_pairs(const char *r0, const char *r1, bool h, int m)
{
    if (h) {
        const __mmask16 k = (__mmask16)((1u << m) - 1);
        __m256i x16 =
            m == 16 ? _mm256_loadu_si256((const __m256i *)r0) : _mm256_maskz_loadu_epi16(k, r0);
        __m256i y16 = !r1       ? _mm256_setzero_si256()
                      : m == 16 ? _mm256_loadu_si256((const __m256i *)r1)
                                : _mm256_maskz_loadu_epi16(k, r1);
        return _mm512_or_si512(_mm512_cvtepu16_epi32(x16),
                               _mm512_slli_epi32(_mm512_cvtepu16_epi32(y16), 16));
    }
    __m512 x = load_n((const float *)r0, m);
    __m512 y = r1 ? load_n((const float *)r1, m) : _mm512_setzero_ps();
    return bf16_pairs(x, y);
}

/* w rows of a source whose k-values are contiguous (rows of A for op(A) =
 * A, of B for op(B) = Bᵀ; each row kc values from s, ld apart), of which
 * the first `valid` are real: as pairs, dst[kp*w + j].  Sixteen rows at a
 * time, 32 k-values each: a row's 32 values become 16 pairs, and a 16 x 16
 * transpose turns the rows' pairs into the panel's k-rows. */
TGT static void pack_rows_bf16(src s, int64_t ld, int64_t kc, int w, int64_t valid, uint32_t *dst)
{
    for (int g = 0; g < w; g += 16) {
        const int rows = w - g < 16 ? w - g : 16;
        const __mmask16 keep = (__mmask16)((1u << rows) - 1);
        for (int64_t k = 0; k < kc; k += 32) {
            const int n = kc - k < 32 ? (int)(kc - k) : 32;
            __m512i r[16];
            for (int i = 0; i < 16; i++)
                r[i] = i < rows && g + i < valid ? row_pairs(at(s, (g + i) * ld + k), s.h, n)
                                                 : _mm512_setzero_si512();
            transpose16(r);
            for (int q = 0; q < (n + 1) / 2; q++)
                if (rows == 16)
                    _mm512_storeu_si512(dst + (k / 2 + q) * w + g, r[q]);
                else
                    _mm512_mask_storeu_epi32(dst + (k / 2 + q) * w + g, keep, r[q]);
        }
    }
}

/* Columns [0, n) (n <= 32, the rest of the panel's w zero) of two rows
 * whose columns are contiguous (op(A) = Aᵀ's k-rows, op(B) = B's): the
 * pairs (r0[c], r1[c]) at d[c]; r1 NULL past K (zeros). */
TGT __attribute__((always_inline)) static inline void
pack_pair_row(const char *r0, const char *r1, bool h, int n, int w, uint32_t *d)
{
    for (int c = 0; c < w; c += 16) {
        int m = n - c < 0 ? 0 : n - c < 16 ? n - c : 16;
        const int64_t off = (int64_t)c * (h ? 2 : 4);
        __m512i v = col_pairs(r0 + off, r1 ? r1 + off : NULL, h, m);
        int keep = w - c < 16 ? w - c : 16;
        if (keep == 16)
            _mm512_storeu_si512(d + c, v);
        else
            _mm512_mask_storeu_epi32(d + c, (__mmask16)((1u << keep) - 1), v);
    }
}

#define PREFETCH_PAIRS 8

TGT static void pack_a_src(src A, int64_t lda, bool ta, int64_t i0, int64_t mc, int64_t p0,
                           int64_t kc, int mr, float *apf)
{
    uint32_t *ap = (uint32_t *)apf;
    const int64_t kp = (kc + 1) / 2;
    if (!ta) { /* A is M x K: each row contiguous in k */
        for (int64_t ip = 0; ip < mc; ip += mr)
            pack_rows_bf16((src){at(A, (i0 + ip) * lda + p0), A.h}, lda, kc, mr,
                           mc - ip < mr ? mc - ip : mr, ap + ip * kp);
        return;
    }
    /* A is K x M: each pair of k-rows of the block converted once, in order,
     * and dealt out to the panels (mc <= the kernel's MC) */
    uint32_t row[256 + 16] __attribute__((aligned(64)));
    const int64_t wide = (mc + mr - 1) / mr * mr;
    RT_ASSERT(wide <= 256); /* the kernel's MC is 96 */
    const int64_t row_bytes = mc * (A.h ? 2 : 4);
    for (int64_t p = 0; p < kp; p++) {
        /* the rows a few pairs on: the pairs' rows are lda apart, which
         * the hardware's prefetch did not follow (TabM's dW, whose k is
         * 32,768 rows: 1.54x fp32's rate without, 1.83-1.89x with; Zen 5) */
        if (2 * (p + PREFETCH_PAIRS) + 1 < kc)
            for (int64_t b = 0; b < row_bytes; b += 64) {
                __builtin_prefetch(at(A, (p0 + 2 * (p + PREFETCH_PAIRS)) * lda + i0) + b);
                __builtin_prefetch(at(A, (p0 + 2 * (p + PREFETCH_PAIRS) + 1) * lda + i0) + b);
            }
        const char *r0 = at(A, (p0 + 2 * p) * lda + i0);
        pack_pair_row(r0, 2 * p + 1 < kc ? at(A, (p0 + 2 * p + 1) * lda + i0) : NULL, A.h, (int)mc,
                      (int)wide, row);
        for (int64_t ip = 0; ip < mc; ip += mr)
            memcpy(ap + ip * kp + p * mr, row + ip, (size_t)mr * sizeof *row);
    }
}

/* Columns [j0, j0+nc) of op(B) over k in [p0, p0+kc) as panels of nr
 * columns of pairs, kpad pair-rows each (those past the kc values' zeros:
 * AMX pads to whole steps) */
TGT static void pack_b_src(src B, int64_t ldb, bool tb, int64_t j0, int64_t nc, int64_t p0,
                           int64_t kc, int nr, int64_t kpad, float *bpf)
{
    uint32_t *bp = (uint32_t *)bpf;
    const int64_t kp = (kc + 1) / 2;
    if (!tb) /* B is K x N: each pair of k-rows read once along the block,
              * in order, its pairs dealt out to the panels (a panel at a
              * time read 64 or 128 bytes of each row and came back for
              * the rest) */
        for (int64_t p = 0; p < kp; p++) {
            const char *r0 = at(B, (p0 + 2 * p) * ldb + j0);
            const char *r1 = 2 * p + 1 < kc ? at(B, (p0 + 2 * p + 1) * ldb + j0) : NULL;
            for (int64_t jp = 0; jp < nc; jp += nr) {
                const int64_t off = jp * (B.h ? 2 : 4);
                pack_pair_row(r0 + off, r1 ? r1 + off : NULL, B.h,
                              (int)(nc - jp < nr ? nc - jp : nr), nr, bp + jp * kpad + p * nr);
            }
        }
    for (int64_t jp = 0; jp < nc; jp += nr) {
        int64_t n = nc - jp < nr ? nc - jp : nr;
        uint32_t *dst = bp + jp * kpad;
        if (tb) /* B is N x K (a weight, out x in): each column is a row */
            pack_rows_bf16((src){at(B, (j0 + jp) * ldb + p0), B.h}, ldb, kc, nr, n, dst);
        memset(dst + kp * nr, 0, (size_t)((kpad - kp) * nr) * sizeof *dst);
    }
}

static void pack_a_bf16(const void *A, bool h, int64_t lda, bool ta, int64_t i0, int64_t mc,
                        int64_t p0, int64_t kc, int mr, float *ap)
{
    pack_a_src((src){A, h}, lda, ta, i0, mc, p0, kc, mr, ap);
}

static void pack_b_bf16(const void *B, bool h, int64_t ldb, bool tb, int64_t j0, int64_t nc,
                        int64_t p0, int64_t kc, int nr, float *bp)
{
    pack_b_src((src){B, h}, ldb, tb, j0, nc, p0, kc, nr, (kc + 1) / 2, bp);
}

/* The 12 x 32 tile over kc pairs: as cpu_gemm.c's MICRO_BODY, with a pair
 * of A broadcast and vdpbf16ps for the fused multiply-add. */
TGT static void micro_bf16(int64_t kc, const float *af, const float *bf, float *c, int64_t ldc,
                           bool load)
{
    const uint32_t *a = (const uint32_t *)af, *b = (const uint32_t *)bf;
    for (int r = 0; r < 12; r++) {
        __builtin_prefetch(c + r * ldc, 1, 3);
        __builtin_prefetch(c + r * ldc + 31, 1, 3);
    }
    __m512 acc[12][2];
    _Pragma("GCC unroll 12") for (int r = 0; r < 12; r++)
    {
        acc[r][0] = load ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
        acc[r][1] = load ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
    }
    _Pragma("GCC unroll 4") for (int64_t k = 0; k < kc; k++)
    {
        __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
        _Pragma("GCC unroll 12") for (int r = 0; r < 12; r++)
        {
            __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[r]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
        }
        a += 12;
        b += 32;
    }
    _Pragma("GCC unroll 12") for (int r = 0; r < 12; r++)
    {
        _mm512_storeu_ps(c + r * ldc, acc[r][0]);
        _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
    }
}

/* The AVX-512 fp32 kernel's blocks with KC doubled: a pair is 4 bytes, as
 * one float, so the A panel (12 x 384 pairs) and B's block take the bytes
 * the fp32 kernel's do */
static const kernel BF16 = {.name = "avx512-bf16",
                            .mr = 12,
                            .nr = 32,
                            .kc = 768,
                            .mc = 96,
                            .nc = 512,
                            .a_in_l1 = true,
                            .fn = micro_bf16,
                            .kpack = 2,
                            .pack_a = pack_a_bf16,
                            .pack_b = pack_b_bf16,
                            .kalign = 2};

/* ---- AMX --------------------------------------------------------------------
 * Intel's AMX (Sapphire Rapids on): eight tile registers of 16 rows x 64
 * bytes, and TDPBF16PS, which adds to a 16 x 16 tile of fp32 sums the
 * products of a 16 x 16-pair tile of A by a 16-pair x 16 tile of B — 8,192
 * multiply-adds in one instruction, 16 times vdpbf16ps's.  The tile of C is
 * 32 x 32 (four accumulator tiles, two of A, two of B).  A's panel is laid
 * out as its tiles are loaded: for each step of 16 pairs, the 32 rows' 16
 * pairs, row after row (element (row r, pair p) at ap[(p/16)*512 + r*16 +
 * p%16]); B's is the AVX512_BF16 kernel's (pair p, column j at bp[p*32 +
 * j]), of which a tile takes 16 columns 128 bytes apart.  Panels are padded
 * with zero pairs to whole steps (kalign 32).
 *
 * TDPBF16PS does not add its 32 products one by one in fp32 as vdpbf16ps
 * does (measured here: its sums match neither order of the pairs, nor one
 * rounding of the exact sum), so its bits differ from the AVX512_BF16
 * kernel's in the last places.  They are still fixed for each element: its
 * k-values go through the same instructions in the same groups of 32 (the
 * k-blocks depend on K alone), whatever the batch, the row's place or the
 * thread count. */

#define AMX __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

enum { AMX_STEP = 16 /* pairs per TDPBF16PS */, AMX_PANEL = 32 /* rows, columns */ };

static inline int64_t amx_pairs(int64_t kc)
{
    return (kc + 2 * AMX_STEP - 1) / (2 * AMX_STEP) * AMX_STEP;
}

/* op(A)'s rows [i0, i0+mc) over k in [p0, p0+kc) as tile-ordered panels */
AMX static void pack_a_amx(const void *Av, bool h, int64_t lda, bool ta, int64_t i0, int64_t mc,
                           int64_t p0, int64_t kc, int mr, float *apf)
{
    const src A = {Av, h};
    const int64_t kp = amx_pairs(kc);
    for (int64_t ip = 0; ip < mc; ip += mr) {
        uint32_t *ap = (uint32_t *)apf + ip * kp;
        const int64_t valid = mc - ip < mr ? mc - ip : mr;
        for (int64_t s = 0; s < kp / AMX_STEP; s++) {
            const int64_t k0 = 32 * s, n = kc - k0 < 32 ? kc - k0 : 32; /* k-values */
            uint32_t *d = ap + s * AMX_STEP * AMX_PANEL;
            if (!ta) { /* A is M x K: a row's 32 k-values are its 16 pairs */
                for (int r = 0; r < AMX_PANEL; r++)
                    _mm512_store_si512(
                        d + r * AMX_STEP,
                        r < valid ? row_pairs(at(A, (i0 + ip + r) * lda + p0 + k0), h, (int)n)
                                  : _mm512_setzero_si512());
                continue;
            }
            /* A is K x M: 16 rows' pairs for each of the 16 pairs of k,
             * transposed into each row's 16 pairs */
            for (int g = 0; g < AMX_PANEL; g += 16) {
                const int64_t m = valid - g < 0 ? 0 : valid - g < 16 ? valid - g : 16;
                __m512i r[16];
                for (int q = 0; q < 16; q++) {
                    const int64_t k = p0 + k0 + 2 * q;
                    r[q] = 2 * q < n ? col_pairs(at(A, k * lda + i0 + ip + g),
                                                 2 * q + 1 < n ? at(A, (k + 1) * lda + i0 + ip + g)
                                                               : NULL,
                                                 h, (int)m)
                                     : _mm512_setzero_si512();
                }
                transpose16(r);
                for (int i = 0; i < 16; i++)
                    _mm512_store_si512(d + (g + i) * AMX_STEP, r[i]);
            }
        }
    }
}

/* op(B)'s columns [j0, j0+nc) as the AVX512_BF16 kernel's panels, each
 * padded with zero pair-rows to whole steps */
static void pack_b_amx(const void *B, bool h, int64_t ldb, bool tb, int64_t j0, int64_t nc,
                       int64_t p0, int64_t kc, int nr, float *bp)
{
    pack_b_src((src){B, h}, ldb, tb, j0, nc, p0, kc, nr, amx_pairs(kc), bp);
}

/* The 32 x 32 tile over kp pairs (a multiple of 16) */
AMX static void micro_amx(int64_t kp, const float *af, const float *bf, float *c, int64_t ldc,
                          bool load)
{
    const char *a = (const char *)af, *b = (const char *)bf;
    const size_t sc = (size_t)ldc * sizeof *c;
    float *c1 = c + 16 * ldc;
    if (load) {
        _tile_loadd(0, c, sc);
        _tile_loadd(1, c + 16, sc);
        _tile_loadd(2, c1, sc);
        _tile_loadd(3, c1 + 16, sc);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t s = 0; s < kp; s += AMX_STEP) {
        _tile_loadd(4, a, 64);            /* rows 0-15, 16 pairs each */
        _tile_loadd(5, a + 1024, 64);     /* rows 16-31 */
        _tile_loadd(6, b, 4 * AMX_PANEL); /* 16 pairs of columns 0-15 */
        _tile_loadd(7, b + 64, 4 * AMX_PANEL);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        a += 4 * AMX_STEP * AMX_PANEL;
        b += 4 * AMX_STEP * AMX_PANEL;
    }
    _tile_stored(0, c, sc);
    _tile_stored(1, c + 16, sc);
    _tile_stored(2, c1, sc);
    _tile_stored(3, c1 + 16, sc);
}

/* palette 1, every tile 16 rows of 64 bytes */
typedef struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

AMX static void amx_enter(void)
{
    amx_config cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    /* not _tile_loadconfig: GCC 12's takes the pointer as an 8-byte memory
     * operand, and the stores of the rows and widths were optimised away */
    __asm__ volatile("ldtilecfg %0" ::"m"(cfg));
}

/* the tiles' state back to init, so that a context switch does not save
 * 8 KiB of it for a thread that has finished with them */
AMX static void amx_leave(void) { _tile_release(); }

/* blocks: A's panel (32 rows x 256 pairs, 32 KiB) in L1, B's block (256
 * pairs x 512 columns, 512 KiB) in L2 */
static const kernel AMX_BF16 = {.name = "amx-bf16",
                                .mr = AMX_PANEL,
                                .nr = AMX_PANEL,
                                .kc = 512,
                                .mc = 96,
                                .nc = 512,
                                .a_in_l1 = true,
                                .fn = micro_amx,
                                .kpack = 2,
                                .pack_a = pack_a_amx,
                                .pack_b = pack_b_amx,
                                .kalign = 2 * AMX_STEP,
                                .enter = amx_enter,
                                .leave = amx_leave};

/* CPUID leaf 7: AMX-BF16 (EDX bit 22) and AMX-TILE (bit 24); read
 * directly, as clang 14 (the fuzz build's) has no "amx-tile" for
 * __builtin_cpu_supports */
static bool cpu_has_amx_bf16(void)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1) && (d >> 24 & 1);
}

/* Linux gives a process the tiles' 8 KiB of state only when asked
 * (arch_prctl ARCH_REQ_XCOMP_PERM, Linux 5.16 on); a kernel or sandbox that
 * refuses leaves the AVX512_BF16 kernel */
static bool amx_permitted(void)
{
#ifdef __linux__
    enum { REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}

TGT static void store_bf16(const float *x, int64_t n, uint16_t *y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i),
                            (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
    if (i < n) {
        const int m = (int)(n - i);
        _mm256_mask_storeu_epi16(y + i, (__mmask16)((1u << m) - 1),
                                 (__m256i)_mm512_cvtneps_pbh(load_n(x + i, m)));
    }
}

static const kernel *chosen;
static bool have_amx, have_avx512bf16;
static pthread_once_t usable_once = PTHREAD_ONCE_INIT;

/* The bf16 kernel named (NULL: the best one) where this CPU can run it */
static const kernel *usable(const char *name)
{
    if (have_amx && (!name || !strcmp(name, AMX_BF16.name)))
        return &AMX_BF16;
    if (have_avx512bf16 && (!name || !strcmp(name, BF16.name)))
        return &BF16;
    return NULL;
}

static void check_cpu(void)
{
    const char *want = getenv("RT_GEMM_KERNEL");
    const bool any = !want || !*want;
    have_avx512bf16 = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
    have_amx = have_avx512bf16 && cpu_has_amx_bf16() && amx_permitted();
    chosen = usable(any ? NULL : want);
}

const kernel *rt_gemm_bf16_kernel(void)
{
    pthread_once(&usable_once, check_cpu);
    return chosen;
}

int rt_gemm_bf16_kernels(const char *names[2])
{
    pthread_once(&usable_once, check_cpu);
    int n = 0;
    if (have_amx)
        names[n++] = AMX_BF16.name;
    if (have_avx512bf16)
        names[n++] = BF16.name;
    return n;
}

bool rt_gemm_bf16_force(const char *name)
{
    pthread_once(&usable_once, check_cpu);
    const kernel *k = usable(name);
    if (k)
        chosen = k;
    return k != NULL;
}

void rt_bf16_store(const float *x, int64_t n, uint16_t *y)
{
    RT_ASSERT(rt_gemm_bf16_kernel()); /* only where bf16 tensors can exist */
    store_bf16(x, n, y);
}

#else

const kernel *rt_gemm_bf16_kernel(void) { return NULL; }

int rt_gemm_bf16_kernels(const char *names[2])
{
    (void)names;
    return 0;
}

bool rt_gemm_bf16_force(const char *name)
{
    (void)name;
    return false;
}

void rt_bf16_store(const float *x, int64_t n, uint16_t *y)
{
    (void)x, (void)n, (void)y;
    RT_ASSERT(!"bf16 values on a CPU without the bf16 kernel");
}

#endif
