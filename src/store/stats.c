/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.c — the statistics' table (KC_STAT_TABLE in kcache/stats.h) as data: each id's name,
 * kind and meaning.  The names are what the shard stats files index and `kcache stats --json`
 * prints, so they never change; everything that lists the statistics (the CLI's text and JSON,
 * the stats files' flush and --zero) walks this table instead of a list of its own.
 *
 * The lookup outcomes' names and counters and the latency histogram's bounds are here too.
 *
 * Callers: the local store's stats files and the CLI's stats output (through stats.h).
 */
#include <math.h>
#include <string.h>

#include "kcache/stats.h"

#include "../common/internal.h"

typedef struct stat_row {
    const char *name;
    kc_stat_kind kind;
    const char *doc;
} stat_row;

#define KC_STAT_ROW_(id, v, name, kind, doc) [v] = {name, KC_STAT_KIND_##kind, doc},
static const stat_row rows[KC_STAT_COUNT] = {KC_STAT_TABLE(KC_STAT_ROW_)};
#undef KC_STAT_ROW_

/* Every id has its row, the enum ends where the table does, and the stats file has a slot for each. */
#define KC_STAT_ONE_(id, v, name, kind, doc) +1
_Static_assert(0 KC_STAT_TABLE(KC_STAT_ONE_) == KC_STAT_COUNT, "KC_STAT_COUNT is the table's length");
#undef KC_STAT_ONE_
_Static_assert(KC_STAT_COUNT <= 32, "a shard stats file holds 32 counters (src/store/local_stats.c)");

const char *kc_stat_name(kc_stat id) { return (unsigned)id < KC_STAT_COUNT ? rows[id].name : (const char *)0; }

kc_stat_kind kc_stat_kind_of(kc_stat id) { return (unsigned)id < KC_STAT_COUNT ? rows[id].kind : KC_STAT_KIND_COUNTER; }

const char *kc_stat_doc(kc_stat id) { return (unsigned)id < KC_STAT_COUNT ? rows[id].doc : (const char *)0; }

const char *kc_stat_kind_name(kc_stat_kind kind) {
    static const char *const names[] = {"counter", "gauge", "bytes", "microseconds"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : (const char *)0;
}

int kc_stat_from_name(const char *name, kc_stat *out) {
    for (int i = 0; name && i < KC_STAT_COUNT; i++)
        if (strcmp(rows[i].name, name) == 0) {
            if (out) *out = (kc_stat)i;
            return KC_OK;
        }
    return kc_err(KC_EINVAL, "no statistic is named '%.64s'", name ? name : "(null)");
}

/* The outcomes of a lookup (kcache/stats.h): the histogram's order, names and counters. */
static const struct {
    const char *name;
    kc_stat stat;
} outcomes[KC_LOOKUP_OUTCOMES] = {
    {"memory", KC_STAT_MEMORY_HITS}, {"disk", KC_STAT_HITS},       {"remote", KC_STAT_REMOTE_HITS},
    {"compile", KC_STAT_MISSES},     {"bypass", KC_STAT_BYPASSES},
};

const char *kc_lookup_outcome_name(kc_lookup_outcome o) {
    return (unsigned)o < KC_LOOKUP_OUTCOMES ? outcomes[o].name : (const char *)0;
}

kc_stat kc_lookup_outcome_stat(kc_lookup_outcome o) {
    return (unsigned)o < KC_LOOKUP_OUTCOMES ? outcomes[o].stat : KC_STAT_COUNT;
}

double kc_latency_bound(int i) {
    static const double s[KC_LATENCY_BUCKETS] = {1e-5,   2.5e-5, 1e-4, 2.5e-4, 1e-3, 2.5e-3, 1e-2,
                                                 2.5e-2, 0.1,    0.25, 1.0,    2.5,  10.0};
    return i >= 0 && i < KC_LATENCY_BUCKETS ? s[i] : HUGE_VAL;
}
