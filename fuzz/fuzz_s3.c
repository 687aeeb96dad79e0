/* fuzz_s3.c — what an S3 server sends back, on arbitrary bytes: the XML
 * fields the client reads (an error's Code and Message, an upload's
 * UploadId), a ListObjectsV2 page (every object it yields is under the
 * prefix and within the bucket's URI; a token that fits), and the URI
 * parser on the same bytes as a URI. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3_impl.h"

static bool under_prefix(void *user, const char *uri, int64_t size)
{
    (void)size;
    if (strncmp(uri, "s3://bkt/pre/", 13) != 0) /* s3_list_page promised it */
        abort();
    return ++*(int *)user < 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    static const char *const tags[] = {"Code", "Message", "UploadId", "Key", "Size"};
    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++) {
        char out[64];
        memset(out, 'x', sizeof out);
        if (s3_xml_text(s, tags[i], out, sizeof out) && !memchr(out, '\0', sizeof out))
            abort(); /* the text is always cut to fit, NUL-terminated */
    }
    char token[64], err[RT_ERR_LEN];
    bool more, go;
    int n = 0;
    if (s3_list_page(s, "bkt", "pre/", under_prefix, &n, token, sizeof token, &more, &go, err) ==
            RT_OK &&
        more && !memchr(token, '\0', sizeof token))
        abort();
    char b[64], k[1100];
    if (rt_s3_uri_parse(s, b, sizeof b, k, sizeof k, err) == RT_OK &&
        (strlen(b) < 3 || strlen(b) > 63))
        abort();
    free(s);
    return 0;
}
