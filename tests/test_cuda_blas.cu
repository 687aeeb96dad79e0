/* test_cuda_blas.cu — the CUDA backend's cuBLAS/cuBLASLt table
 * (kernels/cuda_blas.cu) on a machine with the CUDA toolkit, GPU or not:
 * the libraries are not in the process until the table is loaded, every
 * function is found, a call goes through, and a library that is missing or
 * lacks a function is an error naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
extern "C" {
#include <cmocka.h>
}

#include "cuda_blas.cuh"

/* whether a library whose file name starts with name is mapped */
static bool mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        const char *slash = strrchr(line, '/');
        found = slash && !strncmp(slash + 1, name, strlen(name));
    }
    if (f)
        fclose(f);
    return found;
}

static void test_loaded_on_demand(void **state)
{
    (void)state;
    /* the kernels are linked into this test, as into the CLI and the worker */
    assert_false(mapped("libcublasLt.so"));
    assert_false(mapped("libcublas.so"));
    char err[RT_ERR_LEN] = "";
    rt_status st = rt_cublas_load(err);
    if (st != RT_OK)
        fail_msg("rt_cublas_load: %s", err);
    assert_true(mapped("libcublasLt.so") && mapped("libcublas.so"));
    const void *const *fn = (const void *const *)&rt_cublas;
    for (size_t i = 0; i < sizeof rt_cublas / sizeof(void *); i++)
        assert_non_null(fn[i]);
    /* a call into the library, no device needed */
    const char *ok = rt_cublas.cublasGetStatusString(CUBLAS_STATUS_SUCCESS);
    const char *bad = rt_cublas.cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED);
    assert_true(ok && bad && ok[0] && bad[0] && strcmp(ok, bad) != 0);
    assert_int_equal(rt_cublas_load(err), RT_OK); /* once */
}

static void test_missing_library(void **state)
{
    (void)state;
    rt_cublas_api api;
    char err[RT_ERR_LEN] = "";
    assert_int_equal(rt_cublas_load_from(RT_CUBLAS_SONAME("libcublas"),
                                         RT_CUBLAS_SONAME("libcublasLt-nosuch"), &api, err),
                     RT_ERR_DEVICE);
    assert_non_null(strstr(err, "cannot load " RT_CUBLAS_SONAME("libcublasLt-nosuch") ": "));
    assert_non_null(strstr(err, "not beside libcudart ("));
    assert_non_null(strstr(err, "the CUDA toolkit's cuBLAS"));
    /* a library that is there, without cuBLAS's functions */
    assert_int_equal(rt_cublas_load_from("libz.so.1", RT_CUBLAS_SONAME("libcublasLt"), &api, err),
                     RT_ERR_DEVICE);
    assert_non_null(strstr(err, "libz.so.1 has no cublasCreate_v2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loaded_on_demand),
        cmocka_unit_test(test_missing_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
