/* wire.c — encode/decode of the data plane's fixed formats, HMAC
 * authentication, HKDF key derivation and AES-256-GCM frame sealing (see
 * wire.h).  Decoders never trust lengths: every field is range-checked. */
#include "wire.h"
#include "rt_endian.h"
#include "ghash.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const uint8_t HELLO_MAGIC[4] = {'R', 'T', 'D', 'P'};
static const uint8_t CHAL_MAGIC[4] = {'R', 'T', 'D', 'C'};

const char *rt_refuse_str(unsigned status)
{
    switch (status) {
    case RT_REFUSE_OK: return "accepted";
    case RT_REFUSE_VERSION: return "unsupported protocol version";
    case RT_REFUSE_JOB: return "wrong job id";
    case RT_REFUSE_RANK: return "unexpected rank";
    case RT_REFUSE_WORLD: return "wrong world size";
    case RT_REFUSE_CONN: return "bad connection index";
    case RT_REFUSE_AUTH: return "authentication failed (wrong job key)";
    case RT_REFUSE_ENCRYPT: return "encryption or integrity setting differs";
    case RT_REFUSE_UNEXPECTED: return "the ring is already connected";
    }
    return "unknown refusal";
}

void rt_hello_encode(const rt_hello *h, uint8_t out[RT_HELLO_LEN])
{
    memset(out, 0, RT_HELLO_LEN);
    memcpy(out, HELLO_MAGIC, 4);
    rt_put_le16(out + 4, h->version);
    rt_put_le16(out + 6, h->flags);
    rt_put_le64(out + 8, h->job_id);
    rt_put_le32(out + 16, h->from);
    rt_put_le32(out + 20, h->to);
    rt_put_le32(out + 24, h->conn);
    rt_put_le32(out + 28, h->world);
    memcpy(out + 32, h->nonce, RT_NONCE_LEN);
}

rt_status rt_hello_decode(const uint8_t *in, size_t len, rt_hello *h, char *err)
{
    if (len != RT_HELLO_LEN)
        return rt_err(err, RT_ERR_PROTO, "hello is %zu bytes, expected %d", len, RT_HELLO_LEN);
    if (memcmp(in, HELLO_MAGIC, 4) != 0)
        return rt_err(err, RT_ERR_PROTO, "not a ringtrain data-plane hello (bad magic)");
    for (int i = 64; i < RT_HELLO_LEN; i++)
        if (in[i] != 0)
            return rt_err(err, RT_ERR_PROTO, "hello has non-zero reserved bytes");
    h->version = rt_get_le16(in + 4);
    h->flags = rt_get_le16(in + 6);
    h->job_id = rt_get_le64(in + 8);
    h->from = rt_get_le32(in + 16);
    h->to = rt_get_le32(in + 20);
    h->conn = rt_get_le32(in + 24);
    h->world = rt_get_le32(in + 28);
    memcpy(h->nonce, in + 32, RT_NONCE_LEN);
    if (h->flags & ~(uint16_t)(RT_HELLO_F_ENCRYPT | RT_HELLO_F_INTEGRITY))
        return rt_err(err, RT_ERR_PROTO, "hello has unknown flags 0x%x", h->flags);
    return RT_OK;
}

void rt_challenge_encode(const rt_challenge *c, uint8_t out[RT_CHALLENGE_LEN])
{
    memcpy(out, CHAL_MAGIC, 4);
    rt_put_le16(out + 4, c->version);
    rt_put_le16(out + 6, c->status);
    memcpy(out + 8, c->nonce, RT_NONCE_LEN);
    memcpy(out + 40, c->mac, RT_MAC_LEN);
}

rt_status rt_challenge_decode(const uint8_t *in, size_t len, rt_challenge *c, char *err)
{
    if (len != RT_CHALLENGE_LEN)
        return rt_err(err, RT_ERR_PROTO, "challenge is %zu bytes, expected %d", len,
                      RT_CHALLENGE_LEN);
    if (memcmp(in, CHAL_MAGIC, 4) != 0)
        return rt_err(err, RT_ERR_PROTO, "not a ringtrain challenge (bad magic)");
    c->version = rt_get_le16(in + 4);
    c->status = rt_get_le16(in + 6);
    memcpy(c->nonce, in + 8, RT_NONCE_LEN);
    memcpy(c->mac, in + 40, RT_MAC_LEN);
    return RT_OK;
}

void rt_auth_mac(const uint8_t key[32], const char *label, const uint8_t hello[RT_HELLO_LEN],
                 const uint8_t nonce_r[RT_NONCE_LEN], uint8_t out[RT_MAC_LEN])
{
    uint8_t msg[16 + RT_HELLO_LEN + RT_NONCE_LEN];
    size_t ll = strlen(label);
    RT_ASSERT(ll <= 16);
    memcpy(msg, label, ll);
    memcpy(msg + ll, hello, RT_HELLO_LEN);
    memcpy(msg + ll + RT_HELLO_LEN, nonce_r, RT_NONCE_LEN);
    unsigned int outlen = 0;
    HMAC(EVP_sha256(), key, 32, msg, ll + RT_HELLO_LEN + RT_NONCE_LEN, out, &outlen);
    RT_ASSERT(outlen == RT_MAC_LEN);
}

bool rt_mac_equal(const uint8_t a[RT_MAC_LEN], const uint8_t b[RT_MAC_LEN])
{
    return CRYPTO_memcmp(a, b, RT_MAC_LEN) == 0;
}

rt_status rt_random(uint8_t *out, size_t len)
{
    return RAND_bytes(out, (int)len) == 1 ? RT_OK : RT_ERR_IO;
}

static rt_status hkdf(const uint8_t key[32], const uint8_t *salt, size_t saltlen, const char *info,
                      uint8_t out[32])
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    if (!kdf)
        return RT_ERR_UNSUPPORTED;
    EVP_KDF_CTX *kctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (!kctx)
        return RT_ERR_NOMEM;
    OSSL_PARAM params[5], *p = params;
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, 32);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, saltlen);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, strlen(info));
    *p = OSSL_PARAM_construct_end();
    int ok = EVP_KDF_derive(kctx, out, 32, params);
    EVP_KDF_CTX_free(kctx);
    return ok == 1 ? RT_OK : RT_ERR_IO;
}

rt_status rt_derive_keys(const uint8_t key[32], const uint8_t hello[RT_HELLO_LEN],
                         const uint8_t nonce_r[RT_NONCE_LEN], uint8_t fwd[32], uint8_t rev[32])
{
    /* salt binds the keys to this connection: the whole hello (identities
     * and the initiator's nonce) and the responder's nonce */
    uint8_t salt[RT_HELLO_LEN + RT_NONCE_LEN];
    memcpy(salt, hello, RT_HELLO_LEN);
    memcpy(salt + RT_HELLO_LEN, nonce_r, RT_NONCE_LEN);
    rt_status st = hkdf(key, salt, sizeof salt, "ringtrain dp aes-256-gcm fwd", fwd);
    if (st == RT_OK)
        st = hkdf(key, salt, sizeof salt, "ringtrain dp aes-256-gcm rev", rev);
    return st;
}

void rt_frame_encode(const rt_frame_hdr *h, uint8_t out[RT_FRAME_HDR_LEN])
{
    out[0] = h->op;
    out[1] = h->flags;
    out[2] = out[3] = 0;
    rt_put_le32(out + 4, h->seq);
    rt_put_le32(out + 8, h->seg);
    rt_put_le32(out + 12, h->len);
}

rt_status rt_frame_decode(const uint8_t *in, size_t len, rt_frame_hdr *h, char *err)
{
    if (len != RT_FRAME_HDR_LEN)
        return rt_err(err, RT_ERR_PROTO, "frame header is %zu bytes, expected %d", len,
                      RT_FRAME_HDR_LEN);
    h->op = in[0];
    h->flags = in[1];
    h->seq = rt_get_le32(in + 4);
    h->seg = rt_get_le32(in + 8);
    h->len = rt_get_le32(in + 12);
    if (h->op != RT_FRAME_DATA && h->op != RT_FRAME_ABORT && h->op != RT_FRAME_BYE)
        return rt_err(err, RT_ERR_PROTO, "unknown frame op %u", h->op);
    if (h->op == RT_FRAME_BYE && h->len != 0) /* sealed, it carries only the tag */
        return rt_err(err, RT_ERR_PROTO, "bye frame with a payload");
    if (in[2] != 0 || in[3] != 0 || (h->flags & ~RT_FRAME_SEALED))
        return rt_err(err, RT_ERR_PROTO, "frame header has unknown flags or reserved bits");
    if (h->len > RT_FRAME_MAX_LEN)
        return rt_err(err, RT_ERR_PROTO, "frame length %u exceeds %u", h->len, RT_FRAME_MAX_LEN);
    if (h->op == RT_FRAME_ABORT && h->len > RT_ABORT_MAX_LEN)
        return rt_err(err, RT_ERR_PROTO, "abort frame of %u bytes exceeds %d", h->len,
                      RT_ABORT_MAX_LEN);
    return RT_OK;
}

size_t rt_abort_encode(const rt_abort_info *a, uint8_t *out)
{
    size_t rl = strnlen(a->reason, RT_ABORT_REASON_MAX);
    rt_put_le32(out, (uint32_t)a->origin);
    rt_put_le32(out + 4, (uint32_t)a->culprit);
    rt_put_le32(out + 8, (uint32_t)a->status);
    rt_put_le16(out + 12, (uint16_t)rl);
    memcpy(out + 14, a->reason, rl);
    return 14 + rl;
}

rt_status rt_abort_decode(const uint8_t *in, size_t len, rt_abort_info *a, char *err)
{
    if (len < 14)
        return rt_err(err, RT_ERR_PROTO, "abort record of %zu bytes is truncated", len);
    a->origin = (int32_t)rt_get_le32(in);
    a->culprit = (int32_t)rt_get_le32(in + 4);
    a->status = (int32_t)rt_get_le32(in + 8);
    size_t rl = rt_get_le16(in + 12);
    if (rl > RT_ABORT_REASON_MAX || 14 + rl != len)
        return rt_err(err, RT_ERR_PROTO, "abort record reason length %zu does not fit", rl);
    if (a->status > 0 || a->status < RT_ERR_BUSY)
        return rt_err(err, RT_ERR_PROTO, "abort record has unknown status %d", a->status);
    for (size_t i = 0; i < rl; i++) /* printable text only: it ends up in logs */
        a->reason[i] = (in[14 + i] >= 0x20 && in[14 + i] != 0x7f) ? (char)in[14 + i] : '?';
    a->reason[rl] = '\0';
    return RT_OK;
}

struct rt_gcm {
    EVP_CIPHER_CTX *enc, *dec;
    bool mac_only; /* GMAC: the payload is authenticated, not encrypted */
    rt_gmac *fast; /* mac_only on a CPU with VPCLMULQDQ-512: the same tags, faster (ghash.h) */
    uint32_t salt;
    uint64_t counter_enc, counter_dec;
};

rt_status rt_gcm_create(const uint8_t key[32], uint32_t salt, bool mac_only, rt_gcm **out,
                        char *err)
{
    rt_gcm *g = calloc(1, sizeof *g);
    if (!g)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    g->salt = salt;
    g->mac_only = mac_only;
    g->enc = EVP_CIPHER_CTX_new();
    g->dec = EVP_CIPHER_CTX_new();
    if (!g->enc || !g->dec ||
        EVP_EncryptInit_ex(g->enc, EVP_aes_256_gcm(), NULL, key, NULL) != 1 ||
        EVP_DecryptInit_ex(g->dec, EVP_aes_256_gcm(), NULL, key, NULL) != 1) {
        rt_gcm_destroy(g);
        return rt_err(err, RT_ERR_IO, "cannot set up AES-256-GCM");
    }
    if (mac_only)
        g->fast = rt_gmac_create(key); /* NULL: OpenSSL's GHASH */
    *out = g;
    return RT_OK;
}

void rt_gcm_destroy(rt_gcm *g)
{
    if (!g)
        return;
    EVP_CIPHER_CTX_free(g->enc);
    EVP_CIPHER_CTX_free(g->dec);
    rt_gmac_destroy(g->fast);
    free(g);
}

static void make_iv(uint32_t salt, uint64_t counter, uint8_t iv[12])
{
    rt_put_le32(iv, salt);
    rt_put_le64(iv + 4, counter);
}

rt_status rt_gcm_seal(rt_gcm *g, const uint8_t hdr[RT_FRAME_HDR_LEN], const void *in, size_t len,
                      uint8_t *out)
{
    if (g->mac_only) { /* GMAC: the payload in clear, then its tag */
        rt_status st = rt_gcm_tag(g, hdr, in, len, out + len);
        if (st == RT_OK && len > 0 && out != in)
            memmove(out, in, len);
        return st;
    }
    uint8_t iv[12];
    make_iv(g->salt, g->counter_enc++, iv);
    int n = 0;
    if (EVP_EncryptInit_ex(g->enc, NULL, NULL, NULL, iv) != 1 ||
        EVP_EncryptUpdate(g->enc, NULL, &n, hdr, RT_FRAME_HDR_LEN) != 1 ||
        (len > 0 && EVP_EncryptUpdate(g->enc, out, &n, in, (int)len) != 1) ||
        EVP_EncryptFinal_ex(g->enc, out + len, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(g->enc, EVP_CTRL_GCM_GET_TAG, RT_GCM_TAG_LEN, out + len) != 1)
        return RT_ERR_IO;
    return RT_OK;
}

void rt_gcm_skip(rt_gcm *g) { g->counter_dec++; }

rt_status rt_gcm_tag(rt_gcm *g, const uint8_t hdr[RT_FRAME_HDR_LEN], const void *in, size_t len,
                     uint8_t tag[RT_GCM_TAG_LEN])
{
    uint8_t iv[12], fin[16];
    make_iv(g->salt, g->counter_enc++, iv);
    if (g->fast) {
        rt_gmac_tag(g->fast, iv, hdr, in, len, tag);
        return RT_OK;
    }
    int n = 0;
    if (!g->mac_only || EVP_EncryptInit_ex(g->enc, NULL, NULL, NULL, iv) != 1 ||
        EVP_EncryptUpdate(g->enc, NULL, &n, hdr, RT_FRAME_HDR_LEN) != 1 ||
        (len > 0 && EVP_EncryptUpdate(g->enc, NULL, &n, in, (int)len) != 1) ||
        EVP_EncryptFinal_ex(g->enc, fin, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(g->enc, EVP_CTRL_GCM_GET_TAG, RT_GCM_TAG_LEN, tag) != 1)
        return RT_ERR_IO;
    return RT_OK;
}

rt_status rt_gcm_verify(rt_gcm *g, const uint8_t hdr[RT_FRAME_HDR_LEN], const void *in,
                        size_t len, const uint8_t tag[RT_GCM_TAG_LEN])
{
    uint8_t iv[12], t[RT_GCM_TAG_LEN], fin[16];
    make_iv(g->salt, g->counter_dec++, iv);
    if (g->fast) {
        rt_gmac_tag(g->fast, iv, hdr, in, len, t);
        return CRYPTO_memcmp(t, tag, sizeof t) == 0 ? RT_OK : RT_ERR_AUTH;
    }
    memcpy(t, tag, sizeof t);
    int n = 0;
    if (!g->mac_only || EVP_DecryptInit_ex(g->dec, NULL, NULL, NULL, iv) != 1 ||
        EVP_DecryptUpdate(g->dec, NULL, &n, hdr, RT_FRAME_HDR_LEN) != 1 ||
        (len > 0 && EVP_DecryptUpdate(g->dec, NULL, &n, in, (int)len) != 1) ||
        EVP_CIPHER_CTX_ctrl(g->dec, EVP_CTRL_GCM_SET_TAG, RT_GCM_TAG_LEN, t) != 1)
        return RT_ERR_IO;
    return EVP_DecryptFinal_ex(g->dec, fin, &n) == 1 ? RT_OK : RT_ERR_AUTH;
}

bool rt_gcm_mac_only(const rt_gcm *g) { return g && g->mac_only; }

rt_status rt_gcm_open(rt_gcm *g, const uint8_t hdr[RT_FRAME_HDR_LEN], const uint8_t *in,
                      size_t len, void *out)
{
    if (g->mac_only) { /* GMAC: the payload in clear, then its tag */
        rt_status st = rt_gcm_verify(g, hdr, in, len, in + len);
        if (st == RT_OK && len > 0 && out != in) /* only once it is known to be intact */
            memmove(out, in, len);
        return st;
    }
    uint8_t iv[12], tag[RT_GCM_TAG_LEN];
    make_iv(g->salt, g->counter_dec++, iv);
    memcpy(tag, in + len, RT_GCM_TAG_LEN);
    int n = 0;
    if (EVP_DecryptInit_ex(g->dec, NULL, NULL, NULL, iv) != 1 ||
        EVP_DecryptUpdate(g->dec, NULL, &n, hdr, RT_FRAME_HDR_LEN) != 1 ||
        (len > 0 && EVP_DecryptUpdate(g->dec, out, &n, in, (int)len) != 1) ||
        EVP_CIPHER_CTX_ctrl(g->dec, EVP_CTRL_GCM_SET_TAG, RT_GCM_TAG_LEN, tag) != 1)
        return RT_ERR_IO;
    uint8_t fin[16];
    return EVP_DecryptFinal_ex(g->dec, fin, &n) == 1 ? RT_OK : RT_ERR_AUTH;
}
