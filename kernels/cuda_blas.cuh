/* cuda_blas.cuh — private to the CUDA backend: cuBLAS and cuBLASLt reached
 * through the table rt_cublas, which the first CUDA context fills
 * (rt_cublas_load), not through the dynamic linker at start.  A process
 * linked with libcublasLt pays its static constructors at every start —
 * 0.35 s and 210 MB resident on the 2-core EPYC, GPU or not — and the CLI
 * and every rank of a CPU job link the kernels.  Under cudaemu the table
 * holds the emulator's functions.
 *
 * A call is written rt_cublas.NAME(...) with NAME the API's own name; the
 * _v2 names cublas_v2.h maps some of them to are what is looked up.  Each
 * function the backend calls is in one of the two lists (or is
 * cublasGemmEx, below). */
#ifndef RT_CUDA_BLAS_CUH
#define RT_CUDA_BLAS_CUH

#include <cublasLt.h>
#include <cublas_v2.h>

#include "rt_status.h"

/* clang-format off */
#define RT_CUBLAS_FNS(X)                                                      \
    X(cublasCreate) X(cublasDestroy) X(cublasSetStream) X(cublasSetWorkspace) \
    X(cublasGetStatusString)
#define RT_CUBLASLT_FNS(X)                                                    \
    X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmul)                    \
    X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                  \
    X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)           \
    X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate)          \
    X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) \
    X(cublasLtMatmulAlgoGetHeuristic)
/* clang-format on */

struct rt_cublas_api {
#define RT_CUBLAS_MEMBER(name) decltype(&::name) name;
    RT_CUBLAS_FNS(RT_CUBLAS_MEMBER)
    RT_CUBLASLT_FNS(RT_CUBLAS_MEMBER)
#undef RT_CUBLAS_MEMBER
    /* C++ overloads cublasGemmEx (a cudaDataType compute type): the C API's */
    cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   int, const void *, const void *, cudaDataType, int, const void *,
                                   cudaDataType, int, const void *, void *, cudaDataType, int,
                                   cublasComputeType_t, cublasGemmAlgo_t);
};

extern rt_cublas_api rt_cublas;

/* "libcublasLt.so.13": the soname of the cuBLAS this build was compiled
 * against (under cudaemu, unused: the name as given) */
#define RT_CUBLAS_STR1(x) #x
#define RT_CUBLAS_STR(x) RT_CUBLAS_STR1(x)
#ifdef RT_CUDA_EMULATED
#define RT_CUBLAS_SONAME(lib) lib
#else
#define RT_CUBLAS_SONAME(lib) lib ".so." RT_CUBLAS_STR(CUBLAS_VER_MAJOR)
#endif

/* Fill rt_cublas, once per process (later calls return the first
 * outcome).  A library that cannot be loaded, or lacks a function, is an
 * error naming it and where it was looked for. */
rt_status rt_cublas_load(char *err);

/* The same from the named libraries (sonames or paths) into *api: the
 * loader's steps, for its test. */
rt_status rt_cublas_load_from(const char *blas, const char *lt, rt_cublas_api *api, char *err);

#endif
