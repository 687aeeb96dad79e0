/* rt_schema_model.c — the cross checks of a job file's [model] section:
 * every family key is taken only by its families (docs/models.md), lists
 * have a length the family can use and values in range, heads divide
 * d_token.  Checks that need the dataset (an embedding width for a column
 * it does not have) or the device (memory) are the trainer's
 * (rt_job_model_spec). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_schemas.h"

/* The family keys of rt_model_keys.h's list */
#define FAM_I(n, def, lo, hi, fam, help) {#n, fam},
#define FAM_F(n, def, lo, hi, fam, help) {#n, fam},
#define FAM_B(n, def, fam, help) {#n, fam},
#define FAM_E(n, type, list, def, fam, help) {#n, fam},

/* Which families take each family key; every other [model] key is common. */
static const struct family_key {
    const char *key;
    unsigned archs;
} FAMILY_KEYS[] = {
    /* clang-format off */
    {"embedding_dim", RT_FAMS_NOT_FT},
    {"embedding_dims", RT_FAMS_NOT_FT},
    {"embedding_rule", RT_FAMS_NOT_FT},
    {"hidden", RT_FAM(ROSSMANN) | RT_FAM(MLP)},
    {"dropout", RT_FAM(ROSSMANN) | RT_FAM(MLP) | RT_FAM(DCN2) | RT_FAM(TABM)},
    {"batch_norm", RT_FAM(MLP)},
    {"activation", RT_FAM(MLP)},
    RT_MODEL_KEYS(FAM_I, FAM_F, FAM_B, FAM_E)
    /* clang-format on */
};

static const char *const ARCH[RT_ARCH_COUNT] = {RT_ARCH_LIST(RT_NAME_STR_COMMA, )};

/* "rossmann, mlp and dcn2" */
static void family_list(unsigned archs, char *buf, size_t len)
{
    size_t n = 0;
    int total = 0, seen = 0;
    for (int a = 0; a < RT_ARCH_COUNT; a++)
        total += (archs >> a) & 1;
    buf[0] = '\0';
    for (int a = 0; a < RT_ARCH_COUNT && n < len; a++) {
        if (!((archs >> a) & 1))
            continue;
        seen++;
        n += (size_t)snprintf(buf + n, len - n, "%s%s",
                              seen == 1 ? "" : seen == total ? " and " : ", ", ARCH[a]);
    }
}

typedef struct vctx {
    const rt_job_cfg *j;
    const rt_cfg_origin *o;
    rt_cfg_errors *errs;
    rt_status st;
} vctx;

/* "FILE:LINE: [model] KEY: what" */
static void bad(vctx *v, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void bad(vctx *v, const char *key, const char *fmt, ...)
{
    char where[512], what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    rt_cfg_where(&rt_job_schema, v->o, "model", key, where, sizeof where);
    rt_cfg_errors_add(v->errs, "%s: [model] %s: %s", where, key, what);
    v->st = RT_ERR_INVALID;
}

/* A family key set for a family that does not take it. */
static void check_families(vctx *v)
{
    const rt_job_cfg *j = v->j;
    for (size_t i = 0; i < sizeof FAMILY_KEYS / sizeof *FAMILY_KEYS; i++) {
        const struct family_key *f = &FAMILY_KEYS[i];
        if ((f->archs >> j->architecture) & 1 || rt_cfg_is_default(&rt_job_schema, j, "model", f->key))
            continue;
        char who[128];
        family_list(f->archs, who, sizeof who);
        const char *hint = "";
        if (j->architecture == RT_ARCH_FT_TRANSFORMER && !strncmp(f->key, "embedding", 9))
            hint = "; ft_transformer embeds every column in a token of d_token";
        else if (j->architecture == RT_ARCH_FT_TRANSFORMER && !strcmp(f->key, "d_embedding"))
            hint = "; ft_transformer's numeric embeddings are its tokens, d_token wide";
        else if (j->architecture == RT_ARCH_RESNET && !strcmp(f->key, "dropout"))
            hint = "; resnet's dropouts are dropout1 and dropout2";
        else if (j->architecture == RT_ARCH_RESNET && !strcmp(f->key, "hidden"))
            hint = "; resnet's layers are blocks of width (and hidden_multiplier)";
        bad(v, f->key, "architecture = %s does not take it (%s %s)%s", ARCH[j->architecture], who,
            (f->archs & (f->archs - 1)) ? "do" : "does", hint);
    }
}

/* The numbers of a list key: n items in [lo, hi] (ints when integral). */
static int parse_numbers(vctx *v, const char *key, const rt_strlist *l, double lo, double hi,
                         bool integral, double *out, int max)
{
    if (l->n == 0 || (int)l->n > max) {
        bad(v, key, "1 to %d values, not %zu", max, l->n);
        return -1;
    }
    for (size_t i = 0; i < l->n; i++) {
        char *end;
        double x = strtod(l->items[i], &end);
        if (*end || end == l->items[i] || !isfinite(x) || x < lo || x > hi ||
            (integral && x != floor(x))) {
            bad(v, key, "'%s' is not %s in [%g, %g]", l->items[i],
                integral ? "an integer" : "a number", lo, hi);
            return -1;
        }
        out[i] = x;
    }
    return (int)l->n;
}

/* One value or `want` of them (the layers the family has). */
static void check_count(vctx *v, const char *key, int got, int want, const char *what)
{
    if (got > 0 && got != 1 && got != want)
        bad(v, key, "%d values for %d %s: give one for all, or one each", got, want, what);
}

static void check_lists(vctx *v)
{
    const rt_job_cfg *j = v->j;
    double x[16];
    const int arch = j->architecture;
    int nh = parse_numbers(v, "hidden", &j->hidden, 1, 65536, true, x, 16);
    int nd = parse_numbers(v, "dropout", &j->dropout, 0, 0.99, false, x, 16);
    if (arch == RT_ARCH_ROSSMANN && nd > 1)
        bad(v, "dropout", "rossmann takes one rate (after its last hidden layer), not %d", nd);
    if (arch == RT_ARCH_MLP && nh > 0)
        check_count(v, "dropout", nd, nh, "hidden layers");
    if (arch == RT_ARCH_DCN2)
        check_count(v, "dropout", nd, (int)j->deep_layers, "deep layers");
    if (arch == RT_ARCH_TABM) {
        check_count(v, "dropout", nd, (int)j->blocks, "blocks");
        if (j->blocks > 16)
            bad(v, "blocks", "tabm takes 1 to 16 blocks, not %lld", (long long)j->blocks);
    }
    if (j->batch_norm.n == 0 || j->batch_norm.n > 16) {
        bad(v, "batch_norm", "1 to 16 values, not %zu", j->batch_norm.n);
    } else {
        for (size_t i = 0; i < j->batch_norm.n; i++) {
            bool b;
            char e[RT_ERR_LEN];
            if (rt_parse_bool(j->batch_norm.items[i], &b, e) != RT_OK)
                bad(v, "batch_norm", "'%s' is not true or false", j->batch_norm.items[i]);
        }
        if (arch == RT_ARCH_MLP && nh > 0)
            check_count(v, "batch_norm", (int)j->batch_norm.n, nh, "hidden layers");
    }
    for (size_t i = 0; i < j->embedding_dims.n; i++) {
        const char *it = j->embedding_dims.items[i], *colon = strrchr(it, ':');
        char *end = NULL;
        long w = colon ? strtol(colon + 1, &end, 10) : 0;
        if (!colon || colon == it || !end || *end || end == colon + 1 || w < 1 || w > 1024) {
            bad(v, "embedding_dims", "'%s' is not COLUMN:WIDTH with a width of 1 to 1024", it);
            continue;
        }
        for (size_t k = 0; k < i; k++) {
            const char *o = j->embedding_dims.items[k], *oc = strrchr(o, ':');
            if (oc && oc - o == colon - it && !strncmp(o, it, (size_t)(colon - it)))
                bad(v, "embedding_dims", "column %.*s is given twice", (int)(colon - it), it);
        }
    }
}

rt_status rt_job_model_validate(const rt_job_cfg *j, const rt_cfg_origin *o, rt_cfg_errors *errs)
{
    vctx v = {j, o, errs, RT_OK};
    check_families(&v);
    check_lists(&v);
    if (j->architecture == RT_ARCH_FT_TRANSFORMER && j->d_token % j->heads != 0)
        bad(&v, "heads", "%lld heads do not divide d_token = %lld (each head takes d_token / "
            "heads columns)", (long long)j->heads, (long long)j->d_token);
    if (j->architecture == RT_ARCH_RESNET && (int64_t)(j->width * j->hidden_multiplier + 1e-6) < 1)
        bad(&v, "hidden_multiplier", "width %lld x %g leaves no inner width",
            (long long)j->width, j->hidden_multiplier);
    if (j->architecture == RT_ARCH_FT_TRANSFORMER &&
        (int64_t)(j->d_token * j->ffn_multiplier + 1e-6) < 1)
        bad(&v, "ffn_multiplier", "d_token %lld x %g leaves no feed-forward width",
            (long long)j->d_token, j->ffn_multiplier);
    return v.st;
}

void rt_job_model_rates(const rt_job_cfg *j, int n, float *dropout, bool *batch_norm)
{
    /* tabm's default is the paper's 0.1, not the Rossmann network's 0.5 */
    const bool tabm_default =
        j->architecture == RT_ARCH_TABM && rt_cfg_is_default(&rt_job_schema, j, "model", "dropout");
    for (int i = 0; i < n; i++) {
        const rt_strlist *d = &j->dropout, *b = &j->batch_norm;
        const char *dt = tabm_default ? "0.1"
                         : d->n == 0  ? "0"
                                      : d->items[d->n == 1          ? 0
                                                 : (size_t)i < d->n ? (size_t)i
                                                                    : d->n - 1];
        const char *bt = b->n == 0 ? "false" : b->items[b->n == 1 ? 0 : (size_t)i < b->n ? (size_t)i : b->n - 1];
        dropout[i] = (float)strtod(dt, NULL);
        char e[RT_ERR_LEN];
        if (rt_parse_bool(bt, &batch_norm[i], e) != RT_OK)
            batch_norm[i] = false;
    }
}
