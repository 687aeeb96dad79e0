/* launch.h — private to agent/: what the agent and ringtrain-launch share.
 *
 * ringtrain-launch is the only program that ever changes to a job's uid.
 * The agent execs it (as itself, still holding its capabilities) wherever a
 * process must become the job: a rank about to run, the start-up probe, the
 * reaper that kills what a job left.  So the process that changes uid holds
 * the launcher's small image and what its argv says — never the agent's
 * memory, where the agents' token and other jobs' keys are — and it is not
 * dumpable after the change (docs/security.md).
 *
 *   ringtrain-launch run   IDENTITY --parent PID --workdir DIR [--cwd DIR]
 *                          [--hide TOKEN_FILE] [--prog PATH] -- ARGV...
 *       become the job (or stay the agent's user without IDENTITY), drop
 *       every capability, hide the token in a user and mount namespace of
 *       its own, enter the job's folder and exec the rank with this
 *       program's environment.  Its fds 0-4 are the rank's; errors go to
 *       fd 2 (the rank's log) as "[agent] ..." lines, exit 126/127.
 *   ringtrain-launch probe IDENTITY --workdir DIR --token FILE [--try-hide]
 *       as the job, check what ident_init needs: a launch_probe written
 *       whole to fd 1, then wait until fd 0 closes (the agent signals it
 *       meanwhile, to prove it can).
 *   ringtrain-launch reap  IDENTITY
 *       as the job's uid and nothing else: SIGKILL every process of that
 *       uid until none is left (kill(-1), so a process forking as fast as it
 *       can is caught too), then remove the uid's System V IPC objects.
 *       Exit 0: none left; 1: some survived 2 s; 2: could not become it.
 *
 *   IDENTITY: --uid U --gid G [--groups G1,G2,...] */
#ifndef RT_AGENT_LAUNCH_H
#define RT_AGENT_LAUNCH_H

#include <stdbool.h>

#define LAUNCH_PROGRAM "ringtrain-launch"

/* What the probe found, as the first uid of job_uids. */
typedef struct launch_probe {
    int stage; /* 0: all passed; 1: could not become it; 2: cannot reach work_dir;
                  3: may list or write it */
    int err;   /* errno of the stage that failed */
    bool token_readable, hidden;
} launch_probe;

#define LAUNCH_REAP_OK 0
#define LAUNCH_REAP_SURVIVED 1
#define LAUNCH_REAP_NOT_BECOME 2

#endif
