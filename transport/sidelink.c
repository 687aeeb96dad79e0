/* sidelink.c — control records on the TCP links (see sidelink.h). */
#include "sidelink.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define SALT_CFWD 0x30574643u /* control records rightwards */
#define SALT_CREV 0x30565243u /* ... and leftwards */

rt_status rt_sidelink_open(rt_comm *c, rt_deadline_t dl, rt_sidelink *k, char *err)
{
    memset(k, 0, sizeof *k);
    k->links.listen_fd = -1;
    rt_status st = rt_links_open(c, 1, 0, dl, &k->links, err);
    if (st != RT_OK || !rt_comm_sealed(&c->o))
        return st;
    const bool m = !c->o.encrypt; /* integrity only */
    const rt_hs_result *right = &k->links.out_hs[0], *left = &k->links.in_hs[0];
    st = rt_gcm_create(right->key_fwd, SALT_CFWD, m, &k->seal_right, err);
    if (st == RT_OK)
        st = rt_gcm_create(right->key_rev, SALT_CREV, m, &k->open_right, err);
    if (st == RT_OK)
        st = rt_gcm_create(left->key_rev, SALT_CREV, m, &k->seal_left, err);
    if (st == RT_OK)
        st = rt_gcm_create(left->key_fwd, SALT_CFWD, m, &k->open_left, err);
    return st;
}

rt_status rt_sidelink_read(rt_comm *c, rt_sidelink *k, bool right, char *err)
{
    int fd = right ? k->links.out[0] : k->links.in[0];
    uint8_t buf[RT_CTL_MAX];
    ssize_t r = recv(fd, buf, RT_FRAME_HDR_LEN, MSG_DONTWAIT | MSG_PEEK);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return RT_OK;
    c->fail_culprit = right ? c->right : c->left;
    const char *who = right ? k->links.right_name : k->links.left_name;
    k->left_eof = !right && r == 0;
    if (r == 0) {
        if (right && k->right_bye) {
            k->right_closed = true;
            return RT_OK;
        }
        return rt_err(err, RT_ERR_IO, "%s closed the connection (process gone?)", who);
    }
    if (r < 0)
        return rt_err(err, RT_ERR_IO, "lost the connection to %s: %s", who, strerror(errno));
    if (r < RT_FRAME_HDR_LEN)
        return RT_OK; /* the rest is on its way */
    rt_frame_hdr h;
    size_t body = 0;
    char why[RT_ERR_LEN];
    rt_status st = rt_ctl_body_len(buf, rt_comm_sealed(&c->o), &h, &body, why);
    if (st != RT_OK)
        return rt_err(err, st, "%s sent unexpected bytes on its control link: %s", who, why);
    if (rt_sock_read_full(fd, buf, RT_FRAME_HDR_LEN + body, rt_deadline_in_us(1000000), why) !=
        RT_OK)
        return rt_err(err, RT_ERR_IO, "reading a control record from %s: %s", who, why);
    st = rt_ctl_decode(&h, buf, buf + RT_FRAME_HDR_LEN, body, right ? k->open_right : k->open_left,
                       &c->abort_in, why);
    if (st != RT_OK)
        return rt_err(err, st, "%s from %s", why, who);
    if (h.op == RT_FRAME_BYE) {
        k->right_bye = k->right_bye || right;
        return RT_OK;
    }
    return rt_err(err, RT_ERR_ABORTED, "%s", c->abort_in.reason);
}

rt_status rt_sidelink_poll(rt_comm *c, rt_sidelink *k, int ms, char *err)
{
    struct pollfd p[2] = {{k->right_closed ? -1 : k->links.out[0], POLLIN, 0},
                          {k->links.in[0], POLLIN, 0}};
    if (poll(p, 2, ms) < 0 && errno != EINTR)
        return rt_err(err, RT_ERR_IO, "poll: %s", strerror(errno));
    rt_status st = RT_OK;
    if (p[0].revents)
        st = rt_sidelink_read(c, k, true, err);
    if (st == RT_OK && p[1].revents)
        st = rt_sidelink_read(c, k, false, err);
    return st;
}

rt_status rt_sidelink_await_abort(rt_comm *c, rt_sidelink *k, rt_deadline_t dl)
{
    char err[RT_ERR_LEN];
    bool dead[2] = {false, false};
    for (;;) {
        struct pollfd p[2] = {{k->right_closed || dead[0] ? -1 : k->links.out[0], POLLIN, 0},
                              {dead[1] ? -1 : k->links.in[0], POLLIN, 0}};
        int ms = rt_deadline_ms_left(dl);
        if (ms == 0 || poll(p, 2, ms) <= 0)
            return RT_ERR_TIMEOUT;
        for (int i = 0; i < 2; i++)
            if (p[i].revents) {
                rt_status st = rt_sidelink_read(c, k, i == 0, err);
                if (st == RT_ERR_ABORTED)
                    return st;
                dead[i] = dead[i] || st != RT_OK;
            }
    }
}

void rt_sidelink_abort(rt_comm *c, rt_sidelink *k, const rt_abort_info *info)
{
    int fds[2] = {k->links.in[0], k->links.out[0]};
    rt_gcm *seal[2] = {k->seal_left, k->seal_right};
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0) {
            uint8_t frame[RT_CTL_MAX];
            size_t n = rt_ctl_encode(frame, c->seq, info, seal[i]);
            ssize_t r = n ? send(fds[i], frame, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
            (void)r;
        }
}

void rt_sidelink_close(rt_comm *c, rt_sidelink *k)
{
    if (k->links.n == 0)
        return; /* never opened: rt_links_open sets n first */
    if (!c->broken && k->links.in[0] >= 0) {
        uint8_t bye[RT_CTL_MAX];
        size_t n = rt_ctl_encode(bye, c->seq, NULL, k->seal_left);
        ssize_t r = n ? send(k->links.in[0], bye, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
        (void)r;
    }
    rt_links_close(&k->links);
    rt_gcm *g[] = {k->seal_right, k->open_right, k->seal_left, k->open_left};
    for (size_t i = 0; i < RT_ARRAY_LEN(g); i++)
        rt_gcm_destroy(g[i]);
    memset(k, 0, sizeof *k);
}
