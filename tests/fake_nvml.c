/* fake_nvml.c — a stand-in for NVIDIA's libnvidia-ml, for the agent's
 * per-rank GPU sampling (agent_usage.c) on machines without a GPU: loaded
 * by an agent through RINGTRAIN_NVML_LIBRARY.  One device.  Its "compute
 * processes" are the loading process's children that were given a GPU
 * (CUDA_VISIBLE_DEVICES in their environment): 256 MiB each, 42% SM
 * utilisation in one fresh sample per process and call.  Only the calls the
 * agent makes, with nvml.h's types and return codes (0 = NVML_SUCCESS). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    unsigned int pid;
    unsigned long long used_bytes;
    unsigned int gpu_instance, compute_instance;
} nv_proc;
typedef struct {
    unsigned int pid;
    unsigned long long ts_us;
    unsigned int sm, mem, enc, dec;
} nv_sample;
typedef struct {
    unsigned int gpu, memory;
} nv_util;

enum { OK = 0, INVALID_ARGUMENT = 2, INSUFFICIENT_SIZE = 7 };
static int device; /* its address is the one handle */

int nvmlInit_v2(void) { return OK; }
int nvmlShutdown(void) { return OK; }

int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = 1;
    return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
    if (i != 0)
        return INVALID_ARGUMENT;
    *h = &device;
    return OK;
}

/* Children of this process whose environment holds CUDA_VISIBLE_DEVICES. */
static int gpu_children(unsigned int *pids, int max)
{
    int n = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d)) && n < max;) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[64], buf[8192];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[len] = '\0';
        const char *p = strrchr(buf, ')');
        int ppid = 0;
        if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1 || ppid != getpid())
            continue;
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        f = fopen(path, "r");
        len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[len] = '\0';
        for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
            if (!strncmp(buf + i, "CUDA_VISIBLE_DEVICES=", 21)) {
                pids[n++] = (unsigned int)atoi(e->d_name);
                break;
            }
    }
    if (d)
        closedir(d);
    return n;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count, nv_proc *out)
{
    if (h != &device || !count)
        return INVALID_ARGUMENT;
    unsigned int pids[256];
    int n = gpu_children(pids, 256);
    if ((unsigned int)n > *count) {
        *count = (unsigned int)n;
        return INSUFFICIENT_SIZE;
    }
    for (int i = 0; i < n; i++)
        out[i] = (nv_proc){pids[i], 256ull << 20, 0, 0};
    *count = (unsigned int)n;
    return OK;
}

int nvmlDeviceGetProcessUtilization(void *h, nv_sample *out, unsigned int *count,
                                    unsigned long long since_us)
{
    if (h != &device || !count)
        return INVALID_ARGUMENT;
    unsigned int pids[256];
    int n = gpu_children(pids, 256);
    if ((unsigned int)n > *count || !out) {
        *count = (unsigned int)n;
        return INSUFFICIENT_SIZE;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long now = (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
    if (now <= since_us)
        now = since_us + 1;
    for (int i = 0; i < n; i++)
        out[i] = (nv_sample){pids[i], now, 42, 10, 0, 0};
    *count = (unsigned int)n;
    return OK;
}

int nvmlDeviceGetUtilizationRates(void *h, nv_util *u)
{
    if (h != &device)
        return INVALID_ARGUMENT;
    *u = (nv_util){50, 20};
    return OK;
}
