/* worker_stub.c — placeholder until the trainer lands (training issue):
 * a training job fails at once with a clear message. */
#include <stdio.h>

#include "rt_worker.h"

int rt_worker_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ringtrain-agent worker: this build has no trainer yet\n");
    return 2;
}
