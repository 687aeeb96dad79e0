/* rt_tmp.c — paths removed if a signal ends the process (rt_tmp.h).
 *
 * The slots: 0 free, 1 being written, 2 tracked; a slot is claimed with a
 * compare-and-swap (any thread may track), its path written, then marked
 * tracked, so the handler never reads a path half written.  The handler
 * walks a folder with getdents64 on a descriptor (opendir would allocate)
 * and removes as it goes; a pass that removed entries reads the folder
 * again from its start, since removing while reading may skip some. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt_tmp.h"

#define TMP_PATH_MAX 1200
#define TMP_DEPTH_MAX 48

static int tmp_state[RT_TMP_SLOTS];
static char tmp_path[RT_TMP_SLOTS][TMP_PATH_MAX];
static int tmp_installed;

static const int TMP_SIGNALS[] = {SIGINT, SIGTERM, SIGHUP};

struct tmp_dirent { /* the kernel's linux_dirent64 */
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

static void remove_at(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM) ||
        depth >= TMP_DEPTH_MAX)
        return;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[2048] __attribute__((aligned(8)));
    for (int pass = 0; pass < 8; pass++) {
        int removed = 0;
        long n;
        lseek(fd, 0, SEEK_SET);
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
            for (long at = 0; at < n;) {
                const struct tmp_dirent *d = (const struct tmp_dirent *)(buf + at);
                at += d->reclen;
                if (strcmp(d->name, ".") && strcmp(d->name, "..")) {
                    remove_at(fd, d->name, depth + 1);
                    removed++;
                }
            }
        }
        if (removed == 0)
            break;
    }
    close(fd);
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void on_signal(int sig)
{
    for (int i = 0; i < RT_TMP_SLOTS; i++)
        if (__atomic_load_n(&tmp_state[i], __ATOMIC_ACQUIRE) == 2)
            remove_at(AT_FDCWD, tmp_path[i], 0);
    /* die of the same signal, as without this handler */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered when the handler returns */
}

static void install(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&tmp_installed, &expected, 1, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    for (size_t i = 0; i < sizeof TMP_SIGNALS / sizeof *TMP_SIGNALS; i++) {
        struct sigaction old, sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof TMP_SIGNALS / sizeof *TMP_SIGNALS; k++)
            sigaddset(&sa.sa_mask, TMP_SIGNALS[k]); /* one removal at a time */
        if (sigaction(TMP_SIGNALS[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(TMP_SIGNALS[i], &sa, NULL);
    }
}

int rt_tmp_track(const char *path)
{
    if (!path || !path[0] || strlen(path) >= TMP_PATH_MAX)
        return -1;
    install();
    for (int i = 0; i < RT_TMP_SLOTS; i++) {
        int expected = 0;
        if (__atomic_compare_exchange_n(&tmp_state[i], &expected, 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            snprintf(tmp_path[i], TMP_PATH_MAX, "%s", path);
            __atomic_store_n(&tmp_state[i], 2, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -1;
}

void rt_tmp_untrack(int slot)
{
    if (slot >= 0 && slot < RT_TMP_SLOTS)
        __atomic_store_n(&tmp_state[slot], 0, __ATOMIC_RELEASE);
}
