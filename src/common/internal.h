/* SPDX-License-Identifier: Apache-2.0 */
/*
 * internal.h — what every part of libkcache shares and no caller sees: error recording,
 * logging, little-endian byte writers and bounds-checked readers, time, and allocation
 * that tests can make fail.
 *
 * The one idea: every fallible internal function returns a kc_status and records the
 * reason once, where it is known, with kc_err(); callers up the stack pass the code on
 * without overwriting the message (or add context with kc_err_prefix()).
 */
#ifndef KC_INTERNAL_H
#define KC_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kcache/common.h"
#include "kcache/log.h"

#define KC_UNUSED(x) ((void)(x))
#define KC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define KC_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* ---- libraries opened on demand ([Note: libcrypto on demand], crypto.c) ---- */

/** One function of a library opened on demand: where its pointer goes, and its name. */
typedef struct kc_dl_sym {
    void **slot;
    const char *name;
} kc_dl_sym;

/** Look every function of `syms` up in the handle `h`, into its slot: NULL, or the name of the first
 *  one missing (then no slot is set). */
const char *kc_dl_table(void *h, const kc_dl_sym *syms, size_t n);

/* ---- errors (error.c) ---- */
/** Record `code` and a formatted message as this thread's last error; returns `code`. */
int kc_err(int code, const char *fmt, ...) KC_PRINTF(2, 3);
/** Prefix the current message with context ("reading X: "); returns `code`. */
int kc_err_prefix(int code, const char *fmt, ...) KC_PRINTF(2, 3);
/** Record an errno-based failure: "<what>: <strerror>"; maps errno to a kc_status. */
int kc_err_errno(int err, const char *fmt, ...) KC_PRINTF(2, 3);
/** The status an errno maps to (ENOMEM → KC_ENOMEM, EACCES/EPERM/EROFS → KC_EPERM, …). */
int kc_status_from_errno(int err);

/*
 * [Note: cleanup keeps the error] A failure's status and message are recorded once, where it is
 * known; whatever runs after it on the way out — teardown, a watch ended, a lock let go, an
 * optional step whose own failure costs nothing (logged) — must leave that record as it found it.
 * Such a step never calls kc_error_clear() to forget its own failure: it brackets itself with
 * kc_err_save / kc_err_restore, which puts back the record as it was before (the failure pending,
 * or nothing).  And a public call that fails returns the status its record holds
 * (kc_err_returning): a failure is never reported as KC_OK.
 */
#define KC_ERRMSG_MAX 2048
/** This thread's error record, set aside (the message copied only when an error is pending). */
typedef struct kc_err_saved {
    int code;
    char message[KC_ERRMSG_MAX];
} kc_err_saved;
/** Set this thread's error record aside in `s`. */
void kc_err_save(kc_err_saved *s);
/** Put back what kc_err_save set aside: whatever was recorded (or cleared) since is forgotten. */
void kc_err_restore(const kc_err_saved *s);
/**
 * A public call's return: `rc`, with the thread's record made to hold `rc` when it is an error —
 * a record cleared on the way out (its message lost: a defect, logged) says which call failed
 * with which status instead of KC_OK.  `what` names the call.
 */
int kc_err_returning(int rc, const char *what);

/* ---- logging (log.c) ---- */
extern unsigned kc_log_mask_;
void kc_log_init_from_env(void);
/** The process's `log` setting (a kc_log_configure spec), applied unless kc_log_configure came first.  Callers: config/. */
void kc_log_configure_default_(const char *spec);
/** Register the function that reads the process's settings (and calls kc_log_configure_default_). Callers: config/. */
void kc_log_set_reader_(void (*fn)(void));
/** The process's `log_format` setting: 1 json lines, 0 text.  Callers: config/. */
void kc_log_set_format_(int json);
void kc_log_write(kc_log_cat cat, const char *fmt, ...) KC_PRINTF(2, 3);
#define kc_log(cat, ...)                                                                             \
    do {                                                                                             \
        if (__builtin_expect(__atomic_load_n(&kc_log_mask_, __ATOMIC_RELAXED) & (unsigned)(cat), 0)) \
            kc_log_write((cat), __VA_ARGS__);                                                        \
    } while (0)

/* ---- allocation (alloc.c): every library allocation goes through these ---- */
void *kc_malloc(size_t n);
void *kc_calloc(size_t n, size_t size);
void *kc_realloc(void *p, size_t n);
char *kc_strdup(const char *s);
char *kc_strndup(const char *s, size_t n);
/** Test builds: make the nth allocation from now fail (0: off); `every` keeps failing. */
void kc_alloc_fail_at(long nth, bool every);
/** How many allocations have been made to fail so far. */
long kc_alloc_fail_count(void);

/* ---- setting values (env.c): strict, NULL or empty = not given; `name` is what an error names.
 * Callers: config/ (every setting), cache/cache.c (kc_parse_size). ---- */
/** A boolean: 1/true/yes/on or 0/false/no/off (any case); *out untouched when unset; else KC_EINVAL naming `name`. */
int kc_env_flag(const char *name, const char *value, bool *out);
/** Decimal digits, at most `max`; *out untouched when unset; else KC_EINVAL naming `name`. */
int kc_env_uint(const char *name, const char *value, unsigned long long max, unsigned long long *out);
/** A finite decimal number of seconds in [0, max] (no sign, exponent, inf or nan); as kc_env_uint. */
int kc_env_seconds(const char *name, const char *value, double max, double *out);
/** A size (5G, 1.5M, 64KiB, bytes); as kc_env_uint; an empty `name` names nothing (kc_parse_size's messages). */
int kc_env_size(const char *name, const char *value, uint64_t *out);
/** The longest KCACHE_LOCK_WAIT (seconds): a day.  kc_cache_open checks it, graph/lookup.c uses it. */
#define KC_LOCK_WAIT_MAX_S 86400.0

/* ---- keys ---- */
struct kc_key_builder;
/** A builder whose finer digests (kc_key_note, the inputs' fields) are not kept: for a key whose
 *  builder is freed unread — the same key, less work (key.c). */
void kc_key_builder_lean_(struct kc_key_builder *kb);

/* ---- time ---- */
uint64_t kc_now_ns(void);  /* CLOCK_REALTIME */
uint64_t kc_mono_ns(void); /* CLOCK_MONOTONIC */

/* ---- growable byte buffer and little-endian writers ---- */
typedef struct kc_buf {
    uint8_t *data;
    size_t len, cap;
    int failed; /* sticky: an allocation failed */
} kc_buf;

void kc_buf_free(kc_buf *b);
int kc_buf_reserve(kc_buf *b, size_t extra);
void kc_buf_put(kc_buf *b, const void *p, size_t n);
void kc_buf_put_u8(kc_buf *b, uint8_t v);
void kc_buf_put_u16(kc_buf *b, uint16_t v);
void kc_buf_put_u32(kc_buf *b, uint32_t v);
void kc_buf_put_u64(kc_buf *b, uint64_t v);
/** A string as u32 length + bytes (no NUL); NULL is the empty string. */
void kc_buf_put_str(kc_buf *b, const char *s);
void kc_buf_printf(kc_buf *b, const char *fmt, ...) KC_PRINTF(2, 3);

/** The next line of [*p, end), NUL-terminated in place (its '\n' replaced), *p moved past it; NULL
 *  at the end or for a last line without '\n' (a file cut short).  For the strict line readers of
 *  memos (compile/toolkit_direct.c, graph/spec_direct.c). */
char *kc_line_next(char **p, char *end);
/** NUL-terminate and hand the bytes over (caller frees with free()); NULL if failed. */
char *kc_buf_take_str(kc_buf *b);

static inline void kc_wr_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void kc_wr_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void kc_wr_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t kc_rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t kc_rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t kc_rd_u64(const uint8_t *p) {
    return (uint64_t)kc_rd_u32(p) | ((uint64_t)kc_rd_u32(p + 4) << 32);
}

/* ---- bounds-checked reader: a failed read sets `bad` and yields zeros ---- */
typedef struct kc_reader {
    const uint8_t *p;
    size_t left;
    int bad;
} kc_reader;

static inline kc_reader kc_reader_make(const void *p, size_t n) {
    kc_reader r = {(const uint8_t *)p, n, 0};
    return r;
}
/* Inline: every decode reads its fields through these. */
static inline const uint8_t *kc_rd_bytes(kc_reader *r, size_t n) {
    if (r->bad || n > r->left) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}
static inline uint8_t kc_rd_next_u8(kc_reader *r) {
    const uint8_t *p = kc_rd_bytes(r, 1);
    return p ? p[0] : 0;
}
static inline uint16_t kc_rd_next_u16(kc_reader *r) {
    const uint8_t *p = kc_rd_bytes(r, 2);
    return p ? kc_rd_u16(p) : 0;
}
static inline uint32_t kc_rd_next_u32(kc_reader *r) {
    const uint8_t *p = kc_rd_bytes(r, 4);
    return p ? kc_rd_u32(p) : 0;
}
static inline uint64_t kc_rd_next_u64(kc_reader *r) {
    const uint8_t *p = kc_rd_bytes(r, 8);
    return p ? kc_rd_u64(p) : 0;
}

/* ---- hex ---- */
void kc_hex(const uint8_t *p, size_t n, char *out);  /* writes 2n chars + NUL */
int kc_unhex(const char *s, size_t n, uint8_t *out); /* exactly 2n hex chars */
/* Hex digits by one table lookup (buf.c): a lowercase digit's value + 1, an uppercase one's + 17, else 0. */
extern const unsigned char kc_hex_digits_[256];
/* A hex digit's value, either case; -1 for anything else. */
static inline int kc_hexval(char c) {
    int v = kc_hex_digits_[(unsigned char)c];
    return v ? (v - 1) & 15 : -1;
}
/* A lowercase hex digit's value (kcache writes its names and memos lowercase); -1 for anything else. */
static inline int kc_lowerhex(char c) {
    int v = kc_hex_digits_[(unsigned char)c];
    return v >= 1 && v <= 16 ? v - 1 : -1;
}
/* [a-z0-9_]: the bytes of a variant and of an ORIGIN record's name, one table lookup each (buf.c). */
extern const unsigned char kc_name_chars_[256];
static inline int kc_name_char(unsigned char c) { return kc_name_chars_[c]; }
/*
 * The strict readers of kcache's own text memos (lowercase hex only, as the writers print it; no
 * sign, prefix or space).  Callers: compile/toolkit_direct.c, graph/spec_direct.c.
 */
/** Whether s[0..n) are n lowercase hex digits (1 <= n <= 16), their value in *v (0 when not). */
int kc_hex_u64(const char *s, size_t n, uint64_t *v);
/** A number as printed with "%llx": 1 to 15 lowercase hex digits, no leading zero but in "0";
 *  *v its value, *end after the digits read (at most 16).  0 when it is not one. */
int kc_hex_number(const char *s, const char **end, uint64_t *v);
/** Whether `s` (NULL: no) is exactly n lowercase hex digits and nothing after them. */
int kc_hex_is(const char *s, size_t n);

/* ---- small text, without snprintf (paths of names, in loops that run per field) ---- */
/* "<a><b>[<i>]<c>" into out (cap > 0), `[<i>]` only when i >= 0, cut to fit; returns out. */
char *kc_cat_index(char *out, size_t cap, const char *a, const char *b, long long i, const char *c);
/* The decimal digits of v (v >= 0) into out (at least 21 bytes); returns out. */
char *kc_utoa(unsigned long long v, char *out);

#endif
