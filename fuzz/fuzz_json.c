/* fuzz_json.c — the JSON parser on arbitrary bytes; whatever parses must
 * write back to text that parses to the same text again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rt_json *j = NULL;
    char err[RT_ERR_LEN];
    if (rt_json_parse((const char *)data, size, &j, err) != RT_OK)
        return 0;
    rt_jw w;
    rt_jw_init(&w);
    rt_jw_value(&w, j);
    size_t n;
    char *a = rt_jw_take(&w, &n);
    if (!a)
        abort();
    rt_json *k = NULL;
    if (rt_json_parse(a, n, &k, err) != RT_OK)
        abort();
    rt_jw_init(&w);
    rt_jw_value(&w, k);
    char *b = rt_jw_take(&w, NULL);
    if (!b || strcmp(a, b) != 0)
        abort();
    free(a);
    free(b);
    rt_json_free(j);
    rt_json_free(k);
    return 0;
}
