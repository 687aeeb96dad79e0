/* agent_link.c — the bottom of the agent: frames to the coordinator, and
 * the recent exits of ranks, repeated in every hello so that none is lost —
 * neither one that ended while the coordinator was unreachable, nor one
 * sent to a coordinator that died before committing it (see agent.h). */
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "rt_log.h"
#include "rt_time.h"

bool agent_send(agentd *ag, rt_jw *w)
{
    if (!ag->bev || !ag->welcomed) {
        rt_jw_free(w);
        return false;
    }
    return rt_frame_push(ag->bev, w) == RT_OK;
}

#define RECENT_EXITS_S 600  /* how long an exit is repeated in hellos */
#define RECENT_EXITS_MAX 4096

/* Drop exits older than RECENT_EXITS_S, and the oldest beyond the cap. */
static void prune(agentd *ag)
{
    const int64_t old = rt_now_ns() - (int64_t)RECENT_EXITS_S * 1000000000LL;
    int keep = 0;
    for (int i = 0; i < ag->nrecent; i++) {
        bool drop = ag->recent_ns[i] < old || ag->nrecent - i > RECENT_EXITS_MAX;
        if (drop) {
            free(ag->recent_exits[i]);
            continue;
        }
        ag->recent_exits[keep] = ag->recent_exits[i];
        ag->recent_ns[keep++] = ag->recent_ns[i];
    }
    ag->nrecent = keep;
}

void agent_send_exit(agentd *ag, rt_jw *w)
{
    char *item = rt_jw_take(w, NULL);
    if (!item)
        return;
    if (ag->welcomed) {
        rt_jw copy;
        rt_jw_init(&copy);
        rt_jw_raw(&copy, item);
        agent_send(ag, &copy);
    }
    prune(ag);
    char **e = realloc(ag->recent_exits, (size_t)(ag->nrecent + 1) * sizeof *e);
    int64_t *t = e ? realloc(ag->recent_ns, (size_t)(ag->nrecent + 1) * sizeof *t) : NULL;
    if (e)
        ag->recent_exits = e;
    if (!e || !t) {
        free(item);
        return;
    }
    ag->recent_ns = t;
    ag->recent_exits[ag->nrecent] = item;
    ag->recent_ns[ag->nrecent++] = rt_now_ns();
}

void agent_backlog_json(agentd *ag, rt_jw *w, size_t budget)
{
    prune(ag);
    /* the newest exits that fit in budget bytes, oldest first: the hello
     * must stay a frame the coordinator reads */
    int from = ag->nrecent;
    size_t used = 0;
    while (from > 0 && used + strlen(ag->recent_exits[from - 1]) + 1 <= budget)
        used += strlen(ag->recent_exits[--from]) + 1;
    if (from > 0)
        RT_WARN("agent", "the hello repeats the last %d of %d recent exits (%zu bytes); the "
                         "coordinator may have missed the %d older ones",
                ag->nrecent - from, ag->nrecent, used, from);
    rt_jw_arr(w);
    for (int i = from; i < ag->nrecent; i++)
        rt_jw_raw(w, ag->recent_exits[i]);
    rt_jw_arr_end(w);
}

void agent_backlog_since(agentd *ag, int64_t since_ns)
{
    for (int i = 0; i < ag->nrecent; i++)
        if (ag->recent_ns[i] >= since_ns) {
            rt_jw copy;
            rt_jw_init(&copy);
            rt_jw_raw(&copy, ag->recent_exits[i]);
            agent_send(ag, &copy);
        }
}

void agent_backlog_free(agentd *ag)
{
    for (int i = 0; i < ag->nrecent; i++)
        free(ag->recent_exits[i]);
    free(ag->recent_exits);
    free(ag->recent_ns);
    ag->recent_exits = NULL;
    ag->recent_ns = NULL;
    ag->nrecent = 0;
}
