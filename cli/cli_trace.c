/* cli_trace.c — `ringtrain trace STORE|JOB --out FILE [--rank R]`: the
 * ranks' timelines of a training job run with `[train] trace = true`
 * (STORE/trace/rank-R.json, see trainer/include/rt_trace.h) merged into one
 * Chrome trace file, each rank's spans moved onto one wall-clock axis, for
 * chrome://tracing or ui.perfetto.dev.  Given a job id, the store is the
 * one of the job's file (asked of the coordinator), read where the command
 * runs: on a node or a machine that mounts the shared store, or from S3
 * (a store s3://…: its trace/ objects copied down; --out may be s3:// too). */
#include <ctype.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "rt_file.h"
#include "rt_json.h"
#include "rt_schemas.h"

#define TRACE_FILE_MAX ((size_t)1 << 30)

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* The store of job id (a training job's [output] store), into store; 0, or
 * the exit status with the reason printed. */
static int job_store(const cli_args *a, const char *id, char *store, size_t len)
{
    cli_conn c;
    char err[RT_ERR_LEN], path[64];
    if (cli_conn_load(&c, a, err) != RT_OK) {
        fprintf(stderr, "ringtrain trace: %s\n", err);
        return 1;
    }
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    http_resp r;
    if (http_request(&c, "GET", path, NULL, &r, err) != RT_OK) {
        fprintf(stderr, "ringtrain trace: %s\n", err);
        return 1;
    }
    rt_json *doc = NULL, *spec = NULL;
    int rc = 0;
    if (r.status != 200) {
        char buf[RT_ERR_LEN];
        fprintf(stderr, "ringtrain trace: %s\n", http_error_text(&r, buf, sizeof buf));
        rc = r.status == 404 ? 3 : 1;
    }
    const char *spec_text = NULL;
    if (rc == 0 && rt_json_parse(r.body, r.len, &doc, err) == RT_OK)
        spec_text = rt_json_get_str(rt_json_get(doc, "job"), "spec");
    const char *config = NULL;
    if (rc == 0 && spec_text && rt_json_parse(spec_text, strlen(spec_text), &spec, err) == RT_OK)
        config = rt_json_get_str(spec, "config");
    if (rc == 0 && !config) {
        fprintf(stderr, "ringtrain trace: job %s is no training job: it has no timeline\n", id);
        rc = 3;
    }
    if (rc == 0) {
        rt_job_cfg cfg;
        rt_cfg_errors e = {0};
        char name[64];
        snprintf(name, sizeof name, "job %s", id);
        if (rt_cfg_load_string(&rt_job_schema, config, strlen(config), name, NULL, &cfg, &e) !=
                RT_OK ||
            !cfg.store || !*cfg.store) {
            fprintf(stderr, "ringtrain trace: job %s's file names no store\n", id);
            rc = 1;
        } else {
            snprintf(store, len, "%s", cfg.store);
        }
        rt_cfg_errors_free(&e);
        rt_cfg_free(&rt_job_schema, &cfg);
    }
    rt_json_free(spec);
    rt_json_free(doc);
    free(r.body);
    return rc;
}

static void say_no_timelines(const char *store)
{
    fprintf(stderr,
            "ringtrain trace: no %s/trace/rank-*.json: was the job run with [train] trace = "
            "true?\n",
            store);
}

/* The timelines in dir (STORE/trace, or its copy from S3) into the file
 * out; store and shown (out, or the URI it goes to) name them in messages. */
static int merge(const char *dir, const char *store, int64_t only, const char *out,
                 const char *shown)
{
    char pattern[1200];
    snprintf(pattern, sizeof pattern, "%s/rank-*.json", dir);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        say_no_timelines(store);
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
            fprintf(stderr, "ringtrain trace: %s/trace%s: %s\n", store, strrchr(g.gl_pathv[i], '/'),
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
                   shown, (long long)events, used, used == 1 ? "" : "s");
        }
    }
    free(text);
    for (size_t i = 0; docs && i < g.gl_pathc; i++)
        rt_json_free(docs[i]);
    free(docs);
    globfree(&g);
    return rc;
}

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
    char job_dir[4096];
    struct stat sb;
    if (all_digits(store) && stat(store, &sb) != 0) { /* a job id */
        int rc = job_store(a, store, job_dir, sizeof job_dir);
        if (rc != 0)
            return rc;
        if (!rt_s3_is_uri(job_dir) && (stat(job_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
            fprintf(stderr,
                    "ringtrain trace: job %s's store %s is not reachable from here: run "
                    "this where the store is mounted\n",
                    store, job_dir);
            return 3;
        }
        store = job_dir;
    }
    /* a store in S3: its trace/ copied down; an --out in S3: written here, put up */
    cli_s3 c3 = {0};
    char dir[1200], local_out[1200], uri[RT_S3_URI_MAX], err[RT_ERR_LEN];
    rt_status st = RT_OK;
    snprintf(dir, sizeof dir, "%s/trace", store);
    if (rt_s3_is_uri(store))
        st = rt_s3_uri_join(uri, sizeof uri, store, "trace/")
                 ? cli_s3_fetch(&c3, uri, false, dir, sizeof dir, err)
                 : rt_err(err, RT_ERR_INVALID, "%s: too long a URI", store);
    snprintf(local_out, sizeof local_out, "%s", out);
    if (st == RT_OK && rt_s3_is_uri(out))
        st = cli_s3_out_file(&c3, out, local_out, sizeof local_out, err);
    int rc = st == RT_ERR_NOTFOUND ? 3 : st != RT_OK ? 1 : merge(dir, store, only, local_out, out);
    if (st == RT_ERR_NOTFOUND)
        say_no_timelines(store);
    else if (st != RT_OK)
        fprintf(stderr, "ringtrain trace: %s\n", err);
    if (rc == 0 && rt_s3_is_uri(out) && cli_s3_put(&c3, local_out, out, err) != RT_OK) {
        fprintf(stderr, "ringtrain trace: %s\n", err);
        rc = 1;
    }
    cli_s3_done(&c3);
    return rc;
}
