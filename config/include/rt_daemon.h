/* rt_daemon.h — the daemons' shared start-up: the command line
 * (--config FILE, --print-config, --log-level L), the configuration file
 * read with its schema (every error printed with file:line), and the log
 * level from the file's [logging] level, overridden by --log-level. */
#ifndef RT_DAEMON_H
#define RT_DAEMON_H

#include "rt_config.h"

/* cfg receives the configuration (struct of schema s).  Returns -1 when the
 * daemon should go on (cfg loaded; the caller frees it with rt_cfg_free),
 * else the exit status (0 after --print-config, 2 for bad arguments or a
 * bad file), with nothing left to free.  When it goes on, SIGTERM and
 * SIGINT are blocked: a stop asked for while the daemon starts waits for
 * its event loop's handlers, which rt_daemon_signals_ready() then lets
 * through (so it stops as it always does, not by the default action). */
int rt_daemon_setup(const char *prog, const char *usage_more, const rt_cfg_schema *s,
                    const char *default_config, int argc, char **argv, void *cfg);
void rt_daemon_signals_ready(void);

#endif
