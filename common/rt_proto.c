/* rt_proto.c — the control protocol's message table (see rt_proto.h) and
 * the generic check every receiver runs before it acts on a frame. */
#include "rt_proto.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "rt_hex.h"

void rt_shm_tag(const char *key_hex, char tag[RT_SHM_TAG_HEX + 1])
{
    static const char domain[] = "ringtrain-shm:";
    char lower[160]; /* the key's hex in lower case, whichever case it came in */
    size_t len = 0;
    for (; key_hex[len] && len < sizeof lower; len++)
        lower[len] = (char)tolower((unsigned char)key_hex[len]);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    const bool ok = x && EVP_DigestInit_ex(x, EVP_sha256(), NULL) == 1 &&
                    EVP_DigestUpdate(x, domain, sizeof domain - 1) == 1 &&
                    EVP_DigestUpdate(x, lower, len) == 1 && EVP_DigestFinal_ex(x, md, &n) == 1 &&
                    n >= RT_SHM_TAG_HEX / 2;
    EVP_MD_CTX_free(x);
    OPENSSL_cleanse(lower, sizeof lower);
    if (!ok) /* no digest: a tag of its own that no other attempt's prefix matches */
        memset(md, 0xff, RT_SHM_TAG_HEX / 2);
    rt_hex_encode(md, RT_SHM_TAG_HEX / 2, tag);
}

const rt_msg_info rt_msgs[RT_MSG_COUNT] = {
    [RT_MSG_HELLO] = {"hello", RT_TO_COORD,
                      "token:s proto:i version:s host_id:s name:s hostname:s slots:i address:s "
                      "caps:o running:a exited:a",
                      "register this agent: credential, identity, slots, capabilities, the ranks "
                      "it runs and the exits the coordinator has not heard of"},
    [RT_MSG_HEARTBEAT] = {"heartbeat", RT_TO_COORD, "workers:i", "still alive"},
    [RT_MSG_BYE] = {"bye", RT_TO_COORD, "reason:s", "stopping on purpose (not a failure)"},
    [RT_MSG_PREPARED] = {"prepared", RT_TO_COORD, "job:i attempt:i ranks:a",
                         "the data-plane addresses of this agent's ranks of an attempt, or "
                         "\"error\" when they could not be set up"},
    [RT_MSG_STARTED] = {"started", RT_TO_COORD, "job:i attempt:i rank:i pid:i",
                        "a rank's process is running"},
    [RT_MSG_EXITED] = {"exited", RT_TO_COORD, "job:i attempt:i rank:i code:i signal:i tail:a",
                       "a rank's process ended (exit code or signal, its last lines of output)"},
    [RT_MSG_PROGRESS] = {"progress", RT_TO_COORD, "job:i attempt:i rank:i data:o",
                         "a progress report the rank sent its agent (epoch, step, metrics)"},
    [RT_MSG_LOG_DATA] = {"log_data", RT_TO_COORD, "req:i rank:i eof:b",
                         "output of a rank for an open log stream (\"data\"), an \"error\", "
                         "or the end of the stream"},
    [RT_MSG_WELCOME] = {"welcome", RT_TO_AGENT, "agent:s heartbeat_ms:i",
                        "registered: the agent's key and the heartbeat interval"},
    [RT_MSG_ERROR] = {"error", RT_TO_AGENT, "reason:s",
                      "the registration was refused and why; the connection closes"},
    [RT_MSG_PREPARE] = {"prepare", RT_TO_AGENT, "job:i attempt:i size:i ranks:a",
                        "bind a data-plane socket for each listed rank of an attempt"},
    [RT_MSG_START] = {"start", RT_TO_AGENT,
                      "job:i attempt:i size:i job_type:s key:s peers:a", /* and the ring's
                                                                            settings: rt_run.h */
                      "start the prepared ranks (every rank's address, the attempt's key, the "
                      "program or the training configuration)"},
    [RT_MSG_ABORT] = {"abort", RT_TO_AGENT, "job:i attempt:i reason:s",
                      "stop every rank of an attempt (SIGTERM, SIGKILL after the grace time)"},
    [RT_MSG_LOG_OPEN] = {"log_open", RT_TO_AGENT, "req:i job:i attempt:i rank:i follow:b lines:b",
                         "stream a rank's output, from the oldest kept file; with follow until "
                         "the rank has exited"},
    [RT_MSG_LOG_CLOSE] = {"log_close", RT_TO_AGENT, "req:i", "stop a log stream"},
};

rt_msg rt_msg_parse(const char *name)
{
    for (int m = 0; name && m < RT_MSG_COUNT; m++)
        if (strcmp(rt_msgs[m].name, name) == 0)
            return (rt_msg)m;
    return RT_MSG_COUNT;
}

const char *rt_msg_name(rt_msg m) { return m >= 0 && m < RT_MSG_COUNT ? rt_msgs[m].name : "?"; }

static bool type_ok(const rt_json *v, char t)
{
    int64_t i;
    switch (t) {
    case 'i': return rt_json_int(v, &i);
    case 'n': return rt_json_type_of(v) == RT_JSON_NUMBER;
    case 's': return rt_json_type_of(v) == RT_JSON_STRING;
    case 'b': return rt_json_type_of(v) == RT_JSON_BOOL;
    case 'a': return rt_json_type_of(v) == RT_JSON_ARRAY;
    case 'o': return rt_json_type_of(v) == RT_JSON_OBJECT;
    }
    return false;
}

static const char *type_word(char t)
{
    switch (t) {
    case 'i': return "an integer";
    case 'n': return "a number";
    case 's': return "a string";
    case 'b': return "a boolean";
    case 'a': return "an array";
    case 'o': return "an object";
    }
    return "?";
}

rt_msg rt_msg_check(const rt_json *m, rt_msg_dir dir, char *err)
{
    const char *type = rt_json_get_str(m, RT_F_TYPE);
    rt_msg k = rt_msg_parse(type);
    if (k == RT_MSG_COUNT || rt_msgs[k].dir != dir) {
        rt_err(err, RT_ERR_PROTO, "unknown message type '%s'", type ? type : "(none)");
        return RT_MSG_COUNT;
    }
    const char *f = rt_msgs[k].fields;
    while (*f) {
        char name[48];
        size_t n = strcspn(f, ":");
        RT_ASSERT(n < sizeof name && f[n] == ':');
        memcpy(name, f, n);
        name[n] = '\0';
        char t = f[n + 1];
        if (!type_ok(rt_json_get(m, name), t)) {
            rt_err(err, RT_ERR_PROTO, "'%s' without %s \"%s\"", type, type_word(t), name);
            return RT_MSG_COUNT;
        }
        f += n + 2;
        while (*f == ' ')
            f++;
    }
    return k;
}

/* ---- job states ------------------------------------------------------------------ */

static const char *const JOB_STATES[RT_JS_COUNT] = {
    [RT_JS_QUEUED] = "queued",       [RT_JS_STARTING] = "starting", [RT_JS_RUNNING] = "running",
    [RT_JS_RESTARTING] = "restarting", [RT_JS_SUCCEEDED] = "succeeded",
    [RT_JS_FAILED] = "failed",       [RT_JS_CANCELLED] = "cancelled",
};

const char *rt_job_state_name(int s) { return s >= 0 && s < RT_JS_COUNT ? JOB_STATES[s] : "?"; }

int rt_job_state_parse(const char *name)
{
    for (int s = 0; name && s < RT_JS_COUNT; s++)
        if (strcmp(JOB_STATES[s], name) == 0)
            return s;
    return -1;
}

bool rt_job_state_terminal(int s) { return s >= RT_JS_SUCCEEDED && s < RT_JS_COUNT; }

const char *rt_job_state_list(void)
{
    static char list[128];
    if (!list[0])
        for (int s = 0; s < RT_JS_COUNT; s++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", s ? ", " : "",
                     JOB_STATES[s]);
    return list;
}

bool rt_name_ok(const char *s)
{
    size_t n = 0;
    for (; s && s[n]; n++) {
        const char c = s[n];
        if (n == RT_NAME_MAX || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return false;
    }
    return n > 0;
}
