/* rt_hex.h — secrets as hex for JSON and files, and random bytes. */
#ifndef RT_HEX_H
#define RT_HEX_H

#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out gets 2*len hex digits and a NUL. */
void rt_hex_encode(const uint8_t *in, size_t len, char *out);
/* Exactly 2*len hex digits into len bytes; RT_ERR_INVALID otherwise. */
rt_status rt_hex_decode(const char *in, uint8_t *out, size_t len);
/* The value of one hex digit (either case), or -1. */
int rt_hex_digit(char c);
/* Cryptographically random bytes (OpenSSL); aborts if none can be had. */
void rt_random_bytes(uint8_t *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
