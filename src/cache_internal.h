/* cache_internal.h — what parts above the store need of a kc_cache (not for callers). */
#ifndef KC_CACHE_INTERNAL_H
#define KC_CACHE_INTERNAL_H

#include "kcache/cache.h"
#include "store/local.h"

/** The cache's local store; NULL when the cache is disabled. */
kc_local *kc_cache_local_(kc_cache *c);

#endif
