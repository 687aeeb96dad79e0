/* agent_main.c — ringtrain-agent: one per node, run by systemd.
 *
 *   ringtrain-agent [--config FILE] [--print-config] [--log-level L]
 *
 * The ranks of training jobs run ringtrain-worker (trainer/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "rt_daemon.h"
#include "rt_log.h"

int main(int argc, char **argv)
{
    rt_agent_cfg cfg;
    int rc = rt_daemon_setup("ringtrain-agent", NULL,
                             &rt_agent_schema, "/etc/ringtrain/agent.conf", argc, argv, &cfg);
    if (rc >= 0)
        return rc;
    /* [s3]: the node's S3 settings (endpoint, region, addressing, CA bundle)
     * reach its ranks through the environment they inherit: a job's own
     * (its submitter's, in its env) win, and so, as with the AWS tools, does
     * a variable the agent's unit sets.  Never credentials (agent_env.c). */
    rt_s3_keys_setenv(&cfg.s3, false);
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
