/* coord_web.c — the dashboard: its four files (coordinator/web, embedded at
 * build time) and its logins.  The page holds no secret: it asks for an API
 * token once, POSTs it to /v1/session, and from then on the browser carries
 * an HttpOnly, Secure, SameSite=Strict session cookie — the token is never
 * kept by the page nor put in a URL.  Requests that change something with
 * the cookie must also carry "X-Requested-With: ringtrain" (a header no
 * other site's page can send here), see coord_http.c. */
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_log.h"
#include "web_assets.h"

static const struct {
    const char *path, *type, *body;
} FILES[] = {{"/", "text/html; charset=utf-8", web_index_html},
             {"/app.js", "text/javascript; charset=utf-8", web_app_js},
             {"/sweep.js", "text/javascript; charset=utf-8", web_sweep_js},
             {"/style.css", "text/css; charset=utf-8", web_style_css}};

static void security_headers(struct evhttp_request *req)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Security-Policy",
                      "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                      "frame-ancestors 'none'; "
                      "base-uri 'none'; form-action 'self'");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    evhttp_add_header(h, "Cache-Control", "no-store");
}

static void set_cookie(struct evhttp_request *req, const char *id, int max_age)
{
    char c[200];
    snprintf(c, sizeof c, "rt_session=%s; Path=/; Max-Age=%d; HttpOnly; Secure; SameSite=Strict",
             id, max_age);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie", c);
}

/* The job states and which are terminal (rt_proto.h's one table), and
 * the progress lines' keys (rt_proto.h's RT_P_*): the dashboard names
 * none itself. */
static void web_job_states(rt_jw *w)
{
    rt_jw_key(w, "progress_keys");
    rt_jw_obj(w);
    rt_jw_kstr(w, "loss", RT_P_LOSS);
    rt_jw_kstr(w, "val_loss", RT_P_VAL_LOSS);
    rt_jw_kstr(w, "val_prefix", RT_P_VAL_PREFIX);
    rt_jw_kstr(w, "samples_per_s", RT_P_SAMPLES_PER_S);
    rt_jw_kstr(w, "steps_per_s", RT_P_STEPS_PER_S);
    rt_jw_obj_end(w);
    rt_jw_key(w, "job_states");
    rt_jw_arr(w);
    for (int s = 0; s < RT_JS_COUNT; s++)
        rt_jw_str(w, rt_job_state_name(s));
    rt_jw_arr_end(w);
    rt_jw_key(w, "terminal_states");
    rt_jw_arr(w);
    for (int s = 0; s < RT_JS_COUNT; s++)
        if (rt_job_state_terminal(s))
            rt_jw_str(w, rt_job_state_name(s));
    rt_jw_arr_end(w);
}

/* POST /v1/session {"token": T}: a session for the token's role. */
static void login(coord *co, struct evhttp_request *req)
{
    size_t len;
    char *body = http_body_text(req, &len), err[RT_ERR_LEN];
    rt_json *j = NULL;
    const char *tok = NULL;
    if (body && len < 1024 && rt_json_parse(body, len, &j, err) == RT_OK)
        tok = rt_json_get_str(j, "token");
    char bearer[300], who[96];
    snprintf(bearer, sizeof bearer, "Bearer %s", tok ? tok : "");
    const char *why = NULL;
    int64_t token_id = -1;
    bool by_cookie = false;
    auth_role role = tok && strlen(tok) < 256
                         ? auth_check(co, bearer, NULL, who, sizeof who, &why, &token_id, &by_cookie)
                         : ROLE_NONE;
    char id[65];
    if (role == ROLE_NONE) {
        RT_WARN("http", "dashboard login refused: %s", why ? why : "no token");
        http_reply_error(req, 401, why ? why : "the body must be {\"token\": TOKEN}");
    } else if (auth_session_new(co, role, token_id, who, id) != RT_OK) {
        http_reply_error(req, 500, "out of memory");
    } else {
        RT_INFO("http", "dashboard login: %s (role %s)", who, auth_role_name(role));
        set_cookie(req, id, AUTH_SESSION_S);
        web_session_get(co, req, who, role); /* the same answer as GET /v1/session */
    }
    rt_json_free(j);
    free(body);
}

bool web_serve(coord *co, struct evhttp_request *req, const char *path, bool get, bool post)
{
    for (size_t i = 0; get && i < sizeof FILES / sizeof *FILES; i++)
        if (strcmp(path, FILES[i].path) == 0) {
            security_headers(req);
            http_reply_text(req, 200, FILES[i].type, FILES[i].body);
            return true;
        }
    if (get && strcmp(path, "/favicon.ico") == 0) { /* browsers ask; there is none */
        evhttp_send_reply(req, 204, NULL, NULL);
        return true;
    }
    if (post && strcmp(path, "/v1/session") == 0) {
        login(co, req);
        return true;
    }
    return false;
}

void web_session_get(coord *co, struct evhttp_request *req, const char *who, auth_role role)
{
    (void)co;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "who", who);
    rt_jw_kstr(&w, "role", auth_role_name(role));
    web_job_states(&w);
    rt_jw_obj_end(&w);
    http_reply_json(req, 200, rt_jw_take(&w, NULL));
}

void web_logout(coord *co, struct evhttp_request *req)
{
    auth_session_drop(co, evhttp_find_header(evhttp_request_get_input_headers(req), "Cookie"));
    set_cookie(req, "", 0);
    http_reply_text(req, 200, "application/json", "{\"logged_out\":true}");
}
