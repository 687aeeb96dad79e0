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
 *   admin    + drain, resume, tokens
 * and `agent`: no API role, but one agent's own registration token, made
 * for its name (`ringtrain token create NAME --role agent`).  Once a name is
 * enrolled so, the shared agents' token no longer registers that name, and
 * revoking the token drops the agent at once. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_hex.h"
#include "rt_json.h"
#include "rt_log.h"
#include "rt_net.h"

static const char *const ROLE_NAMES[] = {"metrics", "read", "submit", "admin", "agent"};

const char *auth_role_name(auth_role r)
{
    return r >= ROLE_METRICS && r <= ROLE_AGENT ? ROLE_NAMES[r] : "none";
}

auth_role auth_role_parse(const char *name)
{
    for (int r = ROLE_METRICS; name && r <= ROLE_AGENT; r++)
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

rt_status auth_add(coord *co, int64_t id, const char *name, auth_role role, const char *hash,
                   const char *unix_user)
{
    api_token *t = calloc(1, sizeof *t);
    if (!t)
        return RT_ERR_NOMEM;
    t->id = id;
    t->role = role;
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->hash, sizeof t->hash, "%s", hash);
    snprintf(t->unix_user, sizeof t->unix_user, "%s", unix_user ? unix_user : "");
    t->next = co->tokens;
    co->tokens = t;
    return RT_OK;
}

const char *auth_unix_user(const coord *co, const char *user)
{
    for (const api_token *t = co->tokens; user && t; t = t->next)
        if (strcmp(t->name, user) == 0)
            return t->unix_user;
    return "";
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
    while (co->sessions) {
        web_session *s = co->sessions;
        co->sessions = s->next;
        free(s);
    }
}

/* ---- dashboard sessions ------------------------------------------------------- */

/* The value of the rt_session cookie in a Cookie header, or NULL. */
static const char *session_cookie(const char *cookie, char id[65])
{
    for (const char *p = cookie; p && *p;) {
        p += strspn(p, " ;");
        if (strncmp(p, "rt_session=", 11) == 0) {
            size_t n = strcspn(p + 11, "; ");
            if (n != 64)
                return NULL;
            memcpy(id, p + 11, 64);
            id[64] = '\0';
            return id;
        }
        p = strchr(p, ';');
    }
    return NULL;
}

rt_status auth_session_new(coord *co, auth_role role, int64_t token_id, const char *who,
                           char out[65])
{
    web_session *s = calloc(1, sizeof *s);
    if (!s)
        return RT_ERR_NOMEM;
    uint8_t raw[32];
    rt_random_bytes(raw, sizeof raw);
    rt_hex_encode(raw, sizeof raw, s->id);
    s->role = role;
    s->token_id = token_id;
    snprintf(s->who, sizeof s->who, "%s", who);
    s->expires = coord_now().wall + AUTH_SESSION_S;
    /* at most AUTH_SESSIONS_PER_TOKEN logins of one token: the oldest goes
     * (the list is newest first), as a browser's new login would replace it */
    web_session **oldest = NULL;
    int n = 0;
    for (web_session **p = &co->sessions; *p; p = &(*p)->next)
        if ((*p)->token_id == token_id && strcmp((*p)->who, s->who) == 0) {
            n++;
            oldest = p;
        }
    if (n >= AUTH_SESSIONS_PER_TOKEN && oldest) {
        web_session *gone = *oldest;
        *oldest = gone->next;
        free(gone);
    }
    s->next = co->sessions;
    co->sessions = s;
    memcpy(out, s->id, 65);
    return RT_OK;
}

static void drop_if(coord *co, bool (*match)(const web_session *, const void *), const void *arg)
{
    for (web_session **p = &co->sessions; *p;) {
        if (match(*p, arg)) {
            web_session *s = *p;
            *p = s->next;
            free(s);
        } else {
            p = &(*p)->next;
        }
    }
}

static bool same_id(const web_session *s, const void *id)
{
    return CRYPTO_memcmp(s->id, id, 64) == 0;
}

static bool of_token(const web_session *s, const void *id)
{
    return s->token_id == *(const int64_t *)id;
}

static bool expired(const web_session *s, const void *now)
{
    return s->expires < *(const double *)now;
}

void auth_session_drop(coord *co, const char *cookie)
{
    char id[65];
    if (session_cookie(cookie, id))
        drop_if(co, same_id, id);
}

void auth_sessions_of_token_drop(coord *co, int64_t token_id)
{
    drop_if(co, of_token, &token_id);
}

/* ---- checking a request ------------------------------------------------------- */

auth_role auth_check(coord *co, const char *bearer, const char *cookie, char *who, size_t wholen,
                     const char **why, int64_t *token_id, bool *by_cookie)
{
    *why = "missing or wrong bearer token";
    snprintf(who, wholen, "?");
    *by_cookie = false;
    if (!bearer && cookie) {
        double now = coord_now().wall;
        drop_if(co, expired, &now);
        char id[65];
        if (!session_cookie(cookie, id)) {
            *why = "no bearer token and no dashboard session";
            return ROLE_NONE;
        }
        for (const web_session *s = co->sessions; s; s = s->next)
            if (same_id(s, id)) {
                snprintf(who, wholen, "%s", s->who);
                if (token_id)
                    *token_id = s->token_id;
                *by_cookie = true;
                return s->role;
            }
        *why = "the dashboard session has ended: log in again";
        return ROLE_NONE;
    }
    if (!bearer || strncmp(bearer, "Bearer ", 7) != 0)
        return ROLE_NONE;
    const char *tok = bearer + 7;
    if (rt_token_equal(tok, co->admin_token)) {
        snprintf(who, wholen, "admin.token");
        if (token_id)
            *token_id = 0;
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
            if (t->role == ROLE_AGENT) {
                *why = "this is an agent's registration token, which the API does not take";
                return ROLE_NONE;
            }
            if (token_id)
                *token_id = t->id;
            return t->role;
        }
    return ROLE_NONE;
}

const char *auth_agent_hello(coord *co, const char *token, const char *name)
{
    if (!token || !name)
        return "a hello without a token and a name";
    const api_token *own = NULL;
    for (const api_token *t = co->tokens; t && !own; t = t->next)
        if (t->role == ROLE_AGENT && strcmp(t->name, name) == 0)
            own = t;
    if (rt_token_equal(token, co->token)) {
        if (own)
            return "this agent's name is enrolled: it must present its own token (ringtrain "
                   "token create NAME --role agent), not the agents' shared one";
        if (co->cfg.require_enrollment)
            return "this coordinator takes enrolled agents only (require_enrollment): make the "
                   "agent a token with `ringtrain token create NAME --role agent`";
        return NULL;
    }
    if (strlen(token) > 256)
        return "wrong agent token";
    char hash[65];
    auth_hash(token, hash);
    for (const api_token *t = co->tokens; t; t = t->next)
        if (CRYPTO_memcmp(t->hash, hash, 64) == 0) {
            if (t->role != ROLE_AGENT)
                return "an API token cannot register an agent";
            if (strcmp(t->name, name) != 0)
                return "this agent token was made for another agent's name";
            return NULL;
        }
    return "wrong cluster token";
}

/* ---- what a role may see ------------------------------------------------------ */

const char *auth_user(const char *who)
{
    return strncmp(who, "token ", 6) == 0 ? who + 6 : NULL;
}

bool auth_owns(auth_role role, const char *who, const char *job_user)
{
    const char *user = auth_user(who);
    return role >= ROLE_ADMIN || (job_user && user && !strcmp(job_user, user));
}

static void copy_hiding_env(rt_jw *w, const rt_json *v, bool hide)
{
    switch (rt_json_type_of(v)) {
    case RT_JSON_OBJECT:
        rt_jw_obj(w);
        for (size_t i = 0; i < rt_json_len(v); i++) {
            const char *k = rt_json_key_at(v, i);
            const rt_json *x = rt_json_value_at(v, i);
            rt_jw_key(w, k);
            if (hide) {
                rt_jw_str(w, "(hidden)");
            } else if (!strcmp(k, "spec") && rt_json_type_of(x) == RT_JSON_STRING) {
                /* the submitted spec, kept as its JSON text */
                char *inner = auth_hide_env(strdup(rt_json_str(x, "")));
                rt_jw_str(w, inner ? inner : "(hidden)");
                free(inner);
            } else {
                copy_hiding_env(w, x, !strcmp(k, "env") && rt_json_type_of(x) == RT_JSON_OBJECT);
            }
        }
        rt_jw_obj_end(w);
        break;
    case RT_JSON_ARRAY:
        rt_jw_arr(w);
        for (size_t i = 0; i < rt_json_len(v); i++)
            copy_hiding_env(w, rt_json_at(v, i), false);
        rt_jw_arr_end(w);
        break;
    default:
        rt_jw_value(w, v);
    }
}

char *auth_hide_env(char *doc)
{
    if (!doc || !strstr(doc, "env")) /* also inside the spec, which is JSON text */
        return doc;
    rt_json *j = NULL;
    char err[RT_ERR_LEN];
    if (rt_json_parse(doc, strlen(doc), &j, err) != RT_OK) {
        free(doc); /* shown to no one rather than unredacted */
        return NULL;
    }
    rt_jw w;
    rt_jw_init(&w);
    copy_hiding_env(&w, j, false);
    rt_json_free(j);
    free(doc);
    return rt_jw_take(&w, NULL);
}

/* ---- API tokens (admin) --------------------------------------------------------- */

/* A Unix user's name as useradd takes it (and not root): 1-32 letters,
 * digits, '.', '_', '-', not starting with '-' or a digit. */
static bool unix_name_ok(const char *u)
{
    size_t n = strlen(u);
    return n >= 1 && n <= 32 && strcmp(u, "root") != 0 && u[0] != '-' && u[0] != '.' &&
           !(u[0] >= '0' && u[0] <= '9') &&
           strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* POST /v1/tokens {"name": N, "role": R[, "unix_user": U]}: 201 with the
 * token, shown once; the jobs it submits run as Unix user U on the agents. */
void auth_token_create(coord *co, struct evhttp_request *req)
{
    size_t len;
    char *body = http_body_text(req, &len), err[RT_ERR_LEN];
    rt_json *j = NULL;
    const char *name = NULL, *role = NULL, *unix_user = NULL;
    if (body && rt_json_parse(body, len, &j, err) == RT_OK) {
        name = rt_json_get_str(j, "name");
        role = rt_json_get_str(j, "role");
        unix_user = rt_json_get_str(j, "unix_user");
    }
    const auth_role r = auth_role_parse(role);
    size_t nlen = name ? strlen(name) : 0;
    if (!name || nlen == 0 || nlen > 60 || strspn(name, "abcdefghijklmnopqrstuvwxyz"
                                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@") != nlen ||
        !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'))) {
        http_reply_error(req, 400, "the body must be {\"name\": NAME, \"role\": ROLE}; a name is 1-60 "
                              "letters, digits, '.', '_', '-' or '@', starting with a letter");
    } else if (r == ROLE_NONE) {
        http_reply_error(req, 400, "\"role\" must be metrics, read, submit, admin or agent");
    } else if (unix_user && !unix_name_ok(unix_user)) {
        http_reply_error(req, 400, "\"unix_user\" must be a Unix user's name (1-32 letters, "
                              "digits, '.', '_' or '-'), not root");
    } else if (unix_user && r != ROLE_SUBMIT && r != ROLE_ADMIN) {
        http_reply_error(req, 400, "a Unix user is for tokens that submit jobs (role submit or "
                              "admin)");
    } else {
        uint8_t raw[32];
        char tok[65], hash[65];
        rt_random_bytes(raw, sizeof raw);
        rt_hex_encode(raw, sizeof raw, tok);
        auth_hash(tok, hash);
        int64_t id = 0;
        rt_status st = cdb_token_insert(co, name, role, hash, unix_user, &id, err);
        if (st == RT_OK && auth_add(co, id, name, r, hash, unix_user) != RT_OK)
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
        if (st != RT_OK) {
            http_reply_error(req, st == RT_ERR_EXISTS ? 409 : 503, err);
        } else {
            RT_INFO("http", "API token %lld '%s' created with role %s%s%s", (long long)id, name,
                    role, unix_user ? ", jobs as Unix user " : "", unix_user ? unix_user : "");
            char out[256];
            snprintf(out, sizeof out, "{\"id\":%lld,\"name\":\"%s\",\"role\":\"%s\",\"token\":\"%s\"}",
                     (long long)id, name, role, tok);
            http_reply_text(req, 201, "application/json", out);
        }
    }
    rt_json_free(j);
    free(body);
}

void auth_token_revoke(coord *co, struct evhttp_request *req, const char *which)
{
    char err[RT_ERR_LEN];
    int64_t id = 0;
    rt_status st = cdb_token_revoke(co, which, &id, err);
    if (st != RT_OK) {
        http_reply_error(req, st == RT_ERR_NOTFOUND ? 404 : 503, err);
        return;
    }
    /* an agent's token: its connection goes too */
    for (const api_token *t = co->tokens; t; t = t->next)
        if (t->id == id && t->role == ROLE_AGENT)
            for (conn *c = co->conns; c; c = c->next)
                if (c->ag && strcmp(c->ag->name, t->name) == 0)
                    c->revoked = true;
    auth_remove(co, id);
    auth_sessions_of_token_drop(co, id);
    RT_INFO("http", "API token %lld revoked", (long long)id);
    http_reply_text(req, 200, "application/json", "{\"revoked\":true}");
}
