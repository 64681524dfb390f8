/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc.c — the library's allocator, with a failure switch for tests.
 *
 * Every allocation libkcache makes goes through kc_malloc & co so that the reliability
 * tests can fail the Nth one and prove the library reports KC_ENOMEM, leaks nothing and
 * loses nothing (SQLite's and libgit2's failalloc).  The switch costs one relaxed atomic
 * load when off.
 *
 * Callers: every part of the library (kc_malloc, kc_calloc, kc_realloc, kc_strdup); the
 * failure switch only tests/reliability and the unit tests' allocation loops.
 */
#include <stdlib.h>

#include "internal.h"

static long fail_countdown; /* 0: off; n: the nth allocation from now fails */
static int fail_every;
static long fail_total; /* failures injected so far */

long kc_alloc_fail_count(void) { return __atomic_load_n(&fail_total, __ATOMIC_RELAXED); }

void kc_alloc_fail_at(long nth, bool every) {
    __atomic_store_n(&fail_every, every ? 1 : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&fail_countdown, nth, __ATOMIC_RELAXED);
}

static int should_fail(void) {
    long c = __atomic_load_n(&fail_countdown, __ATOMIC_RELAXED);
    if (__builtin_expect(c == 0, 1)) return 0;
    long now = __atomic_sub_fetch(&fail_countdown, 1, __ATOMIC_RELAXED);
    if (now == 0) {
        if (__atomic_load_n(&fail_every, __ATOMIC_RELAXED)) __atomic_store_n(&fail_countdown, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&fail_total, 1, __ATOMIC_RELAXED);
        return 1;
    }
    return now < 0 ? (__atomic_store_n(&fail_countdown, 0, __ATOMIC_RELAXED), 0) : 0;
}

void *kc_malloc(size_t n) { return should_fail() ? NULL : malloc(n ? n : 1); }
void *kc_calloc(size_t n, size_t size) { return should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1); }
void *kc_realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n ? n : 1); }

char *kc_strndup(const char *s, size_t n) {
    size_t len = strnlen(s, n);
    char *d = kc_malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

char *kc_strdup(const char *s) { return kc_strndup(s, SIZE_MAX); }
