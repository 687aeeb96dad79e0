/* rt_version.c — the library's own version (rt_comm.h).  Also the one
 * source file of libringtrain.so; everything else comes from the static
 * libraries it wraps. */
#include "rt_comm.h"

const char *rt_version(void) { return RT_VERSION; }
