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
 * Must not: call a release callback or touch the file system while holding a lock.
 *
 * Callers: the public guard API (guard.h).  It reaches the cache only through cache.h
 * (kc_cache_mode, kc_cache_profile_dir) and graphs through graph.h.
 */
#include "kcache/guard.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "../common/internal.h"

enum { R_NONE, R_DTYPE, R_DEVICE, R_RANK, R_SIZE, R_STRIDE, R_OWNER, R_GLOBALS, R_BACKEND };

typedef struct gentry {
    kc_tensor_meta in[KC_SITE_MAX_INPUTS];
    size_t nin;
    uint32_t dynamic[KC_SITE_MAX_INPUTS];
    uintptr_t *owners;
    size_t nowners;
    uint64_t globals;
    char backend[32];
    void *value;
    void (*release)(void *);
    struct gentry *next;
} gentry;

struct kc_site {
    pthread_mutex_t mu;
    char name[128];
    char profile_path[PATH_MAX];
    int persist;
    kc_site_options o;
    gentry *entries;
    size_t nentries;
    uint32_t profile[KC_SITE_MAX_INPUTS];
    int64_t lo[KC_SITE_MAX_INPUTS][KC_MAX_RANK], hi[KC_SITE_MAX_INPUTS][KC_MAX_RANK]; /* declared bounds */
    kc_site_stats st;
    struct kc_site *next;
};

static pthread_mutex_t sites_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_site *sites;

/* ---- profile ---- */

static void profile_load(kc_site *s) {
    void *data;
    size_t len;
    if (!s->persist || kc_fs_read_file(s->profile_path, 65536, &data, &len, NULL) != KC_OK) return;
    ((char *)data)[len] = '\0';
    char *save = NULL;
    int ok = 0;
    for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned i, mask;
        if (strcmp(line, "kcache-profile 1") == 0) ok = 1;
        else if (ok && sscanf(line, "input %u %x", &i, &mask) == 2 && i < KC_SITE_MAX_INPUTS) s->profile[i] |= mask;
    }
    free(data);
}

int kc_site_save_profile(kc_site *s) {
    if (!s) return kc_err(KC_EINVAL, "kc_site_save_profile: site is NULL");
    if (!s->persist) return KC_OK;
    char buf[4096];
    uint32_t prof[KC_SITE_MAX_INPUTS];
    pthread_mutex_lock(&s->mu);
    memcpy(prof, s->profile, sizeof prof);
    pthread_mutex_unlock(&s->mu);
    int n = snprintf(buf, sizeof buf, "kcache-profile 1\nsite %s\n", s->name);
    for (int i = 0; i < KC_SITE_MAX_INPUTS; i++)
        if (prof[i]) n += snprintf(buf + n, sizeof buf - (size_t)n, "input %d %x\n", i, prof[i]);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", s->profile_path);
    *strrchr(dir, '/') = '\0';
    int rc = kc_fs_mkdirs(dir, 0700);
    if (!rc) rc = kc_fs_write_atomic(s->profile_path, buf, (size_t)n);
    return rc;
}

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
    if (!o.max_compiles) o.max_compiles = 64;
    s->o = o;
    for (int i = 0; i < KC_SITE_MAX_INPUTS; i++)
        for (int d = 0; d < KC_MAX_RANK; d++) s->lo[i][d] = 0, s->hi[i][d] = INT64_MAX;
    snprintf(s->name, sizeof s->name, "%s", name);
    pthread_mutex_init(&s->mu, NULL);
    char pdir[PATH_MAX];
    int have_dir = cache && kc_cache_mode(cache) != KC_CACHE_DISABLED && kc_cache_profile_dir(cache, pdir, sizeof pdir) == KC_OK;
    if (cache && !have_dir) kc_error_clear(); /* no profile is no error: the site still works */
    if (have_dir) {
        /* Where profiles live is the cache's business; a name that does not fit is never persisted. */
        int n = snprintf(s->profile_path, sizeof s->profile_path, "%s/%016llx.profile", pdir,
                         (unsigned long long)XXH3_64bits(name, strlen(name)));
        int fits = n > 0 && (size_t)n < sizeof s->profile_path;
        s->persist = fits && kc_cache_mode(cache) == KC_CACHE_READWRITE ? 1 : 0;
        if (!fits) {
            s->profile_path[0] = '\0';
        } else if (kc_cache_mode(cache) == KC_CACHE_READONLY) { /* read-only: read the profile, never write it */
            s->persist = 1;
            profile_load(s);
            s->persist = 0;
        } else {
            profile_load(s);
        }
    }
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
    free(e);
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
        entry_free(e);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ---- guards ---- */

static const char *backend_of(const kc_call *c) { return c->backend && *c->backend ? c->backend : "cuda"; }

static int owners_equal(const gentry *e, const kc_call *c) {
    if (e->nowners != c->nowners) return 0;
    for (size_t i = 0; i < c->nowners; i++) {
        size_t k;
        for (k = 0; k < e->nowners; k++)
            if (e->owners[k] == c->owners[i]) break;
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
                        (unsigned long long)c->globals), R_GLOBALS;
    if (!owners_equal(e, c)) return snprintf(msg, cap, "owners: another set of owner objects"), R_OWNER;
    if (e->nin != c->ninputs)
        return snprintf(msg, cap, "inputs: expected %zu, got %zu", e->nin, c->ninputs), R_RANK;
    for (size_t i = 0; i < e->nin; i++) {
        const kc_tensor_meta *a = &e->in[i], *b = &c->inputs[i];
        if (a->dtype != b->dtype)
            return snprintf(msg, cap, "input %zu dtype: expected %d, got %d", i, (int)a->dtype, (int)b->dtype), R_DTYPE;
        if (a->device != b->device)
            return snprintf(msg, cap, "input %zu device: expected %d, got %d", i, (int)a->device, (int)b->device), R_DEVICE;
        if (a->rank != b->rank)
            return snprintf(msg, cap, "input %zu rank: expected %d, got %d", i, a->rank, b->rank), R_RANK;
        uint32_t dyn = e->dynamic[i];
        for (int d = 0; d < a->rank; d++) {
            int64_t v = b->sizes[d].value;
            if (!(dyn >> d & 1) && a->sizes[d].value != v)
                return snprintf(msg, cap, "input %zu size[%d]: expected %lld, got %lld", i, d,
                                (long long)a->sizes[d].value, (long long)v), R_SIZE;
            if ((dyn >> d & 1) && (v < s->lo[i][d] || v > s->hi[i][d]))
                return snprintf(msg, cap, "input %zu size[%d]: %lld is outside the declared bounds [%lld, %lld]", i, d,
                                (long long)v, (long long)s->lo[i][d], (long long)s->hi[i][d]), R_SIZE;
        }
        for (int d = 0; d < a->rank; d++) {
            if (dyn >> (d + 1)) continue; /* a dynamic dim to its right: this stride varies with it */
            if (a->strides[d].value != b->strides[d].value)
                return snprintf(msg, cap, "input %zu stride[%d]: expected %lld, got %lld", i, d,
                                (long long)a->strides[d].value, (long long)b->strides[d].value), R_STRIDE;
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
    if (c->backend && strlen(c->backend) >= sizeof ((gentry *)0)->backend)
        return kc_err(KC_EINVAL, "%s: backend name \"%.40s...\" is longer than %zu bytes", fn, c->backend,
                      sizeof ((gentry *)0)->backend - 1);
    for (size_t i = 0; i < c->ninputs; i++) {
        const kc_tensor_meta *t = &c->inputs[i];
        if (t->rank < 0 || t->rank > KC_MAX_RANK)
            return kc_err(KC_EINVAL, "%s: input %zu has rank %d; a rank is 0..%d", fn, i, t->rank, KC_MAX_RANK);
        for (int d = 0; d < t->rank; d++)
            if (t->sizes[d].value < 0)
                return kc_err(KC_EINVAL, "%s: input %zu size[%d] is negative (%lld)", fn, i, d, (long long)t->sizes[d].value);
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

int kc_site_lookup(kc_site *s, const kc_call *c, kc_site_answer *out) {
    if (!s || !out) return kc_err(KC_EINVAL, "kc_site_lookup: site or answer is NULL");
    memset(out, 0, sizeof *out);
    int rc = call_check("kc_site_lookup", c);
    if (rc) return rc;
    pthread_mutex_lock(&s->mu);
    char msg[256] = "";
    int first_kind = R_NONE, profile_changed = 0;
    size_t same_owners = 0;
    for (gentry *e = s->entries; e; e = e->next) {
        char m[256];
        int k = check(s, e, c, m, sizeof m);
        if (k == R_NONE) {
            s->st.hits++;
            out->result = KC_SITE_HIT;
            out->value = e->value;
            pthread_mutex_unlock(&s->mu);
            return KC_OK;
        }
        if (owners_equal(e, c)) same_owners++;
        /* The reason shown is the first failing guard of the closest entry: one with the same owners. */
        if (first_kind == R_NONE || (k != R_OWNER && first_kind == R_OWNER)) first_kind = k, snprintf(msg, sizeof msg, "%s", m);
        uint32_t dims[KC_SITE_MAX_INPUTS];
        if (!s->o.static_shapes && size_only(e, c, dims))
            for (size_t i = 0; i < c->ninputs; i++)
                if (dims[i] & ~s->profile[i]) s->profile[i] |= dims[i], profile_changed = 1;
    }
    if (!s->entries) snprintf(msg, sizeof msg, "first call");
    if (s->st.compiles >= s->o.max_compiles) {
        out->result = KC_SITE_FALLBACK;
        snprintf(out->reason, sizeof out->reason, "the site compiled %u times (max_compiles); running uncompiled. Last reason: %s",
                 s->o.max_compiles, msg);
    } else if (s->nentries >= s->o.accumulated_cache_size_limit) {
        out->result = KC_SITE_FALLBACK;
        snprintf(out->reason, sizeof out->reason, "accumulated_cache_size_limit (%u) reached; running uncompiled. Last reason: %s",
                 s->o.accumulated_cache_size_limit, msg);
    } else if (same_owners >= s->o.cache_size_limit) {
        out->result = KC_SITE_FALLBACK;
        snprintf(out->reason, sizeof out->reason, "cache_size_limit (%u) reached for these owners; running uncompiled. Last reason: %s",
                 s->o.cache_size_limit, msg);
    } else {
        out->result = KC_SITE_MISS;
        snprintf(out->reason, sizeof out->reason, "%s", msg);
        for (size_t i = 0; i < c->ninputs; i++) {
            uint32_t rank_mask = c->inputs[i].rank >= 32 ? 0xffffffffu : ((1u << c->inputs[i].rank) - 1);
            out->dynamic[i] = s->profile[i] & rank_mask;
        }
    }
    if (out->result == KC_SITE_FALLBACK) s->st.fallbacks++;
    else s->st.misses++, s->st.reasons[first_kind]++;
    pthread_mutex_unlock(&s->mu);
    kc_log(KC_LOG_RECOMPILES, "site %s: %s: %s", s->name, out->result == KC_SITE_MISS ? "recompiling" : "falling back", out->reason);
    if (profile_changed) {
        rc = kc_site_save_profile(s);
        if (rc) kc_log(KC_LOG_GUARD, "site %s: profile not saved: %s", s->name, kc_error_last()->message);
    }
    return KC_OK;
}

int kc_site_insert(kc_site *s, const kc_call *c, const uint32_t *dynamic, void *value, void (*release)(void *)) {
    if (!s) return kc_err(KC_EINVAL, "kc_site_insert: site is NULL");
    int rc = call_check("kc_site_insert", c);
    if (rc) return rc;
    gentry *e = kc_calloc(1, sizeof *e);
    if (!e || (c->nowners && !(e->owners = kc_malloc(c->nowners * sizeof *e->owners)))) {
        free(e);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    e->nin = c->ninputs;
    for (size_t i = 0; i < c->ninputs; i++) {
        e->in[i] = c->inputs[i];
        for (int d = 0; d < KC_MAX_RANK; d++) e->in[i].sizes[d].sym = NULL, e->in[i].strides[d].sym = NULL;
        e->dynamic[i] = dynamic ? dynamic[i] & ((1u << c->inputs[i].rank) - 1) : 0; /* rank <= 8: checked */
    }
    if (c->nowners) memcpy(e->owners, c->owners, c->nowners * sizeof *e->owners);
    e->nowners = c->nowners;
    e->globals = c->globals;
    snprintf(e->backend, sizeof e->backend, "%s", backend_of(c));
    e->value = value;
    e->release = release;
    pthread_mutex_lock(&s->mu);
    e->next = s->entries;
    s->entries = e;
    s->nentries++;
    s->st.compiles++;
    pthread_mutex_unlock(&s->mu);
    return KC_OK;
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
    for (gentry *e = dropped, *x; e; e = x) { /* callbacks outside every lock */
        x = e->next;
        entry_free(e);
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
