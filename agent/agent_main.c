/* agent_main.c — ringtrain-agent: one per node, run by systemd.
 *
 *   ringtrain-agent [--config FILE] [--print-config] [--log-level L]
 *   ringtrain-agent worker JOB.INI      (the training worker the agent runs)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "rt_log.h"
#include "rt_worker.h"

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "worker") == 0)
        return rt_worker_main(argc - 1, argv + 1);
    const char *config = "/etc/ringtrain/agent.conf";
    const char *level = NULL;
    bool print = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (!strcmp(argv[i], "--log-level") && i + 1 < argc)
            level = argv[++i];
        else if (!strcmp(argv[i], "--print-config"))
            print = true;
        else {
            fprintf(stderr, "usage: ringtrain-agent [--config FILE] [--print-config] "
                            "[--log-level error|warn|info|debug|trace]\n"
                            "       ringtrain-agent worker JOB.INI\n");
            return 2;
        }
    }
    rt_agent_cfg cfg;
    rt_cfg_errors errs = {0};
    if (rt_cfg_load_file(&rt_agent_schema, config, &cfg, &errs) != RT_OK) {
        rt_cfg_errors_print(&errs, stderr);
        rt_cfg_errors_free(&errs);
        rt_cfg_free(&rt_agent_schema, &cfg);
        return 2;
    }
    if (print) {
        rt_cfg_print(&rt_agent_schema, &cfg, stdout, true);
        rt_cfg_free(&rt_agent_schema, &cfg);
        return 0;
    }
    rt_log_set_level((rt_log_level)cfg.log_level);
    if (level) {
        rt_log_level l;
        if (rt_log_parse_level(level, &l) != RT_OK) {
            fprintf(stderr, "ringtrain-agent: unknown log level '%s'\n", level);
            return 2;
        }
        rt_log_set_level(l);
    }
    agentd *ag;
    char err[RT_ERR_LEN];
    if (agent_create(&cfg, &ag, err) != RT_OK) {
        RT_ERROR("agent", "%s", err);
        rt_cfg_free(&rt_agent_schema, &cfg);
        return 1;
    }
    int rc = agent_run(ag);
    agent_destroy(ag);
    rt_cfg_free(&rt_agent_schema, &cfg);
    return rc;
}
