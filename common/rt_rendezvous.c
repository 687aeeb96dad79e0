/* rt_rendezvous.c — see rt_rendezvous.h. */
#include "rt_rendezvous.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_json.h"
#include "rt_proto.h"

void rt_rendezvous_defaults(rt_rendezvous *r)
{
    memset(r, 0, sizeof *r);
    rt_run_defaults(&r->run);
}

char *rt_rendezvous_format(const rt_rendezvous *r, size_t *len)
{
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kint(&w, RT_F_JOB, r->job);
    rt_jw_kint(&w, RT_F_ATTEMPT, r->attempt);
    rt_jw_kint(&w, RT_F_RANK, r->rank);
    rt_jw_kint(&w, RT_F_SIZE, r->size);
    rt_jw_kint(&w, RT_F_LOCAL_RANK, r->local_rank);
    rt_jw_kint(&w, RT_F_LOCAL_SIZE, r->local_size);
    rt_jw_kint(&w, RT_F_CROSS_RANK, r->cross_rank);
    rt_jw_kint(&w, RT_F_CROSS_SIZE, r->cross_size);
    rt_jw_key(&w, RT_F_PEERS);
    rt_jw_arr(&w);
    for (int i = 0; i < r->size; i++)
        rt_jw_str(&w, r->peers && r->peers[i] ? r->peers[i] : "");
    rt_jw_arr_end(&w);
    rt_jw_kstr(&w, RT_F_KEY, r->key);
    rt_run_write_json(&r->run, &w);
    rt_jw_obj_end(&w);
    return rt_jw_take(&w, len);
}

static bool get_int(const rt_json *o, const char *k, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t v;
    if (!rt_json_get_int(o, k, &v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

rt_status rt_rendezvous_parse(const char *text, size_t len, rt_rendezvous *r, char *err)
{
    rt_rendezvous_defaults(r);
    rt_json *o = NULL;
    rt_status st = rt_json_parse(text, len, &o, err);
    if (st != RT_OK)
        return st;
    int64_t v[8];
    const struct {
        const char *k;
        int64_t lo, hi;
    } ints[] = {{RT_F_JOB, 0, INT64_MAX},      {RT_F_ATTEMPT, 1, INT64_MAX},
                {RT_F_RANK, 0, 1 << 20},       {RT_F_SIZE, 1, 1 << 20},
                {RT_F_LOCAL_RANK, 0, 1 << 20}, {RT_F_LOCAL_SIZE, 1, 1 << 20},
                {RT_F_CROSS_RANK, 0, 1 << 20}, {RT_F_CROSS_SIZE, 1, 1 << 20}};
    for (size_t i = 0; i < 8 && st == RT_OK; i++)
        if (!get_int(o, ints[i].k, ints[i].lo, ints[i].hi, &v[i]))
            st = rt_err(err, RT_ERR_INVALID, "no valid \"%s\"", ints[i].k);
    const rt_json *peers = rt_json_get(o, RT_F_PEERS);
    const char *key = rt_json_get_str(o, RT_F_KEY);
    if (st == RT_OK && (v[2] >= v[3] || (int64_t)rt_json_len(peers) != v[3]))
        st = rt_err(err, RT_ERR_INVALID, "rank %lld and %zu peers for %lld ranks", (long long)v[2],
                    rt_json_len(peers), (long long)v[3]);
    if (st == RT_OK && (!key || strlen(key) != 64))
        st = rt_err(err, RT_ERR_INVALID, "no valid \"%s\"", RT_F_KEY);
    if (st == RT_OK)
        st = rt_run_read_json(o, &r->run, err);
    if (st == RT_OK) {
        r->job = v[0];
        r->attempt = v[1];
        r->rank = (int)v[2];
        r->size = (int)v[3];
        r->local_rank = (int)v[4];
        r->local_size = (int)v[5];
        r->cross_rank = (int)v[6];
        r->cross_size = (int)v[7];
        snprintf(r->key, sizeof r->key, "%s", key);
        r->peers = calloc((size_t)r->size, sizeof *r->peers);
        if (!r->peers)
            st = rt_err(err, RT_ERR_NOMEM, "out of memory");
        for (int i = 0; st == RT_OK && i < r->size; i++)
            if (!(r->peers[i] = strdup(rt_json_str(rt_json_at(peers, (size_t)i), ""))))
                st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    rt_json_free(o);
    return st;
}

void rt_rendezvous_free(rt_rendezvous *r)
{
    for (int i = 0; r->peers && i < r->size; i++)
        free(r->peers[i]);
    free(r->peers);
    r->peers = NULL;
}
