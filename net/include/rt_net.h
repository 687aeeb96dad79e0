/* rt_net.h — what the coordinator, the agents and the CLI share on the
 * control plane: TLS contexts (the cluster CA, the coordinator's certificate,
 * hostname verification), the cluster token, and control frames — a 4-byte
 * little-endian length (at most RT_FRAME_MAX) followed by a JSON object with
 * a "type" member — over libevent bufferevents. */
#ifndef RT_NET_H
#define RT_NET_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#include "rt_json.h"
#include "rt_proto.h" /* RT_FRAME_MAX */
#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bufferevent;
struct evbuffer;

#define RT_TOKEN_HEX 64 /* tokens are 32 random bytes in hex */

/* Server side: certificate chain and key, TLS 1.2 or later. */
SSL_CTX *rt_tls_server_ctx(const char *cert_file, const char *key_file, char *err);
/* Client side: trust only ca_file; the peer's name is checked per connection
 * with rt_tls_client_ssl. */
SSL_CTX *rt_tls_client_ctx(const char *ca_file, char *err);
/* A client SSL object that verifies the server certificate names `host`. */
SSL *rt_tls_client_ssl(SSL_CTX *ctx, const char *host);
/* "certificate verify failed: ..." style text for the last TLS error. */
void rt_tls_error(char *buf, size_t len);
/* One OpenSSL error code in words (a system error as strerror says it). */
void rt_tls_describe(unsigned long e, char *buf, size_t len);

/* Read a token file: one line of hex, whitespace trimmed; mode must not let
 * others read it (group/other permissions refused). */
rt_status rt_token_load(const char *path, char token[RT_TOKEN_HEX + 1], char *err);
/* Constant-time comparison of two tokens. */
bool rt_token_equal(const char *a, const char *b);

/* Take one frame out of `in`: 1 and the parsed object in *out, 0 when more
 * bytes are needed, -1 when the stream is bad (oversized, not JSON, not an
 * object, no string "type") with the reason in err. */
int rt_frame_pull(struct evbuffer *in, rt_json **out, char *err);
/* The same with a smaller limit than RT_FRAME_MAX (before authentication). */
int rt_frame_pull_max(struct evbuffer *in, uint32_t max, rt_json **out, char *err);
/* Queue the writer's JSON as one frame; consumes w.  RT_ERR_INVALID when
 * it is larger than RT_FRAME_MAX (nothing is queued). */
rt_status rt_frame_push(struct bufferevent *bev, rt_jw *w);
/* The same for JSON text already written. */
rt_status rt_frame_push_text(struct bufferevent *bev, const char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif
