/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guard/profile_remote.c — a site's profile in the remote tier: the entry it travels as, and
 * reading and publishing it ([Note: profiles in the remote]).
 *
 * The one idea: a profile is no entry of the directory, but in a remote it travels as one — of
 * variant "profile", under a key made of the site's name (a name no graph, image or unit record
 * can have), holding the profile's bytes, sealed and checked as the cache's trust says (MAC key,
 * signer, keyring).  One call each, to the remote the cache names (kc_cache_profile_remote_),
 * bounded by its deadline (its breaker open: at once); a failure is counted like any remote
 * failure, never an error of the caller's.
 *
 * Callers: site.c (a new site reads, a save publishes).  Must not: reach the tiers or the
 * cache's fields (only cache/internal.h's accessors), or take a remote's bytes in any but the
 * one written form of this site's own profile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "kcache/entry.h"
#include "kcache/sys/store.h"
#include "../cache/internal.h"
#include "../common/internal.h"
#include "../entry/trust.h"
#include "internal.h"

#define PROFILE_VARIANT "profile"
#define PROFILE_ENTRY_MAX 16384 /* an entry holding at most a profile's cap, with room for its header and META */

/* The key of site `site`'s profile: a hash of a domain no other key is made of. */
static void profile_key(const char *site, kc_key *out) {
    char buf[256];
    int n = snprintf(buf, sizeof buf, "kcache site profile%c%s", 0, site);
    XXH128_hash_t h = XXH3_128bits(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    XXH128_canonical_t cn;
    XXH128_canonicalFromHash(&cn, h);
    memcpy(out->bytes, cn.digest, 16);
}

/* A profile call to the remote failed with `rc`: counted as the tiers count theirs, logged. */
static void profile_failure(kc_cache *c, const kc_key *key, int rc, int writing) {
    kc_stat id = rc == KC_ETIMEOUT       ? KC_STAT_REMOTE_TIMEOUTS
                 : rc == KC_EUNAVAILABLE ? (writing ? KC_STAT_REMOTE_DROPPED : KC_STAT_REMOTE_SKIPPED)
                                         : KC_STAT_REMOTE_ERRORS;
    if (rc != KC_EUNAVAILABLE) kc_log(KC_LOG_REMOTE, "profile: %s", kc_error_last()->message);
    kc_cache_count(c, key, id, 1);
}

int kc_site_profile_remote_ok_(kc_cache *c, int writable) { return kc_cache_profile_remote_(c, writable) != NULL; }

static int remote_get(kc_cache *c, const char *site, size_t cap, void **out, size_t *len) {
    *out = NULL, *len = 0;
    kc_store_backend *remote = kc_cache_profile_remote_(c, 0);
    if (!remote || !site) return KC_MISS;
    kc_key key;
    profile_key(site, &key);
    char name[KC_NAME_MAX + 1];
    kc_store_name(&key, PROFILE_VARIANT, name);
    void *data = NULL;
    size_t dlen = 0;
    int rc = remote->get(remote, name, &data, &dlen);
    if (rc == KC_MISS) return KC_MISS;
    if (rc) {
        profile_failure(c, &key, rc, 0);
        return kc_err(KC_MISS, "profile of %s: the remote failed", site);
    }
    kc_entry *e = NULL;
    const void *p;
    size_t plen = 0;
    if (dlen > PROFILE_ENTRY_MAX) rc = kc_err(KC_ECORRUPT, "%zu bytes, over the %d-byte cap", dlen, PROFILE_ENTRY_MAX);
    else if ((rc = kc_trust_check(kc_cache_trust_(c), data, dlen)) != KC_OK)
        kc_cache_count(c, &key, KC_STAT_MAC_REJECTED, 1);
    else if ((rc = kc_entry_decode_as(&e, data, dlen, &key, PROFILE_VARIANT)) == KC_OK &&
             (rc = kc_entry_section(e, KC_SECTION_RUNTIME_META, &p, &plen)) == KC_OK && plen > cap)
        rc = kc_err(KC_ECORRUPT, "%zu bytes, over the %zu-byte cap", plen, cap);
    if (rc == KC_OK && !(*out = kc_malloc(plen ? plen : 1))) rc = kc_err(KC_ENOMEM, "out of memory");
    if (rc == KC_OK) memcpy(*out, p, plen), *len = plen;
    else if (rc != KC_EUNTRUSTED) kc_cache_count(c, &key, KC_STAT_CORRUPT, 1);
    if (rc) kc_log(KC_LOG_REMOTE, "remote profile %s (%s) rejected: %s", name, site, kc_error_last()->message);
    kc_entry_free(e);
    free(data);
    return rc ? kc_err(KC_MISS, "profile of %s: the remote's is refused", site) : KC_OK;
}

static int remote_put(kc_cache *c, const char *site, const void *data, size_t len) {
    kc_store_backend *remote = kc_cache_profile_remote_(c, 1);
    if (!remote || !site) return kc_err(KC_EREADONLY, "no writable remote for profiles");
    kc_key key;
    profile_key(site, &key);
    char name[KC_NAME_MAX + 1];
    kc_store_name(&key, PROFILE_VARIANT, name);
    kc_entry *e = NULL;
    void *bytes = NULL;
    size_t blen = 0;
    int rc = kc_entry_new(&e, &key, PROFILE_VARIANT);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_RUNTIME_META, data, len);
    if (!rc) rc = kc_entry_encode(e, &bytes, &blen);
    if (!rc) rc = kc_trust_vouch(kc_cache_trust_(c), &bytes, &blen);
    kc_entry_free(e);
    if (!rc) {
        rc = remote->put(remote, name, bytes, blen);
        if (rc == KC_OK) kc_cache_count(c, &key, KC_STAT_REMOTE_PUTS, 1);
        else profile_failure(c, &key, rc, 1);
    }
    free(bytes);
    return rc;
}

/*
 * [Note: profiles in the remote] With a remote tier, a profile travels there too: a site's save
 * publishes the union of its profile and the remote's (one read, one write, through
 * remote_get/remote_put below: an entry of variant "profile" under a key made of the site's name,
 * which no graph, image or unit record can have), and a new site merges the remote's in (one
 * read).  What a remote gives is untrusted: authenticated like any remote entry, capped at
 * KC_SITE_PROFILE_MAX, parsed strictly ([Note: profile format]) and for this site's name only.
 * Each call is bounded by the remote's deadline; a remote that is down answers at once once its
 * breaker is open, and a failure is counted and logged, never an error of the site.  Two saves
 * racing on the remote can still lose one's dimension there (read-merge-write without a lock);
 * the local profiles keep it, and the next save of either puts it back.
 */
void kc_site_profile_from_remote_(kc_cache *c, const char *name, uint32_t *masks) {
    void *data;
    size_t len;
    if (remote_get(c, name, KC_SITE_PROFILE_MAX, &data, &len) != KC_OK) {
        kc_error_clear();
        return;
    }
    char site[KC_SITE_NAME_MAX + 1];
    uint32_t m[KC_SITE_MAX_INPUTS] = {0};
    if (kc_site_profile_parse_(data, len, site, m) != KC_OK || strcmp(site, name) != 0) {
        kc_log(KC_LOG_REMOTE, "site %s: the remote's profile is refused: %s", name,
               strcmp(site, name) ? "another site's" : kc_error_last()->message);
        kc_error_clear();
    } else {
        for (int i = 0; i < KC_SITE_MAX_INPUTS; i++) masks[i] |= m[i];
    }
    free(data);
}

/* Publish the union of masks and the remote's profile (which masks learns too). */
void kc_site_profile_to_remote_(kc_cache *c, const char *name, uint32_t *masks) {
    uint32_t had[KC_SITE_MAX_INPUTS] = {0};
    kc_site_profile_from_remote_(c, name, had);
    int more = 0;
    for (int i = 0; i < KC_SITE_MAX_INPUTS; i++) more |= (masks[i] | had[i]) != had[i], masks[i] |= had[i];
    if (!more) return; /* the remote has it all */
    char buf[KC_SITE_PROFILE_MAX + 1];
    size_t n = kc_site_profile_format_(name, masks, buf, sizeof buf);
    if (remote_put(c, name, buf, n) != KC_OK) {
        kc_log(KC_LOG_REMOTE, "site %s: profile not published: %s", name, kc_error_last()->message);
        kc_error_clear();
    }
}
