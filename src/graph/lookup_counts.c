/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lookup_counts.c — what a graph lookup counts and what its hit credits (lookup.c calls these):
 * the one outcome of a lookup that missed at its start, and the time a hit saved.
 *
 * [Note: time saved] What a hit of an entry avoids is the wall-clock time its compile took where
 * it was made: ORIGIN "compile_wall_us", the NVRTC rounds of that compile (units compiled in
 * parallel count once; units found stored count nothing, so a graph built only from stored units
 * records 0).  A disk or remote hit credits it (compile_us_saved, kc_graph_info.saved_ms); a
 * memory hit credits nothing (its load was counted once, when it was a disk hit or a compile);
 * a hit that raced another's compile of the same graph and took its entry (compile_waits)
 * credits nothing, the compile having run all the same; an entry written before this record
 * credits nothing.  ORIGIN "compile_us" (the units' NVRTC times summed, those found stored
 * included) is kept for `kcache show` only.
 *
 * [Note: one outcome] Each lookup counts exactly one of memory_hits, hits, remote_hits, misses
 * and bypasses: the one whose source its caller is told (kcache/stats.h).  A lookup that found
 * nothing at its start is counted only when it ends — a wait that took another's entry is a
 * disk hit, since that is what its caller is told — never before.  Every outcome is counted
 * through kc_cache_count_lookup_ with the lookup's start, so each is also one observation of its
 * time in the latency histogram (kcache/stats.h): here (a build's outcome) and through
 * kc_graph_count_hit_ (what was served without a build).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../cache/internal.h"
#include "graph_internal.h"

int kc_graph_set_compile_wall_(kc_entry *e, double wall_ms) {
    char v[24];
    snprintf(v, sizeof v, "%llu", (unsigned long long)(wall_ms > 0 ? wall_ms * 1e3 + 0.5 : 0));
    return kc_entry_set_origin(e, "compile_wall_us", v);
}

#define WALL_US_MAX (7ull * 24 * 3600 * 1000000)

/* The decimal digits kc_graph_set_compile_wall_ wrote; anything else (an entry from elsewhere) 0, as is
 * a time over a week: the count of time saved is no place for a hostile value. */
uint64_t kc_graph_entry_wall_us_(const kc_entry *e) {
    char cu[24];
    uint64_t us = 0;
    if (kc_entry_origin(e, "compile_wall_us", cu, sizeof cu) != KC_OK || !cu[0]) return 0;
    for (const char *p = cu; *p; p++) {
        if (*p < '0' || *p > '9' || us > WALL_US_MAX) return 0;
        us = us * 10 + (uint64_t)(*p - '0');
    }
    return us <= WALL_US_MAX ? us : 0;
}

void kc_graph_hit_saved_(kc_cache *c, const kc_key *key, kc_graph_info *info, uint64_t us) {
    info->saved_ms = (double)us / 1e3;
    if (us) kc_cache_count(c, key, KC_STAT_COMPILE_US_SAVED, us);
}

void kc_graph_count_after_build_(kc_cache *c, const kc_key *key, const kc_graph_info *info, int rc, int cacheable,
                                 uint64_t t0) {
    if (!cacheable) { /* not cacheable: a bypass when it was built, else (failed) no outcome */
        if (info->source == KC_FROM_BYPASS) kc_cache_count_lookup_(c, key, KC_LOOKUP_BYPASS, t0);
    } else if (rc == KC_OK && info->source == KC_FROM_DISK) { /* took another's entry: a hit, told so */
        kc_cache_count_lookup_(c, key, KC_LOOKUP_DISK, t0);
        kc_cache_count(c, key, KC_STAT_COMPILE_WAITS, 1);
    } else if (rc == KC_OK && info->source == KC_FROM_REMOTE) { /* waited on another host's lease: told remote */
        kc_cache_count_lookup_(c, key, KC_LOOKUP_REMOTE, t0);
    } else {
        kc_cache_count_lookup_(c, key, KC_LOOKUP_COMPILE, t0);
    }
}

void kc_graph_count_hit_(kc_cache *c, const kc_key *key, kc_graph_source source, uint64_t t0) {
    kc_cache_count_lookup_(c, key,
                           source == KC_FROM_MEMORY   ? KC_LOOKUP_MEMORY
                           : source == KC_FROM_REMOTE ? KC_LOOKUP_REMOTE
                           : source == KC_FROM_BYPASS ? KC_LOOKUP_BYPASS
                                                      : KC_LOOKUP_DISK,
                           t0);
}
