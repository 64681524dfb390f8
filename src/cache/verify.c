/*
 * verify.c — kc_cache_verify: read and validate every object of the local directory.
 *
 * The one idea: a maintenance read of each object (its LRU time left alone), decoded as the
 * object its name promises; a corrupt one is quarantined.  Callers: `kcache verify` and tests,
 * through kcache/cache.h.  Must not: count lookups, or change anything but the quarantine.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../store/name.h"
#include "internal.h"

typedef struct verify_ctx {
    kc_cache *c;
    kc_verify_report r;
} verify_ctx;

static int verify_item(const kc_cache_item *it, void *ctx) {
    verify_ctx *v = ctx;
    v->r.checked++;
    /* Read and validate here (not kc_cache_get) to tell a corrupt entry from a vanished one;
     * a maintenance read, so the entry's LRU time is left alone. */
    char name[KC_NAME_MAX + 1];
    kc_store_name(&it->key, it->variant, name);
    void *data;
    size_t len;
    int rc = kc_cache_peek_raw_(v->c, name, &data, &len);
    if (rc == KC_MISS) return 0; /* removed since the listing */
    if (rc == KC_OK) {
        kc_entry *e;
        rc = kc_entry_decode_as(&e, data, len, &it->key, it->variant);
        free(data);
        kc_entry_free(e);
    }
    if (rc == KC_OK) {
        v->r.ok++;
    } else if (rc == KC_ECORRUPT) {
        v->r.corrupt++;
        kc_log(KC_LOG_STORE, "verify %s: %s", name, kc_error_last()->message);
        if (kc_cache_quarantine_(v->c, name) == KC_OK) v->r.quarantined++;
    }
    return 0;
}

int kc_cache_verify(kc_cache *c, kc_verify_report *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_verify: NULL argument");
    verify_ctx v = {c, {0, 0, 0, 0}};
    int rc = kc_cache_foreach(c, verify_item, &v);
    *out = v.r;
    return rc;
}
