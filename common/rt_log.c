/* rt_log.c — see rt_log.h.
 *
 * journald detection follows systemd.exec(5): JOURNAL_STREAM holds
 * "<device>:<inode>" of the stream that is connected to the journal; a
 * process must compare it with fstat() of its stderr, because the variable is
 * inherited by children whose stderr may have been redirected since. */
#include "rt_log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

volatile int rt_log_threshold_g = RT_LL_INFO;

static _Thread_local int tls_rank = -1;
static int journal_mode = -1; /* -1 unknown, 0 plain, 1 journald */
static rt_log_sink_fn sink_fn;
static void *sink_user;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};
static const char *const level_tags[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
/* syslog priorities: err=3, warning=4, info=6, debug=7 */
static const int level_prio[] = {3, 4, 6, 7, 7};

void rt_log_set_level(rt_log_level lvl) { rt_log_threshold_g = (int)lvl; }
rt_log_level rt_log_get_level(void) { return (rt_log_level)rt_log_threshold_g; }
void rt_log_set_rank(int rank) { tls_rank = rank; }

void rt_log_set_sink(rt_log_sink_fn fn, void *user)
{
    sink_user = user;
    sink_fn = fn;
}

const char *rt_log_level_name(rt_log_level lvl)
{
    if ((int)lvl < 0 || (size_t)lvl >= RT_ARRAY_LEN(level_names))
        return "?";
    return level_names[lvl];
}

rt_status rt_log_parse_level(const char *text, rt_log_level *out)
{
    for (size_t i = 0; i < RT_ARRAY_LEN(level_names); i++) {
        if (text && strcasecmp(text, level_names[i]) == 0) {
            *out = (rt_log_level)i;
            return RT_OK;
        }
    }
    if (text && strcasecmp(text, "warning") == 0) {
        *out = RT_LL_WARN;
        return RT_OK;
    }
    return RT_ERR_INVALID;
}

void rt_log_detect_journal(void)
{
    int mode = 0;
    const char *js = getenv("JOURNAL_STREAM");
    struct stat st;
    if (js && fstat(STDERR_FILENO, &st) == 0) {
        uintmax_t dev, ino;
        if (sscanf(js, "%ju:%ju", &dev, &ino) == 2 && dev == (uintmax_t)st.st_dev &&
            ino == (uintmax_t)st.st_ino)
            mode = 1;
    }
    journal_mode = mode;
}

void rt_log_emit(rt_log_level lvl, const char *comp, const char *fmt, ...)
{
    if (journal_mode < 0)
        rt_log_detect_journal();
    char line[2048];
    size_t n = 0;
    int w;
    if (sink_fn == NULL && journal_mode == 1) {
        w = snprintf(line, sizeof line, "<%d>", level_prio[lvl <= RT_LL_TRACE ? lvl : RT_LL_TRACE]);
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        w = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000,
                     level_tags[lvl <= RT_LL_TRACE ? lvl : RT_LL_TRACE]);
    }
    n = w > 0 ? (size_t)w : 0;
    if (tls_rank >= 0)
        w = snprintf(line + n, sizeof line - n, "[%s r%d] ", comp ? comp : "-", tls_rank);
    else
        w = snprintf(line + n, sizeof line - n, "[%s] ", comp ? comp : "-");
    if (w > 0)
        n += (size_t)w < sizeof line - n ? (size_t)w : sizeof line - n - 1;
    va_list ap;
    va_start(ap, fmt);
    w = vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    if (w > 0)
        n += (size_t)w < sizeof line - n ? (size_t)w : sizeof line - n - 1;
    /* one line per record: embedded newlines would split journal entries */
    for (size_t i = 0; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    rt_log_sink_fn fn = sink_fn;
    if (fn) {
        fn(sink_user, lvl, line);
        return;
    }
    if (n >= sizeof line - 1)
        n = sizeof line - 2;
    line[n++] = '\n';
    /* a single write keeps lines from different threads/processes whole */
    ssize_t r = write(STDERR_FILENO, line, n);
    (void)r;
}
