/* SPDX-License-Identifier: Apache-2.0 */
/*
 * site.c — the in-memory site cache (kcache/guard.h): guard checks, limits, owners,
 * recompile reasons, and the dynamic-dimension profile kept in the cache directory.
 *
 * The one idea: a lookup is a walk over the site's few entries comparing plain integers
 * (no hashing, no allocation) — the cost of a hit is a handful of compares per input.
 * On a miss the same walk yields the first failing guard of each entry, which is both the
 * reason shown to the user and the evidence for automatic dynamic shapes: when entries that
 * agree on everything else differ only in some sizes, those dimensions become dynamic for
 * every later compile of the site, and the profile is saved so the next process starts
 * from it.
 *
 * Entries are reference-counted: the site's list holds one reference, and each hold of
 * kc_site_lookup_ext one more, so dropping an entry (owner release, kc_site_free) while a
 * caller still uses its value defers the release callback to the last kc_site_hold_release.
 * A miss starts a "flight": a prototype entry with the guards the miss proposes, which
 * counts toward the limits like an entry and makes lookups that it will serve wait on the
 * site's condition variable until an insert or an abandon ends it (single-flight).
 *
 * [Note: site limits] What counts toward which limit, next to Dynamo: a recompile is a MISS
 * while an entry for the same owner set (owners equal, generations included) exists — the
 * first call and a new owner set are compiles, not recompiles (Dynamo's is_recompilation).
 * cache_size_limit counts entries (and flights) with the call's owner set; the accumulated
 * limit counts all entries (and flights) of the site; max_compiles counts real compiles
 * (inserts not marked KC_SITE_INSERT_CACHED, and flights) and defaults to the accumulated
 * limit, as Dynamo's frame compile-id bound is the accumulated limit.  A disk hit counts
 * toward no compile bound: it costs no compile, and a site re-created with its owners again
 * and again must not end up uncompiled.  Each limit is checked at lookup (the answer) and
 * again at insert (the guarantee, whatever the interleaving of threads).
 *
 * Must not: call a release callback or touch the file system while holding a lock (the
 * profile's flock aside, which is the file system's own).
 *
 * Callers: the public guard API (guard.h); bundles carry profiles through
 * kc_site_profile_foreach/merge (guard/profile.c).  A site's own profile (found, loaded, saved)
 * is site_profile.c's; site_impl.h is what the two share.
 */
#include "kcache/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "site_impl.h"

enum { R_NONE, R_DTYPE, R_DEVICE, R_RANK, R_SIZE, R_STRIDE, R_OWNER, R_GLOBALS, R_BACKEND };

static pthread_mutex_t sites_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_site *sites;

/* ---- sites ---- */

int kc_site_new(kc_site **out, kc_cache *cache, const char *name, const kc_site_options *opts) {
    if (out) *out = NULL;
    if (!out) return kc_err(KC_EINVAL, "kc_site_new: out is NULL");
    if (!name || !*name) return kc_err(KC_EINVAL, "kc_site_new: a name is required");
    if (opts && opts->version != KC_SITE_OPTIONS_VERSION)
        return kc_err(KC_EVERSION, "kc_site_options version %u is not supported", opts->version);
    kc_site *s = kc_calloc(1, sizeof *s);
    if (!s) return kc_err(KC_ENOMEM, "out of memory");
    kc_site_options o = KC_SITE_OPTIONS_INIT;
    if (opts) o = *opts;
    if (!o.cache_size_limit) o.cache_size_limit = 8;
    if (!o.accumulated_cache_size_limit) o.accumulated_cache_size_limit = 256;
    if (!o.max_compiles) o.max_compiles = o.accumulated_cache_size_limit; /* [Note: site limits] */
    s->o = o;
    s->info.version = KC_SITE_INFO_VERSION;
    for (int i = 0; i < KC_SITE_MAX_INPUTS; i++)
        for (int d = 0; d < KC_MAX_RANK; d++) s->lo[i][d] = 0, s->hi[i][d] = INT64_MAX;
    snprintf(s->name, sizeof s->name, "%s", name);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->flown, NULL);
    kc_site_profile_open_(s, cache, name);
    pthread_mutex_lock(&sites_mu);
    s->next = sites;
    sites = s;
    pthread_mutex_unlock(&sites_mu);
    *out = s;
    return KC_OK;
}

static void entry_free(gentry *e) {
    if (e->release) e->release(e->value);
    free(e->owners);
    free(e->gens);
    free(e);
}

/* Drop one reference; the last one frees (and runs the release callback): never under a lock. */
static void entry_unref(gentry *e) {
    if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) entry_free(e);
}

void kc_site_hold_release(kc_site_hold *hold) {
    if (hold) entry_unref((gentry *)hold);
}

void kc_site_free(kc_site *s) {
    if (!s) return;
    pthread_mutex_lock(&sites_mu);
    for (kc_site **p = &sites; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    pthread_mutex_unlock(&sites_mu);
    for (gentry *e = s->entries, *n; e; e = n) {
        n = e->next;
        entry_unref(e);
    }
    for (gentry *e = s->flights, *n; e; e = n) {
        n = e->next;
        entry_free(e); /* a prototype: no value, no callback */
    }
    pthread_cond_destroy(&s->flown);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ---- guards ---- */

static const char *backend_of(const kc_call *c) { return c->backend && *c->backend ? c->backend : "cuda"; }

/*
 * A call with its owners' generations.  The guard functions take `const kc_call *` and every
 * one is given &xcall.c, so gen_of reaches the generations through the first member.
 */
typedef struct xcall {
    kc_call c;
    const uint64_t *gens;
} xcall;

static uint64_t gen_of(const kc_call *c, size_t i) {
    const uint64_t *g = ((const xcall *)c)->gens;
    return g ? g[i] : 0;
}

/* The same owners: each (address, generation) of the call is one of the entry's. */
static int owners_equal(const gentry *e, const kc_call *c) {
    if (e->nowners != c->nowners) return 0;
    for (size_t i = 0; i < c->nowners; i++) {
        size_t k;
        for (k = 0; k < e->nowners; k++)
            if (e->owners[k] == c->owners[i] && e->gens[k] == gen_of(c, i)) break;
        if (k == e->nowners) return 0;
    }
    return 1;
}

/* The first failing guard of `e` for `c` (R_NONE when all pass); its reason into msg. */
static int check(const kc_site *s, const gentry *e, const kc_call *c, char *msg, size_t cap) {
    if (strcmp(e->backend, backend_of(c)) != 0)
        return snprintf(msg, cap, "backend: expected %s, got %s", e->backend, backend_of(c)), R_BACKEND;
    if (e->globals != c->globals)
        return snprintf(msg, cap, "global state: expected 0x%llx, got 0x%llx", (unsigned long long)e->globals,
                        (unsigned long long)c->globals),
               R_GLOBALS;
    if (!owners_equal(e, c)) return snprintf(msg, cap, "owners: another set of owner objects"), R_OWNER;
    if (e->nin != c->ninputs) return snprintf(msg, cap, "inputs: expected %zu, got %zu", e->nin, c->ninputs), R_RANK;
    for (size_t i = 0; i < e->nin; i++) {
        const kc_tensor_meta *a = &e->in[i], *b = &c->inputs[i];
        if (a->dtype != b->dtype)
            return snprintf(msg, cap, "input %zu dtype: expected %d, got %d", i, (int)a->dtype, (int)b->dtype), R_DTYPE;
        if (a->device != b->device)
            return snprintf(msg, cap, "input %zu device: expected %d, got %d", i, (int)a->device, (int)b->device),
                   R_DEVICE;
        if (a->rank != b->rank)
            return snprintf(msg, cap, "input %zu rank: expected %d, got %d", i, a->rank, b->rank), R_RANK;
        uint32_t dyn = e->dynamic[i];
        for (int d = 0; d < a->rank; d++) {
            int64_t v = b->sizes[d].value;
            if (!(dyn >> d & 1) && a->sizes[d].value != v)
                return snprintf(msg, cap, "input %zu size[%d]: expected %lld, got %lld", i, d,
                                (long long)a->sizes[d].value, (long long)v),
                       R_SIZE;
            if ((dyn >> d & 1) && (v < s->lo[i][d] || v > s->hi[i][d]))
                return snprintf(msg, cap, "input %zu size[%d]: %lld is outside the declared bounds [%lld, %lld]", i, d,
                                (long long)v, (long long)s->lo[i][d], (long long)s->hi[i][d]),
                       R_SIZE;
        }
        for (int d = 0; d < a->rank; d++) {
            if (dyn >> (d + 1)) continue; /* a dynamic dim to its right: this stride varies with it */
            if (a->strides[d].value != b->strides[d].value)
                return snprintf(msg, cap, "input %zu stride[%d]: expected %lld, got %lld", i, d,
                                (long long)a->strides[d].value, (long long)b->strides[d].value),
                       R_STRIDE;
        }
    }
    return R_NONE;
}

/*
 * Whether every field of a call is one the guards can compare: counts within bounds and
 * their arrays present, each input's rank in 0..KC_MAX_RANK (the guards index sizes[d] and
 * shift by d), sizes not negative, a backend name that fits an entry.  Checked before any
 * guard reads the call, so bad input is KC_EINVAL with the field named, never a read past
 * an array.
 */
static int call_check(const char *fn, const kc_call *c) {
    if (!c) return kc_err(KC_EINVAL, "%s: call is NULL", fn);
    if (c->ninputs > KC_SITE_MAX_INPUTS)
        return kc_err(KC_EINVAL, "%s: %zu inputs; a site guards at most %d", fn, c->ninputs, KC_SITE_MAX_INPUTS);
    if (c->ninputs && !c->inputs) return kc_err(KC_EINVAL, "%s: %zu inputs but inputs is NULL", fn, c->ninputs);
    if (c->nowners && !c->owners) return kc_err(KC_EINVAL, "%s: %zu owners but owners is NULL", fn, c->nowners);
    if (c->backend && strlen(c->backend) >= sizeof((gentry *)0)->backend)
        return kc_err(KC_EINVAL, "%s: backend name \"%.40s...\" is longer than %zu bytes", fn, c->backend,
                      sizeof((gentry *)0)->backend - 1);
    for (size_t i = 0; i < c->ninputs; i++) {
        const kc_tensor_meta *t = &c->inputs[i];
        if (t->rank < 0 || t->rank > KC_MAX_RANK)
            return kc_err(KC_EINVAL, "%s: input %zu has rank %d; a rank is 0..%d", fn, i, t->rank, KC_MAX_RANK);
        for (int d = 0; d < t->rank; d++)
            if (t->sizes[d].value < 0)
                return kc_err(KC_EINVAL, "%s: input %zu size[%d] is negative (%lld)", fn, i, d,
                              (long long)t->sizes[d].value);
    }
    return KC_OK;
}

/* Dims where `e` and `c` differ only in sizes (everything else equal), or 0 (no). */
static int size_only(const gentry *e, const kc_call *c, uint32_t *dims) {
    if (strcmp(e->backend, backend_of(c)) || e->globals != c->globals || !owners_equal(e, c) || e->nin != c->ninputs)
        return 0;
    int any = 0;
    for (size_t i = 0; i < e->nin; i++) {
        const kc_tensor_meta *a = &e->in[i], *b = &c->inputs[i];
        if (a->dtype != b->dtype || a->device != b->device || a->rank != b->rank) return 0;
        dims[i] = 0;
        for (int d = 0; d < a->rank; d++)
            if (a->sizes[d].value != b->sizes[d].value) dims[i] |= 1u << d, any = 1;
    }
    return any;
}

/* Bit d set where input i's size in `c` is outside the bounds declared for (i, d). */
static uint32_t out_of_bounds(const kc_site *s, const kc_call *c, size_t i) {
    uint32_t m = 0;
    for (int d = 0; d < c->inputs[i].rank; d++) {
        int64_t v = c->inputs[i].sizes[d].value;
        if (v < s->lo[i][d] || v > s->hi[i][d]) m |= 1u << d;
    }
    return m;
}

/* An entry (or a flight's prototype) for `c`, unlinked, one reference; NULL when out of memory. */
static gentry *entry_new(const kc_call *c, const uint32_t *dynamic, void *value, void (*release)(void *)) {
    gentry *e = kc_calloc(1, sizeof *e);
    if (!e) return NULL;
    if (c->nowners && (!(e->owners = kc_malloc(c->nowners * sizeof *e->owners)) ||
                       !(e->gens = kc_malloc(c->nowners * sizeof *e->gens)))) {
        free(e->owners);
        free(e);
        return NULL;
    }
    e->nin = c->ninputs;
    for (size_t i = 0; i < c->ninputs; i++) {
        e->in[i] = c->inputs[i];
        for (int d = 0; d < KC_MAX_RANK; d++) e->in[i].sizes[d].sym = NULL, e->in[i].strides[d].sym = NULL;
        e->dynamic[i] = dynamic ? dynamic[i] & ((1u << c->inputs[i].rank) - 1) : 0; /* rank <= 8: checked */
    }
    for (size_t i = 0; i < c->nowners; i++) e->owners[i] = c->owners[i], e->gens[i] = gen_of(c, i);
    e->nowners = c->nowners;
    e->globals = c->globals;
    snprintf(e->backend, sizeof e->backend, "%s", backend_of(c));
    e->value = value;
    e->release = release;
    e->refs = 1;
    return e;
}

/* Unlink the flights of this thread (all = 0) or every flight `c` passes, onto *gone; broadcast.  Under s->mu. */
static size_t flights_end(kc_site *s, const kc_call *c, int mine, gentry **gone) {
    size_t n = 0;
    char m[8];
    for (gentry **p = &s->flights; *p;) {
        gentry *f = *p;
        if ((mine && pthread_equal(f->by, pthread_self())) || (c && check(s, f, c, m, sizeof m) == R_NONE)) {
            *p = f->next;
            f->next = *gone;
            *gone = f;
            s->nflights--;
            n++;
        } else {
            p = &f->next;
        }
    }
    if (n) pthread_cond_broadcast(&s->flown);
    return n;
}

static void flights_free(gentry *gone) {
    for (gentry *f = gone, *n; f; f = n) {
        n = f->next;
        entry_free(f); /* a prototype: no value, no callback */
    }
}

/* Entries and flights with the owners of `c`. */
static size_t same_owner_count(const kc_site *s, const kc_call *c) {
    size_t n = 0;
    for (const gentry *e = s->entries; e; e = e->next) n += (size_t)owners_equal(e, c);
    for (const gentry *e = s->flights; e; e = e->next) n += (size_t)owners_equal(e, c);
    return n;
}

/*
 * The limit one more entry for `c` would exceed, as a sentence into msg (0: none).  `compile`:
 * the entry costs a real compile.  Flights count as the entries they will become.  Under s->mu.
 */
static int limit_reached(const kc_site *s, const kc_call *c, int compile, char *msg, size_t cap) {
    if (s->nentries + s->nflights >= s->o.accumulated_cache_size_limit)
        return snprintf(msg, cap, "accumulated_cache_size_limit (%u) reached", s->o.accumulated_cache_size_limit), 1;
    if (same_owner_count(s, c) >= s->o.cache_size_limit)
        return snprintf(msg, cap, "cache_size_limit (%u) reached for these owners", s->o.cache_size_limit), 1;
    if (compile && s->st.compiles + s->nflights >= s->o.max_compiles)
        return snprintf(msg, cap, "the site compiled %u times (max_compiles)", s->o.max_compiles), 1;
    return 0;
}

int kc_site_lookup_ext(kc_site *s, const kc_call *call, const uint64_t *gens, kc_site_answer *out,
                       kc_site_hold **hold) {
    if (hold) *hold = NULL;
    if (!s || !out) return kc_err(KC_EINVAL, "kc_site_lookup: site or answer is NULL");
    memset(out, 0, sizeof *out);
    int rc = call_check("kc_site_lookup", call);
    if (rc) return rc;
    xcall x = {*call, gens};
    const kc_call *c = &x.c;
    gentry *gone = NULL;
    pthread_mutex_lock(&s->mu);
    flights_end(s, NULL, 1, &gone); /* this thread looks up again: it gave its compile up */
    char msg[256], own_msg[256];
    int first_kind, own_kind, profile_changed = 0, waited = 0;
    size_t same_owners;
again:
    msg[0] = own_msg[0] = '\0';
    first_kind = own_kind = R_NONE;
    same_owners = 0;
    for (gentry *e = s->entries; e; e = e->next) {
        char m[256];
        int k = check(s, e, c, m, sizeof m);
        if (k == R_NONE) {
            s->st.hits++;
            out->result = KC_SITE_HIT;
            out->value = e->value;
            if (hold) {
                __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
                s->info.held++;
                *hold = (kc_site_hold *)e;
            }
            pthread_mutex_unlock(&s->mu);
            flights_free(gone);
            return KC_OK;
        }
        if (owners_equal(e, c)) {
            /* A recompile's reason: the first failing guard of an entry with the same owners. */
            if (!same_owners++) own_kind = k, snprintf(own_msg, sizeof own_msg, "%s", m);
        }
        /* The reason shown is the first failing guard of the closest entry: one with the same owners. */
        if (first_kind == R_NONE || (k != R_OWNER && first_kind == R_OWNER))
            first_kind = k, snprintf(msg, sizeof msg, "%s", m);
        uint32_t dims[KC_SITE_MAX_INPUTS];
        if (!s->o.static_shapes && size_only(e, c, dims))
            for (size_t i = 0; i < c->ninputs; i++)
                if (dims[i] & ~s->profile[i]) s->profile[i] |= dims[i], profile_changed = 1;
    }
    /* Single-flight: a compile in flight that will serve this call — wait for it, then look again. */
    for (gentry *f = s->flights; f; f = f->next) {
        char m[8];
        if (check(s, f, c, m, sizeof m) == R_NONE) {
            if (!waited) waited = 1, s->info.waits++;
            pthread_cond_wait(&s->flown, &s->mu);
            goto again;
        }
    }
    int recompile = same_owners > 0;
    if (recompile) first_kind = own_kind, snprintf(msg, sizeof msg, "%s", own_msg);
    else if (!s->entries) snprintf(msg, sizeof msg, "first call");
    char lim[128];
    if (limit_reached(s, c, 1, lim, sizeof lim)) {
        out->result = KC_SITE_FALLBACK;
        snprintf(out->reason, sizeof out->reason, "%s; running uncompiled. Last reason: %s", lim, msg);
        s->st.fallbacks++;
    } else {
        out->result = KC_SITE_MISS;
        snprintf(out->reason, sizeof out->reason, "%s", msg);
        for (size_t i = 0; i < c->ninputs; i++) {
            uint32_t rank_mask = (1u << c->inputs[i].rank) - 1; /* rank <= 8: checked */
            /* A size outside declared bounds can never hit a dynamic entry: propose it static. */
            out->dynamic[i] = s->profile[i] & rank_mask & ~out_of_bounds(s, c, i);
        }
        s->st.misses++, s->st.reasons[first_kind]++;
        if (recompile) s->info.recompiles++, s->info.recompile_reasons[first_kind]++;
        gentry *f = entry_new(c, out->dynamic, NULL, NULL);
        if (f) { /* out of memory: no flight, only no waiting */
            f->by = pthread_self();
            f->next = s->flights;
            s->flights = f;
            s->nflights++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    flights_free(gone);
    if (out->result == KC_SITE_FALLBACK) kc_log(KC_LOG_RECOMPILES, "site %s: falling back: %s", s->name, out->reason);
    else if (recompile) kc_log(KC_LOG_RECOMPILES, "site %s: recompiling: %s", s->name, out->reason);
    else kc_log(KC_LOG_GUARD, "site %s: compiling (not a recompile): %s", s->name, out->reason);
    if (profile_changed) {
        rc = kc_site_save_profile(s);
        if (rc) kc_log(KC_LOG_GUARD, "site %s: profile not saved: %s", s->name, kc_error_last()->message);
    }
    return KC_OK;
}

int kc_site_lookup(kc_site *s, const kc_call *c, kc_site_answer *out) {
    return kc_site_lookup_ext(s, c, NULL, out, NULL);
}

int kc_site_insert_ext(kc_site *s, const kc_call *call, const uint64_t *gens, const uint32_t *dynamic, void *value,
                       void (*release)(void *), unsigned flags) {
    if (!s) return kc_err(KC_EINVAL, "kc_site_insert: site is NULL");
    if (flags & ~KC_SITE_INSERT_CACHED) return kc_err(KC_EINVAL, "kc_site_insert_ext: unknown flags 0x%x", flags);
    int rc = call_check("kc_site_insert", call);
    if (rc) return rc;
    xcall x = {*call, gens};
    const kc_call *c = &x.c;
    gentry *e = entry_new(c, dynamic, value, release);
    if (!e) return kc_err(KC_ENOMEM, "out of memory");
    int cached = (flags & KC_SITE_INSERT_CACHED) != 0;
    gentry *gone = NULL;
    char lim[128];
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < c->ninputs; i++) e->dynamic[i] &= ~out_of_bounds(s, c, i); /* guarded static there */
    flights_end(s, c, 1, &gone); /* this compile has landed: the lookups waiting on it look again */
    int full = limit_reached(s, c, !cached, lim, sizeof lim);
    if (full) {
        s->info.refused_inserts++;
    } else {
        e->next = s->entries;
        s->entries = e;
        s->nentries++;
        if (cached) s->info.cached_inserts++;
        else s->st.compiles++;
    }
    pthread_mutex_unlock(&s->mu);
    flights_free(gone);
    if (full) {
        e->release = NULL; /* the value stays the caller's */
        entry_free(e);
        kc_log(KC_LOG_RECOMPILES, "site %s: insert refused: %s", s->name, lim);
        return kc_err(KC_ELIMIT, "kc_site_insert: %s: not inserted (run uncompiled)", lim);
    }
    return KC_OK;
}

int kc_site_insert(kc_site *s, const kc_call *c, const uint32_t *dynamic, void *value, void (*release)(void *)) {
    return kc_site_insert_ext(s, c, NULL, dynamic, value, release, 0);
}

size_t kc_site_abandon(kc_site *s, const kc_call *call) {
    if (!s || (call && call_check("kc_site_abandon", call) != KC_OK)) return 0;
    xcall x = {call ? *call : (kc_call){0}, NULL};
    gentry *gone = NULL;
    pthread_mutex_lock(&s->mu);
    size_t n = flights_end(s, call ? &x.c : NULL, 1, &gone);
    pthread_mutex_unlock(&s->mu);
    flights_free(gone);
    return n;
}

size_t kc_owner_release(uintptr_t owner) {
    gentry *dropped = NULL;
    size_t n = 0;
    pthread_mutex_lock(&sites_mu);
    for (kc_site *s = sites; s; s = s->next) {
        pthread_mutex_lock(&s->mu);
        for (gentry **p = &s->entries; *p;) {
            gentry *e = *p;
            int guards = 0;
            for (size_t i = 0; i < e->nowners; i++) guards |= e->owners[i] == owner;
            if (guards) {
                *p = e->next;
                s->nentries--;
                e->next = dropped;
                dropped = e;
                n++;
            } else {
                p = &e->next;
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&sites_mu);
    for (gentry *e = dropped, *x; e; e = x) { /* callbacks outside every lock; a held entry waits for its holds */
        x = e->next;
        entry_unref(e);
    }
    return n;
}

void kc_site_get_stats(kc_site *s, kc_site_stats *out) {
    if (!out) return;
    if (!s) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    out->entries = s->nentries;
    pthread_mutex_unlock(&s->mu);
}

int kc_site_get_info(kc_site *s, kc_site_info *out) {
    if (!s || !out) return kc_err(KC_EINVAL, "kc_site_get_info: site or out is NULL");
    if (out->version != KC_SITE_INFO_VERSION)
        return kc_err(KC_EVERSION, "kc_site_info version %u is not supported", out->version);
    pthread_mutex_lock(&s->mu);
    *out = s->info;
    out->in_flight = s->nflights;
    pthread_mutex_unlock(&s->mu);
    return KC_OK;
}
void kc_site_symbol(size_t input, int dim, char out[24]) { snprintf(out, 24, "in%zu_d%d", input, dim); }

int kc_site_set_bounds(kc_site *s, size_t input, int dim, int64_t min, int64_t max) {
    if (!s || input >= KC_SITE_MAX_INPUTS || dim < 0 || dim >= KC_MAX_RANK || min > max)
        return kc_err(KC_EINVAL, "kc_site_set_bounds: bad input, dimension or bounds");
    pthread_mutex_lock(&s->mu);
    s->lo[input][dim] = min;
    s->hi[input][dim] = max;
    pthread_mutex_unlock(&s->mu);
    return KC_OK;
}
