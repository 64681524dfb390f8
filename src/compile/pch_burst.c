/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/pch_burst.c — a burst's announcers: the callers that can name, before a burst compiles,
 * what it will compile ([Note: precompiled headers] in pch.c: a header set expected thrice gets its
 * PCH at its first compile, one expected once or twice none).
 *
 * The one idea: an announcer runs late and once — at the first compile that plans after it was
 * registered, on that compile's thread — so a burst that compiles nothing (a warm prewarm, every
 * variant a hit) never pays for naming its compiles, which needs NVRTC loaded (the options a
 * compile gets depend on it); and the compiles that plan while it runs wait for it, so none of
 * them decides on counts not yet in.
 *
 * Callers: prewarm/prewarm.c (kc_pch_announce_), compile/pch.c (kc_pch_announce_run_, in
 * kc_pch_plan_).  Must not: hold its lock while an announcer runs (the announcer takes pch.c's), let
 * an announcer's errors reach the compile it runs in, run an announcer after it was withdrawn, or
 * keep a parent's announcers in a forked child.
 */
#include <pthread.h>
#include <string.h>

#include "../common/internal.h"
#include "pch.h"

enum { WAITING = 1, RUNNING, RAN };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending; /* announcers WAITING or RUNNING (atomic: read without the lock) */
    struct {
        kc_pch_announcer *fn; /* NULL: a free slot */
        void *ctx;
        int state;
    } a[KC_PCH_ANNOUNCERS_MAX];
} b = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* A forked child has none: its parent's bursts are its parent's (one RUNNING in a thread the child
 * lacks would make its compiles wait for ever). */
static void atfork_prepare(void) { pthread_mutex_lock(&b.mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&b.mu); }
static void atfork_child(void) {
    memset(b.a, 0, sizeof b.a);
    b.pending = 0;
    pthread_cond_init(&b.cv, NULL);
    pthread_mutex_unlock(&b.mu);
}
static void atfork_register(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

int kc_pch_announce_(kc_pch_announcer *fn, void *ctx) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, atfork_register);
    int rc = fn ? -1 : 0;
    pthread_mutex_lock(&b.mu);
    for (size_t i = 0; i < KC_PCH_ANNOUNCERS_MAX; i++) {
        if (fn && !b.a[i].fn) { /* a free slot */
            b.a[i].fn = fn, b.a[i].ctx = ctx, b.a[i].state = WAITING;
            __atomic_add_fetch(&b.pending, 1, __ATOMIC_RELEASE);
            rc = 0;
            break;
        }
        if (!fn && b.a[i].fn && b.a[i].ctx == ctx) { /* withdrawn: not while it runs */
            while (b.a[i].state == RUNNING) pthread_cond_wait(&b.cv, &b.mu);
            if (b.a[i].state == WAITING) __atomic_sub_fetch(&b.pending, 1, __ATOMIC_RELEASE);
            b.a[i].fn = NULL, b.a[i].ctx = NULL, b.a[i].state = 0;
        }
    }
    pthread_mutex_unlock(&b.mu);
    return rc;
}

void kc_pch_announce_run_(void) {
    if (!__atomic_load_n(&b.pending, __ATOMIC_ACQUIRE)) return; /* no burst names its compiles now */
    pthread_mutex_lock(&b.mu);
    for (;;) {
        size_t run = KC_PCH_ANNOUNCERS_MAX;
        int running = 0;
        for (size_t i = 0; i < KC_PCH_ANNOUNCERS_MAX; i++) {
            if (b.a[i].fn && b.a[i].state == WAITING && run == KC_PCH_ANNOUNCERS_MAX) run = i;
            running += b.a[i].fn && b.a[i].state == RUNNING;
        }
        if (run < KC_PCH_ANNOUNCERS_MAX) {
            kc_pch_announcer *fn = b.a[run].fn;
            void *ctx = b.a[run].ctx;
            b.a[run].state = RUNNING;
            pthread_mutex_unlock(&b.mu);
            kc_err_saved saved; /* the compile's error record is the compile's */
            kc_err_save(&saved);
            fn(ctx);
            kc_err_restore(&saved);
            pthread_mutex_lock(&b.mu);
            b.a[run].state = RAN;
            __atomic_sub_fetch(&b.pending, 1, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&b.cv);
        } else if (running) {
            pthread_cond_wait(&b.cv, &b.mu);
        } else {
            break;
        }
    }
    pthread_mutex_unlock(&b.mu);
}
