/* fuzz_ensemble.c — a member's predictions file, as `ringtrain ensemble`
 * reads it, on arbitrary bytes: the first byte picks the layout
 * (validation_predictions.csv's with its true_ column, or submission.csv's,
 * or `ringtrain predict --input`'s with any first column and kept ones);
 * anything malformed is refused naming the file and line, never crashes
 * or reads past the text, and what is read has rows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ensemble.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    char err[RT_ERR_LEN];
    int64_t rows = -1;
    rt_status st =
        rt_ens_check_file(data + 1, size - 1, "fuzz.csv", data[0] & 1, data[0] & 2, &rows, err);
    if ((st == RT_OK && rows < 0) || (st != RT_OK && (rows != 0 || !strstr(err, "fuzz.csv"))))
        abort();
    return 0;
}
