/* deny_amx.c — an LD_PRELOAD shim for test_gemm_cpu.amx_refused: libc's
 * syscall() as it is, but for arch_prctl(ARCH_REQ_XCOMP_PERM), which fails
 * with EPERM as it does on a kernel before 5.16 or in a sandbox that
 * refuses it — the process is then not allowed AMX's tile state. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

long syscall(long n, ...)
{
    va_list ap;
    va_start(ap, n);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (n == SYS_arch_prctl && a[0] == 0x1023 /* ARCH_REQ_XCOMP_PERM */) {
        errno = EPERM;
        return -1;
    }
    long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
