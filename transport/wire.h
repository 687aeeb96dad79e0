/* wire.h — private to transport/: the data plane's wire formats and their
 * cryptography.  All integers little-endian, all structures fixed-size.
 *
 *   HELLO      (initiator -> responder, 72 bytes)
 *     magic "RTDP" | version u16 | flags u16 | job_id u64 | from u32 | to u32
 *     | conn u32 | world u32 | nonce_i[32] | reserved[8] (zero)
 *   CHALLENGE  (responder -> initiator, 72 bytes)
 *     magic "RTDC" | version u16 | status u16 | nonce_r[32] | mac_r[32]
 *       mac_r = HMAC-SHA256(key, "rt-resp" | HELLO | nonce_r)
 *   PROOF      (initiator -> responder, 32 bytes)
 *       mac_i = HMAC-SHA256(key, "rt-init" | HELLO | nonce_r)
 *   ACCEPT     (responder -> initiator, 4 bytes): u32 status, 0 = accepted
 *
 * The initiator checks mac_r before it answers, the responder checks mac_i:
 * each side proves it holds the job key without sending it; the labels stop
 * one side's MAC being replayed as the other's.  A non-zero status in the
 * CHALLENGE or ACCEPT names why the responder refused (wrong job, rank,
 * version), so a misconfigured peer gets a reason rather than a silent close.
 *
 *   FRAME header (16 bytes): op u8 | flags u8 | reserved u16 (zero) | seq u32
 *     | seg u32 | len u32, then len payload bytes (+16 GCM tag if flags has
 *     RT_FRAME_SEALED).  op DATA carries collective payload; op ABORT carries
 *     an abort record and travels on the reverse direction of a connection;
 *     an abort may also replace the next data frame in the forward direction;
 *     op BYE (no payload, reverse direction) says the sender closed its
 *     communicator normally, so the end of stream that follows is not a crash.
 *     With encryption every frame is sealed, ABORT and BYE too (a BYE then
 *     carries only the tag); an unsealed one is refused (ctl.h).  With
 *     integrity (RT_HELLO_F_INTEGRITY, the default) frames are sealed the
 *     same way but the payload is in clear: the tag is an AES-GMAC.
 *   ABORT payload: origin i32 | culprit i32 | status i32 | reason_len u16 |
 *     reason (UTF-8, at most 400 bytes, not NUL-terminated). */
#ifndef RT_WIRE_H
#define RT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

/* 2: TCP links both ways round the ring (n >= 3); 3: the chunked ring cuts
 * segments of at most 64 KiB (a rank of 2 would expect other frames) */
#define RT_WIRE_VERSION 3
#define RT_HELLO_LEN 72
#define RT_CHALLENGE_LEN 72
#define RT_PROOF_LEN 32
#define RT_ACCEPT_LEN 4
#define RT_NONCE_LEN 32
#define RT_MAC_LEN 32
#define RT_FRAME_HDR_LEN 16
#define RT_GCM_TAG_LEN 16
#define RT_FRAME_MAX_LEN (64u << 20) /* no single frame carries more */
#define RT_ABORT_REASON_MAX 400
#define RT_ABORT_MAX_LEN (14 + RT_ABORT_REASON_MAX)

#define RT_HELLO_F_ENCRYPT 0x1u
#define RT_HELLO_F_INTEGRITY 0x2u /* frames authenticated (GMAC), not encrypted */

/* refusal reasons carried in CHALLENGE/ACCEPT status */
enum {
    RT_REFUSE_OK = 0,
    RT_REFUSE_VERSION = 1,
    RT_REFUSE_JOB = 2,
    RT_REFUSE_RANK = 3,
    RT_REFUSE_WORLD = 4,
    RT_REFUSE_CONN = 5,
    RT_REFUSE_AUTH = 6,
    RT_REFUSE_ENCRYPT = 7,
    RT_REFUSE_UNEXPECTED = 8,
};
const char *rt_refuse_str(unsigned status);

typedef struct rt_hello {
    uint16_t version, flags;
    uint64_t job_id;
    uint32_t from, to, conn, world;
    uint8_t nonce[RT_NONCE_LEN];
} rt_hello;

void rt_hello_encode(const rt_hello *h, uint8_t out[RT_HELLO_LEN]);
/* Structural check only (magic, version, reserved bytes); identity checks
 * are the caller's. */
rt_status rt_hello_decode(const uint8_t *in, size_t len, rt_hello *h, char *err);

typedef struct rt_challenge {
    uint16_t version, status;
    uint8_t nonce[RT_NONCE_LEN];
    uint8_t mac[RT_MAC_LEN];
} rt_challenge;
void rt_challenge_encode(const rt_challenge *c, uint8_t out[RT_CHALLENGE_LEN]);
rt_status rt_challenge_decode(const uint8_t *in, size_t len, rt_challenge *c, char *err);

/* HMAC-SHA256(key, label | hello | nonce_r). */
void rt_auth_mac(const uint8_t key[32], const char *label, const uint8_t hello[RT_HELLO_LEN],
                 const uint8_t nonce_r[RT_NONCE_LEN], uint8_t out[RT_MAC_LEN]);
/* Constant-time comparison of two MACs. */
bool rt_mac_equal(const uint8_t a[RT_MAC_LEN], const uint8_t b[RT_MAC_LEN]);
rt_status rt_random(uint8_t *out, size_t len);

/* The two AES-256 keys of one connection (initiator->responder data and the
 * reverse direction), from HKDF-SHA256 over the job key, both nonces and the
 * connection's identity. */
rt_status rt_derive_keys(const uint8_t key[32], const uint8_t hello[RT_HELLO_LEN],
                         const uint8_t nonce_r[RT_NONCE_LEN], uint8_t fwd[32], uint8_t rev[32]);

enum { RT_FRAME_DATA = 1, RT_FRAME_ABORT = 2, RT_FRAME_BYE = 3 };
#define RT_FRAME_SEALED 0x1u

typedef struct rt_frame_hdr {
    uint8_t op, flags;
    uint32_t seq, seg, len;
} rt_frame_hdr;
void rt_frame_encode(const rt_frame_hdr *h, uint8_t out[RT_FRAME_HDR_LEN]);
rt_status rt_frame_decode(const uint8_t *in, size_t len, rt_frame_hdr *h, char *err);

typedef struct rt_abort_info {
    int32_t origin;  /* rank that first saw the failure */
    int32_t culprit; /* rank held responsible, -1 if unknown */
    int32_t status;  /* rt_status */
    char reason[RT_ABORT_REASON_MAX + 1];
} rt_abort_info;
/* Returns the encoded length (<= RT_ABORT_MAX_LEN). */
size_t rt_abort_encode(const rt_abort_info *a, uint8_t *out);
rt_status rt_abort_decode(const uint8_t *in, size_t len, rt_abort_info *a, char *err);

/* AES-256-GCM with a 96-bit nonce = 4-byte direction salt | 8-byte counter;
 * the frame header is the additional authenticated data.  One context per
 * direction of a connection; counters never repeat under a key.  mac_only
 * (integrity without encryption, AES-GMAC): the payload too is additional
 * authenticated data and travels in clear; sealed frames look the same
 * (payload then tag). */
typedef struct rt_gcm rt_gcm;
rt_status rt_gcm_create(const uint8_t key[32], uint32_t salt, bool mac_only, rt_gcm **out,
                        char *err);
void rt_gcm_destroy(rt_gcm *g);
/* out gets len ciphertext bytes then the 16-byte tag. */
rt_status rt_gcm_seal(rt_gcm *g, const uint8_t hdr[RT_FRAME_HDR_LEN], const void *in, size_t len,
                      uint8_t *out);
/* Integrity only (mac_only contexts): the tag of a frame whose payload
 * travels in clear, and its check (RT_ERR_AUTH if header, payload or tag
 * was altered), without copying the payload. */
rt_status rt_gcm_tag(rt_gcm *g, const uint8_t hdr[RT_FRAME_HDR_LEN], const void *in, size_t len,
                     uint8_t tag[RT_GCM_TAG_LEN]);
rt_status rt_gcm_verify(rt_gcm *g, const uint8_t hdr[RT_FRAME_HDR_LEN], const void *in,
                        size_t len, const uint8_t tag[RT_GCM_TAG_LEN]);
bool rt_gcm_mac_only(const rt_gcm *g);
/* Account for a frame that is discarded unread (keeps nonces in step). */
void rt_gcm_skip(rt_gcm *g);
/* in holds len ciphertext bytes then the tag; RT_ERR_AUTH if it was altered. */
rt_status rt_gcm_open(rt_gcm *g, const uint8_t hdr[RT_FRAME_HDR_LEN], const uint8_t *in,
                      size_t len, void *out);

#endif
