/* ctl.c — control records (see ctl.h). */
#include "ctl.h"

#include <string.h>

size_t rt_ctl_encode(uint8_t out[RT_CTL_MAX], uint32_t seq, const rt_abort_info *a, rt_gcm *seal)
{
    uint8_t body[RT_ABORT_MAX_LEN];
    size_t blen = a ? rt_abort_encode(a, body) : 0;
    rt_frame_hdr h = {a ? RT_FRAME_ABORT : RT_FRAME_BYE, seal ? RT_FRAME_SEALED : 0, seq, 0,
                      (uint32_t)blen};
    rt_frame_encode(&h, out);
    if (!seal) {
        memcpy(out + RT_FRAME_HDR_LEN, body, blen);
        return RT_FRAME_HDR_LEN + blen;
    }
    if (rt_gcm_seal(seal, out, body, blen, out + RT_FRAME_HDR_LEN) != RT_OK)
        return 0;
    return RT_FRAME_HDR_LEN + blen + RT_GCM_TAG_LEN;
}

rt_status rt_ctl_body_len(const uint8_t hdr[RT_FRAME_HDR_LEN], bool sealed, rt_frame_hdr *h,
                          size_t *body_len, char *err)
{
    char why[RT_ERR_LEN];
    if (rt_frame_decode(hdr, RT_FRAME_HDR_LEN, h, why) != RT_OK)
        return rt_err(err, RT_ERR_PROTO, "%s", why);
    if (h->op != RT_FRAME_ABORT && h->op != RT_FRAME_BYE)
        return rt_err(err, RT_ERR_PROTO, "a frame of type %u where only control records may come",
                      h->op);
    bool is_sealed = (h->flags & RT_FRAME_SEALED) != 0;
    if (is_sealed != sealed)
        return rt_err(err, sealed ? RT_ERR_AUTH : RT_ERR_PROTO,
                      sealed ? "an unsealed control record on a sealed (encrypted or "
                               "authenticated) connection"
                             : "a sealed control record on a connection without sealing");
    if (h->len > RT_ABORT_MAX_LEN || (h->op == RT_FRAME_BYE && h->len != 0))
        return rt_err(err, RT_ERR_PROTO, "a control record of %u bytes", h->len);
    *body_len = h->len + (sealed ? RT_GCM_TAG_LEN : 0);
    return RT_OK;
}

rt_status rt_ctl_decode(const rt_frame_hdr *h, const uint8_t hdr[RT_FRAME_HDR_LEN],
                        const uint8_t *body, size_t body_len, rt_gcm *open, rt_abort_info *a,
                        char *err)
{
    uint8_t plain[RT_ABORT_MAX_LEN];
    size_t len = body_len;
    if (open) {
        RT_ASSERT(body_len == h->len + RT_GCM_TAG_LEN); /* checked by rt_ctl_body_len */
        len = h->len;
        if (rt_gcm_open(open, hdr, body, len, plain) != RT_OK)
            return rt_err(err, RT_ERR_AUTH, "a control record failed authentication");
        body = plain;
    }
    memset(a, 0, sizeof *a);
    if (h->op == RT_FRAME_BYE)
        return RT_OK;
    char why[RT_ERR_LEN];
    if (rt_abort_decode(body, len, a, why) != RT_OK)
        return rt_err(err, RT_ERR_PROTO, "bad abort record: %s", why);
    return RT_OK;
}
