/* rt_sweep_tpe.c — `[sweep] search = tpe`: the Tree-structured Parzen
 * Estimator (Bergstra et al. 2011, "Algorithms for Hyper-Parameter
 * Optimization"), univariate, with Optuna's defaults — the sampler rtdl's
 * and TabM's papers tuned with.
 *
 * The trials that have ended are ranked — completed ones by their value,
 * then those stopped early (by ASHA or the time budget) by how far they got,
 * then by value (Optuna ranks pruned trials below complete ones the same
 * way) — and split into the best gamma(n) = min(ceil(n / 10), 25) ("good")
 * and the rest.  For each searched key, a Parzen estimator of each group:
 * a mixture of one Gaussian per observation (truncated to the key's range;
 * in log space for loguniform; its width the larger gap to its neighbours,
 * clipped to [range / min(100, n + 1), range]) and a prior (the range's
 * middle, width the range), weighed alike; for a choice, the mixture of
 * each observation's value softened by the prior and the prior's uniform
 * (choice_p).  24 candidates drawn from the
 * good estimator, the one with the largest log l(x) - log g(x) is the
 * trial's value.  Until RT_TPE_STARTUP trials have ended, trials are drawn
 * as random search draws them (the same values, seed for seed). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_sweep.h"

#define CANDIDATES 24
#define PRIOR_WEIGHT 1.0

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unit(rng *r) { return (double)(next(r) >> 11) * 0x1.0p-53; } /* [0, 1) */

static double normal(rng *r)
{
    double u = unit(r), v = unit(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

/* the good observations first: completed ones by value, then stopped ones
 * by how far they got, then by value */
static bool ahead(const rt_sweep_obs *a, const rt_sweep_obs *b, bool maximize)
{
    if (a->completed != b->completed)
        return a->completed;
    if (!a->completed && a->epochs != b->epochs)
        return a->epochs > b->epochs;
    return maximize ? a->value > b->value : a->value < b->value;
}

/* ---- one numeric key: Parzen estimators in its internal space ---------------- */

typedef struct parzen {
    int n;                     /* components: the observations, then the prior */
    double *mu, *sigma, *logz; /* logz: log of the truncation's mass */
} parzen;

static double log_phi(double z) { return -0.5 * z * z - 0.5 * log(2.0 * M_PI); }
static double cdf(double z) { return 0.5 * erfc(-z / M_SQRT2); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the estimator of the points xs (n of them) on [lo, hi], as Optuna's:
 * each point's width the larger gap to its neighbours among the sorted
 * points and the ends (the outermost points: their inner gap), clipped to
 * [range / min(100, n + 1), range]; then the prior, (lo + hi) / 2 and the
 * range */
static bool parzen_make(parzen *p, const double *xs, int n, double lo, double hi)
{
    p->n = n + 1;
    p->mu = malloc((size_t)p->n * 3 * sizeof(double));
    double *s = malloc((size_t)(n + 2) * sizeof(double)); /* lo, the sorted points, hi */
    if (!p->mu || !s) {
        free(p->mu);
        free(s);
        p->mu = NULL;
        return false;
    }
    p->sigma = p->mu + p->n;
    p->logz = p->sigma + p->n;
    s[0] = lo;
    memcpy(s + 1, xs, (size_t)n * sizeof(double));
    qsort(s + 1, (size_t)n, sizeof(double), cmp_double);
    s[n + 1] = hi;
    const double range = hi - lo, min_sigma = range / fmin(100.0, 1.0 + n);
    for (int i = 0; i < n; i++) {
        double gap = fmax(s[i + 1] - s[i], s[i + 2] - s[i + 1]);
        if (n >= 2 && i == 0)
            gap = s[2] - s[1];
        else if (n >= 2 && i == n - 1)
            gap = s[n] - s[n - 1];
        p->mu[i] = s[i + 1];
        p->sigma[i] = fmin(fmax(gap, min_sigma), range);
    }
    p->mu[n] = 0.5 * (lo + hi); /* the prior */
    p->sigma[n] = range;
    for (int i = 0; i < p->n; i++) {
        const double mass = cdf((hi - p->mu[i]) / p->sigma[i]) - cdf((lo - p->mu[i]) / p->sigma[i]);
        p->logz[i] = log(fmax(mass, 1e-300));
    }
    free(s);
    return true;
}

static double parzen_logpdf(const parzen *p, double x)
{
    double m = -INFINITY; /* log-sum-exp over the components, weighed alike */
    double *lp = malloc((size_t)p->n * sizeof(double));
    if (!lp)
        return -INFINITY;
    for (int i = 0; i < p->n; i++) {
        lp[i] = log_phi((x - p->mu[i]) / p->sigma[i]) - log(p->sigma[i]) - p->logz[i];
        m = fmax(m, lp[i]);
    }
    double s = 0;
    for (int i = 0; i < p->n; i++)
        s += exp(lp[i] - m);
    free(lp);
    return m + log(s) - log((double)p->n);
}

static double parzen_draw(const parzen *p, rng *r, double lo, double hi)
{
    const int i = (int)(unit(r) * p->n);
    for (int tries = 0; tries < 100; tries++) { /* truncated to [lo, hi] */
        double x = p->mu[i] + p->sigma[i] * normal(r);
        if (x >= lo && x <= hi)
            return x;
    }
    return fmin(fmax(p->mu[i], lo), hi);
}

/* ---- the sampler ----------------------------------------------------------------- */

/* dimension d's internal value of a sampled text (false: none, or out of
 * its range — a baseline trial's own value) */
static bool internal(const rt_sweep_dim *d, const char *text, double *x)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v >= d->lo && v <= d->hi))
        return false;
    *x = d->kind == RT_SP_LOGUNIFORM ? log(v) : v;
    return true;
}

static void bounds(const rt_sweep_dim *d, double *lo, double *hi)
{
    *lo = d->kind == RT_SP_LOGUNIFORM ? log(d->lo) : d->lo;
    *hi = d->kind == RT_SP_LOGUNIFORM ? log(d->hi) : d->hi;
    if (d->kind == RT_SP_INT) { /* each integer owns a unit interval */
        *lo -= 0.5;
        *hi += 0.5;
    }
}

/* one numeric dimension: the candidate with the best ratio, as text */
static bool sample_numeric(const rt_sweep_dim *d, const rt_sweep_obs *obs, const int *order,
                           int nobs, int ngood, int i, rng *r, char *out)
{
    double lo, hi;
    bounds(d, &lo, &hi);
    double *good = malloc((size_t)(nobs + 1) * sizeof(double)), *bad = good ? good + ngood : NULL;
    if (!good)
        return false;
    int ng = 0, nb = 0;
    for (int k = 0; k < nobs; k++) {
        double x;
        if (!internal(d, obs[order[k]].vals[i], &x))
            continue;
        if (k < ngood)
            good[ng++] = x;
        else
            bad[nb++] = x;
    }
    parzen l = {0}, g = {0};
    bool ok = parzen_make(&l, good, ng, lo, hi) && parzen_make(&g, bad, nb, lo, hi);
    double best = NAN, best_score = -INFINITY;
    for (int c = 0; ok && c < CANDIDATES; c++) {
        double x = parzen_draw(&l, r, lo, hi);
        double s = parzen_logpdf(&l, x) - parzen_logpdf(&g, x);
        if (s > best_score || isnan(best)) {
            best_score = s;
            best = x;
        }
    }
    free(l.mu);
    free(g.mu);
    free(good);
    if (!ok)
        return false;
    rt_sweep_number_text(d, d->kind == RT_SP_LOGUNIFORM ? exp(best) : best, out);
    return true;
}

/* A choice's probability under a group's estimator, as Optuna's: the
 * mixture, weighed alike, of one component per observation — its value
 * (1 + prior/K) and every value prior/K, over 1 + prior — and the prior's
 * uniform 1/K. */
static double choice_p(const double *count, int n, int k, int c)
{
    return ((count[c] + n * PRIOR_WEIGHT / k) / (1.0 + PRIOR_WEIGHT) + 1.0 / k) / (n + 1.0);
}

/* one choice dimension: the candidate, drawn from the good group's
 * estimator, with the best ratio */
static bool sample_choice(const rt_sweep_dim *d, const rt_sweep_obs *obs, const int *order,
                          int nobs, int ngood, int i, rng *r, char *out)
{
    const int k = d->nchoices;
    double *cg = calloc((size_t)k * 2, sizeof(double)), *cb = cg ? cg + k : NULL;
    if (!cg)
        return false;
    int ng = 0, nb = 0;
    for (int o = 0; o < nobs; o++)
        for (int c = 0; c < k; c++)
            if (!strcmp(obs[order[o]].vals[i], d->choices[c])) {
                if (o < ngood)
                    cg[c] += 1, ng++;
                else
                    cb[c] += 1, nb++;
                break;
            }
    int best = 0;
    double best_score = -INFINITY;
    for (int n = 0; n < CANDIDATES; n++) {
        double u = unit(r), acc = 0;
        int c = 0;
        for (; c < k - 1; c++) {
            acc += choice_p(cg, ng, k, c);
            if (u < acc)
                break;
        }
        const double s = log(choice_p(cg, ng, k, c)) - log(choice_p(cb, nb, k, c));
        if (s > best_score) {
            best_score = s;
            best = c;
        }
    }
    free(cg);
    snprintf(out, RT_SWEEP_VALUE_MAX, "%s", d->choices[best]);
    return true;
}

void rt_sweep_sample_tpe(const rt_job_cfg *c, const rt_sweep_space *sp, int64_t t,
                         const rt_sweep_obs *obs, int nobs, char (*vals)[RT_SWEEP_VALUE_MAX])
{
    /* the startup trials' values, and any key left below */
    rt_sweep_sample_all(c, sp, t, vals);
    int *order = nobs < RT_TPE_STARTUP || (c->sweep_baseline && t == 0)
                     ? NULL
                     : malloc((size_t)nobs * sizeof *order);
    if (!order) {
        rt_sweep_blank_inactive(sp, vals);
        return;
    }
    const bool maximize = rt_job_monitor_max(c);
    for (int k = 0; k < nobs; k++) { /* insertion sort: at most a few thousand */
        int j = k;
        while (j > 0 && ahead(&obs[k], &obs[order[j - 1]], maximize)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    const int ngood = (int)fmin(ceil(0.1 * nobs), 25);
    /* each trial's stream starts at a hash of (seed, t): a start of
     * (t + 1) times splitmix's increment made trial t + 1's numbers trial
     * t's shifted by one, and trials drawn from the same ended trials
     * (in parallel) drew the same candidates */
    rng h = {(uint64_t)c->sweep_seed * 0x2545f4914f6cdd1dull ^ (uint64_t)(t + 1)};
    rng r = {next(&h)};
    int *mine = malloc((size_t)nobs * sizeof *mine);
    for (int i = 0; mine && i < sp->n; i++) {
        const rt_sweep_dim *d = &sp->d[i];
        /* a key of one architecture: the trials of it alone, ranked and
         * split as all are (Optuna's univariate TPE on a conditional key) */
        const int *ord = order;
        int n = nobs, good = ngood;
        if (d->when[0]) {
            n = 0;
            for (int k = 0; k < nobs; k++)
                if (obs[order[k]].vals[i][0])
                    mine[n++] = order[k];
            ord = mine;
            good = (int)fmin(ceil(0.1 * n), 25);
            if (n == 0)
                continue; /* random search's value */
        }
        char v[RT_SWEEP_VALUE_MAX];
        bool ok = d->kind == RT_SP_CHOICE ? sample_choice(d, obs, ord, n, good, i, &r, v)
                                          : sample_numeric(d, obs, ord, n, good, i, &r, v);
        if (ok)
            snprintf(vals[i], RT_SWEEP_VALUE_MAX, "%s", v);
    }
    free(mine);
    free(order);
    rt_sweep_blank_inactive(sp, vals);
}
