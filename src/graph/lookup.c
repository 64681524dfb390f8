/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lookup.c — from a description to compiled, stored and loaded kernels: kc_graph_compile
 * (compile-only, for prewarming a fleet) and kc_graph_get (a device's loaded graph).
 *
 * The one idea: a lookup computes the key once, then tries the cheapest place first — the
 * process's loaded graphs, the local directory, the remote tier — under the device's ordered
 * candidate variants ([Note: variant selection]); only a miss compiles, under the key's lock
 * ([Note: single-flight]), and every outcome is counted exactly once ([Note: one outcome] in
 * lookup_counts.c).  A driver that refuses
 * a stored image is a counted miss, never a failure.  The target is parsed once, at the public
 * call (kc_graph_compile's name) or from the device (kc_graph_get), and passed inward as a
 * kc_target; what a miss builds is build.c's.
 *
 * Callers: the public API (graph.h), the prewarm part, the guard part.  Must not: store a
 * graph whose source is not cacheable (__DATE__ …), load an entry without full validation,
 * or fail a lookup because of the cache (cache trouble costs a miss).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../cache/internal.h"
#include "../common/internal.h"
#include "../compile/targets.h"
#include "../store/tiers.h" /* kc_tiers_take_failure: strict */
#include "graph_internal.h"
#include "kcache/cuda.h"
#include "kcache/target.h"

/* Whether the description has a backward pass: a kernel step or a zero step (desc.c keeps those apart, in
 * d->zeros) of pass BACKWARD.  A pass of zero steps alone is a pass: its section is written. */
int kc_graph_desc_has_backward_(const kc_graph_desc *d) {
    for (size_t i = 0; i < d->nsteps; i++)
        if (d->steps[i].pass == KC_PASS_BACKWARD) return 1;
    for (size_t i = 0; i < d->nzeros; i++)
        if (d->zeros[i].pass == KC_PASS_BACKWARD) return 1;
    return 0;
}

static double us_since(uint64_t t0) { return (double)(kc_mono_ns() - t0) / 1e3; }

/*
 * [Note: single-flight] A miss compiles under the key+variant's lock.  A process that finds
 * the lock held waits, polling every few milliseconds, for the entry to appear (then it is
 * a hit) or for the lock to come free (the holder finished without storing, or died: the
 * kernel released its flock) — then it takes over.  The wait is bounded (KCACHE_LOCK_WAIT
 * seconds, default 600): past it, it compiles without the lock rather than fail.
 */
/* A stored entry found and refused ([Note: refusals are said] in src/store/refusal.c): the tiers' reason
 * (the entry, or an image it names: signature, MAC, corrupt) into `why` when there is one, else
 * `fallback` (may be NULL: `why` kept).  Strict (KCACHE_STRICT), the refusal is the lookup's error, with
 * its status (KC_EUNTRUSTED, KC_ECORRUPT; `status` when the tiers recorded none); else KC_MISS. */
static int refusal(kc_cache *c, int status, const char *fallback, char *why, size_t cap) {
    char r[400];
    int rc = kc_tiers_take_refusal(r, sizeof r);
    if (!rc && fallback) snprintf(r, sizeof r, "%s", fallback);
    if (why && (rc || fallback)) snprintf(why, cap, "%s", r);
    if (!kc_cache_strict_(c) || (!rc && !fallback)) return KC_MISS;
    return kc_err(rc ? rc : status, "strict (KCACHE_STRICT): %s", r);
}

int kc_graph_strict_refusal_(kc_cache *c) {
    int rc = refusal(c, KC_ECORRUPT, NULL, NULL, 0);
    return rc == KC_MISS ? KC_OK : rc;
}

/* The local graph entry of key.variant with its images resolved: KC_OK, or KC_MISS (absent;
 * corrupt: quarantined; an image missing or failing its check: counted, the reason in `why`). */
static int local_graph(kc_cache *c, const kc_key *key, const char *variant, int attach, kc_entry **out, char *why,
                       size_t cap) {
    /* `why` NULL: a look again under the compile lock, whose lookup counted its own detail already */
    *out = NULL;
    kc_entry *e;
    /* A compile-only hit needs its graph entry's images and origin, nothing else ([Note: checked,
     * not inflated] in src/entry/entry.c); a load needs all of it. */
    unsigned sections = attach ? ~0u : 1u << KC_SECTION_IMAGES | 1u << KC_SECTION_ORIGIN;
    int rc = kc_cache_get_local_some_(c, key, variant, sections, &e);
    if (rc == KC_ECORRUPT && why) return refusal(c, KC_ECORRUPT, "stored entry was corrupt", why, cap);
    if (rc) return KC_MISS;
    if ((rc = kc_graph_resolve_(c, e, attach, 1)) != KC_OK) {
        char r[160];
        snprintf(r, sizeof r, "stored entry for %s refused: %.110s", variant, kc_error_last()->message);
        if (why) kc_cache_count(c, key, KC_STAT_IMAGES_MISSING, 1);
        kc_log(KC_LOG_GRAPH, "stored graph %s not usable: %s", variant, kc_error_last()->message);
        kc_entry_free(e);
        if (rc == KC_ENOMEM) return rc;
        return why ? refusal(c, KC_ECORRUPT, r, why, cap) : KC_MISS; /* an image refused, else missing */
    }
    *out = e;
    return KC_OK;
}

/* The remote's graph entry under the first present of `variants`, its images resolved, then kept
 * locally — its images first (resolve wrote them), the graph entry last.  KC_OK or KC_MISS. */
static int remote_graph(kc_cache *c, const kc_key *key, const char *const *variants, size_t n, size_t *which,
                        kc_entry **out, char *why, size_t cap) {
    *out = NULL;
    kc_entry *e;
    void *raw;
    size_t raw_len, w = 0;
    if (kc_cache_remote_fetch_(c, key, variants, n, &w, &e, &raw, &raw_len) != KC_OK)
        return refusal(c, KC_EUNTRUSTED, NULL, why, cap); /* absent, or found and refused: said */
    int rc = kc_graph_resolve_(c, e, 1, 1);
    if (rc == KC_OK) {
        (void)kc_cache_keep_local_(c, key, variants[w], raw, raw_len);
    } else {
        kc_cache_count(c, key, KC_STAT_IMAGES_MISSING, 1);
        char r[160];
        snprintf(r, sizeof r, "remote entry for %s refused: %.110s", variants[w], kc_error_last()->message);
        kc_entry_free(e);
        e = NULL;
        if (rc != KC_ENOMEM) rc = refusal(c, KC_ECORRUPT, r, why, cap);
    }
    free(raw);
    if (!e) return rc;
    if (which) *which = w;
    *out = e;
    return KC_OK;
}

/* If key.target is stored now (with its images), take it as a disk hit (with why) and return 1. */
static int take_stored(kc_cache *c, const kc_key *key, const char *target, kc_graph_info *info, const char *why,
                       kc_entry **entry_out) {
    kc_entry *e;
    if (local_graph(c, key, target, entry_out != NULL, &e, NULL, 0) != KC_OK) return 0;
    info->source = KC_FROM_DISK;
    snprintf(info->variant, sizeof info->variant, "%s", target);
    snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
    if (entry_out) *entry_out = e;
    else kc_entry_free(e);
    return 1;
}

/* The build of a key that missed every tier, under the fleet's lease ([Note: leases] in store/lease.c): an
 * entry another host stored while this one waited is taken as a remote hit, verified as any remote read.
 * A lookup that found an entry and refused it takes no lease (single_flight's SF_LEASE unset): the remote's
 * copy is the bad one, whose presence says nothing of another host's compile. */
static int leased_build(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_key_builder *kb,
                        const kc_target *t, kc_graph_info *info, kc_entry **entry_out) {
    char name[16];
    kc_target_name(t, name);
    const char *target = name;
    kc_cache_lease ls;
    if (kc_cache_lease_begin_(c, key, target, &ls) == 1) { /* it arrived: no lease held */
        kc_entry *e;
        char why[160] = "";
        int rrc = remote_graph(c, key, &target, 1, NULL, &e, why, sizeof why);
        if (why[0]) snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
        if (rrc != KC_OK && rrc != KC_MISS) return rrc; /* strict: refused, as the lookup's own remote read says */
        if (rrc == KC_OK) {
            info->source = KC_FROM_REMOTE;
            snprintf(info->variant, sizeof info->variant, "%s", target);
            snprintf(info->miss_reason, sizeof info->miss_reason, "waited for another host's compile");
            if (entry_out) *entry_out = e;
            else kc_entry_free(e);
            kc_cache_lease_end_(c, &ls, 1);
            return KC_OK;
        }
    }
    int rc = kc_graph_build_(c, d, key, kb, t, 1, info, entry_out);
    kc_cache_lease_end_(c, &ls, 0);
    return rc;
}

/* single_flight's `mode`: take an entry stored meanwhile (SF_TAKE); lease the key in the remote (SF_LEASE). */
#define SF_TAKE 1
#define SF_LEASE 2

static int single_flight(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_key_builder *kb,
                         const kc_target *t, int mode, kc_graph_info *info, kc_entry **entry_out) {
    int take = mode & SF_TAKE;
    char target[16]; /* the lock's and the entry's name */
    kc_target_name(t, target);
    double wait_s = 600.0; /* strict (common/env.c): in [0, a day], so the cast below is defined */
    int erc = (wait_s = kc_cache_settings_(c)->lock_wait, KC_OK); /* checked once, at the open (config/) */
    if (erc) return erc;
    uint64_t deadline = kc_mono_ns() + (uint64_t)(wait_s * 1e9);
    int waited = 0;
    for (;;) {
        kc_lock *lk = NULL;
        int rc = kc_cache_trylock(c, key, target, &lk);
        if (rc == KC_OK) {
            /* Someone may have stored it between our miss and the lock. */
            if (take && take_stored(c, key, target, info, "stored by another process meanwhile", entry_out)) {
                kc_cache_unlock(lk);
                return KC_OK;
            }
            rc = take && (mode & SF_LEASE) ? leased_build(c, d, key, kb, t, info, entry_out)
                                           : kc_graph_build_(c, d, key, kb, t, take, info, entry_out);
            kc_cache_unlock(lk);
            return rc;
        }
        if (rc != KC_EBUSY || kc_mono_ns() > deadline) {
            if (rc == KC_EBUSY)
                kc_log(KC_LOG_GRAPH, "%s: waited %.0f s for another compile; compiling", d->name, wait_s);
            else kc_log(KC_LOG_GRAPH, "%s: no compile lock (%s); compiling", d->name, kc_error_last()->message);
            return kc_graph_build_(c, d, key, kb, t, take, info, entry_out);
        }
        if (!waited++) kc_log(KC_LOG_GRAPH, "%s: another process compiles %s; waiting", d->name, target);
        if (take && take_stored(c, key, target, info, "waited for another process's compile", entry_out)) return KC_OK;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void info_init(kc_graph_info *info, const kc_key *key) {
    memset(info, 0, sizeof *info);
    kc_key_to_hex(key, info->key);
}

/* The common start of a lookup: the key, its digests, and the info record. */
/* Strict (KCACHE_STRICT): a remote read failure this lookup met (it went on without the remote)
 * is its error. */
static int strict_remote(kc_cache *c) {
    char why[256];
    if (!kc_cache_strict_(c) || !kc_tiers_take_failure(why, sizeof why)) return KC_OK;
    return kc_err(KC_EIO, "strict (KCACHE_STRICT): the remote failed during this lookup: %s", why);
}

/* `variant`: the one whose direct manifest may vouch for the key's toolkit digest (*vouched). */
static int lookup_begin(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_graph_info *info, kc_key *key,
                        kc_key_builder **kb, uint64_t *t0, int *vouched) {
    *t0 = kc_mono_ns();
    (void)kc_tiers_take_failure(NULL, 0); /* strict: only this lookup's remote failures count */
    (void)kc_tiers_take_refusal(NULL, 0); /* and only its refusals are said */
    *kb = NULL; /* the memo: the builder is made on a miss, when an entry is written (kc_graph_build_, build.c) */
    int rc = kc_graph_key_lookup_(c, d, variant, key, vouched);
    if (rc) return rc;
    info_init(info, key);
    info->key_us = us_since(*t0);
    info->kernels = (int)d->nkernels;
    return KC_OK;
}

/* A key whose toolkit digest a direct manifest vouched for (or whose description a spec's memo
 * vouched for: [Note: spec direct mode] in spec_direct.c) serves that manifest's variant from
 * the local directory and nothing else: before a remote is asked, another variant tried or a miss
 * counted, the walk confirms it ([Note: toolkit direct mode]).  0 when it stands (*vouched is
 * then 0), 1 when it moved (the tree changed where this graph does not read: look up again, now
 * under the walked digest — at most once, the digest being the walk's from then on), else the
 * walk's error. */
static int confirm_vouched(kc_cache *c, const kc_graph_desc *d, const kc_key *key, int *vouched) {
    if (!*vouched) return 0;
    kc_key k2;
    int rc = kc_graph_key_in(c, d, &k2, NULL);
    if (rc) return rc;
    if (memcmp(&k2, key, sizeof k2) != 0) {
        kc_log(KC_LOG_GRAPH, "%s: the toolkit's tree changed since its direct manifest: looking up again", d->name);
        return 1;
    }
    *vouched = 0;
    return 0;
}

/* A lookup made again: its time counts from the first one's start (the walk included). */
static void relookup_time(kc_graph_info *info, uint64_t *t0, uint64_t *t_first) {
    if (*t_first) {
        *t0 = *t_first;
        info->key_us = us_since(*t0);
    } else {
        *t_first = *t0;
    }
}

/*
 * [Note: kernel-less graphs] A graph of zero steps only (zeroing gradients between training steps)
 * has no kernel: nothing to compile, store or fetch, so no entry is ever written for it and no
 * tier is asked — a compile checks its launches against the known devices and succeeds (source
 * KC_FROM_BYPASS, reason "no kernels"; counted as the bypass its caller is told), a get builds the loaded graph from the
 * description's own launch program, encoded and decoded as an entry's would be (the same strict
 * reader), and keeps it in the loaded table under its key like any other (a later get of it is a
 * memory hit, counted as one).
 */
static void kernelless_info(kc_cache *c, const kc_key *key, kc_graph_info *info, const char *target, uint64_t t0) {
    kc_graph_count_hit_(c, key, KC_FROM_BYPASS, t0); /* one outcome per lookup: the one the caller is told */
    info->source = KC_FROM_BYPASS;
    snprintf(info->variant, sizeof info->variant, "%s", target);
    snprintf(info->miss_reason, sizeof info->miss_reason, "no kernels: nothing to compile or store");
}

static int graph_compile(kc_cache *c, const kc_graph_desc *d, const char *target, kc_graph_info *info_out) {
    kc_graph_info local;
    kc_graph_info *info = info_out ? info_out : &local;
    memset(info, 0, sizeof *info);
    if (!c || !d || !target) return kc_err(KC_EINVAL, "kc_graph_compile: NULL argument");
    kc_target t;
    int rc = kc_target_known_(target, "kc_graph_compile", &t); /* [Note: target check] */
    if (rc) return rc;
    uint64_t t0, t_first = 0;
    kc_key key;
    kc_key_builder *kb;
    int vouched;
again:
    if ((rc = lookup_begin(c, d, target, info, &key, &kb, &t0, &vouched))) return rc;
    relookup_time(info, &t0, &t_first);
    if (d->nkernels == 0) { /* [Note: kernel-less graphs] */
        kc_key_builder_free(kb);
        if ((rc = kc_device_check_desc(d, &t))) return rc;
        kernelless_info(c, &key, info, target, t0);
        info->total_us = us_since(t0);
        return KC_OK;
    }
    uint64_t t1 = kc_mono_ns();
    kc_entry *e = NULL;
    int cacheable = kc_graph_uncacheable_(d) == NULL;
    char why[160] = "";
    int lrc = cacheable ? local_graph(c, &key, target, 0, &e, why, sizeof why) : KC_MISS;
    if (lrc == KC_MISS && (rc = confirm_vouched(c, d, &key, &vouched)) != 0) lrc = rc;
    if (lrc == 1) { /* the key moved */
        kc_key_builder_free(kb);
        memset(info, 0, sizeof *info);
        goto again;
    }
    int rrc = lrc == KC_MISS && cacheable ? remote_graph(c, &key, &target, 1, NULL, &e, why, sizeof why) : KC_MISS;
    if (rrc != KC_OK && rrc != KC_MISS) { /* strict: a remote entry refused */
        lrc = rrc;
        snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
    }
    if (lrc != KC_OK && lrc != KC_MISS) { /* strict: an anomaly is the lookup's error; the walk's */
        kc_key_builder_free(kb);
        return lrc;
    }
    if (lrc == KC_OK) { /* one read each, images checked, not kept */
        info->lookup_us = us_since(t1);
        info->source = KC_FROM_DISK;
        size_t vn = strnlen(target, sizeof info->variant - 1); /* a copy: snprintf costs a hit more */
        memcpy(info->variant, target, vn);
        info->variant[vn] = '\0';
        kc_graph_count_hit_(c, &key, KC_FROM_DISK, t0);
        kc_graph_hit_saved_(c, &key, info, kc_graph_entry_wall_us_(e));
        if (!(vouched & KC_VOUCHED_TOOLKIT)) kc_graph_direct_from_entry_(c, d, target, e);
        kc_entry_free(e);
    } else if (rrc == KC_OK) {
        info->lookup_us = us_since(t1);
        info->source = KC_FROM_REMOTE;
        snprintf(info->variant, sizeof info->variant, "%s", target);
        kc_graph_count_hit_(c, &key, KC_FROM_REMOTE, t0);
        kc_graph_hit_saved_(c, &key, info, kc_graph_entry_wall_us_(e));
        kc_graph_direct_from_entry_(c, d, target, e); /* confirmed above: walked */
        kc_entry_free(e);
    } else {
        if (cacheable) {
            if (why[0]) snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
            else snprintf(info->miss_reason, sizeof info->miss_reason, "no entry for %s", target);
        }
        info->lookup_us = us_since(t1);
        rc = cacheable ? single_flight(c, d, &key, kb, &t, SF_TAKE | (why[0] ? 0 : SF_LEASE), info, NULL)
                       : kc_graph_build_(c, d, &key, kb, &t, 1, info, NULL);
        kc_graph_count_after_build_(c, &key, info, rc, cacheable, t0);
    }
    info->total_us = us_since(t0);
    kc_key_builder_free(kb);
    return rc ? rc : strict_remote(c);
}

/* One kc_graph_get: the device, its ordered candidates ([Note: variant selection]), the key and
 * what the lookup has learnt so far. */
typedef struct get_state {
    kc_cache *c;
    const kc_graph_desc *d;
    int device, major, minor;
    kc_graph_info *info;
    kc_key key;
    kc_key_builder *kb;
    int vouched;
    uint64_t t0, t1;
    kc_target dev;                           /* the device's own plain target: what a miss compiles */
    char target[16];                         /* its name, formed once */
    char cand[KC_TARGET_CANDIDATES_MAX][16]; /* the candidates, most preferred first */
    size_t nc;                               /* 0: not cacheable */
    int own_unusable;                        /* the device's own variant was stored but could not be used */
    char why[160];
    kc_graph *g;
} get_state;

/*
 * Load a stored entry.  An image this driver refuses (KC_EREFUSED: too new a toolkit, an
 * invalid image, no kernel image for the device) or an entry whose launch programs do not fit
 * its kernels (KC_ECORRUPT) is a counted miss: KC_MISS, with the reason in info.  Anything
 * else (no memory, a broken context) is the caller's error.
 */
static int try_load(get_state *s, const kc_entry *e, const char *variant, const char *where) {
    kc_graph_info *info = s->info;
    uint64_t t2 = kc_mono_ns();
    int rc = kc_graph_load(e, &s->key, s->device, &s->g);
    info->load_us = us_since(t2);
    if (rc != KC_EREFUSED && rc != KC_ECORRUPT) return rc;
    kc_cache_count(s->c, &s->key, KC_STAT_LOAD_REFUSED, 1);
    snprintf(info->miss_reason, sizeof info->miss_reason, "%s%s not usable: %.180s", where, variant,
             kc_error_last()->message);
    if (rc == KC_ECORRUPT && kc_cache_strict_(s->c)) /* its launch programs do not fit its kernels: a corrupt entry */
        return kc_err_prefix(rc, "strict (KCACHE_STRICT): %sentry for %s refused", where, variant);
    kc_log(KC_LOG_LOAD, "%s: %s%s not usable: %s", s->d->name, where, variant, kc_error_last()->message);
    return KC_MISS;
}

/* A load of stored variant `variant` from `source`: KC_OK (a hit, counted), KC_MISS (refused:
 * the next candidate), or an error. */
static int take_loaded(get_state *s, const kc_entry *e, const char *variant, kc_graph_source source) {
    int remote = source == KC_FROM_REMOTE;
    s->info->lookup_us = us_since(s->t1);
    int rc = try_load(s, e, variant, remote ? "remote " : "");
    if (rc == KC_OK && (remote || !(s->vouched & KC_VOUCHED_TOOLKIT)))
        kc_graph_direct_from_entry_(s->c, s->d, variant, e); /* remote: walked */
    if (rc == KC_MISS) s->own_unusable |= strcmp(variant, s->target) == 0;
    if (rc) return rc;
    s->info->source = source;
    snprintf(s->info->variant, sizeof s->info->variant, "%s", variant);
    kc_graph_count_hit_(s->c, &s->key, source, s->t0);
    kc_graph_hit_saved_(s->c, &s->key, s->info, s->g->compile_us);
    return KC_OK;
}

/* The local directory, candidate by candidate: KC_OK (a hit, or nothing usable), 1 (the key moved), or an error. */
static int get_local(get_state *s) {
    int rc = KC_OK;
    for (size_t i = 0; i < s->nc && !s->g; i++) {
        kc_entry *e;
        if ((rc = local_graph(s->c, &s->key, s->cand[i], 1, &e, s->why, sizeof s->why)) !=
            KC_OK) { /* absent, corrupt, an image missing */
            if (rc != KC_MISS) return rc;
            rc = KC_OK;
            continue;
        }
        /* Found, of another variant than the one whose manifest vouched (sm_90a before sm_90 on a
         * 9.0 device, sm_80 on an 8.6): the walk first. */
        if (strcmp(s->cand[i], s->target) != 0 && (rc = confirm_vouched(s->c, s->d, &s->key, &s->vouched)) != 0) {
            kc_entry_free(e);
            return rc;
        }
        rc = take_loaded(s, e, s->cand[i], KC_FROM_DISK);
        kc_entry_free(e);
        if (rc == KC_MISS) rc = KC_OK;
        if (rc) return rc;
    }
    return rc;
}

/* The remote tier: the first present candidate, in one round trip. */
static int get_remote(get_state *s) {
    const char *cp[KC_TARGET_CANDIDATES_MAX];
    for (size_t i = 0; i < s->nc; i++) cp[i] = s->cand[i];
    size_t w;
    kc_entry *e;
    int rrc = remote_graph(s->c, &s->key, cp, s->nc, &w, &e, s->why, sizeof s->why);
    if (rrc != KC_OK && rrc != KC_MISS) { /* strict: a remote entry refused */
        snprintf(s->info->miss_reason, sizeof s->info->miss_reason, "%s", s->why);
        return rrc;
    }
    if (rrc != KC_OK) return KC_OK;
    int rc = take_loaded(s, e, s->cand[w], KC_FROM_REMOTE);
    kc_entry_free(e);
    return rc == KC_MISS ? KC_OK : rc;
}

/* Nothing stored was usable: compile the device's own target (under the lock when cacheable), and load it. */
static int get_compiled(get_state *s) {
    kc_graph_info *info = s->info;
    const kc_graph_desc *d = s->d;
    /* One outcome per lookup: whatever was found and not usable (refused, an image missing)
     * counted its own detail (load_refused, images_missing); the lookup is a miss. */
    if (!info->miss_reason[0])
        snprintf(info->miss_reason, sizeof info->miss_reason, "%s",
                 !s->nc      ? "not cacheable"
                 : s->why[0] ? s->why
                             : "no usable variant stored");
    info->lookup_us = us_since(s->t1);
    kc_entry *e = NULL;
    /* A stored image of this very variant that the driver refused is not taken again as
     * "stored meanwhile": this lookup compiles it afresh and stores it over the old one. */
    int mode = s->own_unusable ? 0 : SF_TAKE | (s->why[0] ? 0 : SF_LEASE);
    int rc = s->nc ? single_flight(s->c, d, &s->key, s->kb, &s->dev, mode, info, &e)
                   : kc_graph_build_(s->c, d, &s->key, s->kb, &s->dev, 1, info, &e);
    if (!rc) {
        uint64_t t2 = kc_mono_ns();
        rc = kc_graph_load(e, &s->key, s->device, &s->g);
        info->load_us = us_since(t2);
        if (rc)
            rc = kc_err_prefix(rc, "graph '%s': the %s image compiled for device %d (%d.%d) could not be loaded",
                               d->name, s->target, s->device, s->major, s->minor);
    }
    kc_entry_free(e);
    kc_graph_count_after_build_(s->c, &s->key, info, rc, s->nc != 0, s->t0);
    return rc;
}

/* A graph already loaded in this process for the device: a memory hit (1), else 0. */
static int get_memory(get_state *s, kc_graph **out) {
    *out = kc_loaded_find(&s->key, s->device);
    if (!*out) return 0;
    s->info->source = KC_FROM_MEMORY;
    snprintf(s->info->variant, sizeof s->info->variant, "%s", (*out)->variant);
    kc_graph_count_hit_(s->c, &s->key, KC_FROM_MEMORY, s->t0); /* no time saved: [Note: time saved] */
    s->info->lookup_us = us_since(s->t1);
    s->info->total_us = us_since(s->t0);
    return 1;
}

/* [Note: kernel-less graphs]: built here, kept in the loaded table. */
static int get_kernelless(get_state *s, kc_graph **out) {
    kc_graph *g = NULL;
    int rc = kc_graph_load_kernelless(s->d, &s->key, s->target, s->device, &g);
    if (rc) return kc_err_prefix(rc, "graph '%s'", s->d->name);
    kernelless_info(s->c, &s->key, s->info, s->target, s->t0);
    *out = kc_loaded_publish(g, 1);
    s->info->total_us = us_since(s->t0);
    return KC_OK;
}

/* After the memory: the local directory, the remote, else a compile.  1 when the key moved. */
static int get_stored_or_compiled(get_state *s) {
    s->nc = kc_graph_uncacheable_(s->d) ? 0
                                        : kc_target_candidates(s->major, s->minor, s->cand, KC_TARGET_CANDIDATES_MAX);
    s->own_unusable = 0;
    s->why[0] = '\0';
    int rc = get_local(s);
    if (!s->g && !rc) rc = confirm_vouched(s->c, s->d, &s->key, &s->vouched); /* before the remote, or the miss */
    if (rc == 1) return 1;                                                    /* the key moved */
    if (!s->g && !rc && s->nc) rc = get_remote(s);
    if (!s->g && !rc) rc = get_compiled(s);
    return rc;
}

static int graph_get(kc_cache *c, const kc_graph_desc *d, int device, kc_graph **out, kc_graph_info *info_out) {
    if (out) *out = NULL; /* on every failure too */
    kc_graph_info local;
    kc_graph_info *info = info_out ? info_out : &local;
    memset(info, 0, sizeof *info);
    if (!c || !d || !out) return kc_err(KC_EINVAL, "kc_graph_get: NULL argument");
    *out = NULL;
    get_state s;
    memset(&s, 0, sizeof s);
    s.c = c, s.d = d, s.device = device, s.info = info;
    int rc = kc_cuda_capability(device, &s.major, &s.minor);
    if (rc) return rc;
    uint64_t t_first = 0;
    kc_target_for_device(s.major, s.minor, &s.dev);
    kc_target_name(&s.dev, s.target); /* the variant a direct manifest may vouch for */
again:
    if ((rc = lookup_begin(c, d, s.target, info, &s.key, &s.kb, &s.t0, &s.vouched))) return rc;
    relookup_time(info, &s.t0, &t_first);
    s.t1 = kc_mono_ns();
    s.g = NULL;
    if (get_memory(&s, out)) {
        kc_key_builder_free(s.kb);
        return KC_OK;
    }
    if (d->nkernels == 0) {
        kc_key_builder_free(s.kb);
        return get_kernelless(&s, out);
    }
    rc = get_stored_or_compiled(&s);
    if (rc == 1) {
        kc_key_builder_free(s.kb);
        memset(info, 0, sizeof *info);
        goto again;
    }
    kc_key_builder_free(s.kb);
    kc_graph *g = s.g;
    if (!rc && (rc = strict_remote(c)) != KC_OK) kc_graph_release(g), g = NULL; /* not published yet: freed */
    if (rc) return rc;
    *out = kc_loaded_publish(g, info->source != KC_FROM_BYPASS);
    info->total_us = us_since(s.t0);
    return KC_OK;
}

/* kc_graph_compile and kc_graph_get once the caller's info is checked (graph/info.c): `info_out` is kcache's
 * own, of this version.  A failure's status is the one its record holds ([Note: cleanup keeps the error]). */
int kc_graph_compile_(kc_cache *c, const kc_graph_desc *d, const char *target, kc_graph_info *info_out) {
    return kc_err_returning(graph_compile(c, d, target, info_out), "kc_graph_compile");
}

int kc_graph_get_(kc_cache *c, const kc_graph_desc *d, int device, kc_graph **out, kc_graph_info *info_out) {
    return kc_err_returning(graph_get(c, d, device, out, info_out), "kc_graph_get");
}
