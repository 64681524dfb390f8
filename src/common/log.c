/*
 * log.c — KCACHE_LOG categories, written to stderr one line at a time.
 *
 * The mask is one atomic word so the disabled path is a load and a branch; the
 * configuration may change at any time from any thread.  The `log` setting takes effect
 * without a kc_cache (kc_compile_kernel alone logs under KCACHE_LOG=compile): the mask starts
 * as MASK_UNREAD, every bit set, so the first kc_log of the process reaches kc_log_write, which
 * asks the configuration part once (pthread_once) for the process's setting — through the reader
 * it registered with kc_log_set_reader_ (this file reads no environment: config/ does) — and only
 * then decides.  A kc_log_configure call wins over the setting, whenever the setting is read.
 *
 * Callers: every part, through kc_log; callers of the API through kc_log_configure (log.h);
 * config/ through kc_log_set_reader_ and kc_log_configure_default_.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

#define MASK_UNREAD 0xffffffffu /* KCACHE_LOG not read yet (no real mask has bits past KC_LOG_ALL) */

unsigned kc_log_mask_ = MASK_UNREAD;

static const struct {
    const char *name;
    unsigned bit;
} cats[] = {
    {"store", KC_LOG_STORE}, {"key", KC_LOG_KEY},     {"compile", KC_LOG_COMPILE},       {"load", KC_LOG_LOAD},
    {"graph", KC_LOG_GRAPH}, {"guard", KC_LOG_GUARD}, {"recompiles", KC_LOG_RECOMPILES}, {"remote", KC_LOG_REMOTE},
    {"all", KC_LOG_ALL},
};

static unsigned mask_of(const char *spec) {
    unsigned mask = 0;
    if (spec != NULL) {
        const char *p = spec;
        while (*p) {
            size_t n = strcspn(p, ", ");
            if (n > 0) {
                size_t i;
                for (i = 0; i < KC_ARRAY_LEN(cats); i++)
                    if (strlen(cats[i].name) == n && strncmp(cats[i].name, p, n) == 0) break;
                if (i < KC_ARRAY_LEN(cats)) mask |= cats[i].bit;
                else if (n == 1 && *p == '1') mask |= KC_LOG_ALL;
                else fprintf(stderr, "kcache: KCACHE_LOG: unknown category '%.*s'\n", (int)n, p);
            }
            p += n;
            while (*p == ',' || *p == ' ') p++;
        }
    }
    return mask;
}

void kc_log_configure(const char *spec) { __atomic_store_n(&kc_log_mask_, mask_of(spec), __ATOMIC_RELAXED); }

/* The process's `log` setting, handed over by config/ (kc_log_configure_default_): applied only
 * while the mask is unread, so an earlier kc_log_configure wins. */
void kc_log_configure_default_(const char *spec) {
    unsigned unread = MASK_UNREAD;
    __atomic_compare_exchange_n(&kc_log_mask_, &unread, spec && *spec ? mask_of(spec) : 0u, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
}

static void (*reader)(void); /* config/'s: reads the process's settings, which hands the log setting over */
void kc_log_set_reader_(void (*fn)(void)) { reader = fn; }

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static void env_read(void) {
    if (reader) reader();
    kc_log_configure_default_(NULL); /* no reader (no configuration part linked): nothing is logged */
}
void kc_log_init_from_env(void) { pthread_once(&env_once, env_read); }

/* The mask, KCACHE_LOG read first if it was not. */
static unsigned mask_now(void) {
    unsigned m = __atomic_load_n(&kc_log_mask_, __ATOMIC_RELAXED);
    if (m != MASK_UNREAD) return m;
    kc_log_init_from_env();
    return __atomic_load_n(&kc_log_mask_, __ATOMIC_RELAXED);
}

int kc_log_enabled(kc_log_cat cat) { return (mask_now() & (unsigned)cat) != 0; }

void kc_log_write(kc_log_cat cat, const char *fmt, ...) {
    if (!(mask_now() & (unsigned)cat)) return; /* the first call of a process, before KCACHE_LOG was read */
    const char *name = "log";
    for (size_t i = 0; i < KC_ARRAY_LEN(cats); i++)
        if (cats[i].bit == (unsigned)cat) {
            name = cats[i].name;
            break;
        }
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kcache[%s] %s\n", name, line);
}
