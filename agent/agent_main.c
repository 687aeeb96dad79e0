/* agent_main.c — ringtrain-agent: one per node, run by systemd.
 *
 *   ringtrain-agent [--config FILE] [--print-config] [--log-level L]
 *   ringtrain-agent worker JOB.INI      (the training worker the agent runs)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "rt_daemon.h"
#include "rt_log.h"
#include "rt_worker.h"

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "worker") == 0)
        return rt_worker_main(argc - 1, argv + 1);
    rt_agent_cfg cfg;
    int rc = rt_daemon_setup("ringtrain-agent", "       ringtrain-agent worker JOB.INI\n",
                             &rt_agent_schema, "/etc/ringtrain/agent.conf", argc, argv, &cfg);
    if (rc >= 0)
        return rc;
    agentd *ag;
    char err[RT_ERR_LEN];
    if (agent_create(&cfg, &ag, err) != RT_OK) {
        RT_ERROR("agent", "%s", err);
        rt_cfg_free(&rt_agent_schema, &cfg);
        return 1;
    }
    rc = agent_run(ag);
    agent_destroy(ag);
    rt_cfg_free(&rt_agent_schema, &cfg);
    return rc;
}
