/* rt_time.h — monotonic clock and deadlines.
 *
 * Every wait in ringtrain takes an absolute deadline on CLOCK_MONOTONIC in
 * nanoseconds (rt_deadline_t); RT_NO_DEADLINE is "forever", used only where a
 * caller explicitly wants it.  Small static inline helpers only. */
#ifndef RT_TIME_H
#define RT_TIME_H

#include <stdint.h>
#include <time.h>

typedef int64_t rt_deadline_t;
#define RT_NO_DEADLINE INT64_MAX

static inline int64_t rt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline double rt_now_s(void) { return (double)rt_now_ns() * 1e-9; }

/* Deadline `us` microseconds from now (us < 0 means no deadline). */
static inline rt_deadline_t rt_deadline_in_us(int64_t us)
{
    if (us < 0)
        return RT_NO_DEADLINE;
    return rt_now_ns() + us * 1000;
}

/* Milliseconds left until d, clamped to [0, INT32_MAX] for poll(2). */
static inline int rt_deadline_ms_left(rt_deadline_t d)
{
    if (d == RT_NO_DEADLINE)
        return -1;
    int64_t left = d - rt_now_ns();
    if (left <= 0)
        return 0;
    int64_t ms = (left + 999999) / 1000000;
    return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

#endif
