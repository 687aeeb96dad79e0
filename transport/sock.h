/* sock.h — private to transport/: TCP sockets with deadlines, and the
 * authenticated data-plane handshake of wire.h run over them.  Used by the
 * TCP transport and by the RDMA transport's bootstrap connection. */
#ifndef RT_SOCK_H
#define RT_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"
#include "rt_time.h"
#include "wire.h"

/* Non-blocking connected socket to addr; retries refused connections (the
 * peer may not listen yet) until dl. */
rt_status rt_sock_connect(const char *addr, rt_deadline_t dl, int *fd_out, char *err);
/* Exactly len bytes on a non-blocking socket, or an error by dl. */
rt_status rt_sock_read_full(int fd, void *buf, size_t len, rt_deadline_t dl, char *err);
rt_status rt_sock_write_full(int fd, const void *buf, size_t len, rt_deadline_t dl, char *err);
/* TCP_NODELAY, keep-alive, and buffer sizes when bufsize > 0. */
void rt_sock_tune(int fd, size_t bufsize);
/* "1.2.3.4:5678" of the remote end. */
const char *rt_sock_peer_str(int fd, char *buf, size_t len);

typedef struct rt_hs_params {
    uint64_t job_id;
    const uint8_t *key; /* 32 bytes */
    bool encrypt;
    bool integrity; /* frames sealed with AES-GMAC (ignored when encrypt) */
    int rank, world, nconn;
    /* connections nconn_fwd .. nconn-1 run the other way round the ring:
     * the responder takes them only from rank rev_from (0: none such) */
    int nconn_fwd, rev_from;
} rt_hs_params;

typedef struct rt_hs_result {
    uint32_t conn;
    uint32_t from; /* the peer's rank */
    uint8_t key_fwd[32], key_rev[32]; /* AES keys (when encrypting or authenticating) */
} rt_hs_result;

/* Initiator side, towards rank `to`, connection index conn. */
rt_status rt_handshake_initiate(int fd, const rt_hs_params *p, int to, uint32_t conn,
                                rt_deadline_t dl, rt_hs_result *out, char *err);
/* Responder side: accepts only rank expect_from (any rank when -1); with
 * refuse_all it answers every well-formed hello with a refusal (the ring is
 * already connected).  On refusal err says why, including who asked. */
rt_status rt_handshake_respond(int fd, const rt_hs_params *p, int expect_from, bool refuse_all,
                               rt_deadline_t dl, rt_hs_result *out, char *err);

#endif
