/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guard/site_impl.h — what the site cache's files share: site.c (guards, limits, owners,
 * lookups) and site_profile.c (a site's own profile).  Only they include it.
 *
 * The one idea: one struct kc_site, whose lock (mu) guards its entries, flights, statistics and
 * profile masks; the profile's file is touched outside that lock.
 */
#ifndef KC_GUARD_SITE_IMPL_H
#define KC_GUARD_SITE_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "kcache/guard.h"
#include "internal.h" /* the profile: its format and file, its remote */

typedef struct gentry {
    kc_tensor_meta in[KC_SITE_MAX_INPUTS];
    size_t nin;
    uint32_t dynamic[KC_SITE_MAX_INPUTS];
    uintptr_t *owners;
    uint64_t *gens; /* per owner, its generation (0: none given) */
    size_t nowners;
    uint64_t globals;
    char backend[32];
    void *value;
    void (*release)(void *);
    int refs;     /* the site's list (or a flight's) 1, each hold 1 more; atomic */
    pthread_t by; /* a flight: the thread that missed */
    struct gentry *next;
} gentry;

struct kc_site {
    pthread_mutex_t mu;
    char name[128];
    char profile_path[PATH_MAX];
    int persist;
    kc_cache *remote; /* the cache, when it has a writable remote: profiles are published there */
    kc_site_options o;
    pthread_cond_t flown; /* broadcast when a flight ends */
    gentry *entries;
    size_t nentries;
    gentry *flights; /* compiles in flight: prototypes of the entries the misses proposed */
    size_t nflights;
    kc_site_info info;
    uint32_t profile[KC_SITE_MAX_INPUTS];
    int64_t lo[KC_SITE_MAX_INPUTS][KC_MAX_RANK], hi[KC_SITE_MAX_INPUTS][KC_MAX_RANK]; /* declared bounds */
    kc_site_stats st;
    struct kc_site *next;
};

/** Find (by the name as given: s->name may be cut short), load (and, with a remote, merge) the profile of new site s ([Note: profiles in the remote]).
 *  Callers: site.c (kc_site_new). */
void kc_site_profile_open_(kc_site *s, kc_cache *cache, const char *name);

#endif
