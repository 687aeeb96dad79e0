/* coord_main.c — ringtrain-coordinator: one per cluster.
 *
 *   ringtrain-coordinator [--config FILE] [--print-config] [--log-level L]
 *
 * Runs in the foreground; under systemd (Type=notify) it reports READY=1,
 * STATUS= lines and watchdog keep-alives, and stops on SIGTERM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "rt_log.h"

int main(int argc, char **argv)
{
    const char *config = "/etc/ringtrain/coordinator.conf";
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
            fprintf(stderr, "usage: ringtrain-coordinator [--config FILE] [--print-config] "
                            "[--log-level error|warn|info|debug|trace]\n");
            return 2;
        }
    }
    rt_coord_cfg cfg;
    rt_cfg_errors errs = {0};
    if (rt_cfg_load_file(&rt_coord_schema, config, &cfg, &errs) != RT_OK) {
        rt_cfg_errors_print(&errs, stderr);
        rt_cfg_errors_free(&errs);
        rt_cfg_free(&rt_coord_schema, &cfg);
        return 2;
    }
    if (print) {
        rt_cfg_print(&rt_coord_schema, &cfg, stdout, true);
        rt_cfg_free(&rt_coord_schema, &cfg);
        return 0;
    }
    rt_log_set_level((rt_log_level)cfg.log_level);
    if (level) {
        rt_log_level l;
        if (rt_log_parse_level(level, &l) != RT_OK) {
            fprintf(stderr, "ringtrain-coordinator: unknown log level '%s'\n", level);
            return 2;
        }
        rt_log_set_level(l);
    }
    coord *co;
    char err[RT_ERR_LEN];
    if (coord_create(&cfg, &co, err) != RT_OK) {
        RT_ERROR("coord", "%s", err);
        rt_cfg_free(&rt_coord_schema, &cfg);
        return 1;
    }
    int rc = coord_run(co);
    coord_destroy(co);
    rt_cfg_free(&rt_coord_schema, &cfg);
    return rc;
}
