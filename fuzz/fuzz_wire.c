/* fuzz_wire.c — the data plane's parsers on arbitrary bytes: the hello,
 * challenge, frame header and abort decoders (whatever decodes must encode
 * back to the same bytes), and the responder side of the handshake reading
 * the input from a real socket, as a stranger on the port would send it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sock.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[RT_ERR_LEN];
    rt_hello h;
    if (rt_hello_decode(data, size, &h, err) == RT_OK) {
        uint8_t back[RT_HELLO_LEN];
        rt_hello_encode(&h, back);
        if (memcmp(back, data, RT_HELLO_LEN) != 0)
            abort();
    }
    rt_challenge ch;
    if (rt_challenge_decode(data, size, &ch, err) == RT_OK) {
        uint8_t back[RT_CHALLENGE_LEN];
        rt_challenge_encode(&ch, back);
        if (memcmp(back, data, RT_CHALLENGE_LEN) != 0)
            abort();
    }
    rt_frame_hdr f;
    if (size >= RT_FRAME_HDR_LEN && rt_frame_decode(data, RT_FRAME_HDR_LEN, &f, err) == RT_OK) {
        uint8_t back[RT_FRAME_HDR_LEN];
        rt_frame_encode(&f, back);
        if (memcmp(back, data, RT_FRAME_HDR_LEN) != 0)
            abort();
    }
    rt_abort_info a;
    if (rt_abort_decode(data, size, &a, err) == RT_OK && strlen(a.reason) > RT_ABORT_REASON_MAX)
        abort();

    /* a stranger's bytes on the listening port */
    int sv[2];
    if (size > 4096 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    if (size)
        (void)!write(sv[0], data, size);
    shutdown(sv[0], SHUT_WR);
    uint8_t key[32] = {0};
    rt_hs_params p = {.job_id = 1, .key = key, .rank = 1, .world = 4, .nconn = 2};
    rt_hs_result r;
    rt_handshake_respond(sv[1], &p, 0, false, rt_deadline_in_us(20000), &r, err);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
