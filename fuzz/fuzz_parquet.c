/* fuzz_parquet.c — the Parquet reader on arbitrary bytes: the footer's
 * Thrift, the schema, page headers, levels, every encoding and codec.
 * Damage is an error, never a crash or a read outside the input; what
 * decodes has as many values as rows, every text value inside its arena. */
#include <stdint.h>
#include <stdlib.h>

#include "rt_parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rt_pq_file *f = NULL;
    char err[RT_ERR_LEN];
    if (rt_pq_open_mem(data, size, "fuzz.parquet", &f, err) != RT_OK) {
        if (f)
            abort();
        return 0;
    }
    rt_pq_values v = {0};
    for (int g = 0; g < rt_pq_nrow_groups(f); g++) {
        if (rt_pq_group_rows(f, g) > 20000) /* a claimed row count: memory, not a bug */
            continue;
        for (int c = 0; c < rt_pq_ncols(f); c++) {
            if (rt_pq_read(f, g, c, &v, err) != RT_OK)
                continue;
            if (v.n != rt_pq_group_rows(f, g))
                abort();
            rt_pq_kind kind = rt_pq_col(f, c)->kind;
            volatile uint64_t sum = 0;
            for (int64_t k = 0; k < v.n; k++) {
                if (v.null[k])
                    continue;
                if (kind == RT_PQ_INT)
                    sum += (uint64_t)v.i[k];
                else if (kind == RT_PQ_REAL)
                    sum += (uint64_t)(v.r[k] == v.r[k]);
                else if (v.off[k] + v.len[k] > v.nbytes)
                    abort();
                else if (v.len[k])
                    sum += (uint8_t)v.bytes[v.off[k] + v.len[k] - 1];
            }
        }
    }
    rt_pq_values_free(&v);
    rt_pq_close(f);
    return 0;
}
