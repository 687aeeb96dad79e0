/* rt_sweep.c — a sweep's search space: parsed, checked through the job
 * schema, sampled (see rt_sweep.h). */
#include "rt_sweep.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const KIND_NAME[] = {"uniform", "loguniform", "int", "choice"};

/* ---- parsing ---------------------------------------------------------------- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* "kind(args)" into d; false with the reason */
static bool parse_dist(const char *text, rt_sweep_dim *d, char *why, size_t len)
{
    char buf[4096];
    if (strlen(text) >= sizeof buf) {
        snprintf(why, len, "longer than %zu bytes", sizeof buf - 1);
        return false;
    }
    snprintf(buf, sizeof buf, "%s", text);
    char *s = trim(buf), *open = strchr(s, '(');
    size_t n = strlen(s);
    if (!open || n < 2 || s[n - 1] != ')') {
        snprintf(why, len,
                 "expected uniform(lo, hi), loguniform(lo, hi), int(lo, hi) or "
                 "choice(a | b | ...), got '%s'",
                 s);
        return false;
    }
    s[n - 1] = '\0';
    *open = '\0';
    char *name = trim(s), *args = open + 1;
    d->kind = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(name, KIND_NAME[k]))
            d->kind = k;
    if (d->kind < 0) {
        snprintf(why, len, "unknown distribution '%s' (uniform, loguniform, int or choice)", name);
        return false;
    }
    if (d->kind == RT_SP_CHOICE) {
        for (char *save = NULL, *t = strtok_r(args, "|", &save); t;
             t = strtok_r(NULL, "|", &save)) {
            char *v = trim(t);
            if (!*v || strlen(v) >= RT_SWEEP_VALUE_MAX || d->nchoices == RT_SWEEP_MAX_CHOICES) {
                snprintf(why, len,
                         !*v ? "an empty choice (values are separated by '|')"
                         : *v && strlen(v) >= RT_SWEEP_VALUE_MAX ? "a choice longer than 255 bytes"
                                                                 : "more than 64 choices");
                return false;
            }
            char **c = realloc(d->choices, (size_t)(d->nchoices + 1) * sizeof *c);
            if (!c || !(c[d->nchoices] = strdup(v))) {
                if (c)
                    d->choices = c;
                snprintf(why, len, "out of memory");
                return false;
            }
            d->choices = c;
            d->nchoices++;
        }
        if (d->nchoices == 0) {
            snprintf(why, len, "choice() needs at least one value");
            return false;
        }
        return true;
    }
    char *comma = strchr(args, ',');
    char e[RT_ERR_LEN];
    if (!comma || strchr(comma + 1, ',')) {
        snprintf(why, len, "%s takes two numbers: %s(lo, hi)", name, name);
        return false;
    }
    *comma = '\0';
    if (rt_parse_double(trim(args), &d->lo, e) != RT_OK ||
        rt_parse_double(trim(comma + 1), &d->hi, e) != RT_OK) {
        snprintf(why, len, "%s(lo, hi): lo and hi must be numbers", name);
        return false;
    }
    if (d->lo >= d->hi) {
        snprintf(why, len, "%s(%g, %g): lo must be below hi", name, d->lo, d->hi);
        return false;
    }
    if (d->kind == RT_SP_LOGUNIFORM && d->lo <= 0) {
        snprintf(why, len, "loguniform(%g, %g): a log range must lie above 0", d->lo, d->hi);
        return false;
    }
    if (d->kind == RT_SP_INT && (d->lo != floor(d->lo) || d->hi != floor(d->hi))) {
        snprintf(why, len, "int(%g, %g): the bounds must be integers", d->lo, d->hi);
        return false;
    }
    return true;
}

void rt_sweep_space_free(rt_sweep_space *sp)
{
    for (int i = 0; i < sp->n; i++) {
        for (int c = 0; c < sp->d[i].nchoices; c++)
            free(sp->d[i].choices[c]);
        free(sp->d[i].choices);
    }
    free(sp->d);
    memset(sp, 0, sizeof *sp);
}

/* "file:line" of space.KEY set on line (or "--set sweep.space.KEY", or the
 * default space) */
static const char *entry_where(const rt_cfg_origin *o, const rt_job_cfg *c, int line,
                               const char *key, const char *when, char *buf, size_t len)
{
    if (line == RT_CFG_LINE_SET)
        snprintf(buf, len, "--set sweep.space.%s", key);
    else if (line == RT_SWEEP_LINE_DEFAULT) {
        char *arch = when[0] ? NULL : rt_cfg_value_text(&rt_job_schema, c, "model", "architecture");
        snprintf(buf, len, "%s: %s's default space (%s; docs/sweeps.md)", o->fname,
                 when[0] ? when
                 : arch  ? arch
                         : "the family",
                 when[0] ? "its trials of that architecture" : "no space.* line");
        free(arch);
    } else if (line > 0)
        snprintf(buf, len, "%s:%d", o->fname, line);
    else
        snprintf(buf, len, "%s", o->fname);
    return buf;
}

/* One space.* entry: SECTION.KEY, its distribution's text, its line, the
 * architecture it is searched for ("": every trial's) */
typedef struct sp_entry {
    const char *key, *dist;
    int line;
    const char *when;
} sp_entry;

/* Entry e parsed and checked into sp's next dimension; RT_ERR_INVALID with
 * the reason (naming its line, or the default space) in errs */
static rt_status add_dim(const rt_job_cfg *c, const rt_cfg_origin *o, rt_sweep_space *sp,
                         const sp_entry *e, rt_cfg_errors *errs)
{
    if (sp->n == RT_SWEEP_MAX_DIMS) {
        rt_cfg_errors_add(errs, "%s: [sweep]: more than %d keys searched", o->fname,
                          RT_SWEEP_MAX_DIMS);
        return RT_ERR_INVALID;
    }
    rt_sweep_dim *d = &sp->d[sp->n++];
    char at[600], why[512] = "";
    const char *key = e->key;
    snprintf(d->key, sizeof d->key, "%s", key);
    snprintf(d->when, sizeof d->when, "%s", e->when);
    d->line = e->line;
    if (!strcmp(key, "model.architecture"))
        sp->arch = sp->n - 1;
    char sec[64] = "";
    const char *dot = strchr(key, '.');
    const rt_cfg_key *k = NULL;
    if (dot && (size_t)(dot - key) < sizeof sec) {
        snprintf(sec, sizeof sec, "%.*s", (int)(dot - key), key);
        k = rt_cfg_find(&rt_job_schema, sec, dot + 1);
    }
    if (!k || k->type == RT_CFG_MAP)
        snprintf(why, sizeof why, "no job key %s (space.SECTION.KEY: space.train.learning_rate)",
                 key);
    else if (!strcmp(sec, "job") || !strcmp(sec, "sweep"))
        snprintf(why, sizeof why, "[%s] keys are the sweep's own, not searched", sec);
    else if (!strcmp(key, "output.store"))
        snprintf(why, sizeof why, "each trial's store is STORE/trial-N");
    else if (parse_dist(e->dist, d, why, sizeof why)) {
        d->integer = k->type == RT_CFG_INT;
        /* a list key takes one number as its one item (dropout = 0.2) */
        bool number = k->type == RT_CFG_INT || k->type == RT_CFG_FLOAT || k->type == RT_CFG_LIST;
        if (d->kind != RT_SP_CHOICE && !number)
            snprintf(why, sizeof why, "%s is not a number: search it with choice(a | b)", key);
        else if (d->kind == RT_SP_UNIFORM && d->integer)
            snprintf(why, sizeof why, "%s is an integer: int(lo, hi) or loguniform(lo, hi)", key);
    }
    if (!why[0])
        return RT_OK;
    rt_cfg_errors_add(errs, "%s: [sweep] space.%s: %s",
                      entry_where(o, c, e->line, key, e->when, at, sizeof at), key, why);
    return RT_ERR_INVALID;
}

/* The default space of architecture `when` (of c's where "") into sp */
static rt_status add_default(const rt_job_cfg *c, const rt_cfg_origin *o, const char *when,
                             rt_sweep_space *sp, rt_cfg_errors *errs)
{
    rt_job_cfg f = *c; /* shallow: read only */
    if (when[0])
        f.architecture = rt_cfg_enum_value(&rt_job_schema, "model", "architecture", when);
    rt_sweep_default d[RT_SWEEP_MAX_DIMS];
    const int k = rt_sweep_default_space(&f, d, RT_SWEEP_MAX_DIMS);
    rt_status st = RT_OK;
    for (int i = 0; i < k; i++) {
        const sp_entry e = {d[i].key, d[i].dist, RT_SWEEP_LINE_DEFAULT, when};
        if (add_dim(c, o, sp, &e, errs) != RT_OK)
            st = RT_ERR_INVALID;
    }
    return st;
}

/* The file's space.* entries; where it has none, or model.architecture's
 * alone (not a grid), the default space — with a choice of architectures,
 * each one's for its trials. */
rt_status rt_sweep_space_parse(const rt_job_cfg *c, const rt_cfg_origin *o, rt_sweep_space *sp,
                               rt_cfg_errors *errs)
{
    memset(sp, 0, sizeof *sp);
    sp->arch = -1;
    const rt_cfgmap *m = &c->space;
    if (m->n > RT_SWEEP_MAX_DIMS) {
        rt_cfg_errors_add(errs, "%s: [sweep]: %zu space.* keys, more than %d", o->fname, m->n,
                          RT_SWEEP_MAX_DIMS);
        return RT_ERR_INVALID;
    }
    if (!(sp->d = calloc(RT_SWEEP_MAX_DIMS, sizeof *sp->d))) {
        rt_cfg_errors_add(errs, "%s: out of memory", o->fname);
        return RT_ERR_NOMEM;
    }
    rt_status st = RT_OK;
    for (size_t i = 0; i < m->n; i++) {
        const sp_entry e = {m->names[i] + strlen("space."), m->values[i], m->lines[i], ""};
        if (add_dim(c, o, sp, &e, errs) != RT_OK)
            st = RT_ERR_INVALID;
    }
    const rt_sweep_dim *a = sp->arch >= 0 ? &sp->d[sp->arch] : NULL;
    if (rt_sweep_uses_default(c) && m->n == 0)
        st = add_default(c, o, "", sp, errs);
    else if (rt_sweep_uses_default(c) && st == RT_OK && a && a->kind == RT_SP_CHOICE)
        for (int k = 0; k < a->nchoices; k++) { /* each family once, its space for its trials */
            bool again = false;
            for (int j = 0; j < k; j++)
                again |= !strcmp(a->choices[j], a->choices[k]);
            if (!again &&
                rt_cfg_enum_value(&rt_job_schema, "model", "architecture", a->choices[k]) >= 0 &&
                add_default(c, o, a->choices[k], sp, errs) != RT_OK)
                st = RT_ERR_INVALID;
        }
    if (st != RT_OK)
        rt_sweep_space_free(sp);
    return st;
}

/* ---- sampling ----------------------------------------------------------------- */

static int64_t grid_size(const rt_sweep_space *sp)
{
    int64_t n = 1;
    for (int i = 0; i < sp->n && n <= 1000000; i++)
        n *= sp->d[i].kind == RT_SP_CHOICE ? sp->d[i].nchoices : 1;
    return n;
}

int64_t rt_sweep_trials(const rt_job_cfg *c, const rt_sweep_space *sp)
{
    if (c->sweep_scheduler == RT_SWEEP_GRID && c->sweep_trials == 0)
        return grid_size(sp);
    return c->sweep_trials;
}

/* within [lo, hi] after the rounding */
void rt_sweep_number_text(const rt_sweep_dim *d, double x, char out[RT_SWEEP_VALUE_MAX])
{
    if (d->integer || d->kind == RT_SP_INT) {
        double r = nearbyint(x);
        r = r < ceil(d->lo) ? ceil(d->lo) : r > floor(d->hi) ? floor(d->hi) : r;
        snprintf(out, RT_SWEEP_VALUE_MAX, "%.0f", r);
        return;
    }
    snprintf(out, RT_SWEEP_VALUE_MAX, "%.4g", x);
    double back = strtod(out, NULL);
    if (back < d->lo)
        snprintf(out, RT_SWEEP_VALUE_MAX, "%.17g", d->lo);
    else if (back > d->hi)
        snprintf(out, RT_SWEEP_VALUE_MAX, "%.17g", d->hi);
}

void rt_sweep_sample(const rt_job_cfg *c, const rt_sweep_space *sp, int64_t t,
                     char (*vals)[RT_SWEEP_VALUE_MAX])
{
    rt_sweep_sample_all(c, sp, t, vals);
    rt_sweep_blank_inactive(sp, vals);
}

void rt_sweep_sample_all(const rt_job_cfg *c, const rt_sweep_space *sp, int64_t t,
                         char (*vals)[RT_SWEEP_VALUE_MAX])
{
    int64_t rest = t; /* grid: the last key varies fastest */
    for (int i = sp->n - 1; i >= 0; i--) {
        const rt_sweep_dim *d = &sp->d[i];
        if (c->sweep_baseline && t == 0 && c->sweep_scheduler != RT_SWEEP_GRID) {
            char sec[64];
            const char *dot = strchr(d->key, '.');
            snprintf(sec, sizeof sec, "%.*s", dot ? (int)(dot - d->key) : 0, d->key);
            char *v = dot ? rt_cfg_value_text(&rt_job_schema, c, sec, dot + 1) : NULL;
            snprintf(vals[i], RT_SWEEP_VALUE_MAX, "%s", v ? v : "");
            free(v);
            continue;
        }
        if (c->sweep_scheduler == RT_SWEEP_GRID) {
            int64_t n = d->kind == RT_SP_CHOICE ? d->nchoices : 1;
            snprintf(vals[i], RT_SWEEP_VALUE_MAX, "%s", d->choices ? d->choices[rest % n] : "");
            rest /= n;
            continue;
        }
        /* a function of (seed, trial, key) only */
        uint64_t h =
            rt_hash_u64(rt_hash_u64((uint64_t)c->sweep_seed) ^ (uint64_t)t) ^ rt_hash_str(d->key);
        double u = (double)(rt_hash_u64(h) >> 11) * 0x1.0p-53;
        switch (d->kind) {
        case RT_SP_UNIFORM:
            rt_sweep_number_text(d, d->lo + u * (d->hi - d->lo), vals[i]);
            break;
        case RT_SP_LOGUNIFORM:
            rt_sweep_number_text(d, exp(log(d->lo) + u * (log(d->hi) - log(d->lo))), vals[i]);
            break;
        case RT_SP_INT:
            rt_sweep_number_text(d, d->lo + floor(u * (d->hi - d->lo + 1)), vals[i]);
            break;
        default:
            snprintf(vals[i], RT_SWEEP_VALUE_MAX, "%s", d->choices[(int)(u * d->nchoices)]);
        }
    }
}

bool rt_sweep_dim_active(const rt_sweep_space *sp, int i, char (*vals)[RT_SWEEP_VALUE_MAX])
{
    const rt_sweep_dim *d = &sp->d[i];
    return !d->when[0] || (sp->arch >= 0 && !strcmp(vals[sp->arch], d->when));
}

void rt_sweep_blank_inactive(const rt_sweep_space *sp, char (*vals)[RT_SWEEP_VALUE_MAX])
{
    for (int i = 0; i < sp->n; i++)
        if (!rt_sweep_dim_active(sp, i, vals))
            vals[i][0] = '\0';
}

void rt_sweep_dim_text(const rt_sweep_dim *d, char *out, size_t len)
{
    if (d->kind != RT_SP_CHOICE) {
        snprintf(out, len, "%s(%.6g, %.6g)", KIND_NAME[d->kind], d->lo, d->hi);
        return;
    }
    size_t n = (size_t)snprintf(out, len, "choice(");
    for (int c = 0; c < d->nchoices && n < len; c++)
        n += (size_t)snprintf(out + n, len - n, "%s%s", c ? " | " : "", d->choices[c]);
    if (n < len)
        snprintf(out + n, len - n, ")");
}

/* ---- trials ------------------------------------------------------------------- */

/* the sweep's configuration as a training job's text: its own keys left as
 * they are, the space empty (a shallow copy: printed, never freed) */
static char *train_text(const rt_job_cfg *c)
{
    rt_job_cfg t = *c;
    t.type = RT_JOB_TRAIN;
    t.predict_validation = t.predict_validation || c->sweep_ensemble; /* what it is fitted on */
    memset(&t.space, 0, sizeof t.space);
    return rt_cfg_print_string(&rt_job_schema, &t);
}

/* set "section.key" = value; false with the message added */
static bool set_one(rt_job_cfg *j, const char *key, const char *value, rt_cfg_errors *errs)
{
    return rt_cfg_set(&rt_job_schema, j, key, value, errs) == RT_OK;
}

char *rt_sweep_trial_text(const rt_job_cfg *c, const rt_sweep_space *sp,
                          char (*vals)[RT_SWEEP_VALUE_MAX], int64_t t, rt_cfg_errors *errs)
{
    char *base = train_text(c);
    if (!base) {
        rt_cfg_errors_add(errs, "out of memory");
        return NULL;
    }
    rt_job_cfg j;
    rt_status st =
        rt_cfg_load_string(&rt_job_schema, base, strlen(base), "the sweep", NULL, &j, errs);
    free(base);
    char store[4200];
    snprintf(store, sizeof store, "%s/trial-%lld", c->store ? c->store : ".", (long long)t + 1);
    for (int i = 0; st == RT_OK && i < sp->n; i++)
        if (vals[i][0] && !set_one(&j, sp->d[i].key, vals[i], errs))
            st = RT_ERR_INVALID;
    if (st == RT_OK && !set_one(&j, "output.store", store, errs))
        st = RT_ERR_INVALID;
    char name[160];
    snprintf(name, sizeof name, "%s-trial-%lld", c->name ? c->name : "sweep", (long long)t + 1);
    if (st == RT_OK && !set_one(&j, "job.name", name, errs))
        st = RT_ERR_INVALID;
    rt_cfg_origin o = {"the trial", NULL};
    if (st == RT_OK)
        st = rt_cfg_validate(&rt_job_schema, &j, &o, errs);
    char *text = st == RT_OK ? rt_cfg_print_string(&rt_job_schema, &j) : NULL;
    rt_cfg_free(&rt_job_schema, &j);
    return text;
}

/* ---- checks ------------------------------------------------------------------- */

/* one value of dimension i through the schema, the other keys the sweep's */
static bool value_fits(const rt_job_cfg *c, const rt_sweep_space *sp, int i, const char *v,
                       char *why, size_t len)
{
    char(*vals)[RT_SWEEP_VALUE_MAX] = calloc((size_t)sp->n, sizeof *vals);
    if (!vals) {
        snprintf(why, len, "out of memory");
        return false;
    }
    snprintf(vals[i], sizeof vals[i], "%s", v);
    if (sp->d[i].when[0] && sp->arch >= 0) /* in a trial of its architecture */
        snprintf(vals[sp->arch], sizeof vals[sp->arch], "%s", sp->d[i].when);
    rt_cfg_errors e = {0};
    char *text = rt_sweep_trial_text(c, sp, vals, 0, &e);
    free(vals);
    if (!text) {
        rt_cfg_errors_join(&e, why, len);
        /* "command line: [model] dropout: ..." or "the trial: [model] ..." -> "[model] ..." */
        const char *p = strstr(why, ": [");
        if ((!strncmp(why, "command line", 12) || !strncmp(why, "the trial", 9)) && p)
            memmove(why, p + 2, strlen(p + 2) + 1);
    }
    rt_cfg_errors_free(&e);
    free(text);
    return text != NULL;
}

rt_status rt_sweep_validate(const rt_job_cfg *c, const rt_cfg_origin *o, rt_cfg_errors *errs)
{
    rt_sweep_space sp;
    char at[600];
    if (rt_sweep_space_parse(c, o, &sp, errs) != RT_OK)
        return RT_ERR_INVALID;
    rt_status st = RT_OK;
    const char *where = rt_cfg_where(&rt_job_schema, o, "sweep", "trials", at, sizeof at);
    if (sp.n == 0) { /* a grid (asha and random have a default space) */
        rt_cfg_errors_add(errs,
                          "%s: [sweep]: no space.SECTION.KEY line: a grid tries every "
                          "combination of the choice() keys it is given (space.train.batch_size "
                          "= choice(64 | 128)); asha and random search the family's default "
                          "space without one",
                          o->fname);
        st = RT_ERR_INVALID;
    }
    if (c->sweep_scheduler == RT_SWEEP_GRID) {
        for (int i = 0; i < sp.n; i++)
            if (sp.d[i].kind != RT_SP_CHOICE) {
                rt_cfg_errors_add(
                    errs,
                    "%s: [sweep] space.%s: a grid takes choice(a | b) keys "
                    "only (or scheduler = random)",
                    entry_where(o, c, sp.d[i].line, sp.d[i].key, sp.d[i].when, at, sizeof at),
                    sp.d[i].key);
                st = RT_ERR_INVALID;
            }
        int64_t g = grid_size(&sp);
        if (st == RT_OK && (g > 2000 || (c->sweep_trials > 0 && c->sweep_trials != g))) {
            rt_cfg_errors_add(errs, "%s: [sweep] trials: the grid has %lld combinations%s", where,
                              (long long)g, g > 2000 ? ", more than 2000" : "; leave trials out");
            st = RT_ERR_INVALID;
        }
        if (c->sweep_search == RT_SEARCH_TPE) {
            rt_cfg_errors_add(errs,
                              "%s: [sweep] search: tpe draws each trial's values, a grid "
                              "enumerates them (search = tpe is for asha and random)",
                              rt_cfg_where(&rt_job_schema, o, "sweep", "search", at, sizeof at));
            st = RT_ERR_INVALID;
        }
        if (c->sweep_baseline) {
            rt_cfg_errors_add(errs,
                              "%s: [sweep] baseline: a grid tries every combination "
                              "already (baseline is for asha and random)",
                              rt_cfg_where(&rt_job_schema, o, "sweep", "baseline", at, sizeof at));
            st = RT_ERR_INVALID;
        }
    } else if (c->sweep_trials == 0) {
        rt_cfg_errors_add(errs,
                          "%s: [sweep] trials: how many configurations to train (trials = "
                          "24); only a grid counts its own",
                          where);
        st = RT_ERR_INVALID;
    }
    int64_t rungs[64];
    if (c->sweep_scheduler == RT_SWEEP_ASHA && rt_sweep_rungs(c, rungs, 64) == 0) {
        rt_cfg_errors_add(errs,
                          "%s: [sweep] grace_epochs: %lld%s is not below [train] epochs "
                          "(%lld): ASHA would stop no trial (fewer grace_epochs, or "
                          "scheduler = random)",
                          rt_cfg_where(&rt_job_schema, o, "sweep", "grace_epochs", at, sizeof at),
                          (long long)rt_sweep_grace(c), c->grace_epochs ? "" : " (0: derived)",
                          (long long)c->epochs);
        st = RT_ERR_INVALID;
    }
    /* every bound and choice through the schema, alone with the sweep's keys */
    for (int i = 0; st == RT_OK && i < sp.n; i++) {
        const rt_sweep_dim *d = &sp.d[i];
        int n = d->kind == RT_SP_CHOICE ? d->nchoices : 2;
        for (int k = 0; k < n; k++) {
            char v[RT_SWEEP_VALUE_MAX], why[RT_ERR_LEN];
            if (d->kind == RT_SP_CHOICE)
                snprintf(v, sizeof v, "%s", d->choices[k]);
            else
                snprintf(v, sizeof v, "%.17g", k == 0 ? d->lo : d->hi);
            if (!value_fits(c, &sp, i, v, why, sizeof why)) {
                rt_cfg_errors_add(errs, "%s: [sweep] space.%s: %s %s: %s",
                                  entry_where(o, c, d->line, d->key, d->when, at, sizeof at),
                                  d->key,
                                  d->kind == RT_SP_CHOICE ? "the choice"
                                  : k == 0                ? "the lower bound"
                                                          : "the upper bound",
                                  v, why);
                st = RT_ERR_INVALID;
                break;
            }
        }
    }
    rt_sweep_space_free(&sp);
    return st;
}

int64_t rt_sweep_grace(const rt_job_cfg *c)
{
    if (c->grace_epochs > 0)
        return c->grace_epochs;
    const double r = (double)c->reduction, g = nearbyint((double)c->epochs / (r * r * r));
    return g < 1 ? 1 : (int64_t)g;
}

int rt_sweep_rungs(const rt_job_cfg *c, int64_t *out, int max)
{
    int n = 0;
    for (double e = (double)rt_sweep_grace(c); e < (double)c->epochs && n < max;
         e *= (double)c->reduction)
        out[n++] = (int64_t)e;
    return n;
}

bool rt_job_monitor_max(const rt_job_cfg *c)
{
    if (c->monitor_mode != RT_MON_AUTO)
        return c->monitor_mode == RT_MON_MAX;
    static const char *const higher[] = {RT_CLS_METRIC_LIST(RT_METRIC_HIGHER_NAME, )
                                             RT_REG_METRIC_LIST(RT_METRIC_HIGHER_NAME, )};
    const char *m = c->monitor ? c->monitor : "";
    if (strncmp(m, "val_", 4) != 0)
        return false;
    for (size_t i = 0; i < sizeof higher / sizeof *higher; i++)
        if (higher[i] && !strcmp(higher[i], m + 4))
            return true;
    return false;
}
