/* fuzz_shard.c — the shard reader on arbitrary bytes: damage is reported,
 * never returned as data, and what parses has consistent sizes. */
#include <stdint.h>
#include <stdlib.h>

#include "rt_shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rt_shard *s = NULL;
    char err[RT_ERR_LEN];
    if (rt_shard_parse(data, size, "fuzz.rts", &s, err) != RT_OK) {
        if (s)
            abort();
        return 0;
    }
    for (int c = 0; c < s->ncols; c++) {
        size_t esz = rt_col_type_size(s->cols[c].type);
        if (esz == 0 || !s->cols[c].data)
            abort();
        volatile uint8_t sum = 0; /* touch every byte: ASan checks the sizes */
        for (size_t i = 0; i < (size_t)s->nrows * esz; i++)
            sum ^= ((const uint8_t *)s->cols[c].data)[i];
    }
    rt_shard_free(s);
    return 0;
}
