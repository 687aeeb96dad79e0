/* worker_main.c — ringtrain-worker, what every rank of a training job runs:
 *
 *   ringtrain-worker JOB.INI    one rank of the job.  Started by an agent it
 *                               joins the job's ring (rt_init_from_env);
 *                               started by hand it trains alone (rank 0 of
 *                               1), handy for a first look at a job file.
 *   ringtrain-worker --probe    what this node offers, one JSON object: GPUs,
 *                               NCCL, CPU model and vector extensions,
 *                               ringtrain's GEMM kernel and OpenBLAS's,
 *                               cores, memory.  The agent asks once at
 *                               start and reports it.
 *
 * Exit status 0 when the job's work is done, 1 with the reason on stderr
 * (the coordinator shows the last lines), 2 for a bad job file or usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "rt_comm.h"
#include "rt_json.h"
#include "rt_kernels.h"
#include "rt_log.h"
#include "rt_schemas.h"
#include "trainer.h"

/* "model name" of /proc/cpuinfo and the vector extensions it lists. */
static void cpu_info(char *model, size_t mlen, char *isa, size_t ilen)
{
    snprintf(model, mlen, "unknown");
    isa[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[8192];
    bool have_model = false, have_flags = false;
    while ((!have_model || !have_flags) && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1 + (colon[1] == ' ');
        v[strcspn(v, "\n")] = '\0';
        if (!have_model && strncmp(line, "model name", 10) == 0) {
            snprintf(model, mlen, "%s", v);
            have_model = true;
        } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
            static const char *const want[] = {"sse4_2",  "avx",      "avx2",     "fma",
                                               "avx512f", "avx512bw", "avx512dq", "avx512vl",
                                               "avx512_bf16", "amx_tile"};
            size_t n = 0;
            for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
                char pat[32];
                snprintf(pat, sizeof pat, " %s ", want[i]);
                char padded[8200];
                snprintf(padded, sizeof padded, " %s ", v);
                if (strstr(padded, pat) && n + strlen(want[i]) + 2 < ilen)
                    n += (size_t)snprintf(isa + n, ilen - n, "%s%s", n ? " " : "", want[i]);
            }
            have_flags = true;
        }
    }
    fclose(f);
}

static int probe(void)
{
    char model[256], isa[256], name[256];
    cpu_info(model, sizeof model, isa, sizeof isa);
    struct sysinfo si;
    unsigned long long mem = sysinfo(&si) == 0 ? (unsigned long long)si.totalram * si.mem_unit : 0;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_kstr(&w, "version", RT_VERSION);
    int gpus = rt_cuda_device_count_visible();
    rt_jw_kbool(&w, "cuda", gpus > 0);
    rt_jw_kint(&w, "gpus", gpus);
    rt_jw_key(&w, "gpu_names");
    rt_jw_arr(&w);
    for (int d = 0; d < gpus; d++) {
        char e[RT_ERR_LEN];
        if (rt_cuda_set_device(d, e) == RT_OK)
            rt_jw_str(&w, rt_cuda_device_name(name, sizeof name));
    }
    rt_jw_arr_end(&w);
    rt_jw_kbool(&w, "nccl", gpus > 0 && rt_nccl_available());
    rt_jw_kstr(&w, "cpu", model);
    rt_jw_kstr(&w, "isa", isa);
    rt_jw_kint(&w, "cores", sysconf(_SC_NPROCESSORS_ONLN));
    rt_jw_kint(&w, "memory_bytes", (int64_t)mem);
    /* OpenBLAS, for the programs exec jobs run: the kernels ranks get (with
     * the core type the agent sets for them, when OpenBLAS's own pick is
     * worse than the CPU can do) */
    const char *blas_set = rt_blas_core_advice();
    rt_jw_kstr(&w, "blas_core", blas_set ? blas_set : rt_cpu_blas_core());
    rt_jw_kstr(&w, "blas_own", rt_cpu_blas_core());
    rt_jw_kstr(&w, "blas_set", blas_set ? blas_set : "");
    rt_jw_kstr(&w, "gemm_kernel", rt_cpu_gemm_kernel());
    rt_jw_obj_end(&w);
    char *text = rt_jw_take(&w, NULL);
    if (!text)
        return 1;
    printf("%s\n", text);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--probe") == 0)
        return probe();
    if (argc != 2 || argv[1][0] == '-') {
        bool help = argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
        fprintf(help ? stdout : stderr,
                "usage: ringtrain-worker JOB.INI   (one rank of a training job)\n"
                "       ringtrain-worker --probe   (this node's GPUs, CPU and BLAS, as JSON)\n");
        return help ? 0 : 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    rt_job_cfg cfg;
    rt_cfg_errors e = {0};
    if (rt_cfg_load_file(&rt_job_schema, argv[1], &cfg, &e) != RT_OK) {
        fprintf(stderr, "worker: %s is not a valid job file:\n", argv[1]);
        rt_cfg_errors_print(&e, stderr);
        rt_cfg_errors_free(&e);
        rt_cfg_free(&rt_job_schema, &cfg);
        return 2;
    }
    if (cfg.type == RT_JOB_SWEEP) { /* a sweep's last step: its results */
        int rc = rt_sweep_finish(&cfg, argv[1]);
        rt_cfg_free(&rt_job_schema, &cfg);
        return rc;
    }
    if (cfg.type != RT_JOB_TRAIN) {
        fprintf(stderr, "worker: %s is not a training job\n", argv[1]);
        rt_cfg_free(&rt_job_schema, &cfg);
        return 2;
    }
    int rc = rt_worker_run(&cfg);
    rt_cfg_free(&rt_job_schema, &cfg);
    return rc;
}
