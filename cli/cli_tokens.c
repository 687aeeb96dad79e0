/* cli_tokens.c — `ringtrain token create|list|revoke`: the API tokens the
 * coordinator keeps (an admin token is needed; docs/security.md).
 *   token create NAME --role metrics|read|submit|admin [--unix-user U]
 *                                                         prints the token once
 *   token list                                            id, name, role, Unix user, dates
 *   token revoke ID-OR-NAME                               at once, for good */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rt_json.h"

static int request(const cli_args *a, const char *method, const char *path, const char *body,
                   int ok, rt_json **doc)
{
    *doc = NULL;
    cli_conn c;
    char err[RT_ERR_LEN];
    if (cli_conn_load(&c, a, err) != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        return 1;
    }
    http_resp r;
    if (http_request(&c, method, path, body, &r, err) != RT_OK) {
        fprintf(stderr, "ringtrain: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (r.status != ok) {
        char buf[RT_ERR_LEN];
        fprintf(stderr, "ringtrain token: %s\n", http_error_text(&r, buf, sizeof buf));
        rc = r.status == 404 ? 3 : r.status == 400 ? 2 : 1;
    } else if (cli_switch(a, "--json")) {
        printf("%s\n", r.body);
    } else if (rt_json_parse(r.body, r.len, doc, err) != RT_OK) {
        fprintf(stderr, "ringtrain: the coordinator's answer is not JSON: %s\n", err);
        rc = 1;
    }
    free(r.body);
    return rc;
}

static void when(double t, char *buf, size_t len)
{
    if (t <= 0) {
        snprintf(buf, len, "-");
        return;
    }
    time_t s = (time_t)t;
    struct tm tm;
    localtime_r(&s, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
}

int cli_token(const cli_args *a)
{
    const char *verb = a->pos[0];
    rt_json *doc = NULL;
    int rc;
    if (!strcmp(verb, "create")) {
        const char *role = cli_value(a, "--role");
        if (a->npos != 2 || !role) {
            fprintf(stderr, "ringtrain token create NAME --role metrics|read|submit|admin|agent "
                            "[--unix-user USER]\n");
            return 2;
        }
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "name", a->pos[1]);
        rt_jw_kstr(&w, "role", role);
        const char *unix_user = cli_value(a, "--unix-user");
        if (unix_user)
            rt_jw_kstr(&w, "unix_user", unix_user);
        rt_jw_obj_end(&w);
        char *body = rt_jw_take(&w, NULL);
        rc = request(a, "POST", "/v1/tokens", body, 201, &doc);
        free(body);
        if (rc == 0 && doc) {
            /* the token alone on stdout (`> alice.token`), the rest on stderr */
            printf("%s\n", rt_json_str(rt_json_get(doc, "token"), ""));
            fflush(stdout);
            fprintf(stderr,
                    "ringtrain: token %lld '%s' with role %s; it is shown this once: keep it "
                    "in a file of mode 0600 (cli.conf token_file)\n",
                    (long long)rt_json_num(rt_json_get(doc, "id"), 0), a->pos[1], role);
        }
    } else if (!strcmp(verb, "list") && a->npos == 1) {
        rc = request(a, "GET", "/v1/tokens", NULL, 200, &doc);
        const rt_json *ts = rt_json_get(doc, "tokens");
        if (rc == 0 && doc)
            printf("%4s  %-24s %-7s %-12s %-16s %s\n", "ID", "NAME", "ROLE", "UNIX USER",
                   "CREATED", "REVOKED");
        for (size_t i = 0; i < rt_json_len(ts); i++) {
            const rt_json *t = rt_json_at(ts, i);
            char c[32], r[32];
            when(rt_json_num(rt_json_get(t, "created"), 0), c, sizeof c);
            when(rt_json_num(rt_json_get(t, "revoked"), 0), r, sizeof r);
            printf("%4lld  %-24s %-7s %-12s %-16s %s\n",
                   (long long)rt_json_num(rt_json_get(t, "id"), 0),
                   rt_json_str(rt_json_get(t, "name"), "?"), rt_json_str(rt_json_get(t, "role"), "?"),
                   rt_json_str(rt_json_get(t, "unix_user"), "-"), c, r);
        }
    } else if (!strcmp(verb, "revoke") && a->npos == 2) {
        char path[160];
        if (strlen(a->pos[1]) > 64 || strchr(a->pos[1], '/')) {
            fprintf(stderr, "ringtrain token revoke: '%s' is not a token id or name\n", a->pos[1]);
            return 2;
        }
        snprintf(path, sizeof path, "/v1/tokens/%s/revoke", a->pos[1]);
        rc = request(a, "POST", path, NULL, 200, &doc);
        if (rc == 0 && !cli_switch(a, "--json"))
            printf("revoked\n");
    } else {
        fprintf(stderr, "ringtrain token: create NAME --role ROLE | list | revoke ID-OR-NAME\n");
        return 2;
    }
    rt_json_free(doc);
    return rc;
}
