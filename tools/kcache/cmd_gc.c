/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_gc.c — `kcache gc [--max-size SIZE]`: evict least-recently-used entries down to SIZE
 * (default: the cache's limit — the directory's recorded one, `kcache limit`, else the process's),
 * sweep what no graph can use (objects of an older format, graph entries and unit records whose
 * image is gone, images nothing refers to: store/local_gc.c), collect stale temporary files,
 * bound the quarantine and recount.
 *
 * The one idea: the work is the library's (kc_cache_gc); this file parses SIZE and reports.
 * SIZE 0 means no limit (nothing evicted), the meaning KCACHE_MAX_SIZE=0 has (store/local_gc.c).
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "json.h"

static int cmd_gc(const cli_settings *cs, int argc, char **argv);

static const cli_opt gc_opts[] = {
    {"max-size", 0, "SIZE", "evict the least recently used down to SIZE (0: no limit)"},
    {"older-than", 0, "DURATION", "first evict what was not used for DURATION (30s, 90m, 12h, 7d, 2w)"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_gc = {"gc",
                            "kcache gc [--max-size SIZE] [--older-than DURATION] [--json]",
                            "Evict least-recently-used entries until the cache holds at most SIZE (default: the\n"
                            "directory's limit recorded by 'kcache limit SIZE', else KCACHE_MAX_SIZE or 5G),\n"
                            "remove what no graph can use — entries of an older format (stale), graph entries and\n"
                            "unit records whose image is gone (dangling), images nothing refers to for an hour\n"
                            "(orphans) —, collect stale temporary files, bound the quarantine and recount.\n"
                            "A size of 0 means no limit, as KCACHE_MAX_SIZE=0 does: nothing is evicted (use\n"
                            "'kcache clear' to remove every entry).\n"
                            "--older-than DURATION first evicts every entry, image and site profile not used for\n"
                            "longer than DURATION (a hit refreshes an entry's time), as ccache's --evict-older-than.",
                            cmd_gc,
                            gc_opts,
                            CLI_OPERANDS_NONE};

static int cmd_gc(const cli_settings *cs, int argc, char **argv) {
    cli_args a;
    cli_parse(&cli_cmd_gc, argc, argv, 0, &a);
    cli_opts o = {.json = cli_flag(&a, "json"), .max_size = cli_arg(&a, "max-size")};
    kc_gc_options go = KC_GC_OPTIONS_INIT;
    const char *age = cli_arg(&a, "older-than");
    if (age && cli_parse_duration(age, &go.older_than_s) != 0)
        return cli_usage_error(&cli_cmd_gc,
                               "--older-than needs a DURATION: a whole number and a unit, s, m, h, d or w "
                               "(30s, 90m, 12h, 7d, 2w)",
                               age);
    uint64_t max = 0;
    if (o.max_size && kc_parse_size(o.max_size, &max) != KC_OK)
        return cli_usage_error(&cli_cmd_gc, kc_error_last()->message, NULL);
    if (o.max_size && max == 0) max = UINT64_MAX; /* --max-size 0: no limit, never "evict everything" */
    kc_cache *c;
    if (cli_open_cache(cs, &c)) return EXIT_PROBLEM;
    kc_gc_report r = KC_GC_REPORT_INIT;
    go.max_size = max;
    int rc = kc_cache_gc_ext(c, &go, &r);
    kc_cache_close(c);
    if (rc != KC_OK) return cli_fail("gc failed");
    if (o.json) {
        int first = 1;
        printf("{");
        json_kv_u64(stdout, &first, "entries_before", r.entries_before);
        json_kv_u64(stdout, &first, "bytes_before", r.bytes_before);
        json_kv_u64(stdout, &first, "entries_after", r.entries_after);
        json_kv_u64(stdout, &first, "bytes_after", r.bytes_after);
        json_kv_u64(stdout, &first, "evicted", r.evicted);
        json_kv_u64(stdout, &first, "temp_removed", r.temp_removed);
        json_kv_u64(stdout, &first, "stale_removed", r.stale_removed);
        json_kv_u64(stdout, &first, "dangling_removed", r.dangling_removed);
        json_kv_u64(stdout, &first, "orphans_removed", r.orphans_removed);
        json_kv_u64(stdout, &first, "corrupt", r.corrupt);
        json_kv_u64(stdout, &first, "profiles_before", r.profiles_before);
        json_kv_u64(stdout, &first, "profiles_after", r.profiles_after);
        printf("}\n");
    } else {
        char a[32], b[32];
        cli_human_size(r.bytes_before, a, sizeof a);
        cli_human_size(r.bytes_after, b, sizeof b);
        printf("evicted %llu of %llu entries and %llu site profiles; %s -> %s; %llu stale temporary files removed\n",
               (unsigned long long)r.evicted, (unsigned long long)r.entries_before,
               (unsigned long long)r.profiles_before, a, b, (unsigned long long)r.temp_removed);
        if (r.profiles_before != r.profiles_after)
            printf("site profiles: %llu -> %llu (evicted with the entries, least recently used first)\n",
                   (unsigned long long)r.profiles_before, (unsigned long long)r.profiles_after);
        printf("removed %llu stale (older format), %llu dangling (image gone), %llu orphan images\n",
               (unsigned long long)r.stale_removed, (unsigned long long)r.dangling_removed,
               (unsigned long long)r.orphans_removed);
        if (r.corrupt)
            printf("%llu corrupt entries left in place: 'kcache verify' quarantines them\n",
                   (unsigned long long)r.corrupt);
    }
    return 0;
}
