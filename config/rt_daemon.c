/* rt_daemon.c — see rt_daemon.h. */
#include "rt_daemon.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "rt_log.h"

int rt_daemon_setup(const char *prog, const char *usage_more, const rt_cfg_schema *s,
                    const char *default_config, int argc, char **argv, void *cfg)
{
    const char *config = default_config, *level = NULL;
    bool print = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (!strcmp(argv[i], "--log-level") && i + 1 < argc)
            level = argv[++i];
        else if (!strcmp(argv[i], "--print-config"))
            print = true;
        else {
            fprintf(stderr, "usage: %s [--config FILE] [--print-config] "
                            "[--log-level error|warn|info|debug|trace]\n%s",
                    prog, usage_more ? usage_more : "");
            return 2;
        }
    }
    rt_log_level l = RT_LL_INFO;
    if (level && rt_log_parse_level(level, &l) != RT_OK) {
        fprintf(stderr, "%s: unknown log level '%s'\n", prog, level);
        return 2;
    }
    rt_cfg_errors errs = {0};
    if (rt_cfg_load_file(s, config, cfg, &errs) != RT_OK) {
        rt_cfg_errors_print(&errs, stderr);
        rt_cfg_errors_free(&errs);
        rt_cfg_free(s, cfg);
        return 2;
    }
    if (print) {
        rt_cfg_print(s, cfg, stdout, true);
        rt_cfg_free(s, cfg);
        return 0;
    }
    const rt_cfg_key *k = rt_cfg_find(s, "logging", "level");
    if (level)
        rt_log_set_level(l);
    else if (k)
        rt_log_set_level((rt_log_level) * (const int *)((const char *)cfg + k->offset));
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    return -1;
}

void rt_daemon_signals_ready(void)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigprocmask(SIG_UNBLOCK, &stop, NULL);
}
