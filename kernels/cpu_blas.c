/* cpu_blas.c — the right OpenBLAS kernels on every x86 CPU.
 *
 * ringtrain's own layers do not call BLAS (cpu_gemm.c), but the programs
 * users run under `ringtrain exec` do (NumPy, SciPy, PyTorch builds linked
 * with OpenBLAS), and so do the baselines of bench/.  OpenBLAS picks its
 * kernels from the CPU model when it is loaded, and a version older than
 * the CPU falls back to its SSE3 "Prescott" kernels: Debian 12's 0.3.21 on
 * an Intel Emerald Rapids runs sgemm at 32 GFLOP/s instead of 157.  The
 * CPU's features say what it can run; OPENBLAS_CORETYPE, read when the
 * library loads, tells OpenBLAS.  So: the agent sets it in each rank's
 * environment, programs that use OpenBLAS themselves re-execute once with
 * it set — and a value the user set always wins. */
#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rt_kernels.h"

rt_cpu_isa rt_cpu_isa_detect(void)
{
    rt_cpu_isa isa = {0};
#if defined(__x86_64__) && defined(__GNUC__)
    /* libgcc reports a vector extension only when the OS saves its registers
     * (XGETBV), so "supports" means "usable" */
    __builtin_cpu_init();
    isa.amd = __builtin_cpu_is("amd");
    isa.avx = __builtin_cpu_supports("avx");
    isa.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    isa.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
    return isa;
}

/* OpenBLAS's x86-64 core types by the widest vectors their kernels use:
 * 0 SSE, 1 AVX, 2 AVX2 + FMA, 3 AVX-512.  -1: a name this table does not
 * know (a newer OpenBLAS's, say), which is left alone. */
static int core_level(const char *core)
{
    static const struct {
        const char *name;
        int level;
    } cores[] = {{"Unknown", 0},     {"Katmai", 0},      {"Coppermine", 0},     {"Northwood", 0},
                 {"Prescott", 0},    {"Banias", 0},      {"Atom", 0},           {"Core2", 0},
                 {"Penryn", 0},      {"Dunnington", 0},  {"Nehalem", 0},        {"Athlon", 0},
                 {"Opteron", 0},     {"Opteron_SSE3", 0}, {"Barcelona", 0},     {"Nano", 0},
                 {"Bobcat", 0},      {"Sandybridge", 1}, {"Bulldozer", 1},      {"Piledriver", 1},
                 {"Steamroller", 1}, {"Haswell", 2},     {"Excavator", 2},      {"Zen", 2},
                 {"SkylakeX", 3},    {"Cooperlake", 3},  {"Sapphirerapids", 3}};
    for (size_t i = 0; core && i < sizeof cores / sizeof *cores; i++)
        if (!strcasecmp(core, cores[i].name))
            return cores[i].level;
    return -1;
}

const char *rt_blas_core_pick(rt_cpu_isa isa, const char *picked)
{
    const char *want = NULL;
    int level = 0;
    /* SkylakeX, not Cooperlake, for every AVX-512 CPU: the same sgemm/dgemm
     * kernels, and a library without Cooperlake falls back to its own pick
     * when given that name (OpenBLAS accepts SkylakeX since 0.3.0) */
    if (isa.avx512)
        want = "SkylakeX", level = 3;
    else if (isa.avx2_fma)
        want = isa.amd ? "Zen" : "Haswell", level = 2;
    else if (isa.avx)
        want = "Sandybridge", level = 1;
    int have = core_level(picked);
    return want && have >= 0 && have < level ? want : NULL;
}

const char *rt_blas_core_advice(void)
{
    const char *set = getenv("OPENBLAS_CORETYPE");
    if (set && *set)
        return NULL;
    return rt_blas_core_pick(rt_cpu_isa_detect(), openblas_get_corename());
}

const char *rt_cpu_blas_core(void) { return openblas_get_corename(); }

void rt_blas_reexec(char **argv)
{
    const char *core = rt_blas_core_advice();
    if (!core)
        return;
    fprintf(stderr, "%s: OpenBLAS chose its %s kernels for this CPU; running again with "
                    "OPENBLAS_CORETYPE=%s (set OPENBLAS_CORETYPE to choose yourself)\n",
            argv[0], openblas_get_corename(), core);
    fflush(NULL);
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    fprintf(stderr, "%s: could not run again (%s); going on with %s\n", argv[0], strerror(errno),
            openblas_get_corename());
    unsetenv("OPENBLAS_CORETYPE");
}
