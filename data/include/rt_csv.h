/* rt_csv.h — a strict RFC 4180 CSV reader for the prep step: quoted fields
 * (with "" for a quote, commas and newlines inside), LF or CRLF line ends,
 * blank lines skipped, gzip-compressed input read transparently, a UTF-8
 * byte order mark skipped, the delimiter taken from the first line.  Every
 * error names the file and the line where the record starts, and nothing
 * malformed is guessed at: a stray quote, text after a closing quote, a NUL
 * byte, an unterminated quote or an oversized record is an error.
 * (Model: Python's csv module in strict mode; SQLite's shell .import.) */
#ifndef RT_CSV_H
#define RT_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_CSV_MAX_RECORD (1u << 20) /* bytes of one record */

typedef struct rt_csv rt_csv;

/* A file, plain or gzip (detected by content, not by name). */
rt_status rt_csv_open(const char *path, rt_csv **out, char *err);
/* In-memory text (copied); `name` is used in messages. */
rt_status rt_csv_open_mem(const void *data, size_t len, const char *name, rt_csv **out,
                          char *err);
void rt_csv_close(rt_csv *c);

/* The next record: 1 and the fields, 0 at the end, -1 with
 * "file:line: why" in err. */
int rt_csv_next(rt_csv *c, char *err);
size_t rt_csv_nfields(const rt_csv *c);
/* Field i of the current record, NUL-terminated (len without the NUL). */
const char *rt_csv_field(const rt_csv *c, size_t i, size_t *len);
/* Whether field i was written in quotes ("" and an empty field differ only here). */
bool rt_csv_quoted(const rt_csv *c, size_t i);
/* Line (1-based) where the current record starts. */
int64_t rt_csv_line(const rt_csv *c);
const char *rt_csv_name(const rt_csv *c);
/* The field delimiter, known from the first record on: ',' unless the
 * first line has no comma outside quotes and has ';', tabs or '|' (the
 * most of them): Excel's CSV where the comma is the decimal mark, TSV;
 * tabs for a file named .tsv (rt_csv_suffix). */
char rt_csv_delim(const rt_csv *c);

/* Text tables by name: .csv, .tsv (read with tabs, whatever its first line
 * shows: a name in it may hold a comma) and either gzip'ed (.csv.gz,
 * .tsv.gz); the length of the one name ends with, else 0. */
extern const char *const rt_csv_suffixes[]; /* NULL-terminated */
#define RT_CSV_SUFFIX_WORDS ".csv, .tsv, .csv.gz or .tsv.gz"
size_t rt_csv_suffix(const char *name);
bool rt_csv_tsv_name(const char *name); /* .tsv or .tsv.gz */

#ifdef __cplusplus
}
#endif
#endif
