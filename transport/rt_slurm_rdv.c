/* rt_slurm_rdv.c — the rendezvous of a Slurm job step (see rt_slurm.h):
 * the step key from the user's key file, and every task's data address
 * gathered by the first task of the first node and handed back to all.
 *
 *   leader -> follower  CHALLENGE {"nonce":"<64 hex>"} + mac       at once
 *   follower -> leader  HELLO  {"rank","node","host","addr"} + mac(nonce)
 *   leader -> follower  ACK    {"ok":true} + mac(hello's mac)   at once
 *   leader -> follower  PEERS  {"peers":[...]} or {"error":"..."} + mac(hello's mac)
 *
 * A frame is u32le length | JSON | HMAC-SHA256(step key, label | bind | JSON),
 * bind being the connection's fresh nonce for the hello, the hello's MAC
 * for the answers.  A hello proves the key for this connection only: one
 * seen on the network and replayed elsewhere proves nothing, and a later
 * valid hello for a rank replaces an earlier one (a task that reconnects is
 * never locked out).  The challenge lets a follower that reached a
 * stranger's port try the next port.
 *
 * The leader serves hellos concurrently, each on a thread of its own within
 * HELLO_WAIT of its arrival, at most PENDING_MAX at once and PENDING_PER_ADDR
 * from one address (one more from there pushes out its oldest): strangers
 * that connect and say nothing cannot hold the step up, as in the data
 * plane's accept (link.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_comm.h"
#include "rt_endian.h"
#include "rt_hex.h"
#include "rt_json.h"
#include "rt_slurm.h"
#include "sock.h"

#define FRAME_MAX (16u << 20)
#define MAC_LEN 32
#define ACK_WAIT_US (3 * 1000000LL)
#define HELLO_WAIT_NS (3 * 1000000000LL)
#define PENDING_MAX 64
#define PENDING_PER_ADDR 16
#define NONCE_LEN 32
#define ANSWER_GRACE_US (5 * 1000000LL)

/* ---- the key file -------------------------------------------------------------- */

rt_status rt_slurm_key_path(char *out, size_t len, char *err)
{
    const char *f = getenv("RINGTRAIN_KEY_FILE"), *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    int n = f && *f         ? snprintf(out, len, "%s", f)
            : xdg && *xdg   ? snprintf(out, len, "%s/ringtrain/slurm.key", xdg)
            : home && *home ? snprintf(out, len, "%s/.config/ringtrain/slurm.key", home)
                            : -1;
    if (n < 0 || (size_t)n >= len)
        return rt_err(err, RT_ERR_INVALID,
                      "no key file: set RINGTRAIN_KEY_FILE (or HOME) to a file on storage "
                      "every node of the step sees");
    return RT_OK;
}

/* A new key file: 32 random bytes in hex, 0600, made whole under a name of
 * its own and linked into place, so that tasks racing to make it all read
 * the one that won. */
static rt_status make_key(const char *path, char *err)
{
    char dir[4096], tmp[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) { /* its folder, and the parents a config home needs */
        *slash = '\0';
        for (char *p = dir + 1; *p; p++)
            if (*p == '/') {
                *p = '\0';
                mkdir(dir, 0700);
                *p = '/';
            }
        mkdir(dir, 0700);
    }
    char host[128] = "host";
    gethostname(host, sizeof host - 1);
    snprintf(tmp, sizeof tmp, "%s.%s.%ld.tmp", path, host, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return rt_err(err, RT_ERR_IO, "cannot make the key file %s: %s", tmp, strerror(errno));
    uint8_t raw[32];
    char hex[2 * sizeof raw + 2];
    rt_random_bytes(raw, sizeof raw);
    rt_hex_encode(raw, sizeof raw, hex);
    strcat(hex, "\n");
    bool ok = write(fd, hex, strlen(hex)) == (ssize_t)strlen(hex) && fsync(fd) == 0;
    close(fd);
    OPENSSL_cleanse(raw, sizeof raw);
    int e = ok && link(tmp, path) != 0 && errno != EEXIST ? errno : 0;
    unlink(tmp);
    if (!ok || e)
        return rt_err(err, RT_ERR_IO, "cannot make the key file %s: %s", path,
                      strerror(ok ? e : errno));
    return RT_OK;
}

rt_status rt_slurm_key(const char *path, int64_t job, int64_t step, uint8_t out[32], char *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        rt_status st = make_key(path, err);
        if (st != RT_OK)
            return st;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0)
        return rt_err(err, RT_ERR_IO, "cannot read the key file %s: %s", path, strerror(errno));
    struct stat sb;
    uint8_t buf[4096];
    ssize_t n = -1;
    rt_status st = RT_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = rt_err(err, RT_ERR_INVALID, "the key file %s is not a regular file", path);
    else if (sb.st_uid != getuid())
        st = rt_err(err, RT_ERR_INVALID, "the key file %s belongs to uid %ld, not to you (uid %ld)",
                    path, (long)sb.st_uid, (long)getuid());
    else if (sb.st_mode & 077)
        st = rt_err(err, RT_ERR_INVALID,
                    "the key file %s can be read by others (mode %04o): chmod 600 it, or make "
                    "a new one",
                    path, (unsigned)(sb.st_mode & 07777));
    else if ((n = read(fd, buf, sizeof buf)) < 32)
        st = rt_err(err, RT_ERR_INVALID, "the key file %s holds %zd bytes: a key is at least 32",
                    path, n < 0 ? (ssize_t)0 : n);
    close(fd);
    if (st == RT_OK) { /* each step its own key: HMAC(file, "ringtrain slurm step J.S") */
        char label[96];
        int ll = snprintf(label, sizeof label, "ringtrain slurm step %lld.%lld", (long long)job,
                          (long long)step);
        unsigned olen = 32;
        if (!HMAC(EVP_sha256(), buf, (int)n, (const uint8_t *)label, (size_t)ll, out, &olen))
            st = rt_err(err, RT_ERR_INVALID, "HMAC failed");
    }
    OPENSSL_cleanse(buf, sizeof buf);
    return st;
}

/* ---- frames --------------------------------------------------------------------- */

static void frame_mac(const uint8_t key[32], const char *label, const uint8_t *bind,
                      const char *text, size_t n, uint8_t out[MAC_LEN])
{
    const size_t ll = strlen(label) + 1, bl = bind ? MAC_LEN : 0;
    uint8_t *msg = malloc(ll + bl + n);
    unsigned olen = MAC_LEN;
    if (msg) {
        memcpy(msg, label, ll);
        if (bind)
            memcpy(msg + ll, bind, bl);
        memcpy(msg + ll + bl, text, n);
    }
    if (!msg || !HMAC(EVP_sha256(), key, 32, msg, ll + bl + n, out, &olen))
        memset(out, 0, MAC_LEN); /* out of memory: no frame verifies */
    free(msg);
}

static rt_status send_frame(int fd, const uint8_t key[32], const char *label, const uint8_t *bind,
                            const char *text, rt_deadline_t dl, uint8_t *mac_out, char *err)
{
    size_t n = strlen(text);
    uint8_t head[4], mac[MAC_LEN];
    rt_put_le32(head, (uint32_t)n);
    frame_mac(key, label, bind, text, n, mac);
    if (mac_out)
        memcpy(mac_out, mac, MAC_LEN);
    rt_status st = rt_sock_write_full(fd, head, 4, dl, err);
    if (st == RT_OK)
        st = rt_sock_write_full(fd, text, n, dl, err);
    return st == RT_OK ? rt_sock_write_full(fd, mac, MAC_LEN, dl, err) : st;
}

/* One frame's JSON, parsed, once its MAC holds; RT_ERR_AUTH when it does not. */
static rt_status recv_frame(int fd, const uint8_t key[32], const char *label, const uint8_t *bind,
                            rt_deadline_t dl, rt_json **out, uint8_t *mac_out, char *err)
{
    *out = NULL;
    uint8_t head[4], mac[MAC_LEN], want[MAC_LEN];
    rt_status st = rt_sock_read_full(fd, head, 4, dl, err);
    if (st != RT_OK)
        return st;
    uint32_t n = rt_get_le32(head);
    if (n == 0 || n > FRAME_MAX)
        return rt_err(err, RT_ERR_AUTH, "a frame of %u bytes: not ringtrain's rendezvous", n);
    char *text = malloc(n + 1);
    if (!text)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    if ((st = rt_sock_read_full(fd, text, n, dl, err)) == RT_OK &&
        (st = rt_sock_read_full(fd, mac, MAC_LEN, dl, err)) == RT_OK) {
        frame_mac(key, label, bind, text, n, want);
        if (CRYPTO_memcmp(mac, want, MAC_LEN) != 0)
            st = rt_err(err, RT_ERR_AUTH, "it did not prove the step's key");
        else
            st = rt_json_parse(text, n, out, err);
    }
    if (st == RT_OK && mac_out)
        memcpy(mac_out, mac, MAC_LEN);
    free(text);
    return st;
}

/* ---- addresses ------------------------------------------------------------------- */

/* The IP of one end of a connected socket ("10.0.0.2", "[fd00::2]"). */
static bool sock_ip(int fd, bool local, char *out, size_t len, bool *loopback)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char h[INET6_ADDRSTRLEN];
    if ((local ? getsockname(fd, (struct sockaddr *)&ss, &sl)
               : getpeername(fd, (struct sockaddr *)&ss, &sl)) != 0)
        return false;
    if (ss.ss_family == AF_INET) {
        const struct in_addr *a = &((struct sockaddr_in *)&ss)->sin_addr;
        inet_ntop(AF_INET, a, h, sizeof h);
        snprintf(out, len, "%s", h);
        *loopback = (ntohl(a->s_addr) >> 24) == 127;
        return true;
    }
    if (ss.ss_family == AF_INET6) {
        const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        inet_ntop(AF_INET6, a, h, sizeof h);
        snprintf(out, len, "[%s]", h);
        *loopback = IN6_IS_ADDR_LOOPBACK(a);
        return true;
    }
    return false;
}

/* A listening data-plane socket on every address; its port. */
static rt_status data_listener(int *fd, int *port, char *err)
{
    char *addr = NULL;
    rt_status st = rt_listen_tcp("0.0.0.0", 0, fd, &addr, err);
    if (st != RT_OK)
        return st;
    const char *colon = strrchr(addr, ':');
    *port = colon ? atoi(colon + 1) : 0;
    free(addr);
    return RT_OK;
}

/* ---- the leader ------------------------------------------------------------------ */

typedef struct arrival {
    int fd, node;
    bool in;
    char addr[96], host[64];
    uint8_t mac[MAC_LEN];
} arrival;

/* A connection being handshaken on its own thread. */
typedef struct pending {
    int fd, slot, done_fd;
    bool busy;
    char from[64]; /* the peer's address without the port */
    int64_t since_ns;
    const uint8_t *key;
    rt_deadline_t dl;
    rt_status st;
    rt_json *hello;
    uint8_t mac[MAC_LEN];
    char why[RT_ERR_LEN];
    pthread_t th;
} pending;

static void *hello_one(void *arg)
{
    pending *p = arg;
    uint8_t nonce[NONCE_LEN];
    char hex[2 * NONCE_LEN + 1], text[128];
    rt_random_bytes(nonce, sizeof nonce);
    rt_hex_encode(nonce, sizeof nonce, hex);
    snprintf(text, sizeof text, "{\"nonce\":\"%s\"}", hex);
    p->st = send_frame(p->fd, p->key, "rt-slurm-challenge", NULL, text, p->dl, NULL, p->why);
    if (p->st == RT_OK)
        p->st =
            recv_frame(p->fd, p->key, "rt-slurm-hello", nonce, p->dl, &p->hello, p->mac, p->why);
    unsigned char slot = (unsigned char)p->slot;
    ssize_t r = write(p->done_fd, &slot, 1);
    (void)r;
    return NULL;
}

static void leader_answer(arrival *a, int size, const uint8_t key[32], const char *text)
{
    char e[RT_ERR_LEN];
    for (int r = 0; r < size; r++)
        if (a[r].fd >= 0) {
            send_frame(a[r].fd, key, "rt-slurm-peers", a[r].mac, text, rt_deadline_in_us(5000000),
                       NULL, e);
            close(a[r].fd);
            a[r].fd = -1;
        }
}

/* Who did not arrive, as "tasks 2, 3 (of 4) did not arrive". */
static void missing(const arrival *a, int size, char *out, size_t len)
{
    int count = 0;
    for (int r = 0; r < size; r++)
        count += !a[r].in;
    size_t n = (size_t)snprintf(out, len, "task%s", count == 1 ? "" : "s");
    for (int r = 0, k = 0; r < size && n + 24 < len; r++)
        if (!a[r].in && k++ < 12)
            n += (size_t)snprintf(out + n, len - n, "%s %d", k > 1 ? "," : "", r);
    snprintf(out + n, len - n, "%s (of %d) did not arrive", count > 12 ? ", ..." : "", size);
}

/* A new connection into a free slot, its handshake started; a flood from
 * one address (or from everywhere) pushes out its oldest handshake. */
static void admit(pending *pend, int fd, const uint8_t key[32], int done_fd, rt_deadline_t dl)
{
    char from[96];
    rt_sock_peer_str(fd, from, sizeof from);
    char *colon = strrchr(from, ':');
    if (colon)
        *colon = '\0';
    int free_slot = -1, same = 0, oldest_same = -1, oldest = -1;
    for (int i = 0; i < PENDING_MAX; i++) {
        if (!pend[i].busy) {
            if (free_slot < 0)
                free_slot = i;
            continue;
        }
        if (oldest < 0 || pend[i].since_ns < pend[oldest].since_ns)
            oldest = i;
        if (!strcmp(pend[i].from, from)) {
            same++;
            if (oldest_same < 0 || pend[i].since_ns < pend[oldest_same].since_ns)
                oldest_same = i;
        }
    }
    /* cut the pushed-out handshake short: its thread ends, the slot frees */
    if (same >= PENDING_PER_ADDR)
        shutdown(pend[oldest_same].fd, SHUT_RDWR);
    else if (free_slot < 0 && oldest >= 0)
        shutdown(pend[oldest].fd, SHUT_RDWR);
    if (free_slot < 0) { /* no room until one ends: this one waits its turn elsewhere */
        close(fd);
        return;
    }
    pending *q = &pend[free_slot];
    const int64_t now = rt_now_ns();
    *q = (pending){.fd = fd,
                   .slot = free_slot,
                   .done_fd = done_fd,
                   .busy = true,
                   .since_ns = now,
                   .key = key,
                   .dl = now + HELLO_WAIT_NS < dl ? now + HELLO_WAIT_NS : dl};
    snprintf(q->from, sizeof q->from, "%.63s", from);
    if (pthread_create(&q->th, NULL, hello_one, q) != 0) {
        q->busy = false;
        close(fd);
    }
}

/* A finished handshake: the task it names arrives (replacing an earlier
 * connection of the same task), or the connection goes; the number of
 * tasks newly in. */
static int take_hello(const rt_slurm_step *s, pending *q, arrival *a, const uint8_t key[32],
                      char *my_ip, char *any_ip, char *stranger)
{
    pthread_join(q->th, NULL);
    q->busy = false;
    int64_t rank = -1, node = -1;
    const char *addr = NULL, *host = NULL;
    if (q->st == RT_OK) {
        rt_json_get_int(q->hello, "rank", &rank);
        rt_json_get_int(q->hello, "node", &node);
        addr = rt_json_get_str(q->hello, "addr");
        host = rt_json_get_str(q->hello, "host");
    }
    if (q->st != RT_OK || rank < 0 || rank >= s->size || rank == s->rank || !addr ||
        strlen(addr) >= sizeof a[0].addr || !host) {
        if (q->st == RT_ERR_AUTH)
            snprintf(stranger, 160,
                     "a connection from %s did not prove the step's key (is the key file "
                     "the same on every node?)",
                     q->from);
        rt_json_free(q->hello);
        q->hello = NULL;
        close(q->fd);
        return 0;
    }
    arrival *t = &a[rank];
    const int newly = !t->in;
    if (t->fd >= 0) /* the same task again (it reconnected): the newer one counts */
        close(t->fd);
    t->fd = q->fd;
    t->in = true;
    t->node = (int)node;
    memcpy(t->mac, q->mac, MAC_LEN);
    snprintf(t->addr, sizeof t->addr, "%s", addr);
    snprintf(t->host, sizeof t->host, "%s", host);
    rt_json_free(q->hello);
    q->hello = NULL;
    char e[RT_ERR_LEN];
    send_frame(t->fd, key, "rt-slurm-ack", t->mac, "{\"ok\":true}", rt_deadline_in_us(ACK_WAIT_US),
               NULL, e);
    /* this node's address as the other nodes reach it */
    bool lo = true, plo = true;
    char ip[64], pip[64];
    if (sock_ip(t->fd, true, ip, sizeof ip, &lo) && sock_ip(t->fd, false, pip, sizeof pip, &plo)) {
        if (!lo && strcmp(ip, pip) != 0 && !my_ip[0])
            snprintf(my_ip, 64, "%s", ip);
        if (!any_ip[0])
            snprintf(any_ip, 64, "%s", ip);
    }
    return newly;
}

/* Every task's hello, until all are in or dl passes. */
static rt_status gather(const rt_slurm_step *s, const uint8_t key[32], int lfd, rt_deadline_t dl,
                        arrival *a, char *my_ip, char *any_ip, char *err)
{
    int done[2];
    if (pipe2(done, O_CLOEXEC) != 0)
        return rt_err(err, RT_ERR_IO, "pipe: %s", strerror(errno));
    pending *pend = calloc(PENDING_MAX, sizeof *pend);
    if (!pend) {
        close(done[0]);
        close(done[1]);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    char stranger[160] = "";
    rt_status st = RT_OK;
    for (int got = 1; got < s->size;) {
        struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = done[0], .events = POLLIN}};
        int ms = rt_deadline_ms_left(dl);
        int r = ms > 0 ? poll(p, 2, ms) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            char who[300];
            missing(a, s->size, who, sizeof who);
            st = rt_err(err, RT_ERR_TIMEOUT, "the Slurm rendezvous on %s port %d: %s%s%s",
                        s->hosts[0], s->port, who, stranger[0] ? "; " : "", stranger);
            break;
        }
        unsigned char slot;
        if ((p[1].revents & POLLIN) && read(done[0], &slot, 1) == 1 && slot < PENDING_MAX &&
            pend[slot].busy)
            got += take_hello(s, &pend[slot], a, key, my_ip, any_ip, stranger);
        if (p[0].revents & POLLIN) {
            int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd >= 0)
                admit(pend, fd, key, done[1], dl);
        }
    }
    /* the step is in (or failed): cut the handshakes still going short */
    for (int i = 0; i < PENDING_MAX; i++)
        if (pend[i].busy)
            shutdown(pend[i].fd, SHUT_RDWR);
    for (int i = 0; i < PENDING_MAX; i++)
        if (pend[i].busy) {
            pthread_join(pend[i].th, NULL);
            rt_json_free(pend[i].hello);
            close(pend[i].fd);
        }
    free(pend);
    close(done[0]);
    close(done[1]);
    return st;
}

static rt_status leader(const rt_slurm_step *s, const uint8_t key[32], int lfd, int dport,
                        rt_deadline_t dl, char ***peers_out, char *err)
{
    arrival *a = calloc((size_t)s->size, sizeof *a);
    if (!a)
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    for (int r = 0; r < s->size; r++)
        a[r].fd = -1;
    a[s->rank].in = true;
    char my_ip[64] = "", any_ip[64] = "";
    rt_status st = gather(s, key, lfd, dl, a, my_ip, any_ip, err);
    if (st != RT_OK) {
        rt_jw w;
        rt_jw_init(&w);
        rt_jw_obj(&w);
        rt_jw_kstr(&w, "error", err);
        rt_jw_obj_end(&w);
        char *text = rt_jw_take(&w, NULL);
        leader_answer(a, s->size, key, text ? text : "{\"error\":\"out of memory\"}");
        free(text);
        free(a);
        return st;
    }
    const char *self = my_ip[0] ? my_ip : any_ip[0] ? any_ip : "127.0.0.1";
    char **peers = calloc((size_t)s->size, sizeof *peers);
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_obj(&w);
    rt_jw_key(&w, "peers");
    rt_jw_arr(&w);
    for (int r = 0; peers && r < s->size; r++) {
        char buf[160];
        const char *colon = strrchr(a[r].addr, ':');
        bool lo = strncmp(a[r].addr, "127.", 4) == 0 || strncmp(a[r].addr, "[::1]", 5) == 0;
        if (r == s->rank) /* the leader itself */
            snprintf(buf, sizeof buf, "%s:%d", self, dport);
        else if (lo && a[r].node == s->node && colon) /* this node's task, seen on loopback */
            snprintf(buf, sizeof buf, "%s%s", self, colon);
        else
            snprintf(buf, sizeof buf, "%s", a[r].addr);
        peers[r] = strdup(buf);
        rt_jw_str(&w, buf);
    }
    rt_jw_arr_end(&w);
    rt_jw_obj_end(&w);
    char *text = rt_jw_take(&w, NULL);
    bool ok = peers && text;
    for (int r = 0; ok && r < s->size; r++)
        ok = peers[r] != NULL;
    leader_answer(a, s->size, key, ok ? text : "{\"error\":\"the first task ran out of memory\"}");
    free(text);
    free(a);
    if (!ok) {
        rt_slurm_peers_free(peers, s->size);
        return rt_err(err, RT_ERR_NOMEM, "out of memory");
    }
    *peers_out = peers;
    return RT_OK;
}

/* ---- a follower ------------------------------------------------------------------ */

static rt_status follower(const rt_slurm_step *s, const uint8_t key[32], int dport,
                          rt_deadline_t dl, char ***peers_out, char *err)
{
    char last[RT_ERR_LEN] = "nothing listened";
    for (int k = 0; rt_deadline_ms_left(dl) > 0; k = (k + 1) % RT_SLURM_PORTS) {
        char where[300], e[RT_ERR_LEN];
        snprintf(where, sizeof where, "%s:%d", s->hosts[0], s->port + k);
        rt_deadline_t cd = rt_deadline_in_us(300000);
        int fd = -1;
        if (rt_sock_connect(where, cd < dl ? cd : dl, &fd, e) != RT_OK) {
            snprintf(last, sizeof last, "%s", e);
            continue;
        }
        char ip[64], text[512];
        bool lo = false;
        if (!sock_ip(fd, true, ip, sizeof ip, &lo))
            snprintf(ip, sizeof ip, "127.0.0.1");
        snprintf(text, sizeof text, "{\"rank\":%d,\"node\":%d,\"host\":\"%s\",\"addr\":\"%s:%d\"}",
                 s->rank, s->node, s->hosts[s->node], ip, dport);
        uint8_t mac[MAC_LEN], nonce[NONCE_LEN];
        rt_json *ack = NULL, *ans = NULL, *ch = NULL;
        rt_deadline_t ad = rt_deadline_in_us(ACK_WAIT_US);
        rt_status st =
            recv_frame(fd, key, "rt-slurm-challenge", NULL, ad < dl ? ad : dl, &ch, NULL, e);
        const char *nhex = st == RT_OK ? rt_json_get_str(ch, "nonce") : NULL;
        if (st == RT_OK && (!nhex || strlen(nhex) != 2 * NONCE_LEN ||
                            rt_hex_decode(nhex, nonce, NONCE_LEN) != RT_OK))
            st = rt_err(e, RT_ERR_PROTO, "a challenge without a nonce");
        rt_json_free(ch);
        if (st == RT_OK)
            st = send_frame(fd, key, "rt-slurm-hello", nonce, text, ad < dl ? ad : dl, mac, e);
        if (st == RT_OK)
            st = recv_frame(fd, key, "rt-slurm-ack", mac, ad < dl ? ad : dl, &ack, NULL, e);
        rt_json_free(ack);
        if (st != RT_OK) { /* not our step's first task: the next port */
            snprintf(last, sizeof last, "%s answered, but not as this step's first task: %s", where,
                     e);
            close(fd);
            continue;
        }
        /* the first task answers by its own deadline, about ours: wait for
         * its word (the peers, or who did not come) a little longer */
        st = recv_frame(fd, key, "rt-slurm-peers", mac, dl + ANSWER_GRACE_US * 1000, &ans, NULL, e);
        close(fd);
        if (st != RT_OK)
            return rt_err(err, st, "task %d on %s: the rendezvous with %s ended: %s", s->rank,
                          s->hosts[s->node], where, e);
        const char *why = rt_json_get_str(ans, "error");
        const rt_json *pl = rt_json_get(ans, "peers");
        if (why || (int64_t)rt_json_len(pl) != s->size) {
            st = rt_err(err, RT_ERR_INVALID, "task %d on %s: the step's first task (%s) says: %s",
                        s->rank, s->hosts[s->node], where, why ? why : "a wrong peer list");
            rt_json_free(ans);
            return st;
        }
        char **peers = calloc((size_t)s->size, sizeof *peers);
        bool ok = peers != NULL;
        for (int r = 0; ok && r < s->size; r++)
            ok = (peers[r] = strdup(rt_json_str(rt_json_at(pl, (size_t)r), ""))) != NULL;
        rt_json_free(ans);
        if (!ok) {
            rt_slurm_peers_free(peers, s->size);
            return rt_err(err, RT_ERR_NOMEM, "out of memory");
        }
        *peers_out = peers;
        return RT_OK;
    }
    return rt_err(err, RT_ERR_TIMEOUT,
                  "task %d on %s: no rendezvous with the step's first task on %s (ports %d-%d) "
                  "in time: %s",
                  s->rank, s->hosts[s->node], s->hosts[0], s->port, s->port + RT_SLURM_PORTS - 1,
                  last);
}

/* ---- the step -------------------------------------------------------------------- */

void rt_slurm_peers_free(char **peers, int n)
{
    for (int r = 0; peers && r < n; r++)
        free(peers[r]);
    free(peers);
}

rt_status rt_slurm_rendezvous(const rt_slurm_step *s, const uint8_t key[32], int64_t timeout_us,
                              int *listen_fd, char ***peers, char *err)
{
    *listen_fd = -1;
    *peers = NULL;
    int dfd = -1, dport = 0;
    rt_status st = data_listener(&dfd, &dport, err);
    if (st != RT_OK)
        return st;
    rt_deadline_t dl = rt_deadline_in_us(timeout_us);
    if (s->node == 0 && s->local_rank == 0) {
        int lfd = -1;
        char e[RT_ERR_LEN] = "";
        for (int k = 0; k < RT_SLURM_PORTS && lfd < 0; k++)
            if (rt_listen_tcp("0.0.0.0", s->port + k, &lfd, NULL, e) == RT_OK)
                listen(lfd, 4096);
        if (lfd < 0)
            st = rt_err(err, RT_ERR_IO,
                        "task %d on %s: cannot listen for the rendezvous on "
                        "ports %d-%d: %s",
                        s->rank, s->hosts[0], s->port, s->port + RT_SLURM_PORTS - 1, e);
        else
            st = leader(s, key, lfd, dport, dl, peers, err);
        if (lfd >= 0)
            close(lfd);
    } else {
        st = follower(s, key, dport, dl, peers, err);
    }
    if (st != RT_OK) {
        close(dfd);
        return st;
    }
    *listen_fd = dfd;
    return RT_OK;
}
