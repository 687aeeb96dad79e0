/* agent_link.c — the bottom of the agent: frames to the coordinator, and
 * the exits of ranks that ended while it was unreachable, kept for the next
 * hello so that none is lost (see agent.h). */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

bool agent_send(agentd *ag, rt_jw *w)
{
    if (!ag->bev || !ag->welcomed) {
        rt_jw_free(w);
        return false;
    }
    return rt_frame_push(ag->bev, w) == RT_OK;
}

void agent_send_exit(agentd *ag, rt_jw *w)
{
    if (ag->welcomed) {
        agent_send(ag, w);
        return;
    }
    char *item = rt_jw_take(w, NULL);
    if (!item)
        return;
    /* "[a]" then "[a,b]": the backlog is always a complete JSON array */
    size_t old = ag->exited_backlog ? strlen(ag->exited_backlog) : 0, n = strlen(item);
    char *b = realloc(ag->exited_backlog, old + n + 3);
    if (b) {
        if (old == 0) {
            b[0] = '[';
            memcpy(b + 1, item, n);
            memcpy(b + 1 + n, "]", 2);
        } else {
            b[old - 1] = ',';
            memcpy(b + old, item, n);
            memcpy(b + old + n, "]", 2);
        }
        ag->exited_backlog = b;
    }
    free(item);
}

void agent_backlog_json(const agentd *ag, rt_jw *w)
{
    rt_jw_raw(w, ag->exited_backlog ? ag->exited_backlog : "[]");
}

void agent_backlog_clear(agentd *ag)
{
    free(ag->exited_backlog);
    ag->exited_backlog = NULL;
}
