/* rt_log.h — levelled logging with component and rank tags.
 *
 * RT_LOG checks the level before any argument is formatted, so debug lines
 * cost one compare when filtered.  Every line carries the component ("tcp",
 * "coord", ...) and, when set for the calling thread, the rank.  Lines go to
 * stderr as one write(2) each; when stderr is connected to journald
 * (JOURNAL_STREAM names our stderr) each line starts with the <N> syslog
 * priority prefix and carries no timestamp of its own.
 * (Model: Redis serverLog; UCC tl_debug.) */
#ifndef RT_LOG_H
#define RT_LOG_H

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rt_log_level {
    RT_LL_ERROR = 0,
    RT_LL_WARN = 1,
    RT_LL_INFO = 2,
    RT_LL_DEBUG = 3,
    RT_LL_TRACE = 4,
} rt_log_level;

/* The process-wide threshold.  It is the one mutable global in the library:
 * the level is a property of the process (set once from --log-level or a
 * config key), and the macro must read it without a call.  Written only
 * through rt_log_set_level(). */
extern volatile int rt_log_threshold_g;

#define RT_LOG(lvl, comp, ...)                                                   \
    do {                                                                         \
        if ((int)(lvl) <= rt_log_threshold_g)                                    \
            rt_log_emit((lvl), (comp), __VA_ARGS__);                             \
    } while (0)

#define RT_ERROR(comp, ...) RT_LOG(RT_LL_ERROR, comp, __VA_ARGS__)
#define RT_WARN(comp, ...) RT_LOG(RT_LL_WARN, comp, __VA_ARGS__)
#define RT_INFO(comp, ...) RT_LOG(RT_LL_INFO, comp, __VA_ARGS__)
#define RT_DEBUG(comp, ...) RT_LOG(RT_LL_DEBUG, comp, __VA_ARGS__)
#define RT_TRACE(comp, ...) RT_LOG(RT_LL_TRACE, comp, __VA_ARGS__)

/* Format and write one line.  Thread-safe; use RT_LOG instead. */
void rt_log_emit(rt_log_level lvl, const char *comp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void rt_log_set_level(rt_log_level lvl);
rt_log_level rt_log_get_level(void);

/* "error|warn|info|debug|trace" (case-insensitive) -> level. */
rt_status rt_log_parse_level(const char *text, rt_log_level *out);
const char *rt_log_level_name(rt_log_level lvl);

/* Rank shown on lines written by the calling thread; -1 (default) hides it.
 * Thread-local, because in-process tests run one rank per thread. */
void rt_log_set_rank(int rank);

/* Re-check JOURNAL_STREAM against stderr (done once automatically on the
 * first line); call after redirecting stderr. */
void rt_log_detect_journal(void);

/* Optional sink that receives every emitted line (without the newline)
 * instead of stderr; NULL restores stderr.  For tests and for daemons that
 * forward their own log.  The sink is called with no lock held. */
typedef void (*rt_log_sink_fn)(void *user, rt_log_level lvl, const char *line);
void rt_log_set_sink(rt_log_sink_fn fn, void *user);

#ifdef __cplusplus
}
#endif

#endif
