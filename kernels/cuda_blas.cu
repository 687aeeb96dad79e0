/* cuda_blas.cu — the table of cuBLAS and cuBLASLt functions the CUDA
 * backend calls (cuda_blas.cuh says why it is loaded, not linked). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "cuda_blas.cuh"

rt_cublas_api rt_cublas;

#ifdef RT_CUDA_EMULATED

rt_status rt_cublas_load_from(const char *blas, const char *lt, rt_cublas_api *api, char *err)
{
    (void)blas, (void)lt, (void)err;
#define RT_CUBLAS_SET(name) api->name = &name;
    RT_CUBLAS_FNS(RT_CUBLAS_SET)
    RT_CUBLASLT_FNS(RT_CUBLAS_SET)
    RT_CUBLAS_SET(cublasGemmEx)
#undef RT_CUBLAS_SET
    return RT_OK;
}

#else

/* name, or else the file of that name beside libcudart: where a library
 * path (RUNPATH, LD_LIBRARY_PATH) found the runtime but not cuBLAS */
static void *open_lib(const char *name, char *why, size_t len)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h)
        return h;
    snprintf(why, len, "%s", dlerror());
    Dl_info info;
    const char *slash;
    if (strchr(name, '/') || !dladdr((void *)&cudaGetDeviceCount, &info) || !info.dli_fname ||
        !(slash = strrchr(info.dli_fname, '/')))
        return NULL;
    char beside[4096];
    snprintf(beside, sizeof beside, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, name);
    if ((h = dlopen(beside, RTLD_NOW | RTLD_LOCAL)) == NULL)
        snprintf(why + strlen(why), len - strlen(why), "; not beside libcudart (%s) either",
                 beside);
    return h;
}

rt_status rt_cublas_load_from(const char *blas, const char *lt, rt_cublas_api *api, char *err)
{
    char why[1200];
    /* cuBLASLt first: cuBLAS needs it, and finds it loaded */
    void *hlt = open_lib(lt, why, sizeof why);
    void *hblas = hlt ? open_lib(blas, why, sizeof why) : NULL;
    if (!hblas) {
        if (hlt)
            dlclose(hlt);
        return rt_err(err, RT_ERR_DEVICE,
                      "cannot load %s: %s; a CUDA job needs the CUDA toolkit's cuBLAS %d "
                      "libraries where the dynamic linker finds them (ldconfig, "
                      "LD_LIBRARY_PATH) or beside libcudart",
                      hlt ? blas : lt, why, CUBLAS_VER_MAJOR);
    }
    /* the handles stay open: the process keeps the functions */
#define RT_CUBLAS_SYM(h, lib, name)                                     \
    if ((*(void **)&api->name = dlsym(h, RT_CUBLAS_STR(name))) == NULL) \
        return rt_err(err, RT_ERR_DEVICE,                               \
                      "%s has no %s: a cuBLAS older than the %d this "  \
                      "build was compiled against?",                    \
                      lib, RT_CUBLAS_STR(name), CUBLAS_VER_MAJOR);
#define RT_CUBLAS_SYM_BLAS(name) RT_CUBLAS_SYM(hblas, blas, name)
#define RT_CUBLAS_SYM_LT(name) RT_CUBLAS_SYM(hlt, lt, name)
    RT_CUBLAS_FNS(RT_CUBLAS_SYM_BLAS)
    RT_CUBLASLT_FNS(RT_CUBLAS_SYM_LT)
    RT_CUBLAS_SYM_BLAS(cublasGemmEx)
#undef RT_CUBLAS_SYM_LT
#undef RT_CUBLAS_SYM_BLAS
#undef RT_CUBLAS_SYM
    return RT_OK;
}

#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static rt_status load_status;
static char load_err[RT_ERR_LEN];

static void load(void)
{
    load_status = rt_cublas_load_from(RT_CUBLAS_SONAME("libcublas"),
                                      RT_CUBLAS_SONAME("libcublasLt"), &rt_cublas, load_err);
}

rt_status rt_cublas_load(char *err)
{
    pthread_once(&load_once, load);
    return load_status == RT_OK ? RT_OK : rt_err(err, load_status, "%s", load_err);
}
