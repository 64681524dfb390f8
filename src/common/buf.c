/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.c — growable byte buffers with little-endian writers, bounds-checked readers, hex,
 * and clocks.
 *
 * These are how every canonical encoding in kcache is written: explicit bytes in a fixed
 * order, never a struct copied with its padding.  A writer's allocation failure is sticky
 * (b->failed) so encoders check once at the end; a reader's overrun is sticky (r->bad) and
 * yields zeros, so decoders check once and can never read out of bounds.
 *
 * Callers: every encoder and decoder of the library (keys, entries, the graph's sections,
 * bundles, stats files, the redis protocol).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <string.h>

#include "internal.h"

void kc_buf_free(kc_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int kc_buf_reserve(kc_buf *b, size_t extra) {
    if (b->failed) return KC_ENOMEM;
    if (extra > SIZE_MAX / 2 - b->len) return b->failed = 1, KC_ENOMEM;
    size_t need = b->len + extra;
    if (need <= b->cap) return KC_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    uint8_t *p = kc_realloc(b->data, cap);
    if (!p) return b->failed = 1, KC_ENOMEM;
    b->data = p;
    b->cap = cap;
    return KC_OK;
}

void kc_buf_put(kc_buf *b, const void *p, size_t n) {
    if (n == 0 || kc_buf_reserve(b, n) != KC_OK) return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void kc_buf_put_u8(kc_buf *b, uint8_t v) { kc_buf_put(b, &v, 1); }
void kc_buf_put_u16(kc_buf *b, uint16_t v) {
    uint8_t t[2];
    kc_wr_u16(t, v);
    kc_buf_put(b, t, 2);
}
void kc_buf_put_u32(kc_buf *b, uint32_t v) {
    uint8_t t[4];
    kc_wr_u32(t, v);
    kc_buf_put(b, t, 4);
}
void kc_buf_put_str(kc_buf *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    kc_buf_put_u32(b, (uint32_t)n);
    kc_buf_put(b, s, n);
}
void kc_buf_put_u64(kc_buf *b, uint64_t v) {
    uint8_t t[8];
    kc_wr_u64(t, v);
    kc_buf_put(b, t, 8);
}

void kc_buf_printf(kc_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || kc_buf_reserve(b, (size_t)n + 1) != KC_OK) return;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *kc_buf_take_str(kc_buf *b) {
    if (kc_buf_reserve(b, 1) != KC_OK) {
        kc_buf_free(b);
        return NULL;
    }
    b->data[b->len] = '\0';
    char *s = (char *)b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}


#define N_ 1
const unsigned char kc_name_chars_[256] = {
    ['0'] = N_, ['1'] = N_, ['2'] = N_, ['3'] = N_, ['4'] = N_, ['5'] = N_, ['6'] = N_, ['7'] = N_,
    ['8'] = N_, ['9'] = N_, ['a'] = N_, ['b'] = N_, ['c'] = N_, ['d'] = N_, ['e'] = N_, ['f'] = N_,
    ['g'] = N_, ['h'] = N_, ['i'] = N_, ['j'] = N_, ['k'] = N_, ['l'] = N_, ['m'] = N_, ['n'] = N_,
    ['o'] = N_, ['p'] = N_, ['q'] = N_, ['r'] = N_, ['s'] = N_, ['t'] = N_, ['u'] = N_, ['v'] = N_,
    ['w'] = N_, ['x'] = N_, ['y'] = N_, ['z'] = N_, ['_'] = N_};
#undef N_

/* Two digits per byte from one table: every lookup names its files by a key's hex. */
static const char hex_pairs[513] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
                                   "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
                                   "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
                                   "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
                                   "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
                                   "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
                                   "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
                                   "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

void kc_hex(const uint8_t *p, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) memcpy(out + 2 * i, hex_pairs + 2 * p[i], 2);
    out[2 * n] = '\0';
}

#define D_(c, v) [c] = (v) + 1
const unsigned char kc_hex_digits_[256] = {D_('0', 0),  D_('1', 1),  D_('2', 2),  D_('3', 3),  D_('4', 4),  D_('5', 5),
                                           D_('6', 6),  D_('7', 7),  D_('8', 8),  D_('9', 9),  D_('a', 10), D_('b', 11),
                                           D_('c', 12), D_('d', 13), D_('e', 14), D_('f', 15), D_('A', 26), D_('B', 27),
                                           D_('C', 28), D_('D', 29), D_('E', 30), D_('F', 31)};
#undef D_


int kc_unhex(const char *s, size_t n, uint8_t *out) {
    for (size_t i = 0; i < n; i++) {
        int hi = kc_hexval(s[2 * i]), lo = hi < 0 ? -1 : kc_hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return KC_EINVAL;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return KC_OK;
}


/* How many lowercase hex digits begin s, at most max, and their value in *v. */
static size_t hex_run(const char *s, size_t max, uint64_t *v) {
    size_t n = 0;
    uint64_t x = 0;
    for (int d; n < max && (d = kc_lowerhex(s[n])) >= 0; n++) x = (x << 4) | (uint64_t)d;
    *v = x;
    return n;
}

int kc_hex_u64(const char *s, size_t n, uint64_t *v) {
    *v = 0;
    if (!s || n == 0 || n > 16) return 0;
    uint64_t x;
    if (hex_run(s, n, &x) != n) return 0;
    *v = x;
    return 1;
}

int kc_hex_number(const char *s, const char **end, uint64_t *v) {
    size_t n = hex_run(s, 16, v);
    *end = s + n;
    return n >= 1 && n <= 15 && !(n > 1 && s[0] == '0');
}

int kc_hex_is(const char *s, size_t n) {
    if (!s) return 0;
    size_t i = 0;
    while (i < n && kc_lowerhex(s[i]) >= 0) i++;
    return i == n && s[n] == '\0';
}

uint64_t kc_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t kc_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

char *kc_utoa(unsigned long long v, char *out) {
    char t[21];
    size_t n = 0;
    do t[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < sizeof t);
    for (size_t i = 0; i < n; i++) out[i] = t[n - 1 - i];
    out[n] = '\0';
    return out;
}

/* Append s to out[*at..cap-1), cut to fit. */
static void cat(char *out, size_t cap, size_t *at, const char *s) {
    size_t n = strlen(s);
    if (n > cap - 1 - *at) n = cap - 1 - *at;
    memcpy(out + *at, s, n);
    *at += n;
}

char *kc_cat_index(char *out, size_t cap, const char *a, const char *b, long long i, const char *c) {
    size_t at = 0;
    cat(out, cap, &at, a);
    cat(out, cap, &at, b);
    if (i >= 0) {
        char d[24] = "[";
        kc_utoa((unsigned long long)i, d + 1);
        size_t l = strlen(d);
        d[l] = ']', d[l + 1] = '\0';
        cat(out, cap, &at, d);
    }
    cat(out, cap, &at, c);
    out[at] = '\0';
    return out;
}

char *kc_line_next(char **p, char *end) {
    if (*p >= end) return NULL;
    char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl) return NULL;
    *nl = '\0';
    char *line = *p;
    *p = nl + 1;
    return line;
}
