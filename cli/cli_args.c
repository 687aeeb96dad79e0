/* cli_args.c — one parser for every command's arguments (see cli.h): the
 * command's table of flags says which exist, which take a value and which
 * may repeat; anything else is refused with the flag named, before the
 * command does anything (a bad flag never reaches the coordinator). */
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rt_config.h"

/* Shared by every command that talks to the coordinator. */
static const cli_flag CONN_FLAGS[] = {
    {"--coordinator", CLI_VALUE, "HOST:PORT", "the coordinator's HTTP API", NULL},
    {"--ca", CLI_VALUE, "FILE", "the cluster CA certificate", NULL},
    {"--token-file", CLI_VALUE, "FILE", "file holding the API token", NULL},
    {"--server-name", CLI_VALUE, "NAME", "name in the coordinator's certificate", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

/* The flag's index in the command's table, or -1 (connection flags get
 * indexes after the command's own). */
static int find_flag(const cli_cmd *cmd, const char *name, const cli_flag **out)
{
    int i = 0;
    for (; cmd->flags && cmd->flags[i].name; i++)
        if (!strcmp(cmd->flags[i].name, name) ||
            (cmd->flags[i].alias && !strcmp(cmd->flags[i].alias, name))) {
            *out = &cmd->flags[i];
            return i;
        }
    for (int k = 0; cmd->connects && CONN_FLAGS[k].name; k++)
        if (!strcmp(CONN_FLAGS[k].name, name)) {
            *out = &CONN_FLAGS[k];
            return i + k;
        }
    return -1;
}

static void suggest(const cli_cmd *cmd, const char *bad)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (int pass = 0; pass < 2; pass++) {
        const cli_flag *t = pass == 0 ? cmd->flags : (cmd->connects ? CONN_FLAGS : NULL);
        for (int i = 0; t && t[i].name; i++) {
            size_t d = rt_edit_distance(bad, t[i].name);
            if (d < best_d) {
                best_d = d;
                best = t[i].name;
            }
        }
    }
    if (best)
        fprintf(stderr, "; did you mean %s?", best);
}

int cli_parse(const cli_cmd *cmd, int argc, char **argv, cli_args *a)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->pos = calloc((size_t)argc + 1, sizeof *a->pos);
    if (!a->pos)
        return 1;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            if (!cmd->rest) {
                fprintf(stderr, "ringtrain %s: unexpected '--'\n", cmd->name);
                return 2;
            }
            a->rest = argv + i + 1;
            a->nrest = argc - i - 1;
            break;
        }
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            cli_usage(cmd, stdout);
            a->help = true;
            return 0;
        }
        if (arg[0] == '-' && arg[1] != '\0') {
            /* --flag=value is --flag value */
            char name[64];
            const char *eq = strchr(arg, '=');
            snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
            const cli_flag *f = NULL;
            int k = find_flag(cmd, name, &f);
            if (k < 0) {
                fprintf(stderr, "ringtrain %s: unknown flag '%s'", cmd->name, name);
                suggest(cmd, name);
                fprintf(stderr, " (ringtrain %s --help)\n", cmd->name);
                return 2;
            }
            RT_ASSERT(k < CLI_MAX_FLAGS);
            const char *val = NULL;
            if (f->kind != CLI_SWITCH) {
                if (eq)
                    val = eq + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                else {
                    fprintf(stderr, "ringtrain %s: %s needs a value (%s)\n", cmd->name, f->name,
                            f->metavar ? f->metavar : "VALUE");
                    return 2;
                }
            } else if (eq) {
                fprintf(stderr, "ringtrain %s: %s takes no value\n", cmd->name, f->name);
                return 2;
            }
            if (f->kind == CLI_LIST) {
                if (a->nlist[k] == CLI_MAX_LIST) {
                    fprintf(stderr, "ringtrain %s: %s given more than %d times\n", cmd->name,
                            f->name, CLI_MAX_LIST);
                    return 2;
                }
                a->list[k][a->nlist[k]++] = val;
            } else if (a->value[k] && f->kind == CLI_VALUE) {
                fprintf(stderr, "ringtrain %s: %s given twice\n", cmd->name, f->name);
                return 2;
            } else {
                a->value[k] = f->kind == CLI_SWITCH ? "1" : val;
            }
            continue;
        }
        a->pos[a->npos++] = argv[i];
    }
    if (a->npos < cmd->min_pos || (cmd->max_pos >= 0 && a->npos > cmd->max_pos)) {
        if (a->npos > cmd->max_pos && cmd->max_pos >= 0)
            fprintf(stderr, "ringtrain %s: unexpected argument '%s'\n", cmd->name,
                    a->pos[cmd->max_pos]);
        else
            fprintf(stderr, "ringtrain %s: missing arguments\n", cmd->name);
        cli_usage(cmd, stderr);
        return 2;
    }
    if (cmd->rest && cmd->rest_required && a->nrest == 0) {
        fprintf(stderr, "ringtrain %s: no program: ringtrain %s %s\n", cmd->name, cmd->name,
                cmd->usage);
        return 2;
    }
    return 0;
}

void cli_args_free(cli_args *a) { free(a->pos); }

const char *cli_value(const cli_args *a, const char *name)
{
    const cli_flag *f;
    int k = find_flag(a->cmd, name, &f);
    RT_ASSERT(k >= 0); /* a handler asking for a flag its table lacks */
    return a->value[k];
}

bool cli_switch(const cli_args *a, const char *name) { return cli_value(a, name) != NULL; }

int cli_list(const cli_args *a, const char *name, const char *const **items)
{
    const cli_flag *f;
    int k = find_flag(a->cmd, name, &f);
    RT_ASSERT(k >= 0 && f->kind == CLI_LIST);
    *items = a->list[k];
    return a->nlist[k];
}

int cli_int(const cli_args *a, const char *name, int64_t lo, int64_t hi, int64_t *out)
{
    const char *v = cli_value(a, name);
    if (!v)
        return 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        fprintf(stderr, "ringtrain %s: %s %s: expected a whole number from %lld to %lld\n",
                a->cmd->name, name, v, (long long)lo, (long long)hi);
        return -1;
    }
    *out = x;
    return 1;
}

int cli_job_id(const cli_args *a, int64_t *id)
{
    const char *v = a->npos > 0 ? a->pos[0] : "";
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x <= 0) {
        fprintf(stderr, "ringtrain %s: '%s' is not a job id (a positive number, as `ringtrain "
                        "jobs` lists)\n",
                a->cmd->name, v);
        return -1;
    }
    *id = x;
    return 0;
}

void cli_usage(const cli_cmd *cmd, FILE *f)
{
    fprintf(f, "usage: ringtrain %s %s\n  %s\n", cmd->name, cmd->usage, cmd->summary);
    for (int pass = 0; pass < 2; pass++) {
        const cli_flag *t = pass == 0 ? cmd->flags : (cmd->connects ? CONN_FLAGS : NULL);
        if (pass == 1 && t)
            fprintf(f, "where the coordinator is (else RINGTRAIN_* or ~/.config/ringtrain/"
                       "cli.conf):\n");
        for (int i = 0; t && t[i].name; i++) {
            char left[64];
            snprintf(left, sizeof left, "%s%s%s%s%s", t[i].name, t[i].alias ? ", " : "",
                     t[i].alias ? t[i].alias : "", t[i].kind != CLI_SWITCH ? " " : "",
                     t[i].kind != CLI_SWITCH ? (t[i].metavar ? t[i].metavar : "VALUE") : "");
            fprintf(f, "  %-28s %s%s\n", left, t[i].help, t[i].kind == CLI_LIST ? " (repeatable)" : "");
        }
    }
}

/* ---- what reaches the terminal -------------------------------------------------- */

bool cli_raw;

/* s's control characters (C0, DEL, and C1 as UTF-8 encodes them) as \xNN
 * into out (cap bytes, cut with "..."); tab, and with lines also newline
 * and carriage return, kept.  The length written. */
static size_t escape(const char *s, size_t n, char *out, size_t cap, bool lines)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        bool c1 = c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
                  (unsigned char)s[i + 1] <= 0x9f;
        if ((c < 0x20 && c != '\t' && !(lines && (c == '\n' || c == '\r'))) || c == 0x7f || c1) {
            if (c1)
                c = (unsigned char)s[++i];
            k += (size_t)snprintf(out + k, cap - k, "\\x%02x", c);
        } else {
            out[k++] = (char)c;
        }
        if (k + 8 >= cap && i + 1 < n)
            k += (size_t)snprintf(out + k, cap - k, "...");
    }
    out[k] = '\0';
    return k;
}

const char *cli_safe(const char *s)
{
    static char ring[8][1024];
    static int next;
    char *out = ring[next++ % 8];
    escape(s ? s : "", s ? strlen(s) : 0, out, sizeof ring[0], false);
    return out;
}

bool cli_write_out(FILE *f, const char *data, size_t n)
{
    if (cli_raw || !isatty(fileno(f)))
        return fwrite(data, 1, n, f) == n;
    char buf[4096 * 4 + 16];
    for (size_t off = 0; off < n; off += 4096) {
        size_t len = n - off < 4096 ? n - off : 4096;
        size_t k = escape(data + off, len, buf, sizeof buf, true);
        if (fwrite(buf, 1, k, f) != k)
            return false;
    }
    return true;
}
