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
#include "rt_daemon.h"
#include "rt_log.h"

int main(int argc, char **argv)
{
    rt_coord_cfg cfg;
    int rc = rt_daemon_setup("ringtrain-coordinator", NULL, &rt_coord_schema,
                             "/etc/ringtrain/coordinator.conf", argc, argv, &cfg);
    if (rc >= 0)
        return rc;
    coord *co;
    char err[RT_ERR_LEN];
    if (coord_create(&cfg, &co, err) != RT_OK) {
        RT_ERROR("coord", "%s", err);
        rt_cfg_free(&rt_coord_schema, &cfg);
        return 1;
    }
    rc = coord_run(co);
    coord_destroy(co);
    rt_cfg_free(&rt_coord_schema, &cfg);
    return rc;
}
