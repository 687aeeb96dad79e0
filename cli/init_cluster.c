/* init_cluster.c — `ringtrain init-cluster DIR [--san NAME]... [--force]`:
 * everything a new cluster needs, made with OpenSSL:
 *   ca.crt / ca.key                   the cluster CA (P-256, 10 years)
 *   coordinator.crt / coordinator.key its server certificate, signed by the
 *                                     CA, naming localhost, 127.0.0.1, ::1,
 *                                     this host and every --san
 *   token                             the agents' registration token (32
 *                                     random bytes in hex); the API refuses it
 *   admin.token                       the API's admin token (the CLI's, and
 *                                     the one that makes more, with roles)
 *   coordinator.conf, agent.conf, cli.conf   ready-to-edit examples
 * Private keys and tokens are written 0600, the rest 0644 (install them 0640
 * with group ringtrain under the units, as the README says); existing files
 * are kept unless --force. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "rt_hex.h"

static FILE *create(const char *dir, const char *name, mode_t mode, bool force, char *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), mode);
    if (fd < 0) {
        rt_err(err, RT_ERR_IO, "cannot create %s: %s%s", path, strerror(errno),
               errno == EEXIST ? " (use --force to replace it)" : "");
        return NULL;
    }
    fchmod(fd, mode);
    return fdopen(fd, "w");
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ex)
        return false;
    int ok = X509_add_ext(cert, ex, -1);
    X509_EXTENSION_free(ex);
    return ok == 1;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                       long days, bool ca, const char *san)
{
    X509 *x = X509_new();
    if (!x)
        return NULL;
    unsigned char serial[16];
    RAND_bytes(serial, sizeof serial);
    serial[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    bool ok = X509_set_version(x, 2) == 1 && bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    BN_free(bn);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), days * 86400L);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"ringtrain", -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509 *iss = issuer ? issuer : x;
    ok = ok && add_ext(x, iss, NID_subject_key_identifier, "hash");
    if (ca) {
        ok = ok && add_ext(x, iss, NID_basic_constraints, "critical,CA:TRUE") &&
             add_ext(x, iss, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        ok = ok && add_ext(x, iss, NID_basic_constraints, "critical,CA:FALSE") &&
             add_ext(x, iss, NID_key_usage, "critical,digitalSignature") &&
             add_ext(x, iss, NID_ext_key_usage, "serverAuth") &&
             add_ext(x, iss, NID_authority_key_identifier, "keyid:always") &&
             add_ext(x, iss, NID_subject_alt_name, san);
    }
    ok = ok && X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static bool is_ip(const char *s)
{
    unsigned char b[16];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

rt_status rt_make_cluster(const char *dir, const char *const *sans, int nsans, bool force,
                          char *err)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return rt_err(err, RT_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    char san[4096];
    int n = snprintf(san, sizeof san, "DNS:localhost,IP:127.0.0.1,IP:::1,DNS:%s", host);
    for (int i = 0; i < nsans && n < (int)sizeof san - 300; i++)
        n += snprintf(san + n, sizeof san - (size_t)n, ",%s:%s", is_ip(sans[i]) ? "IP" : "DNS",
                      sans[i]);
    EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *co_key = EVP_EC_gen("P-256");
    X509 *ca = ca_key ? make_cert(ca_key, "ringtrain cluster CA", NULL, NULL, 3650, true, NULL) : NULL;
    X509 *co = ca && co_key ? make_cert(co_key, "ringtrain-coordinator", ca, ca_key, 1825, false, san)
                            : NULL;
    rt_status st = RT_OK;
    if (!co)
        st = rt_err(err, RT_ERR_IO, "certificate generation failed");
    struct {
        const char *name;
        mode_t mode;
    } files[] = {{"ca.crt", 0644}, {"ca.key", 0600}, {"coordinator.crt", 0644},
                 {"coordinator.key", 0600}, {"token", 0600}, {"admin.token", 0600}};
    for (size_t i = 0; i < RT_ARRAY_LEN(files) && st == RT_OK; i++) {
        FILE *f = create(dir, files[i].name, files[i].mode, force, err);
        if (!f) {
            st = RT_ERR_IO;
            break;
        }
        bool ok = true;
        switch (i) {
        case 0: ok = PEM_write_X509(f, ca) == 1; break;
        case 1: ok = PEM_write_PrivateKey(f, ca_key, NULL, NULL, 0, NULL, NULL) == 1; break;
        case 2: ok = PEM_write_X509(f, co) == 1 && PEM_write_X509(f, ca) == 1; break;
        case 3: ok = PEM_write_PrivateKey(f, co_key, NULL, NULL, 0, NULL, NULL) == 1; break;
        case 4:
        case 5: {
            uint8_t t[32];
            char hex[65];
            rt_random_bytes(t, sizeof t);
            rt_hex_encode(t, sizeof t, hex);
            ok = fprintf(f, "%s\n", hex) > 0;
            break;
        }
        }
        if (fclose(f) != 0 || !ok)
            st = rt_err(err, RT_ERR_IO, "writing %s/%s failed", dir, files[i].name);
    }
    X509_free(ca);
    X509_free(co);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(co_key);
    if (st != RT_OK)
        return st;
    /* example configurations next to the material (paths relative to them) */
    const char *confs[][2] = {
        {"coordinator.conf",
         "; ringtrain-coordinator (see `ringtrain-coordinator --print-config`)\n[coordinator]\n"
         "listen = 0.0.0.0:7070\nhttp_listen = 127.0.0.1:7071\ncert = coordinator.crt\n"
         "key = coordinator.key\ntoken_file = token\nadmin_token_file = admin.token\n"
         "; state_db: by default state.db in the unit's StateDirectory (/var/lib/ringtrain),\n"
         "; or beside this file when not run by systemd\n"},
        {"agent.conf",
         "; ringtrain-agent (see `ringtrain-agent --print-config`); copy to every node with\n"
         "; ca.crt and token, and point `coordinator` at the coordinator's host\n[agent]\n"
         "coordinator = 127.0.0.1:7070\nca = ca.crt\ntoken_file = token\n"
         "; work_dir and log_dir: by default work in the unit's StateDirectory and its\n"
         "; LogsDirectory (/var/lib/ringtrain/work, /var/log/ringtrain), or beside this file\n"
         "; each job's ranks run as a uid of their own (FIRST + job id mod the range's size),\n"
         "; the same range on every node, one no account uses; without it an agent run as\n"
         "; root refuses jobs unless allow_root_jobs = true\n"
         "job_uids = 1900000000-1900999999\n"
         "; what a job's files may take on a node, and the free space the agent keeps\n"
         "job_disk_limit = 20G\nmin_free_disk = 1G\n"},
        {"cli.conf",
         "; the ringtrain CLI; copy to ~/.config/ringtrain/cli.conf with ca.crt and an API\n"
         "; token: admin.token, or one made by `ringtrain token create --role submit NAME`\n"
         "[cli]\ncoordinator = 127.0.0.1:7071\nca = ca.crt\ntoken_file = admin.token\n"},
    };
    for (size_t i = 0; i < RT_ARRAY_LEN(confs); i++) {
        FILE *f = create(dir, confs[i][0], 0644, force, err);
        if (!f)
            return RT_ERR_IO;
        fputs(confs[i][1], f);
        fclose(f);
    }
    return RT_OK;
}

int cli_init_cluster(const cli_args *a)
{
    const char *dir = a->pos[0];
    const char *const *sans;
    int nsans = cli_list(a, "--san", &sans);
    bool force = cli_switch(a, "--force");
    char err[RT_ERR_LEN];
    if (rt_make_cluster(dir, sans, nsans, force, err) != RT_OK) {
        fprintf(stderr, "ringtrain init-cluster: %s\n", err);
        return 1;
    }
    printf("cluster material in %s: ca.crt, ca.key (keep offline), coordinator.crt, "
           "coordinator.key, token (agents only), admin.token (the API's admin), and example "
           "coordinator.conf, agent.conf, cli.conf\n",
           dir);
    return 0;
}
