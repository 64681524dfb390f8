/*
 * cmd_stats.c — `kcache stats`: the cache's counters, summed over every shard and every
 * process that used it, and the remote's state when there is one.
 *
 * The one idea: a remote is probed once before printing, so that its breaker says what the
 * remote is like now, not when it was last used.  --zero resets the event counters only.
 * "entries" counts every stored object; how many of them are graph entries, images and unit
 * records ([Note: two levels] in kcache/entry.h) is counted by walking the directory's names
 * (their variants say the kind), since the shard counters do not tell them apart.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_stats(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_stats = {
    "stats", "kcache stats [--json] [--zero] [--describe]",
    "Show the cache's counters, summed over every shard and every process that used it:\n"
    "entries, bytes, hits, misses, bypasses, compiles, corrupt, evictions, and more.  Entries\n"
    "are every stored object: graph entries, images (each stored once, shared by every graph\n"
    "that runs it) and unit records, counted apart (JSON: graphs, images, units and their\n"
    "_bytes); unit_compiles and unit_hits say how many compile units were compiled or found\n"
    "stored, images_missing how many stored graphs were misses for want of an image.  Each\n"
    "lookup counts one outcome, the one its caller was told: memory_hits, hits (disk),\n"
    "remote_hits, misses or bypasses; compile_waits are the hits that took the entry of\n"
    "another's compile.  compile_us_saved: each disk or remote hit adds its entry's wall-clock\n"
    "compile time; memory hits and waits add nothing.  With a\n"
    "remote, it is probed once and its breaker state and counters are shown (remote hits,\n"
    "misses, errors, timeouts, dropped writes, puts, MAC rejections; JSON: under \"remote\").\n"
    "--zero resets the event counters (not entries or bytes).  --describe lists every statistic\n"
    "with its kind (counter, gauge, bytes, microseconds) and what it counts, and reads no cache.",
    cmd_stats};

/* The objects of the local directory by kind, from their names (nothing is read). */
typedef struct kinds {
    uint64_t n[3], bytes[3]; /* indexed by cli_kind */
} kinds;

static int count_kind(const kc_cache_item *it, void *ctx) {
    kinds *k = ctx;
    cli_kind kind = cli_kind_of(it->variant);
    k->n[kind]++;
    k->bytes[kind] += it->bytes;
    return 0;
}

/* Every statistic of the table (kcache/stats.h) but the sizes shown above, each as its kind says. */
static void print_table(const kc_stats *s) {
    for (int i = 0; i < KC_STAT_COUNT; i++) {
        kc_stat id = (kc_stat)i;
        if (id == KC_STAT_BYTES || id == KC_STAT_ENTRIES) continue; /* the "size" line */
        char b[32];
        switch (kc_stat_kind_of(id)) {
        case KC_STAT_KIND_BYTES: cli_human_size(s->v[i], b, sizeof b); break;
        case KC_STAT_KIND_MICROSECONDS: snprintf(b, sizeof b, "%.1f s", (double)s->v[i] / 1e6); break;
        default: snprintf(b, sizeof b, "%llu", (unsigned long long)s->v[i]); break;
        }
        printf("%-17s %s\n", kc_stat_name(id), b);
    }
}

/* --describe: the table itself (kcache/stats.h), as text or JSON. */
static int describe(int json) {
    if (json) printf("[");
    for (int i = 0; i < KC_STAT_COUNT; i++) {
        kc_stat id = (kc_stat)i;
        if (json) {
            int first = 1;
            printf("%s{", i ? ", " : "");
            json_kv_str(stdout, &first, "name", kc_stat_name(id));
            json_kv_str(stdout, &first, "kind", kc_stat_kind_name(kc_stat_kind_of(id)));
            json_kv_str(stdout, &first, "doc", kc_stat_doc(id));
            printf("}");
        } else {
            printf("%-17s %-12s %s\n", kc_stat_name(id), kc_stat_kind_name(kc_stat_kind_of(id)), kc_stat_doc(id));
        }
    }
    if (json) printf("]\n");
    return 0;
}


/* With more than one remote, one line per remote tier (this process's counts; the remote_* counters above
 * are their sums): text, or JSON's "remotes" array.  With one remote, nothing (its output stays as it was). */
static void print_tiers(kc_cache *c, int json) {
    size_t n = kc_cache_tier_count(c);
    kc_tier_stats t = KC_TIER_STATS_INIT;
    if (n < 3 || kc_cache_tier_stats(c, n - 2, &t) != KC_OK || !t.remote) return;
    if (json) fputs(", \"remotes\": [", stdout);
    for (size_t i = 0, k = 0; i < n; i++) {
        if (kc_cache_tier_stats(c, i, &t) != KC_OK || !t.remote) continue;
        if (json) {
            int f = 1;
            printf("%s{", k++ ? ", " : "");
            json_kv_str(stdout, &f, "url", t.url);
            json_kv_str(stdout, &f, "breaker", kc_breaker_name(t.breaker));
            printf(", \"read_only\": %s", t.readonly ? "true" : "false");
            json_kv_u64(stdout, &f, "hits", t.hits), json_kv_u64(stdout, &f, "misses", t.misses);
            json_kv_u64(stdout, &f, "errors", t.errors), json_kv_u64(stdout, &f, "skipped", t.skipped);
            json_kv_u64(stdout, &f, "writes", t.writes), json_kv_u64(stdout, &f, "write_errors", t.write_errors);
            printf("}");
        } else {
            printf("  tier %zu          %s: breaker %s%s\n    hits %llu misses %llu errors %llu skipped %llu writes %llu "
                   "write_errors %llu\n", i, t.url, kc_breaker_name(t.breaker), t.readonly ? ", read-only" : "",
                   (unsigned long long)t.hits, (unsigned long long)t.misses, (unsigned long long)t.errors,
                   (unsigned long long)t.skipped, (unsigned long long)t.writes, (unsigned long long)t.write_errors);
        }
    }
    if (json) fputs("]", stdout);
}
static int cmd_stats(const cli_settings *cs, int argc, char **argv) {
    cli_opts o;
    int zero = 0, desc = 0, n = 0;
    for (int i = 1; i < argc; i++) { /* take --zero and --describe out, leave the rest to cli_parse_opts */
        if (strcmp(argv[i], "--zero") == 0) zero = 1;
        else if (strcmp(argv[i], "--describe") == 0) desc = 1;
        else argv[++n] = argv[i];
    }
    cli_parse_opts(&cli_cmd_stats, n + 1, argv, &o, 1, 0, 0);
    if (desc) return describe(o.json);
    kc_cache *c;
    if (cli_open_cache(cs, &c)) return EXIT_PROBLEM;
    if (zero && kc_cache_stats_zero(c) != KC_OK) {
        kc_cache_close(c);
        return cli_fail("cannot zero the statistics");
    }
    kc_stats s;
    if (kc_cache_stats(c, &s) != KC_OK) {
        kc_cache_close(c);
        return cli_fail("cannot read the statistics");
    }
    kinds k;
    memset(&k, 0, sizeof k);
    if (kc_cache_foreach(c, count_kind, &k) != KC_OK) {
        kc_cache_close(c);
        return cli_fail("cannot list the cache");
    }
    uint64_t nprof = 0, prof_bytes = 0; /* site profiles: in the size, not in the entries */
    if (kc_site_profile_usage(c, &nprof, &prof_bytes) != KC_OK) {
        kc_cache_close(c);
        return cli_fail("cannot list the site profiles");
    }
    kc_remote_state rs;
    int have_remote = kc_cache_remote_state(c, &rs) == KC_OK;
    int reachable = 0;
    if (have_remote) { /* probe once, so that the breaker says what the remote is like now */
        reachable = kc_cache_remote_ping(c) == KC_OK;
        kc_cache_remote_state(c, &rs);
        kc_cache_stats(c, &s);
    }
    static const kc_stat remote_ids[] = {KC_STAT_REMOTE_HITS, KC_STAT_REMOTE_MISSES, KC_STAT_REMOTE_ERRORS,
                                         KC_STAT_REMOTE_TIMEOUTS, KC_STAT_REMOTE_DROPPED, KC_STAT_REMOTE_PUTS,
                                         KC_STAT_REMOTE_SKIPPED, KC_STAT_MAC_REJECTED};
    static const char *const remote_names[] = {"hits", "misses", "errors", "timeouts", "dropped_writes", "puts",
                                               "skipped", "mac_rejected"};
    /* Each lookup counted one outcome; bypasses are not lookups of the cache. */
    uint64_t served = s.v[KC_STAT_HITS] + s.v[KC_STAT_MEMORY_HITS] + s.v[KC_STAT_REMOTE_HITS];
    uint64_t lookups = served + s.v[KC_STAT_MISSES];
    if (o.json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "dir", kc_cache_dir(c));
        /* read-only: its stats files cannot be written, so other processes' counts stay in their memory */
        json_kv_str(stdout, &first, "mode", kc_cache_mode(c) == KC_CACHE_READONLY ? "read-only"
                                            : kc_cache_mode(c) == KC_CACHE_DISABLED ? "disabled" : "read-write");
        json_kv_u64(stdout, &first, "max_size", kc_cache_max_size(c));
        for (int i = 0; i < KC_STAT_COUNT; i++) json_kv_u64(stdout, &first, kc_stat_name((kc_stat)i), s.v[i]);
        json_kv_u64(stdout, &first, "graphs", k.n[CLI_GRAPH]);
        json_kv_u64(stdout, &first, "images", k.n[CLI_IMAGE]);
        json_kv_u64(stdout, &first, "units", k.n[CLI_UNIT]);
        json_kv_u64(stdout, &first, "graph_bytes", k.bytes[CLI_GRAPH]);
        json_kv_u64(stdout, &first, "image_bytes", k.bytes[CLI_IMAGE]);
        json_kv_u64(stdout, &first, "unit_bytes", k.bytes[CLI_UNIT]);
        json_kv_u64(stdout, &first, "profiles", nprof);
        json_kv_u64(stdout, &first, "profile_bytes", prof_bytes);
        json_kv_f64(stdout, &first, "hit_rate",
                    lookups ? (double)served / (double)lookups : 0.0);
        printf(", \"remote\": ");
        if (!have_remote) printf("null");
        else {
            int f2 = 1;
            printf("{");
            json_kv_str(stdout, &f2, "url", rs.url);
            json_kv_str(stdout, &f2, "breaker", kc_breaker_name(rs.breaker));
            json_kv_f64(stdout, &f2, "retry_in_ms", rs.retry_in_ms);
            printf(", \"reachable\": %s", reachable ? "true" : "false");
            for (size_t i = 0; i < sizeof remote_ids / sizeof remote_ids[0]; i++)
                json_kv_u64(stdout, &f2, remote_names[i], s.v[remote_ids[i]]);
            printf("}");
        }
        print_tiers(c, 1);
        printf("}\n");
    } else {
        char sz[32], mx[32];
        cli_human_size(s.v[KC_STAT_BYTES], sz, sizeof sz);
        cli_human_size(kc_cache_max_size(c), mx, sizeof mx);
        if (kc_cache_max_size(c) == 0) snprintf(mx, sizeof mx, "no limit"); /* KCACHE_MAX_SIZE=0 */
        printf("cache directory   %s%s\n", kc_cache_dir(c),
               kc_cache_mode(c) == KC_CACHE_READONLY ? " (read-only)" : kc_cache_mode(c) == KC_CACHE_DISABLED ? " (disabled)" : "");
        if (kc_cache_mode(c) == KC_CACHE_READONLY) /* its stats files cannot be written: counts stay in each process */
            printf("                  read-only: the counts below are those stored before, plus this process's;\n"
                   "                  the lookups of other processes on a read-only cache are kept in their memory only\n");
        printf("size              %s of %s (%llu entries)\n", sz, mx, (unsigned long long)s.v[KC_STAT_ENTRIES]);
        static const char *const kind_names[] = {"graph entries", "images", "unit records"};
        for (int i = 0; i < 3; i++) {
            char b[32];
            cli_human_size(k.bytes[i], b, sizeof b);
            printf("  %-15s %llu (%s)\n", kind_names[i], (unsigned long long)k.n[i], b);
        }
        char pb[32];
        cli_human_size(prof_bytes, pb, sizeof pb);
        printf("  %-15s %llu (%s)\n", "site profiles", (unsigned long long)nprof, pb);
        printf("hit rate          %.1f %% of %llu lookups\n",
               lookups ? 100.0 * (double)served / (double)lookups : 0.0,
               (unsigned long long)lookups);
        printf("compile time saved %.1f s (each disk or remote hit adds its entry's wall-clock compile time;\n"
               "                  memory hits and waits for another's compile add nothing)\n",
               (double)s.v[KC_STAT_COMPILE_US_SAVED] / 1e6);
        print_table(&s);
        if (have_remote) {
            printf("remote            %s: %s, breaker %s", rs.url, reachable ? "reachable" : "unreachable",
                   kc_breaker_name(rs.breaker));
            if (rs.breaker == KC_BREAKER_OPEN) printf(" (retry in %.0f ms)", rs.retry_in_ms);
            printf("\n ");
            for (size_t i = 0; i < sizeof remote_ids / sizeof remote_ids[0]; i++)
                printf(" %s %llu", remote_names[i], (unsigned long long)s.v[remote_ids[i]]);
            printf("\n");
            print_tiers(c, 0);
        } else {
            printf("remote            none (KCACHE_REMOTE or --remote URL)\n");
        }
    }
    kc_cache_close(c);
    return 0;
}
