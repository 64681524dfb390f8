/*
 * stats.c — names of the fixed statistic ids (kcache/stats.h); the names are what
 * `kcache stats --json` prints, so they never change.
 *
 * Callers: the local store's stats files and the CLI's stats output (through stats.h).
 */
#include "kcache/stats.h"

static const char *const names[KC_STAT_COUNT] = {
    "hits", "misses", "puts", "corrupt", "evictions", "bytes", "entries", "bypasses",
    "compiles", "compile_errors", "memory_hits", "remote_hits", "remote_misses",
    "remote_errors", "remote_timeouts", "remote_dropped", "load_refused", "store_errors",
    "readonly_skips", "remote_puts", "mac_rejected", "remote_skipped", "unit_hits", "unit_compiles", "images_missing",
    "compiles_refused", "compile_us_saved", "publish_refused",
};

const char *kc_stat_name(kc_stat id) {
    return (unsigned)id < KC_STAT_COUNT ? names[id] : (const char *)0;
}
