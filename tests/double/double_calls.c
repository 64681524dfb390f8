/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_calls.c — how many times each driver entry point of the double was called: every call,
 * context pushes and pops, attribute queries and failed calls included, which the call log leaves
 * out.
 *
 * The one idea: each exported cu* function opens with KCD_CALLED(), which counts its own name
 * (__func__, the name the caller's dlsym found: cuCtxPushCurrent_v2, not the macro's spelling) in a
 * small table under a lock of its own (the row is found once per function, then kept in the
 * function's static slot), so a count never waits for, nor is lost inside, the state's lock.  kcd_reset() clears it.  A test that asserts exact counts per load (tests/graph/
 * test_load_calls.c) and the benchmark's --load-calls read it through kcd_calls / kcd_calls_list.
 *
 * Must not: count anything but entry points (the kcd_ control API is not a driver call).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "double_internal.h"

#define NAMES 128 /* more than the double exports */

static pthread_mutex_t calls_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const char *name; /* a __func__: static storage */
    unsigned long n;
} calls[NAMES];
static size_t ncalls;

void kcd_called(const char *fn, int *slot) {
    pthread_mutex_lock(&calls_mu);
    size_t i = *slot >= 0 ? (size_t)*slot : 0;
    if (*slot < 0) {
        while (i < ncalls && strcmp(calls[i].name, fn) != 0) i++;
        if (i == ncalls && ncalls < NAMES) calls[ncalls++].name = fn;
        if (i < ncalls) *slot = (int)i;
    }
    if (i < ncalls) calls[i].n++;
    pthread_mutex_unlock(&calls_mu);
}

void kcd_calls_clear(void) {
    pthread_mutex_lock(&calls_mu);
    for (size_t i = 0; i < ncalls; i++) calls[i].n = 0;
    pthread_mutex_unlock(&calls_mu);
}

unsigned long kcd_calls(const char *entry_point) {
    unsigned long n = 0;
    pthread_mutex_lock(&calls_mu);
    for (size_t i = 0; i < ncalls; i++)
        if (!entry_point || strcmp(calls[i].name, entry_point) == 0) n += calls[i].n;
    pthread_mutex_unlock(&calls_mu);
    return n;
}

size_t kcd_calls_list(char *buf, size_t cap) {
    size_t kinds = 0, o = 0;
    if (buf && cap) buf[0] = '\0';
    pthread_mutex_lock(&calls_mu);
    for (size_t i = 0; i < ncalls; i++) {
        if (!calls[i].n) continue;
        kinds++;
        if (buf && o < cap) {
            int w = snprintf(buf + o, cap - o, "%s %lu\n", calls[i].name, calls[i].n);
            o += w > 0 ? (size_t)w : 0;
        }
    }
    pthread_mutex_unlock(&calls_mu);
    return kinds;
}
