/* fuzz_config.c — the INI loader on arbitrary bytes: every key type, paths,
 * errors and the print/reload round trip must hold without a crash, leak or
 * undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_config.h"

typedef struct fcfg {
    int64_t i;
    double f;
    bool b;
    char *s, *p;
    rt_strlist l;
    uint64_t z;
    int64_t d;
    int e;
    int64_t g;
} fcfg;

static const rt_cfg_key keys[] = {
    RT_CFG_I("a", "int", "5", -100, 100, fcfg, i, "an integer"),
    RT_CFG_F("a", "float", "0.5", 0, 1, fcfg, f, "a number"),
    RT_CFG_B("a", "bool", "false", fcfg, b, "a boolean"),
    RT_CFG_S("b", "string", "x", fcfg, s, "a string"),
    RT_CFG_P("b", "path", "dir/file", fcfg, p, "a path"),
    RT_CFG_L("b", "list", "a,b", fcfg, l, "a list"),
    RT_CFG_Z("c", "size", "1M", 0, 1e15, fcfg, z, "a size"),
    RT_CFG_D("c", "duration", "1s", 0, 1e12, fcfg, d, "a duration"),
    RT_CFG_E("c", "enum", "x", "x|y|z", fcfg, e, "a choice"),
    RT_CFG_KEY("", "global", RT_CFG_INT, NULL, RT_CFG_NOLIMIT_LO, RT_CFG_NOLIMIT_HI, NULL, fcfg,
               g, "a key outside sections", RT_CFG_REQUIRED),
};
static const rt_cfg_schema schema = {"fuzz", keys, RT_ARRAY_LEN(keys), sizeof(fcfg), NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fcfg c;
    rt_cfg_errors e = {0};
    rt_status st = rt_cfg_load_string(&schema, (const char *)data, size, "fuzz.ini", "/base", &c, &e);
    char joined[2048];
    rt_cfg_errors_join(&e, joined, sizeof joined);
    if (st == RT_OK) {
        /* what loads must print and load back to the same text */
        char *a = rt_cfg_print_string(&schema, &c);
        fcfg d;
        rt_cfg_errors e2 = {0};
        if (a && rt_cfg_load_string(&schema, a, strlen(a), "printed", NULL, &d, &e2) == RT_OK) {
            char *b = rt_cfg_print_string(&schema, &d);
            if (b && strcmp(a, b) != 0)
                abort();
            free(b);
        }
        /* printed text may not load back only when a string holds INI syntax */
        rt_cfg_errors_free(&e2);
        rt_cfg_free(&schema, &d);
        free(a);
    }
    rt_cfg_errors_free(&e);
    rt_cfg_free(&schema, &c);
    return 0;
}
