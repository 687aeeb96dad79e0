/* fuzz_frame.c — the control-channel frame decoder (rt_frame_pull) on
 * arbitrary bytes, as the coordinator and agents meet them on a socket.  The
 * first byte picks how the rest arrives (in pieces of 1..64 bytes); the
 * frames decoded must not depend on that: the same stream fed at once gives
 * the same frames, and the same verdict when it turns bad. */
#include <event2/buffer.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_net.h"

/* Decode the stream in pieces of `piece` bytes: the frames as one string
 * (each re-serialised, newline-separated), and whether the stream went bad. */
static char *decode(const uint8_t *data, size_t size, size_t piece, int *bad)
{
    struct evbuffer *in = evbuffer_new();
    rt_jw all;
    rt_jw_init(&all);
    rt_jw_arr(&all);
    *bad = 0;
    for (size_t off = 0; off < size && !*bad; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        evbuffer_add(in, data + off, n);
        for (;;) {
            rt_json *m = NULL;
            char err[RT_ERR_LEN];
            int r = rt_frame_pull(in, &m, err);
            if (r == 0)
                break;
            if (r < 0) {
                if (!err[0])
                    abort(); /* a bad stream always says why */
                *bad = 1;
                break;
            }
            const char *type = rt_json_get_str(m, "type");
            if (!type || rt_json_type_of(m) != RT_JSON_OBJECT)
                abort(); /* a decoded frame is an object with a string type */
            rt_jw_value(&all, m);
            rt_json_free(m);
        }
    }
    rt_jw_arr_end(&all);
    evbuffer_free(in);
    char *s = rt_jw_take(&all, NULL);
    if (!s)
        abort();
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)(data[0] % 64) + 1;
    int bad1, bad2;
    char *a = decode(data + 1, size - 1, piece, &bad1);
    char *b = decode(data + 1, size - 1, size, &bad2);
    if (strcmp(a, b) != 0 || bad1 != bad2)
        abort();
    free(a);
    free(b);
    return 0;
}
