/* coord_auth.c — who may do what on the HTTP API.
 *
 * Credentials (docs/security.md):
 *   - the agents' token (token_file): registers agents on the control port;
 *     refused on the API, so a node (or a job running there) holds no API
 *     credential;
 *   - the admin token (admin_token_file, written by init-cluster): every
 *     API call, and the only way to make the first API tokens;
 *   - API tokens made with `ringtrain token create --role ROLE NAME`: 32
 *     random bytes shown once, stored as their SHA-256 in the state
 *     database, kept in memory; a revoke takes effect on the next request.
 *
 * Roles, each allowing what the ones before it do but metrics:
 *   metrics  GET /metrics (Prometheus)
 *   read     every GET: nodes, jobs, a job, its logs, metrics
 *   submit   + POST /v1/jobs, cancel, hold, release
 *   admin    + drain, resume, tokens */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_hex.h"
#include "rt_log.h"

static const char *const ROLE_NAMES[] = {"metrics", "read", "submit", "admin"};

const char *auth_role_name(auth_role r)
{
    return r >= ROLE_METRICS && r <= ROLE_ADMIN ? ROLE_NAMES[r] : "none";
}

auth_role auth_role_parse(const char *name)
{
    for (int r = ROLE_METRICS; name && r <= ROLE_ADMIN; r++)
        if (strcmp(name, ROLE_NAMES[r]) == 0)
            return (auth_role)r;
    return ROLE_NONE;
}

void auth_hash(const char *token, char hex[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL);
    rt_hex_encode(md, sizeof md, hex);
}

rt_status auth_add(coord *co, int64_t id, const char *name, auth_role role, const char *hash)
{
    api_token *t = calloc(1, sizeof *t);
    if (!t)
        return RT_ERR_NOMEM;
    t->id = id;
    t->role = role;
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->hash, sizeof t->hash, "%s", hash);
    t->next = co->tokens;
    co->tokens = t;
    return RT_OK;
}

void auth_remove(coord *co, int64_t id)
{
    for (api_token **p = &co->tokens; *p; p = &(*p)->next)
        if ((*p)->id == id) {
            api_token *t = *p;
            *p = t->next;
            free(t);
            return;
        }
}

void auth_free(coord *co)
{
    while (co->tokens) {
        api_token *t = co->tokens;
        co->tokens = t->next;
        free(t);
    }
}

auth_role auth_check(coord *co, const char *bearer, char *who, size_t wholen, const char **why)
{
    *why = "missing or wrong bearer token";
    snprintf(who, wholen, "?");
    if (!bearer || strncmp(bearer, "Bearer ", 7) != 0)
        return ROLE_NONE;
    const char *tok = bearer + 7;
    if (rt_token_equal(tok, co->admin_token)) {
        snprintf(who, wholen, "admin.token");
        return ROLE_ADMIN;
    }
    if (rt_token_equal(tok, co->token)) {
        *why = "this is the agents' registration token, which the API does not take: use an "
               "API token (admin.token, or one from `ringtrain token create`)";
        return ROLE_NONE;
    }
    if (strlen(tok) > 256)
        return ROLE_NONE;
    char hash[65];
    auth_hash(tok, hash);
    for (const api_token *t = co->tokens; t; t = t->next)
        if (CRYPTO_memcmp(t->hash, hash, 64) == 0) {
            snprintf(who, wholen, "token %s", t->name);
            return t->role;
        }
    return ROLE_NONE;
}

/* The least role a request needs. */
auth_role auth_needed(bool get, const char *path)
{
    if (get && strcmp(path, "/metrics") == 0)
        return ROLE_METRICS;
    if (strncmp(path, "/v1/tokens", 10) == 0 || strncmp(path, "/v1/nodes/", 10) == 0)
        return ROLE_ADMIN; /* tokens; drain and resume */
    return get ? ROLE_READ : ROLE_SUBMIT;
}
