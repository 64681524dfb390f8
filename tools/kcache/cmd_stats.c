/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_stats.c — `kcache stats`: the cache's counters, summed over every shard and every
 * process that used it, and the remote's state when there is one.
 *
 * The one idea: a remote is probed once before printing, so that its breaker says what the
 * remote is like now, not when it was last used.  --zero resets the event counters only.
 * "entries" counts every stored object; how many of them are graph entries, images and unit
 * records ([Note: two levels] in kcache/entry.h) is counted by walking the directory's names
 * (their variants say the kind), since the shard counters do not tell them apart.
 * --format openmetrics|prometheus prints the library's own exposition (kc_cache_metrics), so a
 * runtime's endpoint and this command print the same text; the JSON carries the latency
 * histograms (kc_cache_latency) that exposition is made of.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

static int cmd_stats(const cli_settings *cs, int argc, char **argv);

static const cli_opt stats_opts[] = {
    {"json", 0, NULL, "print one JSON object"},
    {"format", 0, "FORMAT", "text (default), json (= --json), openmetrics, or prometheus (the classic text format)"},
    {"zero", 0, NULL, "reset the event counters and latency histograms (not entries or bytes), then show them"},
    {"describe", 0, NULL, "list every statistic with its kind and meaning; reads no cache"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_stats = {
    "stats",
    "kcache stats [--json] [--format text|json|openmetrics|prometheus] [--zero] [--describe]",
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
    "Each lookup's time is kept too, a histogram per outcome (JSON: \"latency\").\n"
    "--format openmetrics prints them all as OpenMetrics text for a scraper (Prometheus): lookups\n"
    "by outcome, refusals by reason, time saved, sizes, lookup latency histograms, this process's\n"
    "per-tier counts (docs/fleet.md, Monitoring); --format prometheus the classic Prometheus text\n"
    "format; --format json is --json, --format text the default.\n"
    "--zero resets the event counters and the latency histograms (not entries or bytes).  --describe\n"
    "lists every statistic with its kind (counter, gauge, bytes, microseconds) and what it counts,\n"
    "and reads no cache.",
    cmd_stats,
    stats_opts,
    CLI_OPERANDS_NONE};

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

/* With more than one remote, one line per remote tier (this process's counts of every object asked of it;
 * the remote_* counters above count graph lookups): text, or JSON's "remotes" array.  With one remote, nothing (its output stays as it was). */
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
            printf(
                "  tier %zu          %s: breaker %s%s\n    hits %llu misses %llu errors %llu skipped %llu writes %llu "
                "write_errors %llu\n",
                i, t.url, kc_breaker_name(t.breaker), t.readonly ? ", read-only" : "", (unsigned long long)t.hits,
                (unsigned long long)t.misses, (unsigned long long)t.errors, (unsigned long long)t.skipped,
                (unsigned long long)t.writes, (unsigned long long)t.write_errors);
        }
    }
    if (json) fputs("]", stdout);
}

/* Everything `kcache stats` shows, read once before anything is printed. */
typedef struct stats_view {
    kc_cache *c;
    kc_stats s;
    kc_latency lat;
    kinds k;
    uint64_t nprof, prof_bytes; /* site profiles: in the size, not in the entries */
    int have_remote, reachable;
    kc_remote_state rs;
    uint64_t served, lookups; /* each lookup counted one outcome; bypasses are not lookups of the cache */
} stats_view;

/* Read the counters, the kinds, the profiles and (probed once) the remote; NULL, or what could not be done. */
static const char *stats_read(kc_cache *c, int zero, stats_view *v) {
    v->c = c;
    if (zero && kc_cache_stats_zero(c) != KC_OK) return "cannot zero the statistics";
    if (kc_cache_stats(c, &v->s) != KC_OK) return "cannot read the statistics";
    v->lat.version = KC_LATENCY_VERSION;
    if (kc_cache_latency(c, &v->lat) != KC_OK) return "cannot read the lookup latency";
    if (kc_cache_foreach(c, count_kind, &v->k) != KC_OK) return "cannot list the cache";
    if (kc_site_profile_usage(c, &v->nprof, &v->prof_bytes) != KC_OK) return "cannot list the site profiles";
    v->have_remote = kc_cache_remote_state(c, &v->rs) == KC_OK;
    if (v->have_remote) { /* probe once, so that the breaker says what the remote is like now */
        v->reachable = kc_cache_remote_ping(c) == KC_OK;
        kc_cache_remote_state(c, &v->rs);
        kc_cache_stats(c, &v->s);
        kc_cache_latency(c, &v->lat);
    }
    const kc_stats *s = &v->s;
    v->served = s->v[KC_STAT_HITS] + s->v[KC_STAT_MEMORY_HITS] + s->v[KC_STAT_REMOTE_HITS];
    v->lookups = v->served + s->v[KC_STAT_MISSES];
    return NULL;
}

/* The remote's counters, in the order both forms show them. */
static const kc_stat remote_ids[] = {KC_STAT_REMOTE_HITS,     KC_STAT_REMOTE_MISSES,  KC_STAT_REMOTE_ERRORS,
                                     KC_STAT_REMOTE_TIMEOUTS, KC_STAT_REMOTE_DROPPED, KC_STAT_REMOTE_PUTS,
                                     KC_STAT_REMOTE_SKIPPED,  KC_STAT_MAC_REJECTED};
static const char *const remote_names[] = {"hits",           "misses", "errors",  "timeouts",
                                           "dropped_writes", "puts",   "skipped", "mac_rejected"};
#define REMOTE_COUNT (sizeof remote_ids / sizeof remote_ids[0])

/* The mode the directory is in for the processes that use it.  stats opens it to inspect (read-only,
 * whatever the directory), so the mode shown is the settings' (KCACHE_DISABLE, KCACHE_READONLY) or,
 * for a directory that refuses this process writes, read-only: what a lookup here would find. */
static kc_mode use_mode(kc_cache *c) {
    if (kc_cache_mode(c) == KC_CACHE_DISABLED) return KC_CACHE_DISABLED;
    if (cli_setting_on(kc_cache_config(c), KC_CONFIG_readonly)) return KC_CACHE_READONLY;
    char v1[PATH_MAX];
    snprintf(v1, sizeof v1, "%s/v1", kc_cache_dir(c));
    const char *d = access(v1, F_OK) == 0 ? v1 : kc_cache_dir(c);
    if (access(d, F_OK) == 0 && faccessat(AT_FDCWD, d, W_OK | X_OK, AT_EACCESS) != 0) return KC_CACHE_READONLY;
    return KC_CACHE_READWRITE;
}

/* ---- JSON: one object, a function per part ---- */

static void json_directory(const stats_view *v, int *first) {
    kc_cache *c = v->c;
    json_kv_str(stdout, first, "dir", kc_cache_dir(c));
    /* read-only: its stats files cannot be written, so other processes' counts stay in their memory */
    kc_mode m = use_mode(c);
    json_kv_str(stdout, first, "mode",
                m == KC_CACHE_READONLY   ? "read-only"
                : m == KC_CACHE_DISABLED ? "disabled"
                                         : "read-write");
    json_kv_u64(stdout, first, "max_size", kc_cache_max_size(c));
}

static void json_counters(const stats_view *v, int *first) {
    for (int i = 0; i < KC_STAT_COUNT; i++) json_kv_u64(stdout, first, kc_stat_name((kc_stat)i), v->s.v[i]);
}

static void json_kinds(const stats_view *v, int *first) {
    json_kv_u64(stdout, first, "graphs", v->k.n[CLI_GRAPH]);
    json_kv_u64(stdout, first, "images", v->k.n[CLI_IMAGE]);
    json_kv_u64(stdout, first, "units", v->k.n[CLI_UNIT]);
    json_kv_u64(stdout, first, "graph_bytes", v->k.bytes[CLI_GRAPH]);
    json_kv_u64(stdout, first, "image_bytes", v->k.bytes[CLI_IMAGE]);
    json_kv_u64(stdout, first, "unit_bytes", v->k.bytes[CLI_UNIT]);
    json_kv_u64(stdout, first, "profiles", v->nprof);
    json_kv_u64(stdout, first, "profile_bytes", v->prof_bytes);
}

/* "latency": per outcome its count, its sum in seconds, and its buckets (not cumulative: counts[i]
 * of times <= bounds[i] and over bounds[i-1]; the last, over the largest bound). */
static void json_latency(const stats_view *v, int *first) {
    (void)first;
    printf(", \"latency\": {\"bounds_seconds\": [");
    for (int b = 0; b < KC_LATENCY_BUCKETS; b++) printf("%s%g", b ? ", " : "", kc_latency_bound(b));
    printf("]");
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) {
        int f = 1;
        printf(", \"%s\": {", kc_lookup_outcome_name((kc_lookup_outcome)o));
        json_kv_u64(stdout, &f, "count", v->lat.count[o]);
        printf(", \"sum_seconds\": %.9f", (double)v->lat.sum_ns[o] / 1e9); /* to the ns, as the exposition */
        printf(", \"counts\": [");
        for (int b = 0; b <= KC_LATENCY_BUCKETS; b++)
            printf("%s%llu", b ? ", " : "", (unsigned long long)v->lat.buckets[o][b]);
        printf("]}");
    }
    printf("}");
}

static void json_hit_rate(const stats_view *v, int *first) {
    json_kv_f64(stdout, first, "hit_rate", v->lookups ? (double)v->served / (double)v->lookups : 0.0);
}

static void json_remote(const stats_view *v, int *first) {
    (void)first;
    printf(", \"remote\": ");
    if (!v->have_remote) {
        printf("null");
        return;
    }
    int f2 = 1;
    printf("{");
    json_kv_str(stdout, &f2, "url", v->rs.url);
    json_kv_str(stdout, &f2, "breaker", kc_breaker_name(v->rs.breaker));
    json_kv_f64(stdout, &f2, "retry_in_ms", v->rs.retry_in_ms);
    printf(", \"reachable\": %s", v->reachable ? "true" : "false");
    for (size_t i = 0; i < REMOTE_COUNT; i++) json_kv_u64(stdout, &f2, remote_names[i], v->s.v[remote_ids[i]]);
    printf("}");
}

/* ---- text: a function per block ---- */

static void text_directory(const stats_view *v) {
    kc_cache *c = v->c;
    kc_mode m = use_mode(c);
    printf("cache directory   %s%s\n", kc_cache_dir(c),
           m == KC_CACHE_READONLY   ? " (read-only)"
           : m == KC_CACHE_DISABLED ? " (disabled: lookups miss; what the directory holds is below)"
                                    : "");
    if (m == KC_CACHE_READONLY) /* its stats files cannot be written: counts stay in each process */
        printf("                  read-only: the counts below are those stored before, plus this process's;\n"
               "                  the lookups of other processes on a read-only cache are kept in their memory only\n");
}

static void text_size(const stats_view *v) {
    char sz[32], mx[32];
    cli_human_size(v->s.v[KC_STAT_BYTES], sz, sizeof sz);
    cli_human_size(kc_cache_max_size(v->c), mx, sizeof mx);
    if (kc_cache_max_size(v->c) == 0) snprintf(mx, sizeof mx, "no limit"); /* KCACHE_MAX_SIZE=0 */
    printf("size              %s of %s (%llu entries)\n", sz, mx, (unsigned long long)v->s.v[KC_STAT_ENTRIES]);
    static const char *const kind_names[] = {"graph entries", "images", "unit records"};
    for (int i = 0; i < 3; i++) {
        char b[32];
        cli_human_size(v->k.bytes[i], b, sizeof b);
        printf("  %-15s %llu (%s)\n", kind_names[i], (unsigned long long)v->k.n[i], b);
    }
    char pb[32];
    cli_human_size(v->prof_bytes, pb, sizeof pb);
    printf("  %-15s %llu (%s)\n", "site profiles", (unsigned long long)v->nprof, pb);
}

static void text_hit_rate(const stats_view *v) {
    printf("hit rate          %.1f %% of %llu lookups\n",
           v->lookups ? 100.0 * (double)v->served / (double)v->lookups : 0.0, (unsigned long long)v->lookups);
    printf("compile time saved %.1f s (each disk or remote hit adds its entry's wall-clock compile time;\n"
           "                  memory hits and waits for another's compile add nothing)\n",
           (double)v->s.v[KC_STAT_COMPILE_US_SAVED] / 1e6);
}

static void text_counters(const stats_view *v) { print_table(&v->s); }

/* One line per outcome that was seen: how many lookups, their mean time. */
static void text_latency(const stats_view *v) {
    printf("lookup latency   ");
    int any = 0;
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) {
        uint64_t n = v->lat.count[o];
        if (!n) continue;
        double mean_us = (double)v->lat.sum_ns[o] / 1e3 / (double)n;
        printf("%s %s %llu, mean %.0f us", any++ ? ";" : "", kc_lookup_outcome_name((kc_lookup_outcome)o),
               (unsigned long long)n, mean_us);
    }
    printf("%s\n", any ? "" : " no lookups");
}

static void text_remote(const stats_view *v) {
    if (!v->have_remote) {
        printf("remote            none (KCACHE_REMOTE or --remote URL)\n");
        return;
    }
    printf("remote            %s: %s, breaker %s", v->rs.url, v->reachable ? "reachable" : "unreachable",
           kc_breaker_name(v->rs.breaker));
    if (v->rs.breaker == KC_BREAKER_OPEN) printf(" (retry in %.0f ms)", v->rs.retry_in_ms);
    printf("\n ");
    for (size_t i = 0; i < REMOTE_COUNT; i++)
        printf(" %s %llu", remote_names[i], (unsigned long long)v->s.v[remote_ids[i]]);
    printf("\n");
    print_tiers(v->c, 0);
}

static void json_tiers(const stats_view *v, int *first) {
    (void)first;
    print_tiers(v->c, 1);
}

/* The parts, in the order each form shows them: a new part is a function and a row in each. */
static void (*const json_parts[])(const stats_view *v, int *first) = {
    json_directory, json_counters, json_kinds, json_hit_rate, json_latency, json_remote, json_tiers,
};
static void (*const text_parts[])(const stats_view *v) = {
    text_directory, text_size, text_hit_rate, text_latency, text_counters, text_remote,
};

/* --format openmetrics|prometheus: the library's exposition (kc_cache_metrics), sized by its first call. */
static int print_metrics(kc_cache *c, int zero, unsigned flags) {
    if (zero && kc_cache_stats_zero(c) != KC_OK) return cli_fail("cannot zero the statistics");
    size_t need = 0;
    char *buf = NULL;
    int rc = kc_cache_metrics(c, flags, NULL, 0, &need);
    for (int tries = 0; rc != KC_OK && need && tries < 3; tries++) { /* grown by a tier between calls: again */
        free(buf);
        if (!(buf = malloc(need + 4096))) return cli_fail("cannot hold the metrics text");
        rc = kc_cache_metrics(c, flags, buf, need + 4096, &need);
    }
    if (rc == KC_OK && buf) fputs(buf, stdout);
    free(buf);
    return rc == KC_OK ? 0 : cli_fail("cannot write the metrics");
}

/* --format's names: text, json, then the two expositions (their kc_cache_metrics flags + 2). */
static int format_of(const char *f) {
    static const char *const names[] = {"text", "json", "openmetrics", "prometheus"};
    for (int i = 0; i < 4; i++)
        if (strcmp(f, names[i]) == 0) return i;
    return -1;
}

static int cmd_stats(const cli_settings *cs, int argc, char **argv) {
    cli_args a;
    cli_parse(&cli_cmd_stats, argc, argv, 0, &a);
    cli_opts o = {.json = cli_flag(&a, "json")};
    int zero = cli_flag(&a, "zero"), desc = cli_flag(&a, "describe"), fmt = 0;
    const char *f = cli_arg(&a, "format");
    if (f && (fmt = format_of(f)) < 0)
        return cli_usage_error(&cli_cmd_stats, "unknown format (text, json, openmetrics, prometheus)", f);
    if (f && fmt != 1 && o.json) /* --json is --format json: with another format, two answers to one question */
        return cli_usage_error(&cli_cmd_stats, "--json and --format are two formats; give one", NULL);
    if (fmt == 1) o.json = 1;
    if (desc && fmt >= 2) return cli_usage_error(&cli_cmd_stats, "--describe prints text or JSON only", NULL);
    if (desc) return describe(o.json);
    kc_cache *c;
    if ((zero ? cli_open_cache : cli_open_cache_readonly)(cs, &c)) /* --zero writes */
        return cli_json_failed(o.json && fmt < 2, EXIT_PROBLEM, NULL);
    if (fmt >= 2) {
        int rc = print_metrics(c, zero, fmt == 3 ? KC_METRICS_PROMETHEUS : KC_METRICS_OPENMETRICS);
        kc_cache_close(c);
        return rc;
    }
    stats_view v;
    memset(&v, 0, sizeof v);
    const char *failed = stats_read(c, zero, &v);
    if (failed) {
        int rc = cli_json_failed(o.json, cli_fail(failed), NULL); /* before the close: its error */
        kc_cache_close(c);
        return rc;
    }
    if (o.json) {
        int first = 1;
        printf("{");
        for (size_t i = 0; i < sizeof json_parts / sizeof json_parts[0]; i++) json_parts[i](&v, &first);
        printf("}\n");
    } else {
        for (size_t i = 0; i < sizeof text_parts / sizeof text_parts[0]; i++) text_parts[i](&v);
    }
    kc_cache_close(c);
    return 0;
}
