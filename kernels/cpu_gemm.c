/* cpu_gemm.c — ringtrain's single-precision matrix multiply (see
 * cpu_gemm.h for why it exists).
 *
 * C = op(A) · op(B) is computed in blocks (GotoBLAS/BLIS): for a block of
 * KC k-values, a block of B (KC x NC) is packed into panels of NR columns
 * and a block of A (MC x KC) into panels of MR rows; a micro-kernel then
 * runs the fused multiply-add chains of an MR x NR tile of C over the KC
 * values, held in registers.  Which panel stays in L1 while the other
 * streams past it depends on the kernel (as in BLIS): the one the kernel
 * loads as vectors (B's, NR wide) for the AVX2 and plain kernels, the one
 * it broadcasts (A's, MR rows) for AVX-512, whose B panels are too wide
 * for L1 at a useful KC.  The first k-block starts the chains from
 * zero; later ones load the tile from C and continue — a float in memory
 * continues a chain exactly as the register would, so the blocking does not
 * change the result.  Edge tiles go through a small buffer, padded with
 * zeros that contribute nothing to the elements kept.
 *
 * One micro-kernel body, instantiated for AVX-512 (12 x 32), AVX2+FMA
 * (6 x 16) and plain C with fmaf (4 x 8); all compute the same chains, so
 * all give the same bits (test_gemm_cpu compares them).  The best one the
 * CPU supports is chosen at first use from CPUID (RT_GEMM_KERNEL=avx512|
 * avx2|scalar overrides; RT_GEMM_KERNEL=amx-bf16|avx512-bf16 picks the bf16
 * GEMMs' kernel instead, cpu_gemm_bf16.c).  Threads take disjoint blocks of
 * rows or columns of C; none splits k. */
#include "cpu_gemm.h"
#include "cpu_gemm_impl.h"

#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- micro-kernels -----------------------------------------------------------
 * acc[r][v] holds row r, columns v*VW .. v*VW+VW-1 of the tile.  For each k:
 * load the two vectors of B's panel row, and for each row broadcast A's
 * element (r, k) — a[r*AR + k*AK]: a packed panel's (AR = 1, AK = MR) or,
 * for the _rows kernels, A's own rows (AR = lda, AK = 1) — and
 * fuse-multiply-add.  The tile's rows of C are requested first (for
 * writing), so that its loads and stores after the k loop do not wait on
 * memory: the three GEMMs of a dense layer alone 5-6% faster at batch 1024
 * and 100 on one thread, 6-10% on two; the whole training step 0-3% (Zen 3,
 * alternated in one process). */

#define MICRO_BODY(MR, VEC, ZERO, LOADU, LOADA, STOREU, BCAST, FMA, VW, AR, AK) \
    for (int r = 0; r < MR; r++) {                                              \
        __builtin_prefetch(c + r * ldc, 1, 3);                                  \
        __builtin_prefetch(c + r * ldc + 2 * VW - 1, 1, 3);                     \
    }                                                                           \
    VEC acc[MR][2];                                                             \
    _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++)                       \
    {                                                                           \
        acc[r][0] = load ? LOADU(c + r * ldc) : ZERO();                         \
        acc[r][1] = load ? LOADU(c + r * ldc + VW) : ZERO();                    \
    }                                                                           \
    _Pragma("GCC unroll 4") for (int64_t k = 0; k < kc; k++)                    \
    {                                                                           \
        VEC b0 = LOADA(b), b1 = LOADA(b + VW);                                  \
        _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++)                   \
        {                                                                       \
            VEC ar = BCAST(a + r * (AR));                                       \
            acc[r][0] = FMA(ar, b0, acc[r][0]);                                 \
            acc[r][1] = FMA(ar, b1, acc[r][1]);                                 \
        }                                                                       \
        a += (AK);                                                              \
        b += 2 * VW;                                                            \
    }                                                                           \
    _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++)                       \
    {                                                                           \
        STOREU(c + r * ldc, acc[r][0]);                                         \
        STOREU(c + r * ldc + VW, acc[r][1]);                                    \
    }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"), always_inline)) static inline __m512 bcast512(const float *p)
{
    return _mm512_set1_ps(*p);
}

__attribute__((target("avx512f"))) static void micro_avx512(int64_t kc, const float *a,
                                                            const float *b, float *c, int64_t ldc,
                                                            bool load)
{
    MICRO_BODY(12, __m512, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_load_ps, _mm512_storeu_ps,
               bcast512, _mm512_fmadd_ps, 16, 1, 12)
}

__attribute__((target("avx512f"))) static void micro_avx512_rows(int64_t kc, const float *a,
                                                                 int64_t lda, const float *b,
                                                                 float *c, int64_t ldc, bool load)
{
    MICRO_BODY(12, __m512, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_load_ps, _mm512_storeu_ps,
               bcast512, _mm512_fmadd_ps, 16, lda, 1)
}

__attribute__((target("avx2,fma"))) static void micro_avx2(int64_t kc, const float *a,
                                                           const float *b, float *c, int64_t ldc,
                                                           bool load)
{
    MICRO_BODY(6, __m256, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_load_ps, _mm256_storeu_ps,
               _mm256_broadcast_ss, _mm256_fmadd_ps, 8, 1, 6)
}
#endif

/* The reference for the vector kernels, and what runs without them: the
 * same chains with fmaf (exact fused multiply-add, in hardware or libm). */
typedef struct v4 {
    float v[4];
} v4;
static inline v4 s_zero(void) { return (v4){{0, 0, 0, 0}}; }
static inline v4 s_load(const float *p) { return (v4){{p[0], p[1], p[2], p[3]}}; }
static inline void s_store(float *p, v4 x) { memcpy(p, x.v, sizeof x.v); }
static inline v4 s_bcast(const float *p) { return (v4){{*p, *p, *p, *p}}; }
static inline v4 s_fma(v4 a, v4 b, v4 c)
{
    for (int i = 0; i < 4; i++)
        c.v[i] = fmaf(a.v[i], b.v[i], c.v[i]);
    return c;
}

static void micro_scalar(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                         bool load)
{
    MICRO_BODY(4, v4, s_zero, s_load, s_load, s_store, s_bcast, s_fma, 4, 1, 4)
}

/* The AVX-512 kernel's shape (12 x 32 tile, its block sizes) in plain C:
 * never chosen to run, but tested everywhere, so that a machine without
 * AVX-512 still checks the packing and edges the AVX-512 kernel relies on. */
typedef struct v16 {
    float v[16];
} v16;
static inline v16 s16_zero(void) { return (v16){{0}}; }
static inline v16 s16_load(const float *p)
{
    v16 x;
    memcpy(x.v, p, sizeof x.v);
    return x;
}
static inline void s16_store(float *p, v16 x) { memcpy(p, x.v, sizeof x.v); }
static inline v16 s16_bcast(const float *p)
{
    v16 x;
    for (int i = 0; i < 16; i++)
        x.v[i] = *p;
    return x;
}
static inline v16 s16_fma(v16 a, v16 b, v16 c)
{
    for (int i = 0; i < 16; i++)
        c.v[i] = fmaf(a.v[i], b.v[i], c.v[i]);
    return c;
}

static void micro_scalar_12x32(int64_t kc, const float *a, const float *b, float *c,
                               int64_t ldc, bool load)
{
    MICRO_BODY(12, v16, s16_zero, s16_load, s16_load, s16_store, s16_bcast, s16_fma, 16, 1, 12)
}

static void micro_scalar_12x32_rows(int64_t kc, const float *a, int64_t lda, const float *b,
                                    float *c, int64_t ldc, bool load)
{
    MICRO_BODY(12, v16, s16_zero, s16_load, s16_load, s16_store, s16_bcast, s16_fma, 16, lda, 1)
}

/* AVX-512's blocks (BLIS's for Skylake-X: KC 384, the broadcast panel in
 * L1) measured against the other order with KC 128 on an Intel Xeon (48 KiB
 * L1, 2 MiB L2): the dense layer's three GEMMs at batch 1024 0.90x -> 0.98x
 * OpenBLAS SkylakeX's speed on 1 thread, 0.86x -> 1.00x on 2; swept KC
 * 256-768, MC 12-96, NC 256-1024 around it.  AVX2's are Zen 3's (32 KiB L1,
 * 512 KiB L2), not re-measured. */
static void pack_a(const void *A, bool h, int64_t lda, bool ta, int64_t i0, int64_t mc, int64_t p0,
                   int64_t kc, int mr, float *ap);
static void pack_b(const void *B, bool h, int64_t ldb, bool tb, int64_t j0, int64_t nc, int64_t p0,
                   int64_t kc, int nr, float *bp);
static const kernel KERNELS[] = {
#if defined(__x86_64__) && defined(__GNUC__)
    {"avx512", 12, 32, 384, 96, 512, true, micro_avx512, 1, pack_a, pack_b, micro_avx512_rows, 1,
     NULL, NULL},
    {"avx2", 6, 16, 256, 120, 4096, false, micro_avx2, 1, pack_a, pack_b, NULL, 1, NULL, NULL},
#endif
    {"scalar", 4, 8, 256, 128, 4096, false, micro_scalar, 1, pack_a, pack_b, NULL, 1, NULL, NULL},
    {"scalar-12x32", 12, 32, 384, 96, 512, true, micro_scalar_12x32, 1, pack_a, pack_b,
     micro_scalar_12x32_rows, 1, NULL, NULL}, /* tests */
};
#define NKERNELS ((int)(sizeof KERNELS / sizeof *KERNELS))

static bool cpu_can(const kernel *k)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (!strcmp(k->name, "avx512"))
        return __builtin_cpu_supports("avx512f");
    if (!strcmp(k->name, "avx2"))
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return true;
}

static const kernel *chosen;
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;
static bool have_avx2; /* packing with AVX2 (set with the kernel choice) */

static void choose(void)
{
    const char *want = getenv("RT_GEMM_KERNEL");
    if (want && strstr(want, "-bf16")) /* a bf16 kernel's name: the fp32 GEMMs as by default */
        want = NULL;
    for (int i = 0; i < NKERNELS && !chosen; i++)
        if (cpu_can(&KERNELS[i]) && (!want || !*want || !strcmp(want, KERNELS[i].name)) &&
            (strcmp(KERNELS[i].name, "scalar-12x32") != 0 || (want && *want)))
            chosen = &KERNELS[i];
    if (!chosen) /* the plain one */
        for (int i = 0; i < NKERNELS && !chosen; i++)
            if (!strcmp(KERNELS[i].name, "scalar"))
                chosen = &KERNELS[i];
#if defined(__x86_64__) && defined(__GNUC__)
    have_avx2 = __builtin_cpu_supports("avx2");
#endif
}

static const kernel *current(void)
{
    pthread_once(&choose_once, choose);
    return chosen;
}

int rt_gemm_kernels(const char *names[RT_GEMM_MAX_KERNELS])
{
    int n = 0;
    for (int i = 0; i < NKERNELS; i++)
        if (cpu_can(&KERNELS[i]))
            names[n++] = KERNELS[i].name;
    return n;
}

bool rt_gemm_force(const char *name)
{
    current();
    for (int i = 0; i < NKERNELS; i++)
        if (!strcmp(KERNELS[i].name, name) && cpu_can(&KERNELS[i])) {
            chosen = &KERNELS[i];
            return true;
        }
    return false;
}

const char *rt_gemm_kernel_name(void) { return current()->name; }

/* ---- packing -------------------------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
/* The first cnt (1..8) floats of x to d. */
__attribute__((target("avx2"), always_inline)) static inline void store_first(float *d, __m256 x,
                                                                               int cnt)
{
    if (cnt == 8) {
        _mm256_storeu_ps(d, x);
        return;
    }
    __m128 lo = _mm256_castps256_ps128(x), hi = _mm256_extractf128_ps(x, 1);
    if (cnt >= 4) {
        _mm_storeu_ps(d, lo);
        d += 4;
        cnt -= 4;
        lo = hi;
    }
    if (cnt == 4) {
        _mm_storeu_ps(d, lo);
    } else if (cnt >= 2) {
        _mm_storel_pi((__m64 *)d, lo);
        if (cnt == 3)
            _mm_store_ss(d + 2, _mm_movehl_ps(lo, lo));
    } else if (cnt == 1) {
        _mm_store_ss(d, lo);
    }
}

/* A whole panel of w rows of a row-major source (rows of A for op(A) = A,
 * of B for op(B) = Bᵀ): rows j = 0..w-1 of src (each kc floats, stride ld)
 * become dst[k*w + j], 8 x 8 blocks at a time through registers (a group of
 * fewer than 8 rows is padded with zero rows that are not stored).  Only
 * moves floats: the bits are those of the plain loop. */
__attribute__((target("avx2"))) static void pack_rows_avx2(const float *src, int64_t ld,
                                                            int64_t kc, int w, float *dst)
{
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8)
        for (int j = 0; j < w; j += 8) {
            const int cnt = w - j < 8 ? w - j : 8;
            __m256 r[8], t[8];
            for (int i = 0; i < 8; i++)
                r[i] = i < cnt ? _mm256_loadu_ps(src + (j + i) * ld + k) : _mm256_setzero_ps();
            /* the classic 8 x 8 transpose: unpack, shuffle, swap halves */
            for (int i = 0; i < 8; i += 2) {
                t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
                t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
            }
            for (int i = 0; i < 8; i += 4) {
                r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
                r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
                r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
                r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
            }
            for (int i = 0; i < 4; i++) {
                t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
                t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
            }
            for (int i = 0; i < 8; i++)
                store_first(dst + (k + i) * w + j, t[i], cnt);
        }
    for (; k < kc; k++)
        for (int j = 0; j < w; j++)
            dst[k * w + j] = src[j * ld + k];
}
#endif

/* w rows of a row-major source (each kc floats from src, ld apart), of
 * which the first `valid` are real and the rest zero, as dst[k*w + j]: a
 * panel of A for op(A) = A, of B for op(B) = Bᵀ. */
static void pack_rows(const float *src, int64_t ld, int64_t kc, int w, int64_t valid, float *dst)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (valid == w && have_avx2) {
        pack_rows_avx2(src, ld, kc, w, dst);
        return;
    }
#endif
    for (int64_t j = 0; j < w; j++) {
        if (j < valid)
            for (int64_t k = 0; k < kc; k++)
                dst[k * w + j] = src[j * ld + k];
        else
            for (int64_t k = 0; k < kc; k++)
                dst[k * w + j] = 0.0f;
    }
}

/* n floats from s to d: fixed sizes for the register tiles' heights and
 * widths, so the copies are a few moves, not calls. */
static inline void copy_row(float *d, const float *s, int n)
{
    switch (n) {
    case 4: memcpy(d, s, 4 * sizeof *d); break;
    case 6: memcpy(d, s, 6 * sizeof *d); break;
    case 12: memcpy(d, s, 12 * sizeof *d); break;
    case 8: memcpy(d, s, 8 * sizeof *d); break;
    case 16: memcpy(d, s, 16 * sizeof *d); break;
    case 32: memcpy(d, s, 32 * sizeof *d); break;
    default: memcpy(d, s, (size_t)n * sizeof *d);
    }
}

#define PREFETCH_ROWS 16

/* Rows [i0, i0+mc) of op(A) over k in [p0, p0+kc), as panels of mr rows:
 * element (row ip+r, k) of the block at ap[ip*kc + k*mr + r]. */
static void pack_a(const void *Av, bool h, int64_t lda, bool ta, int64_t i0, int64_t mc, int64_t p0,
                   int64_t kc, int mr, float *ap)
{
    const float *A = Av;
    RT_ASSERT(!h); /* bf16 operands: the bf16 kernel's */
    for (int64_t ip = 0; ip < mc; ip += mr) {
        int64_t m = mc - ip < mr ? mc - ip : mr;
        float *dst = ap + ip * kc;
        if (!ta) { /* A is M x K: each row is contiguous in k */
            pack_rows(A + (i0 + ip) * lda + p0, lda, kc, mr, m, dst);
        } else if (m < mr) { /* A is K x M: a panel's rows are contiguous for each k */
            for (int64_t k = 0; k < kc; k++) {
                const float *src = A + (p0 + k) * lda + i0 + ip;
                float *d = dst + k * mr;
                for (int64_t r = 0; r < m; r++)
                    d[r] = src[r];
                for (int64_t r = m; r < mr; r++)
                    d[r] = 0.0f;
            }
        }
    }
    if (!ta)
        return;
    /* the full panels of a K x M A: each k's row of the block read once, in
     * order, and dealt out to the panels (a panel at a time read 24 of each
     * 64-byte line and came back for the rest: 1.3% of a batch-1024 step) */
    const int64_t full = mc / mr * mr;
    for (int64_t k = 0; k < kc; k++) {
        /* the row a few on, which the hardware's prefetch did not fetch in
         * time (TabM's dW, 256 x 256 over 32,768 rows: 0.90x OpenBLAS's
         * rate without, 0.93-0.95x with; Zen 5) */
        if (k + PREFETCH_ROWS < kc)
            for (int64_t b = 0; b < mc; b += 16)
                __builtin_prefetch(A + (p0 + k + PREFETCH_ROWS) * lda + i0 + b);
        const float *src = A + (p0 + k) * lda + i0;
        for (int64_t ip = 0; ip < full; ip += mr)
            copy_row(ap + ip * kc + k * mr, src + ip, mr);
    }
}

/* Columns [j0, j0+nc) of op(B) over k in [p0, p0+kc), as panels of nr
 * columns: element (k, column jp+j) at bp[jp*kc + k*nr + j]. */
static void pack_b(const void *Bv, bool h, int64_t ldb, bool tb, int64_t j0, int64_t nc, int64_t p0,
                   int64_t kc, int nr, float *bp)
{
    const float *B = Bv;
    RT_ASSERT(!h);
    if (tb) { /* B is N x K (a weight matrix, out x in): each column is a row */
        for (int64_t jp = 0; jp < nc; jp += nr)
            pack_rows(B + (j0 + jp) * ldb + p0, ldb, kc, nr, nc - jp < nr ? nc - jp : nr,
                      bp + jp * kc);
        return;
    }
    /* B is K x N: each k's row of the block read once, in order, and dealt
     * out to the panels (a panel at a time came back to each row nc / nr
     * times), as pack_a's K x M A */
    for (int64_t k = 0; k < kc; k++) {
        const float *src = B + (p0 + k) * ldb + j0;
        for (int64_t jp = 0; jp < nc; jp += nr) {
            int64_t n = nc - jp < nr ? nc - jp : nr;
            float *d = bp + jp * kc + k * nr;
            copy_row(d, src + jp, (int)n);
            for (int64_t j = n; j < nr; j++)
                d[j] = 0.0f;
        }
    }
}

/* ---- the blocked product over one block of C ------------------------------------- */

typedef struct job {
    const kernel *kn;
    bool ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    const void *A, *B;
    bool a16, b16; /* A, B in bf16 (the bf16 kernel), else fp32 */
    float *C;
} job;

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* Tile (i0, j0) of C, m x n (mr x nr but at the edges), from the packed
 * panels a (or, lda > 0, A's own mr rows at a, lda apart) and b over kc
 * packed elements, its chains continued from C (load) or started; an edge
 * tile goes through the buffer tile. */
static inline void one_tile(const job *g, int64_t kc, const float *a, int64_t lda, const float *b,
                            int64_t i0, int64_t j0, int64_t m, int64_t n, bool load, float *tile)
{
    const kernel *kn = g->kn;
    const int nr = kn->nr;
    float *c = g->C + i0 * g->ldc + j0;
    const bool whole = m == kn->mr && n == nr;
    float *d = whole ? c : tile; /* where the micro-kernel writes, ldd apart */
    const int64_t ldd = whole ? g->ldc : nr;
    if (!whole && load)
        for (int64_t r = 0; r < m; r++)
            memcpy(tile + r * nr, c + r * g->ldc, (size_t)n * sizeof *c);
    if (lda > 0)
        kn->fn_rows(kc, a, lda, b, d, ldd, load);
    else
        kn->fn(kc, a, b, d, ldd, load);
    if (!whole)
        for (int64_t r = 0; r < m; r++)
            memcpy(c + r * g->ldc, tile + r * nr, (size_t)n * sizeof *c);
}

static void block(const job *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float *ap,
                  float *bp)
{
    const kernel *kn = g->kn;
    const int mr = kn->mr, nr = kn->nr;
    if (g->K == 0) {
        for (int64_t i = m0; i < m1; i++)
            memset(g->C + i * g->ldc + n0, 0, (size_t)(n1 - n0) * sizeof(float));
        return;
    }
    float tile[MAX_MR * MAX_NR] __attribute__((aligned(64)));
    /* an fp32 A that is not transposed: the micro-kernel reads its rows in
     * place, the same chains without the packing (6% of the FT-Transformer's
     * step packed its activations, whose k is 192; broadcasting from 12
     * rows costs most of that back: steps 1-2% faster, GEMMs at batch 100
     * 3-5%) */
    const bool in_place = kn->fn_rows && !g->ta && !g->a16;
    /* k in blocks of equal size (K = 400 in two of 200, not 384 and 16), a
     * multiple of the micro-kernel's step (bf16: pairs of k; AMX: 32) */
    const int64_t nkb = (g->K + kn->kc - 1) / kn->kc;
    const int64_t kcb = round_up((g->K + nkb - 1) / nkb, kn->kalign);
    if (kn->enter)
        kn->enter();
    for (int64_t jc = n0; jc < n1; jc += kn->nc) {
        int64_t nc = n1 - jc < kn->nc ? n1 - jc : kn->nc;
        for (int64_t pc = 0; pc < g->K; pc += kcb) {
            int64_t kc = g->K - pc < kcb ? g->K - pc : kcb;
            int64_t kp = round_up(kc, kn->kalign) / kn->kpack; /* packed elements per row */
            bool load = pc > 0; /* continue the chains after the first k-block */
            if (kn->a_in_l1)
                kn->pack_b(g->B, g->b16, g->ldb, g->tb, jc, nc, pc, kc, nr, bp);
            for (int64_t ic = m0; ic < m1; ic += kn->mc) {
                int64_t mc = m1 - ic < kn->mc ? m1 - ic : kn->mc;
                if (kn->a_in_l1) {
                    if (!in_place)
                        kn->pack_a(g->A, g->a16, g->lda, g->ta, ic, mc, pc, kc, mr, ap);
                    for (int64_t ir = 0; ir < mc; ir += mr) {
                        const int64_t m = mc - ir < mr ? mc - ir : mr;
                        const float *a = ap + ir * kp;
                        int64_t lda = 0;
                        if (in_place && m == mr) { /* A's rows as they are */
                            a = (const float *)g->A + (ic + ir) * g->lda + pc;
                            lda = g->lda;
                        } else if (in_place) { /* the last rows: zero-padded to a panel */
                            kn->pack_a(g->A, g->a16, g->lda, g->ta, ic + ir, m, pc, kc, mr,
                                       ap + ir * kp);
                        }
                        for (int64_t jr = 0; jr < nc; jr += nr)
                            one_tile(g, kp, a, lda, bp + jr * kp, ic + ir, jc + jr, m,
                                     nc - jr < nr ? nc - jr : nr, load, tile);
                    }
                    continue;
                }
                kn->pack_a(g->A, g->a16, g->lda, g->ta, ic, mc, pc, kc, mr, ap);
                for (int64_t jr = 0; jr < nc; jr += nr) {
                    int64_t n = nc - jr < nr ? nc - jr : nr;
                    /* each B panel is packed just before its first use, while
                     * it is hot in L1; later row blocks reuse it */
                    if (ic == m0)
                        kn->pack_b(g->B, g->b16, g->ldb, g->tb, jc + jr, n, pc, kc, nr,
                                   bp + jr * kp);
                    for (int64_t ir = 0; ir < mc; ir += mr)
                        one_tile(g, kp, ap + ir * kp, 0, bp + jr * kp, ic + ir, jc + jr,
                                 mc - ir < mr ? mc - ir : mr, n, load, tile);
                }
            }
        }
    }
    if (kn->leave)
        kn->leave();
}

/* below this many multiply-adds the work stays on one thread */
#define PAR_MIN_FMAS (1 << 20)

void rt_gemm(rt_kctx *ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
             int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc)
{
    rt_gemm_ex(ctx, ta, tb, M, N, K, A, false, lda, B, false, ldb, C, ldc);
}

void rt_gemm_ex(rt_kctx *ctx, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
                bool a16, int64_t lda, const void *B, bool b16, int64_t ldb, float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
    const kernel *kn = ctx->bf16 || a16 || b16 ? rt_gemm_bf16_kernel() : NULL;
    RT_ASSERT(kn || !(a16 || b16)); /* bf16 operands exist where the kernel does */
    if (!kn)
        kn = current();
    job g = {kn, ta, tb, M, N, K, lda, ldb, ldc, A, B, a16, b16, C};
    /* threads take whole panels of columns, or of rows when A is tall (below)
     * or there are too few column panels; never a share of k */
    int64_t npan = round_up(N, kn->nr) / kn->nr, mpan = round_up(M, kn->mr) / kn->mr;
    int nt = ctx->threads > 0 ? ctx->threads : 1;
    if (M * N * (K > 0 ? K : 1) < PAR_MIN_FMAS)
        nt = 1;
    /* each thread packs all of the operand it does not split: a tall A
     * (M > 2N: TabM's k·B rows times a weight) splits by rows, so that each
     * thread packs the small B, not all of A (2 threads: tabm's step +8%;
     * at M about N, rows measured 2-5% slower for mlp's) */
    bool by_cols = npan >= nt && mpan >= nt && M > 2 * N ? false : npan >= nt || npan >= mpan;
    int64_t pans = by_cols ? npan : mpan;
    if (nt > pans)
        nt = (int)pans;
    int64_t nc_max = round_up(by_cols ? (npan + nt - 1) / nt * kn->nr : N, kn->nr);
    if (nc_max > kn->nc)
        nc_max = kn->nc;
    size_t a_floats = (size_t)(kn->mc * kn->kc), b_floats = (size_t)(kn->kc * nc_max);
    size_t per = (a_floats + b_floats + 15) & ~(size_t)15; /* keeps each piece 64-byte aligned */
    if (ctx->ws_floats < per * (size_t)nt) {
        free(ctx->ws);
        ctx->ws = aligned_alloc(64, per * (size_t)nt * sizeof(float));
        ctx->ws_floats = ctx->ws ? per * (size_t)nt : 0;
        RT_ASSERT(ctx->ws); /* a few MB: out of memory here is fatal anyway */
    }
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int64_t p0 = pans * t / nt, p1 = pans * (t + 1) / nt;
        float *ap = ctx->ws + per * (size_t)t, *bp = ap + a_floats;
        if (by_cols) {
            int64_t n0 = p0 * kn->nr, n1 = p1 * kn->nr < N ? p1 * kn->nr : N;
            if (n0 < n1)
                block(&g, 0, M, n0, n1, ap, bp);
        } else {
            int64_t m0 = p0 * kn->mr, m1 = p1 * kn->mr < M ? p1 * kn->mr : M;
            if (m0 < m1)
                block(&g, m0, m1, 0, N, ap, bp);
        }
    }
}

void rt_gemm_free(rt_kctx *ctx)
{
    free(ctx->ws);
    ctx->ws = NULL;
    ctx->ws_floats = 0;
}
