/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.c — a lookup's time and outcome counted together, and the cache's statistics as a
 * metrics exposition (OpenMetrics 1.0 text, or the classic Prometheus text format) for a
 * scraper: kc_cache_count_lookup_, kc_cache_latency and kc_cache_metrics.
 *
 * The one idea: every number printed is read through the public readers (kc_cache_stats,
 * kc_cache_latency, kc_cache_tier_stats), the ones `kcache stats --json` prints, so the two
 * never disagree; every family is named from kcache/stats.h's table and outcome list, so a new
 * counter shows here without a line of its own.  Names: "kcache_" then the statistic, its unit
 * last (_seconds, _bytes); a counter's samples end "_total".  Lookups by outcome, refusals by
 * reason, the latency histograms by outcome, the per-tier counts (this process's) by tier.
 *
 * Callers: the graph part's lookups and kc_cache_get (kc_cache_count_lookup_), the public API
 * (stats.h), `kcache stats --format openmetrics|prometheus`.  Must not: write anything but the
 * caller's buffer (the reads flush this process's counts, as kc_cache_stats does), or print a
 * label value unescaped (a remote's URL comes from the user's settings).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "internal.h"

void kc_cache_count_lookup_(kc_cache *c, const kc_key *key, kc_lookup_outcome o, uint64_t t0_ns) {
    kc_local *l = c ? kc_cache_local_(c) : NULL;
    if (!l) return;
    uint64_t now = kc_mono_ns();
    kc_local_observe(l, key ? key->bytes[0] : 0, o, now > t0_ns ? now - t0_ns : 0, 1);
}

int kc_cache_latency(kc_cache *c, kc_latency *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_latency: NULL argument");
    int rc = kc_api_version("kc_cache_latency", "kc_latency", "KC_LATENCY_INIT", out->version, KC_LATENCY_VERSION);
    if (rc) return rc;
    kc_latency full = KC_LATENCY_INIT; /* [Note: versioned structs]: filled here, copied out as far as out's version */
    kc_local *l = kc_cache_local_(c);
    if (l) kc_local_latency(l, &full);
    kc_api_copy_out(out, &full, sizeof full, out->version);
    return KC_OK;
}

/* ---- the writer: snprintf into the caller's buffer, counting what did not fit ---- */

typedef struct mw {
    char *buf;
    size_t cap, len; /* len: what the text takes so far, whether it fit or not */
    int om;          /* OpenMetrics (1) or the classic format (0) */
} mw;

static void put(mw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(mw *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *at = w->len < w->cap ? w->buf + w->len : NULL;
    int n = vsnprintf(at, at ? w->cap - w->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) w->len += (size_t)n;
}

/* A HELP text or label value, escaped: backslash, newline and (labels, OpenMetrics' HELP) the
 * double quote; other control bytes and bytes past ASCII as '?', so a hostile URL stays one value. */
static void put_escaped(mw *w, const char *s, int quote) {
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '\\') put(w, "\\\\");
        else if (ch == '\n') put(w, "\\n");
        else if (ch == '"' && quote) put(w, "\\\"");
        else put(w, "%c", ch < 0x20 || ch >= 0x7f ? '?' : ch);
    }
}

/* A family's metadata: TYPE, UNIT (OpenMetrics, where the name ends in one), HELP.  A counter's
 * family is named without "_total" in OpenMetrics, with it in the classic format. */
static void family(mw *w, const char *name, const char *type, const char *unit, const char *help) {
    const char *total = !w->om && strcmp(type, "counter") == 0 ? "_total" : "";
    put(w, "# TYPE kcache_%s%s %s\n", name, total, type);
    if (w->om && unit) put(w, "# UNIT kcache_%s %s\n", name, unit);
    put(w, "# HELP kcache_%s%s ", name, total);
    put_escaped(w, help, w->om);
    put(w, "\n");
}

/* `units` of 10^-digits seconds as decimal seconds ("0.000025", "3.5"), written from integers: a
 * runtime's locale (LC_NUMERIC "de_DE": "0,5") never reaches the exposition, whose numbers are C's. */
static const char *secs(char out[48], uint64_t units, int digits) {
    uint64_t scale = 1;
    for (int i = 0; i < digits; i++) scale *= 10;
    int n = snprintf(out, 48, "%llu.%0*llu", (unsigned long long)(units / scale), digits,
                     (unsigned long long)(units % scale));
    while (n > 2 && out[n - 1] == '0' && out[n - 2] != '.') out[--n] = '\0';
    return out;
}

/* ---- the families ---- */

static const char *const outcome_help =
    "Lookups by outcome, the one each caller was told: memory, disk and remote (served from that tier), "
    "compile (a miss: compiled, or failed) or bypass (not cacheable); one outcome per lookup";

static void lookups(mw *w, const kc_stats *s) {
    family(w, "lookups", "counter", NULL, outcome_help);
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++)
        put(w, "kcache_lookups_total{outcome=\"%s\"} %llu\n", kc_lookup_outcome_name((kc_lookup_outcome)o),
            (unsigned long long)s->v[kc_lookup_outcome_stat((kc_lookup_outcome)o)]);
}

static void latency(mw *w, const kc_latency *lat) {
    family(w, "lookup_duration_seconds", "histogram", "seconds",
           "Wall-clock time of each lookup, from its start until its outcome was known, by outcome; "
           "each lookup counted in kcache_lookups is one observation");
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) {
        const char *on = kc_lookup_outcome_name((kc_lookup_outcome)o);
        uint64_t cum = 0;
        char t[48];
        for (int b = 0; b <= KC_LATENCY_BUCKETS; b++) {
            uint64_t add = lat->buckets[o][b]; /* saturating: a hostile stats file never makes it decrease */
            cum = cum > UINT64_MAX - add ? UINT64_MAX : cum + add;
            if (b < KC_LATENCY_BUCKETS)
                put(w, "kcache_lookup_duration_seconds_bucket{outcome=\"%s\",le=\"%s\"} %llu\n", on,
                    secs(t, (uint64_t)(kc_latency_bound(b) * 1e9 + 0.5), 9), (unsigned long long)cum);
            else
                put(w, "kcache_lookup_duration_seconds_bucket{outcome=\"%s\",le=\"+Inf\"} %llu\n", on,
                    (unsigned long long)cum);
        }
        put(w, "kcache_lookup_duration_seconds_count{outcome=\"%s\"} %llu\n", on, (unsigned long long)lat->count[o]);
        put(w, "kcache_lookup_duration_seconds_sum{outcome=\"%s\"} %s\n", on, secs(t, lat->sum_ns[o], 9));
    }
}

/* The refusals: stored or fetched objects not used, each for its reason (the statistic's name). */
static const kc_stat refusal_ids[] = {KC_STAT_LOAD_REFUSED,     KC_STAT_MAC_REJECTED,   KC_STAT_PUBLISH_REFUSED,
                                      KC_STAT_COMPILES_REFUSED, KC_STAT_IMAGES_MISSING, KC_STAT_CORRUPT};
#define NREFUSALS (sizeof refusal_ids / sizeof refusal_ids[0])

static void refusals(mw *w, const kc_stats *s) {
    family(w, "refusals", "counter", NULL,
           "Objects found and not used, by reason: load_refused (the driver refused an image), mac_rejected "
           "(missing or bad MAC), publish_refused (not published: no MAC), compiles_refused (a miss under "
           "KCACHE_REQUIRE_HIT), images_missing (a graph entry without its images), corrupt (failed validation)");
    for (size_t i = 0; i < NREFUSALS; i++)
        put(w, "kcache_refusals_total{reason=\"%s\"} %llu\n", kc_stat_name(refusal_ids[i]),
            (unsigned long long)s->v[refusal_ids[i]]);
}

/* Whether a statistic has a family above or below of its own (not one of the plain counters). */
static int shown_apart(kc_stat id) {
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++)
        if (kc_lookup_outcome_stat((kc_lookup_outcome)o) == id) return 1;
    for (size_t i = 0; i < NREFUSALS; i++)
        if (refusal_ids[i] == id) return 1;
    return id == KC_STAT_COMPILE_US_SAVED || id == KC_STAT_BYTES || id == KC_STAT_ENTRIES;
}

static void sizes(mw *w, kc_cache *c, const kc_stats *s) {
    family(w, "compile_time_saved_seconds", "counter", "seconds", kc_stat_doc(KC_STAT_COMPILE_US_SAVED));
    char t[48];
    put(w, "kcache_compile_time_saved_seconds_total %s\n", secs(t, s->v[KC_STAT_COMPILE_US_SAVED], 6));
    family(w, "size_bytes", "gauge", "bytes", kc_stat_doc(KC_STAT_BYTES));
    put(w, "kcache_size_bytes %llu\n", (unsigned long long)s->v[KC_STAT_BYTES]);
    family(w, "max_size_bytes", "gauge", "bytes", "The size limit of the local directory (0: none)");
    put(w, "kcache_max_size_bytes %llu\n", (unsigned long long)kc_cache_max_size(c));
    family(w, "entries", "gauge", NULL, kc_stat_doc(KC_STAT_ENTRIES));
    put(w, "kcache_entries %llu\n", (unsigned long long)s->v[KC_STAT_ENTRIES]);
}

/* Every other counter of the table, one family each: kcache_<name>_total. */
static void counters(mw *w, const kc_stats *s) {
    for (int i = 0; i < KC_STAT_COUNT; i++) {
        kc_stat id = (kc_stat)i;
        if (shown_apart(id)) continue;
        family(w, kc_stat_name(id), "counter", NULL, kc_stat_doc(id));
        put(w, "kcache_%s_total %llu\n", kc_stat_name(id), (unsigned long long)s->v[i]);
    }
}

static void tier_labels(mw *w, size_t i, const kc_tier_stats *t) {
    put(w, "{tier=\"%zu\",url=\"", i);
    put_escaped(w, t->url, 1);
    put(w, "\"");
}

/* This process's per-tier counts (kc_cache_tier_stats): reads and writes by result, and each
 * remote's breaker.  None when the cache has no tiers (disabled). */
static void tiers(mw *w, kc_cache *c) {
    size_t n = kc_cache_tier_count(c);
    if (n == 0) return;
    kc_tier_stats t[16];
    if (n > sizeof t / sizeof t[0]) n = sizeof t / sizeof t[0];
    for (size_t i = 0; i < n; i++) {
        kc_tier_stats z = KC_TIER_STATS_INIT;
        t[i] = z;
        if (kc_cache_tier_stats(c, i, &t[i]) != KC_OK) t[i] = z;
    }
    family(w, "tier_reads", "counter", NULL,
           "This process's reads of each tier (0: the local directory, then the remotes) by result: hit, miss, "
           "error (a refused object included), skipped (its breaker was open)");
    static const char *const rr[] = {"hit", "miss", "error", "skipped"};
    for (size_t i = 0; i < n; i++) {
        const uint64_t v[] = {t[i].hits, t[i].misses, t[i].errors, t[i].skipped};
        for (int k = 0; k < 4; k++) {
            put(w, "kcache_tier_reads_total");
            tier_labels(w, i, &t[i]);
            put(w, ",result=\"%s\"} %llu\n", rr[k], (unsigned long long)v[k]);
        }
    }
    family(w, "tier_writes", "counter", NULL,
           "This process's writes to each tier by result: ok, error (failed or dropped)");
    for (size_t i = 0; i < n; i++) {
        put(w, "kcache_tier_writes_total");
        tier_labels(w, i, &t[i]);
        put(w, ",result=\"ok\"} %llu\n", (unsigned long long)t[i].writes);
        put(w, "kcache_tier_writes_total");
        tier_labels(w, i, &t[i]);
        put(w, ",result=\"error\"} %llu\n", (unsigned long long)t[i].write_errors);
    }
    family(w, "tier_breaker_state", "gauge", NULL, "Each tier's circuit breaker: 0 closed, 1 open, 2 half-open");
    for (size_t i = 0; i < n; i++) {
        put(w, "kcache_tier_breaker_state");
        tier_labels(w, i, &t[i]);
        put(w, "} %d\n", (int)t[i].breaker);
    }
}

/* This process's leases (kc_cache_lease_stats): one compile per key across the fleet. */
static void leases(mw *w, kc_cache *c) {
    kc_lease_stats l = KC_LEASE_STATS_INIT;
    if (kc_cache_lease_stats(c, &l) != KC_OK) return;
    family(w, "leases", "counter", NULL,
           "This process's lookups under the remote's leases by event: taken (it compiled while others waited), "
           "waited (another host held it), wait_hit (the wait ended in its entry), wait_compile (it compiled)");
    static const char *const ev[] = {"taken", "waited", "wait_hit", "wait_compile"};
    const uint64_t v[] = {l.taken, l.waits, l.wait_hits, l.wait_compiles};
    for (int k = 0; k < 4; k++) put(w, "kcache_leases_total{event=\"%s\"} %llu\n", ev[k], (unsigned long long)v[k]);
    family(w, "lease_wait_seconds", "counter", "seconds", "Time this process's lookups waited on another host's lease");
    char t[48];
    put(w, "kcache_lease_wait_seconds_total %s\n", secs(t, l.wait_us, 6));
}

int kc_cache_metrics(kc_cache *c, unsigned flags, char *buf, size_t cap, size_t *needed) {
    if (needed) *needed = 0;
    if (!c || (!buf && cap)) return kc_err(KC_EINVAL, "kc_cache_metrics: NULL argument");
    if (flags & ~KC_METRICS_PROMETHEUS) return kc_err(KC_EINVAL, "kc_cache_metrics: unknown flags 0x%x", flags);
    kc_stats s;
    kc_latency lat = KC_LATENCY_INIT;
    int rc = kc_cache_stats(c, &s);
    if (!rc) rc = kc_cache_latency(c, &lat);
    if (rc) return rc;
    mw w = {buf, cap, 0, !(flags & KC_METRICS_PROMETHEUS)};
    if (cap) buf[0] = '\0';
    lookups(&w, &s);
    latency(&w, &lat);
    refusals(&w, &s);
    sizes(&w, c, &s);
    counters(&w, &s);
    tiers(&w, c);
    leases(&w, c);
    if (w.om) put(&w, "# EOF\n");
    if (needed) *needed = w.len + 1;
    if (w.len >= cap)
        return kc_err(KC_ERROR,
                      "kc_cache_metrics: the text takes %zu bytes, the buffer holds %zu: call again with *needed",
                      w.len + 1, cap);
    return KC_OK;
}
