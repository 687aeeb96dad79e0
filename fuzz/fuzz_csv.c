/* fuzz_csv.c — the CSV reader on arbitrary bytes: it must end (a record, the
 * end or an error naming file:line) without reading out of bounds, and a
 * record's fields must be NUL-terminated strings of their stated length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rt_csv *c = NULL;
    char err[RT_ERR_LEN];
    if (rt_csv_open_mem(data, size, "fuzz.csv", &c, err) != RT_OK)
        return 0;
    int r;
    int64_t last_line = 0;
    while ((r = rt_csv_next(c, err)) == 1) {
        if (rt_csv_line(c) < last_line || rt_csv_nfields(c) == 0)
            abort();
        last_line = rt_csv_line(c);
        for (size_t i = 0; i < rt_csv_nfields(c); i++) {
            size_t len;
            const char *f = rt_csv_field(c, i, &len);
            if (!f || strlen(f) > len)
                abort();
        }
    }
    if (r < 0 && strncmp(err, "fuzz.csv:", 9) != 0)
        abort(); /* every error names the file and line */
    rt_csv_close(c);
    return 0;
}
