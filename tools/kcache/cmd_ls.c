/*
 * cmd_ls.c — `kcache ls`: one line (or one JSON object) per stored entry: key, variant,
 * size, last use.
 *
 * The one idea: each entry is printed as the cache's walker hands it over, nothing is kept;
 * its variant through cli_shown(), so no name reaches the terminal with an escape sequence in it.
 * Only main.c's command table refers to this file; it opens the cache through
 * cli_open_cache() and changes nothing.
 */
#include <stdio.h>

#include "cli.h"
#include "json.h"

static int cmd_ls(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_ls = {
    "ls", "kcache ls [--json]",
    "List stored entries: key, variant, size, last use.",
    cmd_ls};

typedef struct ls_ctx {
    int json, first;
    uint64_t n;
} ls_ctx;


static int ls_item(const kc_cache_item *it, void *ctx) {
    ls_ctx *l = ctx;
    char hex[KC_KEY_HEX_LEN + 1], t[32];
    kc_key_to_hex(&it->key, hex);
    cli_iso_time(it->last_used, t, sizeof t);
    if (l->json) {
        int first = 1;
        printf("%s\n  {", l->first ? "" : ",");
        json_kv_str(stdout, &first, "key", hex);
        json_kv_str(stdout, &first, "variant", it->variant);
        json_kv_u64(stdout, &first, "bytes", it->bytes);
        json_kv_u64(stdout, &first, "last_used", (uint64_t)it->last_used);
        json_kv_str(stdout, &first, "last_used_iso", t);
        printf("}");
        l->first = 0;
    } else {
        char v[4 * 64 + 1];
        printf("%s  %-12s %10llu  %s\n", hex, cli_shown(it->variant, v, sizeof v), (unsigned long long)it->bytes, t);
    }
    l->n++;
    return 0;
}

static int cmd_ls(const cli_settings *cs, int argc, char **argv) {
    cli_opts o;
    cli_parse_opts(&cli_cmd_ls, argc, argv, &o, 1, 0, 0);
    kc_cache *c;
    if (cli_open_cache(cs, &c)) return EXIT_PROBLEM;
    ls_ctx l = {o.json, 1, 0};
    if (o.json) printf("[");
    int rc = kc_cache_foreach(c, ls_item, &l);
    if (o.json) printf("%s]\n", l.first ? "" : "\n");
    kc_cache_close(c);
    return rc == KC_OK ? 0 : cli_fail("listing failed");
}
