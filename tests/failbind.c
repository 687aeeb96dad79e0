/* failbind.c — an LD_PRELOAD shim for test_install.sh: the first
 * ringtrain-coordinator to bind a socket after the file $RT_FAILBIND_FLAG is
 * created gets EADDRINUSE, as when another process takes a port found free
 * before the coordinator binds it.  Every other bind is the real one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    int (*real)(int, const struct sockaddr *, socklen_t) =
        (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
    const char *flag = getenv("RT_FAILBIND_FLAG");
    char exe[512] = {0};
    if (flag && readlink("/proc/self/exe", exe, sizeof exe - 1) > 0 &&
        strstr(exe, "ringtrain-coordinator")) {
        int f = open(flag, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (f >= 0) {
            close(f);
            errno = EADDRINUSE;
            return -1;
        }
    }
    return real(fd, addr, len);
}
