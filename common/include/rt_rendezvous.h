/* rt_rendezvous.h — the rendezvous file an agent writes for each rank of an
 * attempt and rt_init_from_env reads (docs/protocol.md, "What a rank
 * receives"): written and read by this pair of functions only, so that its
 * fields and their defaults are in one place. */
#ifndef RT_RENDEZVOUS_H
#define RT_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_run.h"
#include "rt_status.h"

typedef struct rt_rendezvous {
    int64_t job, attempt;
    int rank, size, local_rank, local_size, cross_rank, cross_size;
    char **peers;        /* size data-plane addresses, in rank order (owned when parsed) */
    char key[65];        /* the attempt's 32-byte key, hex */
    rt_run_settings run; /* the ring's settings ("auto" resolved before) */
} rt_rendezvous;

/* Every field, the ring's settings' defaults where one is absent
 * (rt_run_defaults). */
void rt_rendezvous_defaults(rt_rendezvous *r);
/* The file's JSON text (malloc'd; NULL when out of memory). */
char *rt_rendezvous_format(const rt_rendezvous *r, size_t *len);
/* Parse the file's text into r (rt_rendezvous_free after, in every case);
 * an error names what is missing or malformed. */
rt_status rt_rendezvous_parse(const char *text, size_t len, rt_rendezvous *r, char *err);
void rt_rendezvous_free(rt_rendezvous *r);

#endif
