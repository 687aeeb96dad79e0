/* test_transport.c — the collectives over {loopback, tcp, shm} x ranks
 * {1,2,3,4,5,8} x counts {0,1,63,1000,25000,1<<20} x segment sizes {4K (many
 * segments), 512K}, each equal to a serial reference (bitwise for
 * integer-valued data), random data bitwise identical on every rank and
 * across two runs, plus the wire formats, the segment helper, encryption and
 * several sockets per neighbour, peers that must be refused, and which plan
 * (small path or chunked ring, how many frames) an allreduce of a given size
 * takes. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include <openssl/evp.h>

#include "conformance.h"
#include "rank_harness.h"
#include "rt_comm.h"
#include "rt_log.h"
#include "rt_time.h"
#include "sock.h"
#include "test_util.h"
#include "frame_order.h"
#include "ghash.h"
#include "wire.h"
#include "rt_transport.h"

/* ---- helpers under test -------------------------------------------------- */

/* rt_report_result: one JSON value, sent whole as a line to the agent;
 * refused when it is not JSON or no agent started this program. */
static void test_report_result(void **state)
{
    (void)state;
    char err[RT_ERR_LEN];
    unsetenv("RT_CONTROL_FD");
    assert_int_equal(rt_report_result("1", err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err, "not started by a ringtrain agent"));
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    char fd[16];
    snprintf(fd, sizeof fd, "%d", sv[0]);
    setenv("RT_CONTROL_FD", fd, 1);
    assert_int_equal(rt_report_result("{\"a\": 1", err), RT_ERR_INVALID);
    assert_non_null(strstr(err, "the result is not JSON"));
    assert_int_equal(rt_report_result("", err), RT_ERR_INVALID);
    assert_int_equal(rt_report_result("{\"loss\": 0.5,\n \"ok\": [true]}", err), RT_OK);
    char line[256] = "";
    ssize_t n = read(sv[1], line, sizeof line - 1);
    assert_true(n > 0);
    line[n] = '\0';
    assert_string_equal(line, "{\"kind\":\"result\",\"value\":{\"loss\": 0.5,  \"ok\": [true]}}\n");
    unsetenv("RT_CONTROL_FD");
    close(sv[0]);
    close(sv[1]);
}

static void test_split(void **state)
{
    (void)state;
    const size_t totals[] = {0, 1, 5, 63, 64, 1000, 1u << 20};
    for (size_t t = 0; t < RT_ARRAY_LEN(totals); t++)
        for (size_t parts = 1; parts <= 9; parts++) {
            size_t next = 0, mn = (size_t)-1, mx = 0;
            for (size_t i = 0; i < parts; i++) {
                size_t off, len;
                rt_split(totals[t], parts, i, &off, &len);
                assert_int_equal(off, next); /* contiguous, in order */
                next = off + len;
                mn = len < mn ? len : mn;
                mx = len > mx ? len : mx;
            }
            assert_int_equal(next, totals[t]); /* covers everything */
            assert_true(mx - mn <= 1);         /* balanced */
        }
}

/* the anti-diagonal frame order against a brute-force enumeration */
static void test_frame_order(void **state)
{
    (void)state;
    const size_t dims[] = {1, 2, 3, 5, 7, 14, 40};
    for (size_t a = 0; a < RT_ARRAY_LEN(dims); a++)
        for (size_t b = 0; b < RT_ARRAY_LEN(dims); b++) {
            const size_t S = dims[a], J = dims[b];
            size_t f = 0;
            for (size_t d = 0; d + 1 < S + J; d++)
                for (size_t s = 0; s < S; s++) {
                    if (d < s || d - s >= J)
                        continue;
                    size_t gs, gj;
                    rt_frame_order_frame(S, J, f, &gs, &gj);
                    if (gs != s || gj != d - s || rt_frame_order_index(S, J, s, d - s) != f)
                        fail_msg("S=%zu J=%zu frame %zu: got (%zu,%zu) want (%zu,%zu)", S, J, f,
                                 gs, gj, s, d - s);
                    f++;
                }
            assert_int_equal(f, S * J);
        }
    /* large shapes: the closed form stays exact (round trip) */
    const size_t S = 14, J = 100000;
    for (size_t f = 0; f < S * J; f += 997) {
        size_t s, j;
        rt_frame_order_frame(S, J, f, &s, &j);
        assert_int_equal(rt_frame_order_index(S, J, s, j), f);
    }
}

static void test_wire_roundtrip(void **state)
{
    (void)state;
    rt_hello h = {RT_WIRE_VERSION, RT_HELLO_F_ENCRYPT, 0x1122334455667788ull, 3, 4, 1, 8, {0}};
    for (int i = 0; i < RT_NONCE_LEN; i++)
        h.nonce[i] = (uint8_t)i;
    uint8_t buf[RT_HELLO_LEN];
    rt_hello_encode(&h, buf);
    assert_memory_equal(buf, "RTDP", 4);
    rt_hello d;
    char err[RT_ERR_LEN];
    assert_int_equal(rt_hello_decode(buf, sizeof buf, &d, err), RT_OK);
    assert_true(d.job_id == h.job_id && d.from == 3 && d.to == 4 && d.conn == 1 && d.world == 8);
    assert_memory_equal(d.nonce, h.nonce, RT_NONCE_LEN);
    buf[0] = 'X';
    assert_int_equal(rt_hello_decode(buf, sizeof buf, &d, err), RT_ERR_PROTO);
    assert_string_equal(err, "not a ringtrain data-plane hello (bad magic)");
    assert_int_equal(rt_hello_decode(buf, 10, &d, err), RT_ERR_PROTO);

    rt_frame_hdr f = {RT_FRAME_DATA, 0, 7, 9, 4096}, g;
    uint8_t fb[RT_FRAME_HDR_LEN];
    rt_frame_encode(&f, fb);
    assert_int_equal(rt_frame_decode(fb, sizeof fb, &g, err), RT_OK);
    assert_true(g.seq == 7 && g.seg == 9 && g.len == 4096);
    fb[0] = 9;
    assert_int_equal(rt_frame_decode(fb, sizeof fb, &g, err), RT_ERR_PROTO);
    assert_string_equal(err, "unknown frame op 9");

    rt_abort_info a = {2, 5, RT_ERR_TIMEOUT, "rank 5 (127.0.0.1:1) did not arrive"}, b;
    uint8_t ab[RT_ABORT_MAX_LEN];
    size_t al = rt_abort_encode(&a, ab);
    assert_int_equal(rt_abort_decode(ab, al, &b, err), RT_OK);
    assert_true(b.origin == 2 && b.culprit == 5 && b.status == RT_ERR_TIMEOUT);
    assert_string_equal(b.reason, a.reason);
    assert_int_equal(rt_abort_decode(ab, al - 1, &b, err), RT_ERR_PROTO);

    /* AES-GCM: open(seal(x)) = x; a flipped bit is caught */
    uint8_t key[32] = {1};
    rt_gcm *s, *o;
    assert_int_equal(rt_gcm_create(key, 7, false, &s, err), RT_OK);
    assert_int_equal(rt_gcm_create(key, 7, false, &o, err), RT_OK);
    uint8_t msg[100], sealed[100 + RT_GCM_TAG_LEN], back[100];
    for (int i = 0; i < 100; i++)
        msg[i] = (uint8_t)(i * 3);
    rt_frame_encode(&f, fb);
    assert_int_equal(rt_gcm_seal(s, fb, msg, 100, sealed), RT_OK);
    assert_int_equal(rt_gcm_open(o, fb, sealed, 100, back), RT_OK);
    assert_memory_equal(back, msg, 100);
    assert_int_equal(rt_gcm_seal(s, fb, msg, 100, sealed), RT_OK);
    sealed[17] ^= 1;
    assert_int_equal(rt_gcm_open(o, fb, sealed, 100, back), RT_ERR_AUTH);
    rt_gcm_destroy(s);
    rt_gcm_destroy(o);

    /* AES-GMAC (integrity): the payload travels in clear, a flipped bit of
     * payload, tag or header is caught, and nothing reaches out unchecked */
    assert_int_equal(rt_gcm_create(key, 9, true, &s, err), RT_OK);
    assert_int_equal(rt_gcm_create(key, 9, true, &o, err), RT_OK);
    const size_t flips[3] = {17, 100 + 3, 0}; /* payload, tag, header */
    for (int k = 0; k < 4; k++) {
        assert_int_equal(rt_gcm_seal(s, fb, msg, 100, sealed), RT_OK);
        assert_memory_equal(sealed, msg, 100);
        uint8_t hb[RT_FRAME_HDR_LEN];
        memcpy(hb, fb, sizeof hb);
        if (k < 2)
            sealed[flips[k]] ^= 1;
        else if (k == 2)
            hb[8] ^= 1; /* the frame's segment number */
        memset(back, 0xee, sizeof back);
        assert_int_equal(rt_gcm_open(o, hb, sealed, 100, back), k < 3 ? RT_ERR_AUTH : RT_OK);
        if (k < 3)
            for (int i = 0; i < 100; i++)
                assert_int_equal(back[i], 0xee);
        else
            assert_memory_equal(back, msg, 100);
    }
    rt_gcm_destroy(s);
    rt_gcm_destroy(o);
}

/* OpenSSL's AES-256-GCM tag with a (one block) then b as its additional
 * data and no plaintext: what rt_gmac_tag must equal. */
static void openssl_gmac(const uint8_t key[32], const uint8_t iv[12], const uint8_t a[16],
                         const uint8_t *b, size_t blen, uint8_t tag[16])
{
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int n = 0;
    uint8_t fin[16];
    assert_true(x && EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, key, iv) == 1);
    assert_true(EVP_EncryptUpdate(x, NULL, &n, a, 16) == 1);
    assert_true(blen == 0 || EVP_EncryptUpdate(x, NULL, &n, b, (int)blen) == 1);
    assert_true(EVP_EncryptFinal_ex(x, fin, &n) == 1);
    assert_true(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1);
    EVP_CIPHER_CTX_free(x);
}

/* The vector GHASH (ghash.c) makes OpenSSL's tags, bit for bit: random keys,
 * nonces and data of every length to 600 bytes, then up to 200 KB (the
 * 16-block loop, its tail, the partial last block); and a ring end using it
 * and one using OpenSSL's (RT_GHASH=openssl) open each other's frames. */
static void test_gmac(void **state)
{
    (void)state;
    if (!rt_gmac_available()) {
        fprintf(stderr, "test_gmac: the vector GHASH is off (no VPCLMULQDQ-512, or "
                        "RT_GHASH=openssl); OpenSSL's runs "
                        "(its tags are checked by test_wire_roundtrip)\n");
        assert_string_equal(rt_gmac_impl(), "openssl");
        return;
    }
    tu_rng r = tu_rng_make(tu_seed() ^ 0x6d6163);
    uint8_t *b = malloc(200000);
    assert_non_null(b);
    for (int t = 0; t < 900; t++) {
        uint8_t key[32], iv[12], a[16], want[16], got[16];
        for (int i = 0; i < 32; i++)
            key[i] = (uint8_t)tu_int(&r, 0, 255);
        for (int i = 0; i < 12; i++)
            iv[i] = (uint8_t)tu_int(&r, 0, 255);
        for (int i = 0; i < 16; i++)
            a[i] = (uint8_t)tu_int(&r, 0, 255);
        size_t blen = t < 600 ? (size_t)t : (size_t)tu_int(&r, 600, 200000);
        for (size_t i = 0; i < blen; i++)
            b[i] = (uint8_t)tu_int(&r, 0, 255);
        openssl_gmac(key, iv, a, b, blen, want);
        rt_gmac *m = rt_gmac_create(key);
        assert_non_null(m);
        rt_gmac_tag(m, iv, a, b, blen, got);
        rt_gmac_destroy(m);
        if (memcmp(want, got, 16) != 0)
            fail_msg("the vector GMAC of %zu bytes differs from OpenSSL's", blen);
    }
    /* the two implementations at the two ends of a connection */
    uint8_t key[32] = {3}, hdr[RT_FRAME_HDR_LEN] = {1, 2, 3};
    char err[RT_ERR_LEN];
    rt_gcm *fast_s, *fast_o, *ossl_s, *ossl_o;
    assert_int_equal(rt_gcm_create(key, 5, true, &fast_s, err), RT_OK);
    assert_int_equal(rt_gcm_create(key, 5, true, &fast_o, err), RT_OK);
    setenv("RT_GHASH", "openssl", 1);
    assert_false(rt_gmac_available());
    assert_int_equal(rt_gcm_create(key, 5, true, &ossl_s, err), RT_OK);
    assert_int_equal(rt_gcm_create(key, 5, true, &ossl_o, err), RT_OK);
    unsetenv("RT_GHASH");
    uint8_t *sealed = malloc(70000 + RT_GCM_TAG_LEN), *back = malloc(70000);
    for (int k = 0; k < 6; k++) {
        size_t len = k * 13999;
        for (size_t i = 0; i < len; i++)
            b[i] = (uint8_t)(i * 7 + k);
        rt_gcm *s = k % 2 ? fast_s : ossl_s, *o = k % 2 ? ossl_o : fast_o;
        rt_gcm *s2 = k % 2 ? ossl_s : fast_s, *o2 = k % 2 ? fast_o : ossl_o; /* in step */
        uint8_t t1[RT_GCM_TAG_LEN], t2[RT_GCM_TAG_LEN];
        assert_int_equal(rt_gcm_tag(s, hdr, b, len, t1), RT_OK);
        assert_int_equal(rt_gcm_tag(s2, hdr, b, len, t2), RT_OK);
        assert_memory_equal(t1, t2, RT_GCM_TAG_LEN);
        assert_int_equal(rt_gcm_verify(o, hdr, b, len, t1), RT_OK);
        assert_int_equal(rt_gcm_verify(o2, hdr, b, len, t1), RT_OK);
        assert_int_equal(rt_gcm_seal(s, hdr, b, len, sealed), RT_OK);
        assert_int_equal(rt_gcm_seal(s2, hdr, b, len, sealed), RT_OK);
        assert_int_equal(rt_gcm_open(o, hdr, sealed, len, back), RT_OK);
        assert_memory_equal(back, b, len);
        sealed[len / 2] ^= 4; /* the payload, or the tag of an empty frame */
        assert_int_equal(rt_gcm_open(o2, hdr, sealed, len, back), RT_ERR_AUTH);
    }
    free(sealed);
    free(back);
    free(b);
    rt_gcm_destroy(fast_s);
    rt_gcm_destroy(fast_o);
    rt_gcm_destroy(ossl_s);
    rt_gcm_destroy(ossl_o);
}

static void test_conformance_loopback(void **state)
{
    (void)state;
    conformance(RT_TRANSPORT_LOOPBACK);
}

static void test_conformance_tcp(void **state)
{
    (void)state;
    conformance(RT_TRANSPORT_TCP);
}

/* Ranks of one host over shared memory (threads here, each mapping its
 * neighbours' segments like a process would). */
static void test_conformance_shm(void **state)
{
    (void)state;
    conformance(RT_TRANSPORT_SHM);
}

static void test_tcp_encrypted_multi_socket(void **state)
{
    (void)state;
    /* encrypted with 1 and 3 sockets; integrity off (plain frames) with 3 */
    const struct {
        int sockets;
        bool sealed;
    } runs[] = {{1, true}, {3, true}, {3, false}};
    for (size_t i = 0; i < RT_ARRAY_LEN(runs); i++) {
        const int sockets = runs[i].sockets;
        rt_comm_opts o = base_opts(64u << 10);
        o.encrypt = runs[i].sealed;
        o.integrity = runs[i].sealed;
        o.sockets = sockets;
        for (size_t count = 1; count <= (1u << 18); count *= 64) {
            conf_arg a = {.count = count, .seed = tu_seed()};
            for (int r = 0; r < 3; r++)
                a.rand_out[r] = calloc(2 * count + 1, 4); /* the f32 and bf16 results */
            conf_ref_make(&a, 3);
            rh_result fail;
            if (!rh_run(3, RT_TRANSPORT_TCP, &o, conf_body, &a, &fail))
                fail_msg("%s, %d sockets, count %zu: %s", runs[i].sealed ? "encrypted" : "plain",
                         sockets, count, fail.msg);
            for (int r = 0; r < 3; r++)
                free(a.rand_out[r]);
            conf_ref_free(&a);
        }
    }
}

/* Sealed frames when the socket's send buffer is full: a send that moves
 * nothing (EAGAIN) at the start of a frame must not seal it again.  It
 * did, spending a second nonce, and the receiver's check of that frame
 * failed ("a frame from rank 2 ... failed authentication"); two ranks on
 * veth links between network namespaces met it within a few hundred
 * allreduces, small socket buffers on loopback within a few. */
typedef struct full_arg {
    size_t count;
    int rounds;
} full_arg;

static void full_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    const full_arg *a = varg;
    const int n = rt_comm_size(c);
    float *buf = malloc(a->count * 4);
    RH_CHECK(res, buf, "out of memory");
    for (int round = 0; round < a->rounds; round++) {
        for (size_t i = 0; i < a->count; i++)
            buf[i] = (float)((r + 1) * (int)((i + (size_t)round) % 13 + 1));
        RH_CHECK(res, rt_allreduce(c, buf, a->count, RT_C_F32, RT_SUM) == RT_OK,
                 "allreduce %d: %s", round, rt_comm_last_error(c));
        for (size_t i = 0; i < a->count; i++) /* RH_CHECK returns on the first */
            RH_CHECK(res, buf[i] == (float)(n * (n + 1) / 2 * (int)((i + (size_t)round) % 13 + 1)),
                     "allreduce %d: [%zu] = %g", round, i, (double)buf[i]);
    }
    free(buf);
}

static void test_tcp_sealed_full_send_buffer(void **state)
{
    (void)state;
    const size_t bufs[] = {16u << 10, 64u << 10};
    for (int n = 2; n <= 3; n++)
        for (int enc = 0; enc < 2; enc++)
            for (size_t b = 0; b < RT_ARRAY_LEN(bufs); b++) {
                rt_comm_opts o;
                rt_comm_opts_defaults(&o);
                memset(o.key, 9, sizeof o.key);
                o.integrity = true;
                o.encrypt = enc;
                o.socket_buffer = bufs[b];
                full_arg a = {.count = 65536, .rounds = 30}; /* 256 KiB */
                rh_result fail;
                if (!rh_run(n, RT_TRANSPORT_TCP, &o, full_body, &a, &fail))
                    fail_msg("n=%d, %s, socket buffers of %zu bytes: %s", n,
                             enc ? "encrypted" : "integrity", bufs[b], fail.msg);
            }
}

/* Shared memory: a left neighbour that finished and closed its link fails
 * nothing for a rank that has all it needs from it and only sends left to
 * finish.  Broadcast from rank 0 of 128 KiB in 4 KiB frames (32, twice the
 * 16 slots of a segment) while rank 2 arrives 400 ms late: rank 1 takes
 * every frame, fills rank 2's segment, and waits for room while rank 0,
 * done, closes.  Rank 1 failed on that end of stream ("rank 0 ... closed
 * the connection"); once on CI the same in an n = 8 allreduce. */
static void test_shm_left_done_first(void **state)
{
    (void)state;
    left_done_first(RT_TRANSPORT_SHM);
}

/* ---- fused bucketed allreduce ------------------------------------------------ */

typedef struct fusion_arg {
    size_t count, bucket;
    bool bf16; /* rt_fusion_set_bf16 from the second round on */
} fusion_arg;

static void fusion_body(rt_comm *c, int r, void *varg, rh_result *res)
{
    fusion_arg *a = varg;
    const int n = rt_comm_size(c);
    float *buf = malloc(a->count * 4 + 4);
    rt_fusion *f;
    char err[RT_ERR_LEN];
    RH_CHECK(res, rt_fusion_create(c, buf, a->count, a->bucket, &f, err) == RT_OK, "%s", err);
    const int nb = rt_fusion_buckets(f);
    for (int round = 0; round < 3; round++) {
        if (a->bf16 && round == 1)
            RH_CHECK(res, rt_fusion_set_bf16(f, true, err) == RT_OK, "%s", err);
        for (size_t i = 0; i < a->count; i++) /* round 2 in bf16: not exact, within 2^-8 */
            buf[i] = val(r + round, i) * (a->bf16 && round == 2 ? 1.01f : 1.0f);
        rt_fusion_begin(f);
        /* "layers" of uneven sizes become ready from the end of the buffer;
         * every rank cuts them differently: bucketing must not care */
        tu_rng g = {tu_seed() * 31 + (uint64_t)r * 7 + (uint64_t)round};
        size_t end = a->count;
        bool first = true;
        while (end > 0) {
            size_t len = (size_t)tu_int(&g, 1, (int64_t)(a->count / 5 + 1));
            len = len > end ? end : len;
            rt_fusion_ready(f, end - len, len);
            end -= len;
            if (first && nb > 1 && end > 0 && end <= a->count - a->bucket / 4) {
                /* the last bucket is complete: it must go out now, before the
                 * rest of the buffer is even reported (overlap with backward) */
                int64_t dl = rt_now_ns() + 10000000000LL;
                while (rt_fusion_completed(f) < 1 && rt_now_ns() < dl)
                    ;
                RH_CHECK(res, rt_fusion_completed(f) >= 1, "first bucket did not start early");
                first = false;
            }
        }
        RH_CHECK(res, rt_fusion_wait(f, err) == RT_OK, "round %d: %s", round, err);
        for (size_t i = 0; i < a->count; i++) {
            double want = 0, mag = 0;
            for (int k = 0; k < n; k++) {
                float v = val(k + round, i) * (a->bf16 && round == 2 ? 1.01f : 1.0f);
                want += v;
                mag += v < 0 ? -v : v;
            }
            /* integers below 256 are exact in bf16 too (rounds 0 and 1) */
            double d = buf[i] - want, tol = a->bf16 && round == 2 ? n * mag / 256.0 : 0.0;
            RH_CHECK(res, (d < 0 ? -d : d) <= tol, "round %d [%zu] = %g, want %g", round, i, buf[i],
                     want);
            uint32_t bits;
            memcpy(&bits, &buf[i], sizeof bits);
            RH_CHECK(res, !(a->bf16 && round > 0) || (bits & 0xffffu) == 0,
                     "round %d [%zu] = %g: not a bf16 value", round, i, buf[i]);
        }
    }
    rt_fusion_destroy(f);
    free(buf);
}

/* ---- which plan an allreduce takes: frames each rank receives ---------- */

typedef struct plan_case {
    int n;
    size_t bytes, frames; /* small path: n - 1; chunked: 2 (n - 1) x segments */
    bool tcp; /* both rings: four ranks exchange in pairs (2 frames), halves and quarters */
} plan_case;

static void plan_body(rt_comm *c, int rank, void *arg, rh_result *res)
{
    const plan_case *pc = arg;
    size_t count = pc->bytes / 4;
    float *buf = malloc(count * 4);
    RH_CHECK(res, buf, "out of memory");
    for (size_t i = 0; i < count; i++)
        buf[i] = (float)(rank + 1);
    rt_status st = rt_allreduce(c, buf, count, RT_C_F32, RT_SUM);
    float want = (float)(pc->n * (pc->n + 1) / 2);
    bool ok = st == RT_OK && buf[0] == want && buf[count - 1] == want;
    free(buf);
    RH_CHECK(res, ok, "allreduce of %zu bytes failed", pc->bytes);
    RH_CHECK(res, c->recv_frames == pc->frames, "n=%d, %zu bytes: %llu frames, expected %zu",
             pc->n, pc->bytes, (unsigned long long)c->recv_frames, pc->frames);
}

/* Default options (512 KiB max_segment_bytes, 64 KiB small_bytes): the
 * small path up to small_bytes * n / (4 (n - 2)), one frame per chunk under
 * 64 KiB, the chunked ring's segments 64 KiB at most (RT_RING_SEG),
 * halving4's 512 KiB. */
static void test_plan_choice(void **state)
{
    (void)state;
    const plan_case cases[] = {
        {2, 64u << 10, 1, false},  /* small path at any n = 2 size it covers */
        {2, 96u << 10, 2, false},  /* 48 KiB chunks: one frame each */
        {2, 256u << 10, 4, false}, /* 128 KiB chunks: two 64 KiB frames */
        {3, 48u << 10, 2, false},  /* the limit at n = 3 */
        {3, 52u << 10, 4, false},
        {4, 32u << 10, 3, false}, /* the limit at n = 4 */
        {4, 36u << 10, 6, false},
        {4, 256u << 10, 12, false}, /* 64 KiB chunks: two 32 KiB frames */
        {4, 4u << 20, 96, false},   /* 1 MiB chunks: sixteen 64 KiB frames */
        {4, 8u << 20, 192, false},  /* 2 MiB chunks: 32 */
        {8, 16u << 10, 7, false},   /* under 64 KiB * 8 / 24 */
        {8, 24u << 10, 14, false},
        {4, 4u << 10, 2, true},    /* TCP, four ranks: neighbour pairs, two hops */
        {4, 64u << 10, 2, true},   /* ... up to small_bytes */
        {4, 68u << 10, 4, true},   /* then recursive halving and doubling: four steps */
        {4, 4u << 20, 12, true},   /* 2 MiB halves in four 512 KiB frames, quarters in two */
        {4, 16u << 20, 48, true},  /* ... up to 16 MiB */
        {4, 20u << 20, 480, true}, /* then the chunked ring: 5 MiB chunks, 80 frames */
        {3, 4u << 10, 2, true},    /* TCP, three ranks: the small path both ways */
        {5, 4u << 10, 4, true},
    };
    for (size_t i = 0; i < RT_ARRAY_LEN(cases); i++) {
        rt_comm_opts o;
        rt_comm_opts_defaults(&o);
        memset(o.key, 7, sizeof o.key);
        plan_case pc = cases[i];
        rh_result fail;
        if (!rh_run(pc.n, pc.tcp ? RT_TRANSPORT_TCP : RT_TRANSPORT_LOOPBACK, &o, plan_body, &pc,
                    &fail))
            fail_msg("plan n=%d bytes=%zu: %s", pc.n, pc.bytes, fail.msg);
    }
}

static void test_fusion(void **state)
{
    (void)state;
    const rt_transport_kind kinds[] = {RT_TRANSPORT_LOOPBACK, RT_TRANSPORT_TCP, RT_TRANSPORT_SHM};
    static const char *const names[] = {"loopback", "tcp", "shm"};
    const size_t counts[] = {1, 1000, 300007};
    for (int k = 0; k < 3; k++)
        for (int n = 1; n <= 4; n += 3)
            for (size_t ci = 0; ci < 2 * RT_ARRAY_LEN(counts); ci++) {
                /* each count in FP32, then with bf16 buckets from round 1 */
                fusion_arg a = {counts[ci / 2], 64u << 10, ci % 2 == 1};
                rt_comm_opts o = base_opts(256u << 10);
                rh_result fail;
                if (!rh_run(n, kinds[k], &o, fusion_body, &a, &fail))
                    fail_msg("fusion %s n=%d count=%zu%s: %s", names[k], n, a.count,
                             a.bf16 ? " bf16" : "", fail.msg);
            }
}

/* argv[1]: the tests whose names match it, or with a leading '-' the others
 * (CTest runs the three conformance suites apart: tests/CMakeLists.txt) */
int main(int argc, char **argv)
{
    if (argc > 1 && argv[1][0] == '-')
        cmocka_set_skip_filter(argv[1] + 1);
    else if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    tu_seed();
    rt_log_set_level(RT_LL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_frame_order),
        cmocka_unit_test(test_wire_roundtrip),
        cmocka_unit_test(test_gmac),
        cmocka_unit_test(test_conformance_loopback),
        cmocka_unit_test(test_conformance_tcp),
        cmocka_unit_test(test_conformance_shm),
        cmocka_unit_test(test_shm_left_done_first),
        cmocka_unit_test(test_tcp_encrypted_multi_socket),
        cmocka_unit_test(test_tcp_sealed_full_send_buffer),
        cmocka_unit_test(test_fusion),
        cmocka_unit_test(test_plan_choice),
        cmocka_unit_test(test_report_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
