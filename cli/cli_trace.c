/* cli_trace.c — `ringtrain trace STORE --out FILE [--rank R]`: the ranks'
 * timelines of a training job run with `[train] trace = true`
 * (STORE/trace/rank-R.json, see trainer/include/rt_trace.h) merged into one
 * Chrome trace file, each rank's spans moved onto one wall-clock axis, for
 * chrome://tracing or ui.perfetto.dev. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt_file.h"
#include "rt_json.h"

#define TRACE_FILE_MAX ((size_t)1 << 30)

int cli_trace(const cli_args *a)
{
    const char *store = a->pos[0], *out = cli_value(a, "--out");
    int64_t only = -1;
    if (cli_int(a, "--rank", 0, 65535, &only) < 0)
        return 2;
    if (!out) {
        fprintf(stderr, "ringtrain trace: --out FILE is required\n");
        return 2;
    }
    char pattern[1200];
    snprintf(pattern, sizeof pattern, "%s/trace/rank-*.json", store);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        fprintf(stderr, "ringtrain trace: no %s: was the job run with [train] trace = true?\n",
                pattern);
        return 3;
    }
    rt_json **docs = calloc(g.gl_pathc, sizeof *docs);
    double origin = 0;
    int rc = docs ? 0 : 1, used = 0;
    char err[RT_ERR_LEN];
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
        int rank = -1;
        const char *base = strrchr(g.gl_pathv[i], '/');
        if (!base || sscanf(base, "/rank-%d.json", &rank) != 1 || (only >= 0 && rank != only))
            continue;
        char *text = NULL;
        size_t len = 0;
        if (rt_read_file(g.gl_pathv[i], TRACE_FILE_MAX, &text, &len, err) != RT_OK ||
            rt_json_parse(text, len, &docs[i], err) != RT_OK ||
            !rt_json_get(docs[i], "traceEvents")) {
            fprintf(stderr, "ringtrain trace: %s: %s\n", g.gl_pathv[i],
                    docs[i] ? "no traceEvents" : err);
            rc = 1;
        }
        free(text);
        double o = rt_json_num(rt_json_get(docs[i], "origin_unix_us"), 0);
        if (rc == 0 && (used == 0 || o < origin))
            origin = o;
        used += rc == 0;
    }
    if (rc == 0 && used == 0) {
        fprintf(stderr, "ringtrain trace: no timeline of rank %lld in %s/trace\n", (long long)only,
                store);
        rc = 3;
    }
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "displayTimeUnit", "ms");
    rt_jw_key(&w, "traceEvents");
    rt_jw_arr(&w);
    int64_t events = 0;
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
        if (!docs[i])
            continue;
        double shift = rt_json_num(rt_json_get(docs[i], "origin_unix_us"), origin) - origin;
        const rt_json *ev = rt_json_get(docs[i], "traceEvents");
        for (size_t k = 0; k < rt_json_len(ev); k++) {
            const rt_json *e = rt_json_at(ev, k);
            rt_jw_obj(&w);
            for (size_t f = 0; f < rt_json_len(e); f++) {
                const char *key = rt_json_key_at(e, f);
                rt_jw_key(&w, key);
                if (strcmp(key, "ts") == 0)
                    rt_jw_num(&w, rt_json_num(rt_json_value_at(e, f), 0) + shift);
                else
                    rt_jw_value(&w, rt_json_value_at(e, f));
            }
            rt_jw_obj_end(&w);
            events++;
        }
    }
    rt_jw_arr_end(&w);
    rt_jw_obj_end(&w);
    size_t len;
    char *text = rt_jw_take(&w, &len);
    if (rc == 0) {
        rt_iov part = {text, len};
        if (!text || rt_write_atomic(out, &part, 1, err) != RT_OK) {
            fprintf(stderr, "ringtrain trace: %s\n", text ? err : "out of memory");
            rc = 1;
        } else {
            printf("%s: %lld spans of %d rank%s (open it in ui.perfetto.dev or chrome://tracing)\n",
                   out, (long long)events, used, used == 1 ? "" : "s");
        }
    }
    free(text);
    for (size_t i = 0; docs && i < g.gl_pathc; i++)
        rt_json_free(docs[i]);
    free(docs);
    globfree(&g);
    return rc;
}
