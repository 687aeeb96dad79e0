/* hostid.c — the host hash, as Horovod computes it: the short hostname plus
 * a digest of the kernel namespaces this process lives in, so two containers
 * on one machine are two hosts and two agents in one namespace are one; and
 * the machine under them (the kernel's boot id), whose CPUs they share. */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

void rt_host_id(char *out, size_t len)
{
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    char *dot = strchr(host, '.');
    if (dot)
        *dot = '\0';
    static const char *const ns[] = {"mnt", "net", "uts", "ipc", "pid", "cgroup", "user"};
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    EVP_DigestUpdate(md, host, strlen(host));
    for (size_t i = 0; i < RT_ARRAY_LEN(ns); i++) {
        char path[64], link[128];
        snprintf(path, sizeof path, "/proc/self/ns/%s", ns[i]);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n > 0)
            EVP_DigestUpdate(md, link, (size_t)n);
    }
    unsigned char d[32];
    unsigned dl = 0;
    EVP_DigestFinal_ex(md, d, &dl);
    EVP_MD_CTX_free(md);
    snprintf(out, len, "%s-%02x%02x%02x%02x%02x%02x%02x%02x", host, d[0], d[1], d[2], d[3], d[4],
             d[5], d[6], d[7]);
}

void rt_machine_id(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    if (!fgets(out, (int)len, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}
