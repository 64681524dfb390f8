/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_limit.c — `kcache limit [SIZE]`: show the cache directory's size limit, or record SIZE as
 * the directory's limit for every process that opens it.
 *
 * The one idea: the limit is a property of the directory, recorded as `max_size` in its
 * kcache.conf (kc_cache_set_max_size; an older kcache wrote it in v1/record, still read) and
 * changed only by this command or `kcache config max_size SIZE`; a process's
 * KCACHE_MAX_SIZE applies only to a directory without a recorded limit.  The work is the
 * library's; this file parses SIZE and reports.  SIZE 0 records "no limit".
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 * Must not: evict anything itself (the next put over the limit, or `kcache gc`, does).
 */
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "json.h"

static int cmd_limit(const cli_settings *cs, int argc, char **argv);

static const cli_opt limit_opts[] = {
    {"json", 0, NULL, "print one JSON object: max_size, recorded"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_limit = {"limit",
                               "kcache limit [SIZE] [--json]",
                               "Without SIZE, print the size limit in force and whether the directory records it.\n"
                               "With SIZE (5G, 500M, 64K, bytes; 0: no limit), record it as the directory's limit:\n"
                               "every process that opens the directory from then on uses it, whatever its\n"
                               "KCACHE_MAX_SIZE (which applies only to a directory without a recorded limit).\n"
                               "Nothing is evicted now: the next put over the limit, or 'kcache gc', does.",
                               cmd_limit,
                               limit_opts,
                               CLI_OPERANDS_NONE};

static int cmd_limit(const cli_settings *cs, int argc, char **argv) {
    cli_args o;
    cli_parse(&cli_cmd_limit, argc, argv, 1, &o);
    uint64_t size = 0;
    if (o.npos == 1 && kc_parse_size(o.pos[0], &size) != KC_OK)
        return cli_usage_error(&cli_cmd_limit, kc_error_last()->message, NULL);
    kc_cache *c;
    if ((o.npos == 1 ? cli_open_cache : cli_open_cache_readonly)(cs, &c)) return EXIT_PROBLEM;
    if (o.npos == 1 && kc_cache_set_max_size(c, size) != KC_OK) {
        kc_cache_close(c);
        return cli_fail("limit");
    }
    char rec[32];
    kc_config_origin from;
    kc_config_get(kc_cache_config(c), KC_CONFIG_max_size, rec, sizeof rec, &from, NULL, 0);
    int recorded = from == KC_ORIGIN_DIR_FILE; /* its kcache.conf, or an older directory's record */
    uint64_t max = kc_cache_max_size(c);
    kc_cache_close(c);
    if (cli_flag(&o, "json")) {
        int first = 1;
        printf("{");
        json_kv_u64(stdout, &first, "max_size", max);
        printf(",\"recorded\":%s}\n", recorded ? "true" : "false");
    } else {
        char h[32];
        cli_human_size(max, h, sizeof h);
        printf("%s%s\n", max ? h : "no limit",
               recorded ? " (the directory's recorded limit)" : " (this process's: the directory records none)");
    }
    return 0;
}
