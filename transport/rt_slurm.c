/* rt_slurm.c — a Slurm job step's layout from its environment (issue 31's
 * first piece; see rt_slurm.h): which task this is, where the others run,
 * with Horovod's rank / local_rank / cross_rank, and the node list
 * expanded as `scontrol show hostnames` does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_slurm.h"

#define MAX_HOSTS 65536

typedef struct hl {
    char **v;
    int n, cap;
} hl;

static rt_status hl_add(hl *h, const char *name, char *err)
{
    if (h->n == MAX_HOSTS)
        return rt_err(err, RT_ERR_INVALID, "the node list names more than %d hosts", MAX_HOSTS);
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 16;
        char **v = realloc(h->v, (size_t)cap * sizeof *v);
        if (!v)
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        h->v = v;
        h->cap = cap;
    }
    if (!(h->v[h->n] = strdup(name)))
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    h->n++;
    return RT_OK;
}

/* One name with bracket groups ("rack[1-2]-n[01-03]"): prefix + each value
 * of the first group + the expansion of the rest (Slurm's order). */
static rt_status expand(const char *name, const char *spec, hl *out, char *err)
{
    const char *open = strchr(name, '[');
    if (!open)
        return hl_add(out, name, err);
    const char *close = strchr(open, ']');
    if (!close || close == open + 1)
        return rt_err(err, RT_ERR_INVALID, "node list '%s': an empty or unclosed [...] group",
                      spec);
    const size_t plen = (size_t)(open - name);
    const char *p = open + 1;
    while (p < close) {
        const char *comma = memchr(p, ',', (size_t)(close - p));
        const char *end = comma ? comma : close;
        char lo_s[24], hi_s[24];
        const char *dash = memchr(p, '-', (size_t)(end - p));
        size_t lo_len = (size_t)((dash ? dash : end) - p);
        size_t hi_len = dash ? (size_t)(end - dash - 1) : lo_len;
        if (lo_len == 0 || lo_len >= sizeof lo_s || hi_len == 0 || hi_len >= sizeof hi_s)
            return rt_err(err, RT_ERR_INVALID, "node list '%s': a bad range in [...]", spec);
        memcpy(lo_s, p, lo_len);
        lo_s[lo_len] = '\0';
        memcpy(hi_s, dash ? dash + 1 : p, hi_len);
        hi_s[hi_len] = '\0';
        if (strspn(lo_s, "0123456789") != lo_len || strspn(hi_s, "0123456789") != hi_len)
            return rt_err(err, RT_ERR_INVALID, "node list '%s': '%s' is not a number range", spec,
                          lo_s);
        unsigned long lo = strtoul(lo_s, NULL, 10), hi = strtoul(hi_s, NULL, 10);
        if (hi < lo || hi - lo >= MAX_HOSTS)
            return rt_err(err, RT_ERR_INVALID,
                          "node list '%s': the range %s-%s is backwards or "
                          "too long",
                          spec, lo_s, hi_s);
        const int width = lo_s[0] == '0' && lo_len > 1 ? (int)lo_len : 0; /* zero-padded */
        for (unsigned long k = lo; k <= hi; k++) {
            char head[512];
            int n =
                snprintf(head, sizeof head, "%.*s%0*lu%s", (int)plen, name, width, k, close + 1);
            if (n < 0 || (size_t)n >= sizeof head)
                return rt_err(err, RT_ERR_INVALID, "node list '%s': a name too long", spec);
            rt_status st = expand(head, spec, out, err);
            if (st != RT_OK)
                return st;
        }
        p = end + 1;
    }
    return RT_OK;
}

rt_status rt_slurm_hostlist(const char *spec, char ***names, int *n, char *err)
{
    *names = NULL;
    *n = 0;
    hl out = {0};
    rt_status st = RT_OK;
    const char *p = spec ? spec : "";
    while (st == RT_OK && *p) {
        /* the next name: up to a comma outside brackets */
        size_t len = 0;
        int depth = 0;
        while (p[len] && !(p[len] == ',' && depth == 0)) {
            depth += p[len] == '[' ? 1 : p[len] == ']' ? -1 : 0;
            len++;
        }
        char name[512];
        if (len == 0 || len >= sizeof name || depth != 0)
            st = rt_err(err, RT_ERR_INVALID, "node list '%s': %s", spec,
                        depth ? "unbalanced brackets" : "an empty or too long name");
        else {
            memcpy(name, p, len);
            name[len] = '\0';
            st = expand(name, spec, &out, err);
        }
        p += len + (p[len] == ',');
    }
    if (st == RT_OK && out.n == 0)
        st = rt_err(err, RT_ERR_INVALID, "the node list is empty");
    if (st != RT_OK) {
        rt_slurm_hostlist_free(out.v, out.n);
        return st;
    }
    *names = out.v;
    *n = out.n;
    return RT_OK;
}

void rt_slurm_hostlist_free(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* SLURM_TASKS_PER_NODE's "2(x3),1": tasks on each node, into per[nnodes]. */
static rt_status tasks_per_node(const char *spec, int *per, int nnodes, char *err)
{
    int node = 0;
    const char *p = spec;
    while (*p && node < nnodes) {
        char *end;
        long t = strtol(p, &end, 10), rep = 1;
        if (end == p || t < 0)
            break;
        if (*end == '(') {
            if (end[1] != 'x' || (rep = strtol(end + 2, &end, 10)) < 1 || *end != ')')
                break;
            end++;
        }
        if (rep > nnodes - node) { /* more nodes than the list has */
            node = -1;
            break;
        }
        for (long k = 0; k < rep; k++)
            per[node++] = (int)t;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            break;
    }
    if (node != nnodes || *p)
        return rt_err(err, RT_ERR_INVALID,
                      "SLURM_STEP_TASKS_PER_NODE '%s' does not give tasks for %d nodes", spec,
                      nnodes);
    return RT_OK;
}

static rt_status env_num(const char *name, long lo, long hi, long *out, char *err)
{
    const char *v = getenv(name);
    char *end;
    errno = 0;
    long x = v && *v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi)
        return rt_err(err, RT_ERR_INVALID, "%s is %s%s%s: not a Slurm job step (run under srun)",
                      name, v ? "'" : "unset", v ? v : "", v ? "'" : "");
    *out = x;
    return RT_OK;
}

bool rt_slurm_detected(void)
{
    /* the batch script has SLURM_PROCID 0 and the job's SLURM_NTASKS too, but
     * no step: only srun's tasks have SLURM_STEP_ID */
    return getenv("SLURM_PROCID") && getenv("SLURM_NTASKS") && getenv("SLURM_JOB_ID") &&
           getenv("SLURM_STEP_ID");
}

rt_status rt_slurm_layout(rt_slurm_step *s, char *err)
{
    memset(s, 0, sizeof *s);
    long procid, ntasks, localid, nodeid, jobid, stepid = 0;
    rt_status st = env_num("SLURM_PROCID", 0, 1 << 20, &procid, err);
    if (st == RT_OK)
        st = env_num("SLURM_NTASKS", 1, 1 << 20, &ntasks, err);
    if (st == RT_OK)
        st = env_num("SLURM_LOCALID", 0, 1 << 20, &localid, err);
    if (st == RT_OK)
        st = env_num("SLURM_NODEID", 0, MAX_HOSTS, &nodeid, err);
    if (st == RT_OK)
        st = env_num("SLURM_JOB_ID", 0, 0x7fffffffL, &jobid, err);
    if (st == RT_OK && getenv("SLURM_STEP_ID")) /* the batch script's own step has none */
        st = env_num("SLURM_STEP_ID", 0, 0xffffffffL, &stepid, err);
    if (st != RT_OK)
        return st;
    if (procid >= ntasks)
        return rt_err(err, RT_ERR_INVALID, "SLURM_PROCID %ld is not below SLURM_NTASKS %ld", procid,
                      ntasks);
    const char *list = getenv("SLURM_STEP_NODELIST") ? getenv("SLURM_STEP_NODELIST")
                                                     : getenv("SLURM_JOB_NODELIST");
    const char *tpn = getenv("SLURM_STEP_TASKS_PER_NODE") ? getenv("SLURM_STEP_TASKS_PER_NODE")
                                                          : getenv("SLURM_TASKS_PER_NODE");
    if (!list || !tpn)
        return rt_err(err, RT_ERR_INVALID,
                      "SLURM_STEP_NODELIST or SLURM_STEP_TASKS_PER_NODE "
                      "is unset: not a Slurm job step (run under srun)");
    if ((st = rt_slurm_hostlist(list, &s->hosts, &s->nhosts, err)) != RT_OK)
        return st;
    int *per = calloc((size_t)s->nhosts, sizeof *per);
    if (!per)
        st = rt_err(err, RT_ERR_NOMEM, "out of memory");
    if (st == RT_OK)
        st = tasks_per_node(tpn, per, s->nhosts, err);
    long total = 0;
    for (int i = 0; st == RT_OK && i < s->nhosts; i++)
        total += per[i];
    if (st == RT_OK && total != ntasks)
        st = rt_err(err, RT_ERR_INVALID,
                    "SLURM_STEP_TASKS_PER_NODE '%s' adds up to %ld tasks, "
                    "SLURM_NTASKS is %ld",
                    tpn, total, ntasks);
    if (st == RT_OK && (nodeid >= s->nhosts || localid >= per[nodeid]))
        st = rt_err(err, RT_ERR_INVALID,
                    "SLURM_NODEID %ld / SLURM_LOCALID %ld are outside the "
                    "step's %d nodes and their tasks",
                    nodeid, localid, s->nhosts);
    if (st != RT_OK) {
        free(per);
        rt_slurm_free(s);
        return st;
    }
    s->rank = (int)procid;
    s->size = (int)ntasks;
    s->local_rank = (int)localid;
    s->local_size = per[nodeid];
    s->node = (int)nodeid;
    /* Horovod's cross ranks: the ranks with this local rank, one per node
     * that has it, in node order (block or cyclic distribution alike) */
    s->cross_rank = 0;
    s->cross_size = 0;
    for (int i = 0; i < s->nhosts; i++)
        if (per[i] > localid) {
            if (i < nodeid)
                s->cross_rank++;
            s->cross_size++;
        }
    free(per);
    s->job_id = jobid;
    s->step_id = stepid;
    /* the rendezvous port on the first host, from the job and step: two
     * steps running at once differ unless 20000 steps apart */
    s->port = 20000 + (int)(((unsigned long)jobid * 131 + (unsigned long)stepid) % 20000);
    return RT_OK;
}

void rt_slurm_free(rt_slurm_step *s)
{
    rt_slurm_hostlist_free(s->hosts, s->nhosts);
    s->hosts = NULL;
    s->nhosts = 0;
}
