/*
 * log.c — KCACHE_LOG categories, written to stderr one line at a time.
 *
 * The mask is one atomic word so the disabled path is a load and a branch; the
 * configuration may change at any time from any thread.
 *
 * Callers: every part, through kc_log; callers of the API through kc_log_configure (log.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

unsigned kc_log_mask_ = 0;

static const struct { const char *name; unsigned bit; } cats[] = {
    {"store", KC_LOG_STORE},     {"key", KC_LOG_KEY},         {"compile", KC_LOG_COMPILE},
    {"load", KC_LOG_LOAD},       {"graph", KC_LOG_GRAPH},     {"guard", KC_LOG_GUARD},
    {"recompiles", KC_LOG_RECOMPILES}, {"remote", KC_LOG_REMOTE}, {"all", KC_LOG_ALL},
};

void kc_log_configure(const char *spec) {
    unsigned mask = 0;
    if (spec != NULL) {
        const char *p = spec;
        while (*p) {
            size_t n = strcspn(p, ", ");
            if (n > 0) {
                size_t i;
                for (i = 0; i < KC_ARRAY_LEN(cats); i++)
                    if (strlen(cats[i].name) == n && strncmp(cats[i].name, p, n) == 0) break;
                if (i < KC_ARRAY_LEN(cats))
                    mask |= cats[i].bit;
                else if (n == 1 && *p == '1')
                    mask |= KC_LOG_ALL;
                else
                    fprintf(stderr, "kcache: KCACHE_LOG: unknown category '%.*s'\n", (int)n, p);
            }
            p += n;
            while (*p == ',' || *p == ' ') p++;
        }
    }
    __atomic_store_n(&kc_log_mask_, mask, __ATOMIC_RELAXED);
}

void kc_log_init_from_env(void) {
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) return;
    const char *s = getenv("KCACHE_LOG");
    if (s && *s) kc_log_configure(s);
}

int kc_log_enabled(kc_log_cat cat) {
    return (__atomic_load_n(&kc_log_mask_, __ATOMIC_RELAXED) & (unsigned)cat) != 0;
}

void kc_log_write(kc_log_cat cat, const char *fmt, ...) {
    const char *name = "log";
    for (size_t i = 0; i < KC_ARRAY_LEN(cats); i++)
        if (cats[i].bit == (unsigned)cat) { name = cats[i].name; break; }
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kcache[%s] %s\n", name, line);
}
