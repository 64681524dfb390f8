/* SPDX-License-Identifier: Apache-2.0 */
/*
 * purge.c — kc_cache_purge (kcache/cache.h): remove the objects a purge selects from the local
 * directory and every writable remote (`kcache purge`, docs/incident.md).
 *
 * The one idea: each tier is walked through its own backend's iterate (the local directory's files,
 * a remote's listing: redis SCAN), the names chosen are collected, then removed — never while the walk
 * is under way, so a backend's walk never sees its own removals.  A selector on a name (key prefix)
 * costs nothing; one on an object's contents (toolchain, age, producer, unit) reads it without
 * marking it used (peek) and decodes it with the entry decoder, which bounds and checks every byte:
 * a remote's bytes are hostile, and one that fails is counted corrupt (removed only with `corrupt`).
 * A unit selector is two walks: the unit records name their images (the first walk, over every
 * tier), and then those images and the graph entries that refer to them are chosen too.
 *
 * Callers: the public API (kcache purge).  Must not: write to a read-only remote, remove anything on a
 * dry run, or trust what it reads (selection by a signer's key id reads the claim, unchecked: purging
 * too much costs a compile, never a wrong kernel).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "../entry/trust.h"
#include "../store/name.h"
#include "../store/tiers.h"
#include "internal.h"
#include "kcache/cache.h"
#include "kcache/sign.h"

#define UNIT_IMAGES_MAX 4096 /* images the unit records chosen may name, over every tier */

typedef struct names {
    char (*v)[KC_NAME_MAX + 1];
    uint64_t *bytes;
    int *corrupt;
    size_t n, cap;
} names;

typedef struct purge {
    const kc_purge_options *o;
    kc_cache *c;
    kc_store_backend *b;
    kc_purge_tier *t;
    char mac_id[KC_TRUST_WHO_MAX]; /* "mac:<16 hex>" of this cache's MAC key; "" without one */
    int64_t before_ns;             /* older_than: created before this (ns since the epoch) */
    kc_key unit_img[UNIT_IMAGES_MAX];
    size_t n_unit_img;
    int collecting_units; /* the first walk of a unit purge */
    names chosen;
} purge;

static int names_add(names *l, const char *name, uint64_t bytes, int corrupt) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        void *v = realloc(l->v, cap * sizeof *l->v), *b = v ? realloc(l->bytes, cap * sizeof *l->bytes) : NULL;
        if (v) l->v = v;
        if (b) l->bytes = b;
        void *c = b ? realloc(l->corrupt, cap * sizeof *l->corrupt) : NULL;
        if (!c) return kc_err(KC_ENOMEM, "out of memory");
        l->corrupt = c, l->cap = cap;
    }
    snprintf(l->v[l->n], sizeof l->v[l->n], "%s", name);
    l->bytes[l->n] = bytes, l->corrupt[l->n] = corrupt;
    l->n++;
    return KC_OK;
}

static void names_free(names *l) {
    free(l->v), free(l->bytes), free(l->corrupt);
    memset(l, 0, sizeof *l);
}

/* A hex prefix of 8..32 digits (either case); 1 or 0. */
static int hex_prefix_ok(const char *p) {
    size_t n = strlen(p);
    if (n < KC_PURGE_PREFIX_MIN || n > KC_KEY_HEX_LEN) return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdefABCDEF", p[i])) return 0;
    return 1;
}

static int prefix_of(const char *name, const char *p) { return strncasecmp(name, p, strlen(p)) == 0; }

/* The options checked; KC_OK or KC_EINVAL naming what is wrong. */
static int check_options(purge *p) {
    const kc_purge_options *o = p->o;
    if (!o->key && !o->unit && !o->toolchain && !o->producer && !o->older_than_s && !o->corrupt)
        return kc_err(KC_EINVAL, "purge: no selector (give --key, --unit, --toolchain, --producer, --older-than or "
                                 "--corrupt; 'kcache clear' empties the local cache)");
    if (o->key && !hex_prefix_ok(o->key))
        return kc_err(KC_EINVAL, "purge: key '%.40s' is not %d to %d hex digits", o->key, KC_PURGE_PREFIX_MIN,
                      KC_KEY_HEX_LEN);
    if (o->unit && !hex_prefix_ok(o->unit))
        return kc_err(KC_EINVAL, "purge: unit '%.40s' is not %d to %d hex digits", o->unit, KC_PURGE_PREFIX_MIN,
                      KC_KEY_HEX_LEN);
    if (o->toolchain && !o->toolchain[0]) return kc_err(KC_EINVAL, "purge: empty toolchain id");
    if (o->where & ~(KC_PURGE_LOCAL | KC_PURGE_REMOTE)) return kc_err(KC_EINVAL, "purge: unknown `where` bits");
    if (!o->producer) return KC_OK;
    const char *id = o->producer;
    if (strncmp(id, "ed25519:", 8) == 0) id += 8;
    else if (strncmp(id, "mac:", 4) == 0) {
        const kc_trust *t = kc_cache_trust_(p->c);
        if (!t || !t->mac_key)
            return kc_err(KC_EINVAL,
                          "purge: producer %.40s: this cache has no MAC key, so it cannot tell which "
                          "entries that key sealed (set KCACHE_HMAC_KEY_FILE to it)",
                          o->producer);
        kc_trust_verifier(&(kc_trust){t->mac_key, t->mac_key_len, NULL, NULL}, "", 0, p->mac_id);
        if (strcasecmp(p->mac_id, o->producer) != 0)
            return kc_err(KC_EINVAL,
                          "purge: producer %.40s is not this cache's MAC key (%s): entries sealed by "
                          "another MAC key cannot be told apart; run it where that key is set",
                          o->producer, p->mac_id);
        return KC_OK;
    }
    if (strlen(id) != 2 * KC_SIGN_KEY_ID_LEN || !hex_prefix_ok(id))
        return kc_err(KC_EINVAL, "purge: producer '%.40s' is not ed25519:<16 hex>, <16 hex> or mac:<16 hex>",
                      o->producer);
    return KC_OK;
}

/* Whether the bytes were vouched for by the producer asked; 1 or 0. */
static int producer_match(const purge *p, const void *data, size_t len) {
    const char *want = p->o->producer;
    if (p->mac_id[0]) {
        const kc_trust *t = kc_cache_trust_(p->c);
        return kc_entry_mac_check(data, len, t->mac_key, t->mac_key_len) == KC_OK;
    }
    if (strncmp(want, "ed25519:", 8) == 0) want += 8;
    char id[2 * KC_SIGN_KEY_ID_LEN + 1];
    return kc_entry_signer(data, len, id) == KC_OK && strcasecmp(id, want) == 0;
}

static int unit_image_known(const purge *p, const kc_key *id) {
    for (size_t i = 0; i < p->n_unit_img; i++)
        if (memcmp(&p->unit_img[i], id, sizeof *id) == 0) return 1;
    return 0;
}

/* The unit selector on a decoded object (the second walk): its unit record, an image it names, or a graph entry
 * that refers to one.  1 or 0. */
static int unit_match(const purge *p, const char *name, const char *variant, const kc_key *key, const kc_entry *e) {
    if (strcmp(variant, KC_VARIANT_UNIT) == 0) return prefix_of(name, p->o->unit);
    if (strcmp(variant, KC_VARIANT_IMAGE) == 0) return unit_image_known(p, key);
    kc_image_ref *refs = NULL;
    size_t n = 0;
    int hit = 0;
    if (kc_entry_images(e, &refs, &n) == KC_OK)
        for (size_t i = 0; i < n && !hit; i++) hit = unit_image_known(p, &refs[i].id);
    free(refs);
    return hit;
}

/* The first walk of a unit purge: note the image a matching unit record names. */
static void unit_collect(purge *p, const kc_entry *e) {
    kc_image_ref ref;
    if (kc_unit_entry_read(e, &ref, NULL, 0, NULL) != KC_OK) return;
    if (!unit_image_known(p, &ref.id) && p->n_unit_img < UNIT_IMAGES_MAX) p->unit_img[p->n_unit_img++] = ref.id;
}

/* Whether an object's recorded toolchain ("nvrtc build-id:<hex> (<file>)", as `show` prints it) is `id`: the
 * whole text, or its build-id word ("build-id:<hex>", as `kcache toolchain` prints it, or the hex alone) —
 * never another word ("nvrtc" names every toolchain); 1 or 0. */
static int toolchain_match(const char *rec, const char *id) {
    if (strcmp(rec, id) == 0) return 1;
    const char *w = strstr(rec, "build-id:");
    if (!w || (w != rec && w[-1] != ' ') || !id[0]) return 0;
    size_t n = strcspn(w, " "), h = n - 9; /* the word, and its hex after "build-id:" */
    return (strlen(id) == n && strncmp(w, id, n) == 0) || (strlen(id) == h && h && strncmp(w + 9, id, h) == 0);
}

/* The selectors that read an object's bytes; 1 chosen, 0 not, -1 corrupt (it failed validation). */
static int content_match(purge *p, const char *name, const char *variant, const kc_key *key) {
    const kc_purge_options *o = p->o;
    void *data = NULL;
    size_t len = 0;
    int rc = p->b->peek ? p->b->peek(p->b, name, &data, &len) : p->b->get(p->b, name, &data, &len);
    if (rc == KC_MISS) return 0;      /* gone since the walk saw it */
    if (rc == KC_ECORRUPT) return -1; /* not an entry at all (a redis hash under its name) */
    if (rc != KC_OK) return -2;
    kc_entry *e = NULL;
    unsigned sections = (1u << KC_SECTION_META) | (1u << KC_SECTION_IMAGES) | (1u << KC_SECTION_UNIT);
    if (kc_entry_decode_some(&e, data, len, key, variant, sections) != KC_OK) {
        free(data);
        return -1;
    }
    int hit = 1;
    if (p->collecting_units) unit_collect(p, e), hit = 0;
    else {
        if (hit && o->producer) hit = producer_match(p, data, len);
        if (hit && o->toolchain) hit = toolchain_match(kc_entry_toolchain(e), o->toolchain);
        if (hit && o->older_than_s) {
            uint64_t at = kc_entry_created_at(e);
            hit = at > 0 && (int64_t)at < p->before_ns;
        }
        if (hit && o->unit) hit = unit_match(p, name, variant, key, e);
    }
    kc_entry_free(e);
    free(data);
    return hit;
}

static void tier_fail(kc_purge_tier *t, const char *why) {
    t->failed = 1;
    if (!t->error[0]) snprintf(t->error, sizeof t->error, "%s", why);
}

/* One object of the walk. */
static int visit(const kc_store_item *it, void *ctx) {
    purge *p = ctx;
    const kc_purge_options *o = p->o;
    if (kc_store_name_check(it->name) != KC_OK) return 0;
    char hex[KC_KEY_HEX_LEN + 1], variant[KC_VARIANT_MAX + 1];
    memcpy(hex, it->name, KC_KEY_HEX_LEN), hex[KC_KEY_HEX_LEN] = '\0';
    snprintf(variant, sizeof variant, "%s", it->name + KC_KEY_HEX_LEN + 1);
    kc_key key;
    if (kc_key_from_hex(&key, hex) != KC_OK) return 0;
    if (p->collecting_units) {
        if (strcmp(variant, KC_VARIANT_UNIT) == 0 && prefix_of(it->name, o->unit))
            (void)content_match(p, it->name, variant, &key);
        return 0;
    }
    p->t->examined++;
    if (o->key && !prefix_of(it->name, o->key)) return 0;
    int hit = 1;
    if (o->unit || o->toolchain || o->producer || o->older_than_s || o->corrupt) {
        hit = content_match(p, it->name, variant, &key);
        if (hit == -2) { /* unreadable now: whether it matches is unknown, so the tier failed (run it again) */
            tier_fail(p->t, kc_error_last()->message);
            return 0;
        }
        if (hit < 0) p->t->corrupt++;
        if (hit < 0) hit = o->corrupt ? -1 : 0;
        else if (hit && o->corrupt && !(o->unit || o->toolchain || o->producer || o->older_than_s))
            hit = 0; /* --corrupt alone: only what fails validation */
    }
    if (!hit) return 0;
    return names_add(&p->chosen, it->name, it->bytes, hit < 0);
}

/* Walk tier `i` (the unit walk, or the choosing walk and then the removals). */
static int walk_tier(purge *p, size_t i) {
    unsigned flags = 0;
    p->b = kc_tiers_backend(kc_cache_tiers_(p->c), i, &flags);
    if (!p->b) return KC_OK;
    if (!p->b->iterate)
        return kc_err(KC_EUNAVAILABLE, "%s: this back end cannot list what it holds (purge it with its own tools)",
                      p->t->url);
    names_free(&p->chosen);
    return p->b->iterate(p->b, visit, p);
}

/* Choose in tier `i`, then remove (not on a dry run). */
static void purge_tier(purge *p, size_t i) {
    kc_purge_tier *t = p->t;
    int rc = walk_tier(p, i);
    /* what was chosen before a failure is still removed: an error reply leaves the remote's breaker closed; a
     * remote the failure made unreachable refuses each removal, counted failed (run the purge again) */
    if (rc) tier_fail(t, kc_error_last()->message);
    for (size_t k = 0; k < p->chosen.n; k++) {
        int removed = 0;
        t->matched++, t->bytes += p->chosen.bytes[k];
        if (!p->o->dry_run) {
            int r = p->b->remove(p->b, p->chosen.v[k]);
            if (r == KC_OK || r == KC_MISS) removed = 1, t->removed++;
            else tier_fail(t, kc_error_last()->message);
        }
        if (p->o->on_object)
            p->o->on_object(i, p->chosen.v[k], p->chosen.bytes[k], p->chosen.corrupt[k], removed, p->o->ctx);
    }
    names_free(&p->chosen);
}

/* Whether tier `i` is asked, filling its report head. */
static int tier_asked(purge *p, size_t i, kc_purge_tier *t) {
    kc_tier_stats s = KC_TIER_STATS_INIT;
    if (kc_cache_tier_stats(p->c, i, &s) != KC_OK) return 0;
    snprintf(t->url, sizeof t->url, "%s", s.remote ? s.url : "local");
    t->remote = s.remote, t->readonly = s.remote && s.readonly;
    unsigned where = p->o->where ? p->o->where : KC_PURGE_LOCAL | KC_PURGE_REMOTE;
    t->skipped = t->readonly || !(where & (s.remote ? KC_PURGE_REMOTE : KC_PURGE_LOCAL));
    return !t->skipped;
}

int kc_cache_purge(kc_cache *c, const kc_purge_options *opts, kc_purge_report *out) {
    if (!c || !opts || !out) return kc_err(KC_EINVAL, "kc_cache_purge: NULL argument");
    int rc = kc_api_version("kc_cache_purge", "kc_purge_options", "KC_PURGE_OPTIONS_INIT", opts->version,
                            KC_PURGE_VERSION);
    if (!rc)
        rc = kc_api_version("kc_cache_purge", "kc_purge_report", "KC_PURGE_REPORT_INIT", out->version,
                            KC_PURGE_VERSION);
    if (rc) return rc;
    purge *p = kc_calloc(1, sizeof *p);
    if (!p) return kc_err(KC_ENOMEM, "out of memory");
    p->o = opts, p->c = c;
    rc = check_options(p);
    if (rc) {
        free(p);
        return rc;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* an age past the clock (the epoch, or more than int64 nanoseconds hold): nothing is older; no wrap */
    int64_t now_ns = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
    p->before_ns = opts->older_than_s >= (uint64_t)ts.tv_sec ? 0 : now_ns - (int64_t)opts->older_than_s * 1000000000ll;
    kc_purge_report r = KC_PURGE_REPORT_INIT;
    size_t n = kc_cache_tier_count(c);
    r.ntiers = n < KC_PURGE_TIERS_MAX ? n : KC_PURGE_TIERS_MAX;
    kc_purge_tier scratch = {0};
    if (opts->unit) { /* the first walk: the images the unit records name, from every tier (read-only ones too) */
        p->collecting_units = 1;
        for (size_t i = 0; i < r.ntiers; i++) {
            p->t = &scratch, snprintf(scratch.url, sizeof scratch.url, "tier %zu", i);
            if (walk_tier(p, i) != KC_OK) kc_log(KC_LOG_REMOTE, "purge: %s", kc_error_last()->message);
        }
        names_free(&p->chosen);
        p->collecting_units = 0;
    }
    for (size_t i = 0; i < r.ntiers; i++) {
        p->t = &r.tier[i];
        if (tier_asked(p, i, p->t)) purge_tier(p, i);
        r.matched += p->t->matched, r.removed += p->t->removed, r.bytes += p->t->bytes;
        r.corrupt += p->t->corrupt, r.failed += (size_t)p->t->failed;
    }
    free(p);
    kc_api_copy_out(out, &r, sizeof r, out->version);
    if (!r.failed) return KC_OK;
    for (size_t i = 0; i < r.ntiers; i++)
        if (r.tier[i].failed) return kc_err(KC_EIO, "purge: %s: %s", r.tier[i].url, r.tier[i].error);
    return KC_EIO;
}
