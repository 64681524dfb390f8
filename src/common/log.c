/* SPDX-License-Identifier: Apache-2.0 */
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
 * Two formats, chosen by the `log_format` setting (config/ hands it over with
 * kc_log_set_format_ before the mask): text, "kcache[part] message", as it always was; and json,
 * one object a line for log collectors — {"ts","level","pid","tid","part","msg"} ([Note: log
 * JSON]).  Either way a record is one line written by one call (text: one fprintf on stderr,
 * unbuffered, so one write(); json: one write() of the whole line after stderr is flushed), so
 * lines of threads and processes sharing a stderr never interleave inside a line.
 *
 * Callers: every part, through kc_log; callers of the API through kc_log_configure (log.h);
 * config/ through kc_log_set_reader_, kc_log_set_format_ and kc_log_configure_default_.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

static int json_format; /* 1: log_format = json (atomic: set once the settings are read) */
void kc_log_set_format_(int json) { __atomic_store_n(&json_format, json != 0, __ATOMIC_RELAXED); }

/*
 * [Note: log JSON] A record in the json format is one line:
 *
 *   {"ts":"2026-11-28T10:44:17.123Z","level":"debug","pid":41,"tid":43,"part":"store","msg":"..."}
 *
 * ts is UTC with milliseconds; level is always "debug" (every kc_log line is a diagnostic asked
 * for by category); part is the category.  The message is escaped so that every line is valid
 * JSON and valid UTF-8 whatever the bytes logged (a path, a spec's name, an entry's name): '"'
 * and '\' with a backslash; \n, \r, \t, \b, \f by their short escapes; every other control
 * character and DEL as \u00XX (so no ESC reaches a terminal); a valid UTF-8 sequence as it is;
 * every byte that does not start one (a stray continuation, an overlong form, a surrogate, past
 * U+10FFFF, a sequence cut short) as \ufffd, one per byte.  A message longer than the line's room
 * is cut at a character and ends with "...".
 */

/* The length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    if (c < 0xc2 || c > 0xf4 || n < len) return 0; /* a continuation, an overlong 2-byte lead, past U+10FFFF */
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)) return 0; /* overlong; a surrogate */
    if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)) return 0; /* overlong; past U+10FFFF */
    return len;
}

/* msg escaped into out[*n, cap) as a JSON string's contents ([Note: log JSON]), leaving 8 bytes. */
static void json_escape(char *out, size_t cap, size_t *n, const char *msg) {
    static const char plain[] = "\"\\\n\r\t\b\f", letter[] = "\"\\nrtbf";
    const unsigned char *p = (const unsigned char *)msg, *end = p + strlen(msg);
    while (p < end) {
        char e[8];
        size_t el, take = 1;
        const char *sc = memchr(plain, *p, sizeof plain - 1);
        if (sc) e[0] = '\\', e[1] = letter[sc - plain], el = 2;
        else if (*p < 0x20 || *p == 0x7f) el = (size_t)snprintf(e, sizeof e, "\\u%04x", *p);
        else if (*p < 0x80) e[0] = (char)*p, el = 1;
        else if ((take = utf8_len(p, (size_t)(end - p))) > 0) memcpy(e, p, take), el = take;
        else memcpy(e, "\\ufffd", 6), el = 6, take = 1;
        if (*n + el + 8 > cap) {
            memcpy(out + *n, "...", 3), *n += 3;
            return;
        }
        memcpy(out + *n, e, el), *n += el, p += take;
    }
}

/* One record as a JSON line, written by one write() after whatever stderr holds. */
static void write_json(const char *part, const char *msg) {
    char line[8192];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int h = snprintf(line, sizeof line,
                     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"debug\",\"pid\":%ld,\"tid\":%ld,"
                     "\"part\":\"%s\",\"msg\":\"",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, (long)getpid(), (long)syscall(SYS_gettid), part);
    size_t n = h > 0 && (size_t)h < sizeof line / 2 ? (size_t)h : 0;
    if (n == 0) return;
    json_escape(line, sizeof line, &n, msg);
    memcpy(line + n, "\"}\n", 3), n += 3;
    fflush(stderr); /* what the program wrote to stderr first comes first */
    for (size_t off = 0; off < n;) {
        ssize_t w = write(STDERR_FILENO, line + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* stderr closed or full: a log line is never an error */
        off += (size_t)w;
    }
}

void kc_log_write(kc_log_cat cat, const char *fmt, ...) {
    int saved = errno;                   /* a caller may log between a failed call and reading its errno: kept */
    if (!(mask_now() & (unsigned)cat)) { /* the first call of a process, before KCACHE_LOG was read */
        errno = saved;
        return;
    }
    kc_log_init_from_env(); /* the format too, when kc_log_configure set the mask before any log line */
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
    if (__atomic_load_n(&json_format, __ATOMIC_RELAXED)) write_json(name, line);
    else fprintf(stderr, "kcache[%s] %s\n", name, line);
    errno = saved;
}
