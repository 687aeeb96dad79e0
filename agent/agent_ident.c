/* agent_ident.c — whom a job's ranks run as.
 *
 * Slurm runs a job as the user who submitted it; Kubernetes runs a pod as a
 * uid of its own.  The agent does either, so that no job can read another's
 * rendezvous file (its data-plane key), work folder or processes, nor the
 * agent's token:
 *   - the job's token names a Unix user (`token create NAME --role submit
 *     --unix-user alice`): its ranks run as alice, with her groups;
 *   - else, with `[agent] job_uids = FIRST-LAST`: as uid and gid FIRST +
 *     (job id mod the range's size) — the same on every node and for every
 *     attempt, so a restarted job can rewrite the checkpoint it wrote; two
 *     jobs of this node with the same uid (ids a range apart, both running)
 *     are refused rather than share it;
 *   - else as the agent's own user (`ringtrain run`, one user's machine) —
 *     but never as root unless [agent] allow_root_jobs says so: an agent
 *     run as root without job_uids refuses the job, naming the setting
 *     (Slurm runs no job as root unless root submitted it).
 * The agent needs CAP_SETUID and CAP_SETGID to become them, CAP_CHOWN to
 * give a job its folder, CAP_KILL to stop its ranks: the unit grants these
 * four and no others (root has them too).  It never becomes a job itself:
 * the child it forks execs ringtrain-launch (launch.h), which changes uid,
 * clears its ambient, permitted and effective capabilities, sets
 * no_new_privs and execs the rank — so no process of a job's uid ever holds
 * the agent's memory (the token, other jobs' keys). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "launch.h"
#include "rt_hex.h"
#include "rt_log.h"

#define UID_MAX_ID 2147483646u /* ids past 2^31 trip tools that read them signed */

/* "FIRST-LAST" into the range, or an error naming the key */
static rt_status parse_range(const char *text, uid_t *lo, uid_t *hi, char *err)
{
    char *end = NULL;
    errno = 0;
    unsigned long a = strtoul(text, &end, 10), b = 0;
    bool ok = end != text && *end == '-' && errno == 0;
    if (ok) {
        const char *s = end + 1;
        b = strtoul(s, &end, 10);
        ok = end != s && *end == '\0' && errno == 0;
    }
    if (!ok || text[0] == '-' || a == 0 || b < a || b > UID_MAX_ID)
        return rt_err(err, RT_ERR_INVALID,
                      "[agent] job_uids = '%s': expected FIRST-LAST, 0 < FIRST <= LAST <= %u "
                      "(e.g. 1900000000-1900999999)",
                      text, UID_MAX_ID);
    *lo = (uid_t)a;
    *hi = (uid_t)b;
    return RT_OK;
}

/* No account or group may own an id of the range: a job would be it. */
static rt_status range_unused(uid_t lo, uid_t hi, char *err)
{
    rt_status st = RT_OK;
    setpwent();
    for (struct passwd *p; st == RT_OK && (p = getpwent());)
        if (p->pw_uid >= lo && p->pw_uid <= hi)
            st = rt_err(err, RT_ERR_INVALID,
                        "[agent] job_uids %u-%u holds the uid of user %s (%u): pick a range no "
                        "account uses",
                        (unsigned)lo, (unsigned)hi, p->pw_name, (unsigned)p->pw_uid);
    endpwent();
    setgrent();
    for (struct group *g; st == RT_OK && (g = getgrent());)
        if (g->gr_gid >= lo && g->gr_gid <= hi)
            st = rt_err(err, RT_ERR_INVALID,
                        "[agent] job_uids %u-%u holds the gid of group %s (%u): pick a range no "
                        "group uses",
                        (unsigned)lo, (unsigned)hi, g->gr_name, (unsigned)g->gr_gid);
    endgrent();
    return st;
}

/* Run `ringtrain-launch probe` as uid FIRST of the range (without a range:
 * as the agent's own user, the token's hiding only) and collect what it
 * found; *can_kill: whether this agent could signal it meanwhile. */
static bool run_probe(agentd *ag, bool with_uid, launch_probe *r, bool *can_kill, int *kill_err)
{
    char u[24], g[24];
    snprintf(u, sizeof u, "%u", (unsigned)ag->uid_lo);
    snprintf(g, sizeof g, "%u", (unsigned)ag->uid_lo);
    char *argv[16];
    int n = 0;
    argv[n++] = ag->launch_exe;
    argv[n++] = "probe";
    if (with_uid) {
        argv[n++] = "--uid";
        argv[n++] = u;
        argv[n++] = "--gid";
        argv[n++] = g;
    }
    argv[n++] = "--workdir";
    argv[n++] = ag->cfg.work_dir;
    argv[n++] = "--token";
    argv[n++] = ag->cfg.token_file;
    if (ag->cfg.hide_token)
        argv[n++] = "--try-hide";
    argv[n] = NULL;
    int res[2], hold[2];
    if (pipe2(res, O_CLOEXEC) != 0)
        return false;
    if (pipe2(hold, O_CLOEXEC) != 0) {
        close(res[0]);
        close(res[1]);
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(hold[0], 0);
        dup2(res[1], 1);
        char *envp[] = {NULL};
        execve(ag->launch_exe, argv, envp);
        _exit(127);
    }
    close(res[1]);
    close(hold[0]);
    *r = (launch_probe){.stage = 1, .err = EAGAIN};
    bool got = pid > 0 && read(res[0], r, sizeof *r) == (ssize_t)sizeof *r;
    *can_kill = got && kill(pid, 0) == 0;
    *kill_err = errno;
    close(hold[1]); /* the child exits */
    close(res[0]);
    int status;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return got;
}

/* Without job_uids: whether the token can be hidden from ranks running as
 * the agent's own user. */
static void probe_hiding(agentd *ag)
{
    ag->token_hidden = false;
    if (!ag->cfg.hide_token)
        return;
    if (geteuid() == 0) {
        RT_WARN("agent",
                "running as root: ranks can read %s (run the agent as its service "
                "user, as the unit does)",
                ag->cfg.token_file);
        return;
    }
    launch_probe r;
    bool can_kill;
    int e;
    ag->token_hidden = run_probe(ag, false, &r, &can_kill, &e) && r.hidden;
    if (ag->token_hidden)
        RT_INFO("agent", "ranks see an empty %s (a user and mount namespace each)",
                ag->cfg.token_file);
    else
        RT_WARN("agent",
                "cannot hide %s from the ranks (user namespaces unavailable?): they "
                "can read it",
                ag->cfg.token_file);
}

/* Two agents on one host whose job_uids overlap would run two jobs as one
 * uid — another cluster's, or the same cluster's under another range's
 * mapping: each could read the other's files, and each one's end-of-job
 * reap (kill(-1) as the uid) and cleanup of /tmp would reach the other's
 * ranks.  So an agent claims its range while it runs, with an abstract Unix
 * socket named "ringtrain-job-uids:LO-HI:CLUSTER:RANDOM" (CLUSTER: 16 hex of
 * the SHA-256 of the cluster's CA certificate), and refuses to start beside
 * a claim that overlaps its range unless it is the same cluster's with the
 * same range (agents of one cluster sharing a host map every job alike).
 * Abstract names live in the network namespace: "this host" as the agents'
 * host ids see it.  Both of two agents starting at once may refuse; neither
 * runs jobs beside the other. */
#define CLAIM_PREFIX "ringtrain-job-uids:"

static void cluster_tag(const char *ca_file, char tag[17])
{
    unsigned char md[EVP_MAX_MD_SIZE], buf[8192];
    unsigned int n = 0;
    memset(md, 0, sizeof md);
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    FILE *f = ca_file ? fopen(ca_file, "rb") : NULL;
    bool ok = x && EVP_DigestInit_ex(x, EVP_sha256(), NULL) == 1;
    for (size_t got; ok && f && (got = fread(buf, 1, sizeof buf, f)) > 0;)
        ok = EVP_DigestUpdate(x, buf, got) == 1;
    if (ok)
        EVP_DigestFinal_ex(x, md, &n);
    if (f)
        fclose(f);
    EVP_MD_CTX_free(x);
    rt_hex_encode(md, 8, tag);
}

static rt_status claim_range(agentd *ag, char *err)
{
    char tag[17], rnd_hex[17], mine[108];
    uint8_t rnd[8];
    cluster_tag(ag->cfg.ca, tag);
    if (RAND_bytes(rnd, sizeof rnd) != 1)
        return rt_err(err, RT_ERR_IO, "[agent] job_uids: no random bytes for its claim");
    rt_hex_encode(rnd, sizeof rnd, rnd_hex);
    snprintf(mine, sizeof mine, CLAIM_PREFIX "%u-%u:%s:%s", (unsigned)ag->uid_lo,
             (unsigned)ag->uid_hi, tag, rnd_hex);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path + 1, mine, strlen(mine)); /* sun_path[0] = 0: abstract */
    const socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(mine));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, alen) != 0) {
        rt_status st = rt_err(err, RT_ERR_IO,
                              "[agent] job_uids: cannot claim the range on this "
                              "host (an abstract Unix socket): %s",
                              strerror(errno));
        if (fd >= 0)
            close(fd);
        return st;
    }
    ag->uid_claim_fd = fd;
    FILE *f = fopen("/proc/net/unix", "r");
    if (!f) {
        RT_WARN("agent",
                "cannot read /proc/net/unix (%s): no check that another agent here "
                "uses job_uids %s",
                strerror(errno), ag->cfg.job_uids);
        return RT_OK;
    }
    char line[512];
    rt_status st = RT_OK;
    while (st == RT_OK && fgets(line, sizeof line, f)) {
        /* "Num RefCount Protocol Flags Type St Inode Path": the path last */
        const char *name = strstr(line, "@" CLAIM_PREFIX);
        if (!name)
            continue;
        name++;
        unsigned lo = 0, hi = 0;
        char other_tag[17] = "", other_rnd[17] = "";
        if (sscanf(name, CLAIM_PREFIX "%u-%u:%16[0-9a-f]:%16[0-9a-f]", &lo, &hi, other_tag,
                   other_rnd) != 4 ||
            !strcmp(other_rnd, rnd_hex))
            continue;
        if (hi < ag->uid_lo || lo > ag->uid_hi)
            continue;
        const bool same_cluster = !strcmp(other_tag, tag);
        if (same_cluster && lo == ag->uid_lo && hi == ag->uid_hi)
            continue;
        st = rt_err(err, RT_ERR_INVALID,
                    "[agent] job_uids %s overlaps %u-%u, the range of another ringtrain-agent "
                    "on this host (%s): jobs of both would run as one uid, and could read and "
                    "stop each other's; %s",
                    ag->cfg.job_uids, lo, hi, same_cluster ? "this cluster's" : "another cluster's",
                    same_cluster ? "agents of one cluster on one host need the same range"
                                 : "give each cluster's agent a range of its own");
    }
    fclose(f);
    return st;
}

rt_status ident_init(agentd *ag, char *err)
{
    ag->ids_on = false;
    char self[900];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sn > 0 ? sn : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(ag->launch_exe, sizeof ag->launch_exe, "%s/" LAUNCH_PROGRAM, slash ? self : ".");
    if (access(ag->launch_exe, X_OK) != 0)
        return rt_err(err, RT_ERR_NOTFOUND,
                      "%s: %s (installed beside the agent; it starts every "
                      "rank)",
                      ag->launch_exe, strerror(errno));
    if (!ag->cfg.job_uids || !*ag->cfg.job_uids) {
        if (getuid() == 0 && !ag->cfg.allow_root_jobs)
            RT_WARN("agent", "running as root without [agent] job_uids: jobs are refused unless "
                             "their token names a Unix user (set job_uids, as init-cluster's "
                             "agent.conf does, or allow_root_jobs = true to run them as root)");
        else
            RT_INFO("agent",
                    "jobs run as this agent's user (uid %d) unless their token names a "
                    "Unix user: [agent] job_uids gives each job a uid of its own",
                    (int)getuid());
        probe_hiding(ag);
        return RT_OK;
    }
    rt_status st = parse_range(ag->cfg.job_uids, &ag->uid_lo, &ag->uid_hi, err);
    if (st == RT_OK)
        st = range_unused(ag->uid_lo, ag->uid_hi, err);
    if (st == RT_OK)
        st = claim_range(ag, err);
    if (st == RT_OK && getuid() >= ag->uid_lo && getuid() <= ag->uid_hi)
        st = rt_err(err, RT_ERR_INVALID, "[agent] job_uids %s holds this agent's own uid %d",
                    ag->cfg.job_uids, (int)getuid());
    if (st != RT_OK)
        return st;
    /* the jobs reach their folders through work_dir: search, not list */
    struct stat sb;
    if (stat(ag->cfg.work_dir, &sb) == 0 && sb.st_uid == getuid())
        chmod(ag->cfg.work_dir, 0711);
    launch_probe r;
    bool can_kill = false;
    int kill_err = 0;
    bool got = run_probe(ag, true, &r, &can_kill, &kill_err);
    /* a folder given to the job: CAP_CHOWN */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.ringtrain-chown-test-%d", ag->cfg.work_dir, (int)getpid());
    bool chowned = mkdir(probe, 0700) == 0 && chown(probe, ag->uid_lo, ag->uid_lo) == 0;
    const int chown_err = errno;
    rmdir(probe);
    const char *caps = "it needs CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL: the unit's "
                       "AmbientCapabilities grant them (docs/security.md)";
    if (!got || r.stage == 1)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "[agent] job_uids %s: this agent (uid %d) cannot run "
                      "ranks as uid %u: %s; %s",
                      ag->cfg.job_uids, (int)getuid(), (unsigned)ag->uid_lo,
                      strerror(got ? r.err : EIO), caps);
    if (!chowned)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "[agent] job_uids %s: this agent cannot give a job its "
                      "folder in %s: %s; %s",
                      ag->cfg.job_uids, ag->cfg.work_dir, strerror(chown_err), caps);
    if (!can_kill)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "[agent] job_uids %s: this agent cannot signal a "
                      "rank running as uid %u: %s; %s",
                      ag->cfg.job_uids, (unsigned)ag->uid_lo, strerror(kill_err), caps);
    if (r.stage == 2)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "[agent] job_uids %s: uid %u cannot reach work_dir %s "
                      "(%s): every folder above it needs search "
                      "permission for others (o+x)",
                      ag->cfg.job_uids, (unsigned)ag->uid_lo, ag->cfg.work_dir,
                      strerror(r.err));
    if (r.stage == 3)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "[agent] job_uids %s: uid %u may list or write "
                      "work_dir %s: make it 0711 and the agent's",
                      ag->cfg.job_uids, (unsigned)ag->uid_lo, ag->cfg.work_dir);
    ag->token_hidden = r.hidden;
    if (r.token_readable && !r.hidden)
        return rt_err(err, RT_ERR_UNSUPPORTED,
                      "[agent] job_uids %s: uid %u can read token_file %s and "
                      "it cannot be hidden here: make it 0640 root:ringtrain",
                      ag->cfg.job_uids, (unsigned)ag->uid_lo, ag->cfg.token_file);
    ag->ids_on = true;
    RT_INFO("agent", "each job runs as a uid of its own (job_uids %s, uid = %u + job id mod "
                     "%u)%s%s",
            ag->cfg.job_uids, (unsigned)ag->uid_lo, (unsigned)(ag->uid_hi - ag->uid_lo + 1),
            r.hidden ? "; ranks see an empty " : "; ranks cannot read ", ag->cfg.token_file);
    return RT_OK;
}

/* A rank of another identity than `ident` (a job, or a sweep's jobs) that
 * holds uid here (started, its exit not yet reported: its processes may
 * still run); NULL when none. */
static const worker *uid_holder(const agentd *ag, uid_t uid, int64_t ident)
{
    for (const worker *o = ag->workers; o; o = o->next)
        if (o->ident_job != ident && o->as_job && o->uid == uid && o->started && !o->reported)
            return o;
    return NULL;
}

bool ident_shared(const agentd *ag, const worker *w)
{
    for (const worker *o = ag->workers; o; o = o->next)
        if (o != w && o->job != w->job && o->own_uid && o->uid == w->uid && !o->reported)
            return true;
    return false;
}

/* Whether this process may become another user and give it a folder. */
static bool can_switch(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d) != 0)
        return false;
    const uint32_t need = (1u << CAP_SETUID) | (1u << CAP_SETGID) | (1u << CAP_CHOWN);
    return (d[0].effective & need) == need;
}

rt_status ident_for(agentd *ag, worker *w, const rt_json *m, char *err)
{
    w->as_job = w->own_uid = false;
    int64_t ident = 0; /* a sweep's jobs: the sweep's id (the coordinator's word) */
    w->ident_job = rt_json_get_int(m, RT_F_IDENTITY_JOB, &ident) && ident > 0 ? ident : w->job;
    w->ngroups = 0;
    w->home[0] = '\0';
    snprintf(w->who, sizeof w->who, "uid %d (the agent's)", (int)getuid());
    const char *user = rt_json_get_str(m, RT_F_UNIX_USER);
    if (user && *user) {
        struct passwd pw, *p = NULL;
        char buf[4096];
        int e = getpwnam_r(user, &pw, buf, sizeof buf, &p);
        if (!p)
            return rt_err(err, RT_ERR_NOTFOUND, "the job runs as Unix user '%s' (its token's "
                                                "--unix-user), who has no account on this node%s%s",
                          user, e ? ": " : "", e ? strerror(e) : "");
        if (p->pw_uid == 0 || p->pw_uid == getuid())
            return rt_err(err, RT_ERR_UNSUPPORTED,
                          "the job's Unix user '%s' is %s: no job runs as it", user,
                          p->pw_uid == 0 ? "root" : "this agent's own user");
        /* an account made inside job_uids after the agent started would be
         * some job's uid: it would reach that job's files and processes */
        if (ag->ids_on && p->pw_uid >= ag->uid_lo && p->pw_uid <= ag->uid_hi)
            return rt_err(err, RT_ERR_UNSUPPORTED,
                          "the job's Unix user '%s' has uid %u, inside [agent] job_uids %s: "
                          "no job runs as it (that uid belongs to the jobs of the range)",
                          user, (unsigned)p->pw_uid, ag->cfg.job_uids);
        if (!can_switch())
            return rt_err(err, RT_ERR_UNSUPPORTED, "the job runs as Unix user '%s' (its token's "
                                                   "--unix-user), but this agent (uid %d) cannot "
                                                   "become another user: it needs CAP_SETUID, "
                                                   "CAP_SETGID and CAP_CHOWN, as the unit grants",
                          user, (int)getuid());
        w->uid = p->pw_uid;
        w->gid = p->pw_gid;
        int n = (int)RT_ARRAY_LEN(w->groups);
        if (getgrouplist(user, p->pw_gid, w->groups, &n) < 0)
            return rt_err(err, RT_ERR_INVALID, "Unix user '%s' has more than %d groups", user,
                          (int)RT_ARRAY_LEN(w->groups));
        w->ngroups = n;
        w->as_job = true;
        snprintf(w->who, sizeof w->who, "user %s", user);
        snprintf(w->login, sizeof w->login, "%s", user);
        snprintf(w->home, sizeof w->home, "%s", p->pw_dir);
        return RT_OK;
    }
    if (!ag->ids_on) {
        if (getuid() == 0 && !ag->cfg.allow_root_jobs)
            return rt_err(err, RT_ERR_UNSUPPORTED,
                          "this agent runs as root and has no [agent] job_uids: the job would "
                          "run as root; set job_uids (init-cluster's agent.conf has a range), "
                          "give its token a --unix-user, or set allow_root_jobs = true");
        return RT_OK;
    }
    const uint64_t size = (uint64_t)(ag->uid_hi - ag->uid_lo) + 1;
    w->uid = w->gid = ag->uid_lo + (uid_t)((uint64_t)w->ident_job % size);
    const worker *o = uid_holder(ag, w->uid, w->ident_job);
    if (o)
        return rt_err(err, RT_ERR_BUSY,
                      "uid %u (job %lld in job_uids %s) is held by job %lld, "
                      "still running here: a larger range avoids it",
                      (unsigned)w->uid, (long long)w->ident_job, ag->cfg.job_uids,
                      (long long)o->job);
    w->as_job = w->own_uid = true;
    if (w->ident_job != w->job)
        snprintf(w->who, sizeof w->who, "uid %u (sweep %lld's)", (unsigned)w->uid,
                 (long long)w->ident_job);
    else
        snprintf(w->who, sizeof w->who, "uid %u", (unsigned)w->uid);
    snprintf(w->login, sizeof w->login, "job-%lld", (long long)w->ident_job);
    return RT_OK;
}

bool ident_leftover(const agentd *ag, const char *pid)
{
    if (!ag->ids_on)
        return false;
    for (int i = 0; i < ag->nhelpers; i++)
        if (ag->helpers[i] == (pid_t)atoi(pid))
            return false; /* cleaning up as a job that has ended: ours */
    char path[64];
    struct stat sb;
    snprintf(path, sizeof path, "/proc/%s", pid);
    if (stat(path, &sb) != 0 || sb.st_uid < ag->uid_lo || sb.st_uid > ag->uid_hi)
        return false;
    return uid_holder(ag, sb.st_uid, -1) == NULL; /* job -1: any job's rank */
}

void ident_reaped(agentd *ag, pid_t pid)
{
    for (int i = 0; i < ag->nhelpers; i++)
        if (ag->helpers[i] == pid) {
            ag->helpers[i] = ag->helpers[--ag->nhelpers];
            return;
        }
}
