/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unitobtain.c — every compile unit of a graph for one target, found or compiled: the rounds of
 * [Note: single-flight per unit] below.
 *
 * The one idea: each unit is its own little lookup under its own lock.  A round takes the free
 * locks of the units still pending, looks those units up once more, compiles the rest together
 * on the pool and stores them; units another process compiles are waited for, never while a lock
 * is held.  The units' keys, records and images are unitstore.c's; the target is the one the
 * lookup parsed at its boundary (kc_unit_set), never a name parsed again here.
 *
 * Callers: build.c and cachecompile.c (kc_units_obtain_).  Must not: count a graph lookup's outcome, store a
 * unit of a source that is not cacheable, or compile under must-hit (KCACHE_REQUIRE_HIT).
 */
#include <stdio.h>
#include <time.h>

#include "../cache/internal.h"
#include "../common/internal.h"
#include "../compile/toolkit.h"
#include "graph_internal.h"

/* One kc_units_obtain_: its inputs, and what the rounds learn. */
typedef struct obtain {
    kc_cache *c;
    const kc_unit_set *s;
    int cacheable, reuse;
    const char *label, *meta;
    kc_unit_results *r;
    size_t n;
    int left;
    kc_key ukeys[KC_UNITS_MAX];
    int pending[KC_UNITS_MAX], grab[KC_UNITS_MAX], compiled_here[KC_UNITS_MAX];
    kc_lock *locks[KC_UNITS_MAX];
    const char *lacking[KC_UNITS_MAX]; /* the name a unit's sound record lacks ([Note: recorded names]) */
} obtain;

/* Must-hit: the first unit of `grab` may not be compiled — KC_ENOTCACHED saying why, naming the
 * name its stored record lacks when that is why ([Note: recorded names]). */
static int refused(const obtain *o) {
    size_t first = 0;
    while (!o->grab[first]) first++;
    const kc_kernel_src *k = &o->s->ks[o->s->u->first[first]];
    char why[320] = "";
    if (o->lacking[first])
        snprintf(why, sizeof why,
                 " for this graph's names (its record holds no lowering of '%.200s': only a "
                 "compile says which kernel that name denotes)",
                 o->lacking[first]);
    return kc_err(KC_ENOTCACHED,
                  "its compile unit %zu (%s, for %s) is not stored%s%s, and the cache is must-hit "
                  "(KCACHE_REQUIRE_HIT): nothing was compiled",
                  first, k->file ? k->file : k->name, o->s->variant, why,
                  o->cacheable ? "" : " (the graph is not cacheable)");
}

/* The units' keys and a first look (cacheable only); then which units are pending. */
static int first_look(obtain *o) {
    int rc = KC_OK;
    for (size_t i = 0; o->cacheable && i < o->n && !rc; i++) rc = kc_unit_key_(o->s, i, &o->ukeys[i], NULL);
    if (!rc && o->cacheable && o->reuse)
        kc_units_find_(o->c, o->s, NULL, o->ukeys, o->r->res, o->r->refs, o->lacking, &o->r->nremote);
    if (!rc && o->cacheable && o->reuse)
        rc = kc_graph_strict_refusal_(o->c); /* strict: a unit found and refused is no compile */
    for (size_t i = 0; i < o->n; i++) o->left += o->pending[i] = !o->r->res[i];
    return rc;
}

/* Take the free locks of the pending units (all of them, unlocked, once `late`): 1 when any was taken. */
static int take_locks(obtain *o, int late) {
    int any = 0;
    for (size_t i = 0; i < o->n; i++) {
        o->grab[i] = 0;
        if (!o->pending[i]) continue;
        int lr = o->cacheable && o->reuse && !late ? kc_cache_trylock(o->c, &o->ukeys[i], KC_VARIANT_UNIT, &o->locks[i])
                                                   : KC_OK;
        if (lr == KC_EBUSY) continue;
        if (lr != KC_OK) kc_log(KC_LOG_GRAPH, "%s: no unit lock (%s); compiling", o->label, kc_error_last()->message);
        o->grab[i] = any = 1;
    }
    return any;
}

/* Grabbed units found meanwhile are done: 1 when any grabbed one is left to compile. */
static int settle_grabbed(obtain *o) {
    int todo = 0;
    for (size_t i = 0; i < o->n; i++) {
        if (o->grab[i] && o->r->res[i]) o->grab[i] = 0, o->pending[i] = 0, o->left--;
        todo |= o->grab[i];
    }
    return todo;
}

/* [Note: compiled after a change] (compile/toolkit.h): never new header bytes under the old digest —
 * 1 when a grabbed unit reads the toolkit's headers and they changed (then nothing is stored). */
static int toolkit_moved(obtain *o) {
    int toolkit = 0;
    for (size_t i = 0; i < o->n; i++)
        toolkit |= o->grab[i] && (o->s->ks[o->s->u->first[i]].flags & KC_KERNEL_TOOLKIT_HEADERS);
    int moved = o->cacheable && toolkit && !kc_toolkit_unchanged();
    if (moved && !o->r->store_rc) {
        o->r->store_rc = KC_EIO;
        snprintf(o->r->store_msg, sizeof o->r->store_msg,
                 "the toolkit's headers changed since this process "
                 "identified them: compiled, not stored (the next process identifies them afresh)");
        kc_log(KC_LOG_GRAPH, "%s: %s", o->label, o->r->store_msg);
    }
    return moved;
}

/* Store compiled unit i (c NULL when not to: only its reference is made).  A failure to store is
 * remembered in the results, and is the round's error only when out of memory or not cacheable. */
static int store_unit(obtain *o, size_t i, int moved) {
    kc_unit_results *r = o->r;
    int sr = kc_units_store_(o->cacheable && !moved ? o->c : NULL, o->s, i, &o->ukeys[i], r->res[i], o->meta,
                             &r->refs[i]);
    if (sr && sr != KC_EREADONLY && o->cacheable) {
        kc_log(KC_LOG_GRAPH, "%s: unit %zu not stored: %s", o->label, i, kc_error_last()->message);
        if (!r->store_rc) r->store_rc = sr, snprintf(r->store_msg, sizeof r->store_msg, "%s", kc_error_last()->message);
    }
    return sr == KC_ENOMEM || (sr && !o->cacheable) ? sr : KC_OK; /* a reference is needed even unstored */
}

/* Compile the grabbed units together on the pool, then store each. */
static int compile_grabbed(obtain *o) {
    kc_compiled **got = NULL;
    double one = 0;
    int rc = kc_units_compile(o->s->ks, o->s->nk, o->s->u, o->grab, &o->s->target, o->label, &got, &one);
    o->r->ms += one;
    int moved = !rc && toolkit_moved(o);
    for (size_t i = 0; !rc && i < o->n; i++) {
        if (!o->grab[i]) continue;
        o->r->res[i] = got[i], got[i] = NULL;
        o->pending[i] = 0, o->left--, o->r->ncompiled++, o->compiled_here[i] = 1;
        rc = store_unit(o, i, moved);
    }
    if (got) kc_units_free(got, o->n);
    return rc;
}

static void unlock_all(obtain *o) {
    for (size_t i = 0; i < o->n; i++) kc_cache_unlock(o->locks[i]), o->locks[i] = NULL;
}

/* Every pending unit is another's compile: wait a little, then look them up again. */
static void wait_for_others(obtain *o) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kc_units_find_(o->c, o->s, o->pending, o->ukeys, o->r->res, o->r->refs, o->lacking, &o->r->nremote);
    for (size_t i = 0; i < o->n; i++)
        if (o->pending[i] && o->r->res[i]) o->pending[i] = 0, o->left--;
}

/* One round of [Note: single-flight per unit]. */
static int round_once(obtain *o, uint64_t deadline) {
    int any = take_locks(o, kc_mono_ns() > deadline), rc = KC_OK;
    if (any && o->cacheable && o->reuse) /* stored meanwhile? */
        kc_units_find_(o->c, o->s, o->grab, o->ukeys, o->r->res, o->r->refs, o->lacking, &o->r->nremote);
    int todo = settle_grabbed(o);
    if (todo && o->c &&
        kc_cache_require_hit_(o->c)) { /* must hit: NVRTC may not run (a waiter above could still take) */
        rc = refused(o);
        unlock_all(o);
        return rc;
    }
    if (todo && o->r->may_compile) rc = o->r->may_compile(o->r->may_compile_arg), o->r->may_compile = NULL;
    if (todo && !rc) rc = compile_grabbed(o);
    unlock_all(o);
    if (!rc && o->left && !any) wait_for_others(o);
    return rc;
}

/* Units found stored may be missing from a writable remote (written while it was down): a graph
 * entry about to go there must find its images there, so each is offered again first (one
 * exists() per remote; queued ahead of the graph entry).  Then the units' counters. */
static void finish(obtain *o) {
    for (size_t i = 0; o->cacheable && o->reuse && i < o->n; i++)
        if (!o->compiled_here[i] && kc_cache_publish(o->c, &o->r->refs[i].id, KC_VARIANT_IMAGE) >= 0)
            (void)kc_cache_publish(o->c, &o->ukeys[i], KC_VARIANT_UNIT);
    if (o->cacheable && o->n) {
        kc_cache_count(o->c, &o->ukeys[0], KC_STAT_UNIT_COMPILES, (uint64_t)o->r->ncompiled);
        kc_cache_count(o->c, &o->ukeys[0], KC_STAT_UNIT_HITS, (uint64_t)((int)o->n - o->r->ncompiled));
    }
}

/*
 * [Note: single-flight per unit] Each unit still missing is compiled under its own lock
 * ("<unit key>.unit"), across threads and processes.  A round takes every free lock of the
 * units still pending, looks those units up once more (stored meanwhile?), compiles the rest
 * together on the pool, stores them (image, then record) and lets the locks go; units whose
 * lock another holds are polled every few milliseconds until their record appears or their
 * lock comes free.  No lock is held while waiting, so two lookups that need each other's units
 * never wait for each other.  Past KCACHE_LOCK_WAIT the rest is compiled without locks.
 */
int kc_units_obtain_(kc_cache *c, const kc_unit_set *s, int cacheable, int reuse, const char *label,
                     const char *toolchain_meta, kc_unit_results *r) {
    obtain o; /* on the stack, as before the split: a lookup allocates nothing more for it */
    memset(&o, 0, sizeof o);
    o.c = c, o.s = s, o.cacheable = cacheable, o.reuse = reuse, o.label = label, o.meta = toolchain_meta, o.r = r;
    o.n = s->u->n;
    r->ncompiled = 0;
    r->nremote = 0;
    r->ms = 0;
    r->store_rc = KC_OK;
    r->store_msg[0] = '\0';
    int rc = first_look(&o), left = o.left;
    double wait_s = 600.0;
    if (!rc && left && cacheable) wait_s = kc_cache_settings_(c)->lock_wait;
    uint64_t deadline = kc_mono_ns() + (uint64_t)(wait_s * 1e9);
    while (!rc && o.left) rc = round_once(&o, deadline);
    if (!rc) finish(&o);
    return rc;
}
