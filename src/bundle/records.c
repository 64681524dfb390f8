/* SPDX-License-Identifier: Apache-2.0 */
/*
 * records.c — a bundle's own records, beside its entries (grammar in include/kcache/bundle.h):
 * the coverage record (v2 on), the site profiles (v3 on) and the seal (v4).
 *
 * The one idea: every record is read with a kc_reader over exactly its own bytes, each count
 * bounded by the bytes that remain before anything is allocated, and what a reader filled is
 * counted exactly once (kc_bundle_coverage_free frees what was counted, never a slot past it).
 * Duplicate sites are found with a hash set (linear in the number of profiles).
 *
 * [Note: bundle seal] A bundle's entries each carry their own signature or MAC; its own records
 * (coverage, profiles) carried none before v4, so a keyring or MAC key could not vouch for them.
 * v4 ends the content with a seal: an entry (entry.h) of variant "bundle" whose one section
 * (RUNTIME_META) is the SHA-256 of every content byte before the seal's length field, keyed by
 * that digest's first 16 bytes; the exporter vouches for it as for any entry (kc_trust_vouch:
 * its signer's Ed25519 signature, or its MAC key), and an importer with a keyring or MAC key
 * checks it (kc_trust_check) before it believes a record.  The seal binds the records to the
 * very toc and entries they came with; a seal of other bytes, or unvouched under trust, is
 * refused.  v2 and v3 records are covered by nothing: refused whole where trust is configured
 * (read.c), read as before where it is not.
 *
 * Callers: export.c (the writers), read.c (the readers).  Must not: allocate from a count it has
 * not bounded by the bytes left; believe a record under trust that no seal vouches for.
 */
#include <stdlib.h>
#include <xxhash.h>

#include "internal.h"
#include "../guard/internal.h" /* kc_site_profile_parse_ */
#include "../common/crypto.h"  /* kc_sha256 */

#define COV_STR_MAX 4096
#define SEAL_VARIANT "bundle"
#define SEAL_MAX 4096 /* a seal is an entry of one 32-byte section and a trailer: well under this */

/* ---- coverage record (v2 on: the grammar's `covers`) ---- */

int kc_bundle_covers_put_(kc_buf *b, const kc_bundle_covers *cv) {
    size_t ml = cv->manifest ? strlen(cv->manifest) : 0;
    if (ml == 0 || ml > COV_STR_MAX)
        return kc_err(KC_EINVAL, "export: the manifest's name must be 1..%d bytes", COV_STR_MAX);
    if (cv->ntargets == 0 || cv->ntargets > KC_BUNDLE_MAX_TARGETS || !cv->targets)
        return kc_err(KC_EINVAL, "export: a coverage record needs 1..%d targets", KC_BUNDLE_MAX_TARGETS);
    if (cv->ngraphs == 0 || cv->ngraphs > KC_BUNDLE_MAX_GRAPHS || !cv->names || !cv->keys)
        return kc_err(KC_EINVAL, "export: a coverage record needs 1..%d graphs", KC_BUNDLE_MAX_GRAPHS);
    kc_buf_put_u16(b, (uint16_t)ml);
    kc_buf_put(b, cv->manifest, ml);
    kc_buf_put_u16(b, (uint16_t)cv->ntargets);
    for (size_t i = 0; i < cv->ntargets; i++) {
        kc_target t;
        size_t tl = cv->targets[i] ? strlen(cv->targets[i]) : 0;
        if (tl == 0 || tl > KC_VARIANT_MAX || kc_target_parse(cv->targets[i], &t) != KC_OK)
            return kc_err(KC_EINVAL, "export: coverage target %zu is not a target", i);
        uint8_t l8 = (uint8_t)tl;
        kc_buf_put(b, &l8, 1);
        kc_buf_put(b, cv->targets[i], tl);
    }
    kc_buf_put_u32(b, (uint32_t)cv->ngraphs);
    for (size_t i = 0; i < cv->ngraphs; i++) {
        size_t nl = cv->names[i] ? strlen(cv->names[i]) : 0;
        if (nl == 0 || nl > COV_STR_MAX)
            return kc_err(KC_EINVAL, "export: coverage graph %zu's name must be 1..%d bytes", i, COV_STR_MAX);
        kc_buf_put(b, cv->keys[i].bytes, 16);
        kc_buf_put_u16(b, (uint16_t)nl);
        kc_buf_put(b, cv->names[i], nl);
    }
    return KC_OK;
}

void kc_bundle_coverage_free(kc_bundle_coverage *cov) {
    if (!cov) return;
    for (size_t i = 0; cov->names && i < cov->ngraphs; i++) free(cov->names[i]);
    for (size_t i = 0; cov->targets && i < cov->ntargets; i++) free(cov->targets[i]);
    free(cov->names);
    free(cov->targets);
    free(cov->keys);
    free(cov->carried);
    free(cov->manifest);
    free(cov);
}

/* One string of a covers record (length already read): 1..max bytes, no NUL, copied. */
static char *covers_str(kc_reader *r, size_t len, size_t max) {
    const uint8_t *p = kc_rd_bytes(r, len);
    if (r->bad || len == 0 || len > max || memchr(p, 0, len)) return NULL;
    char *s = kc_malloc(len + 1);
    if (s) memcpy(s, p, len), s[len] = '\0';
    return s;
}

/* The targets of a covers record into cv (cv->ntargets: the slots filled, good or bad — each
 * counted once, so the free frees exactly those).  NULL, or what is wrong. */
static const char *covers_targets(kc_reader *r, kc_bundle_coverage *cv) {
    uint16_t nt = kc_rd_next_u16(r);
    if (r->bad || nt == 0 || nt > KC_BUNDLE_MAX_TARGETS || nt > r->left / 2) return "its target count";
    if (!(cv->targets = kc_calloc(nt, sizeof *cv->targets))) return "memory";
    for (uint16_t i = 0; i < nt; i++) {
        const uint8_t *l = kc_rd_bytes(r, 1);
        kc_target t;
        cv->targets[i] = r->bad ? NULL : covers_str(r, *l, KC_VARIANT_MAX);
        cv->ntargets = (size_t)i + 1;
        if (!cv->targets[i] || kc_target_parse(cv->targets[i], &t) != KC_OK) return "a target";
        for (uint16_t k = 0; k < i; k++)
            if (strcmp(cv->targets[k], cv->targets[i]) == 0) return "a target named twice";
    }
    return NULL;
}

/* The graphs of a covers record into cv, as covers_targets. */
static const char *covers_graphs(kc_reader *r, kc_bundle_coverage *cv) {
    uint32_t ng = kc_rd_next_u32(r);
    if (r->bad || ng == 0 || ng > KC_BUNDLE_MAX_GRAPHS || ng > r->left / 19) return "its graph count";
    if (!(cv->names = kc_calloc(ng, sizeof *cv->names)) || !(cv->keys = kc_calloc(ng, sizeof *cv->keys)) ||
        !(cv->carried = kc_calloc((size_t)ng * cv->ntargets, 1)))
        return "memory";
    for (uint32_t i = 0; i < ng; i++) {
        const uint8_t *k = kc_rd_bytes(r, 16);
        if (!r->bad) memcpy(cv->keys[i].bytes, k, 16);
        uint16_t nl = kc_rd_next_u16(r);
        cv->names[i] = r->bad ? NULL : covers_str(r, nl, COV_STR_MAX);
        cv->ngraphs = (size_t)i + 1;
        if (!cv->names[i]) return "a graph";
    }
    return NULL;
}

/* Read a covers record of exactly `len` bytes, strictly ([Note: sizes]: every count bounded by
 * the bytes left before anything is allocated).  NULL with the reason set (KC_ECORRUPT/ENOMEM). */
kc_bundle_coverage *kc_bundle_covers_read_(const char *path, const uint8_t *p, size_t len, int *rc) {
    kc_reader r = kc_reader_make(p, len);
    kc_bundle_coverage *cv = kc_calloc(1, sizeof *cv);
    const char *why = NULL;
    if (!cv) return *rc = kc_err(KC_ENOMEM, "import: out of memory"), NULL;
    uint16_t ml = kc_rd_next_u16(&r);
    if (!(cv->manifest = covers_str(&r, ml, COV_STR_MAX))) why = "its manifest's name";
    if (!why) why = covers_targets(&r, cv);
    if (!why) why = covers_graphs(&r, cv);
    if (!why && (r.bad || r.left)) why = "its length";
    if (!why) return cv;
    kc_bundle_coverage_free(cv);
    *rc = strcmp(why, "memory") == 0 ? kc_err(KC_ENOMEM, "import: out of memory")
                                     : KC_BUNDLE_BAD(path, "its coverage record is malformed (%s)", why);
    return NULL;
}

/* ---- profiles record (v3 on: the grammar's `profiles`) ---- */

void kc_bundle_prof_free_(kc_prof_list *l, int owned) {
    for (size_t i = 0; owned && i < l->n; i++) free((void *)l->p[i]);
    free(l->p);
    free(l->len);
    memset(l, 0, sizeof *l);
}

static int prof_add(kc_prof_list *l, const uint8_t *p, size_t len) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        const uint8_t **np = kc_realloc(l->p, cap * sizeof *np);
        if (np) l->p = np;
        size_t *nl = np ? kc_realloc(l->len, cap * sizeof *nl) : NULL;
        if (!nl) return kc_err(KC_ENOMEM, "out of memory");
        l->len = nl, l->cap = cap;
    }
    l->p[l->n] = p, l->len[l->n++] = len;
    return KC_OK;
}

int kc_bundle_prof_collect_(const void *data, size_t len, void *ctx) {
    kc_prof_list *l = ctx;
    if (l->n >= KC_BUNDLE_MAX_PROFILES)
        return kc_err(KC_EINVAL, "export: more than %d site profiles", KC_BUNDLE_MAX_PROFILES);
    uint8_t *c = kc_malloc(len ? len : 1);
    if (!c) return kc_err(KC_ENOMEM, "export: out of memory");
    memcpy(c, data, len);
    int rc = prof_add(l, c, len);
    if (rc) free(c);
    return rc;
}

void kc_bundle_profiles_put_(kc_buf *b, const kc_prof_list *l) {
    kc_buf_put_u32(b, (uint32_t)l->n);
    for (size_t i = 0; i < l->n; i++) {
        kc_buf_put_u16(b, (uint16_t)l->len[i]);
        kc_buf_put(b, l->p[i], l->len[i]);
    }
}

/* A set of site names (pointers into the record, not copied): open addressing on XXH3-64,
 * a power-of-two table at most half full. */
typedef struct site_set {
    const char **s;
    size_t *len, mask;
} site_set;

/* Add a name; 1 when it was there already. */
static int site_set_add(site_set *h, const char *s, size_t len) {
    for (size_t i = (size_t)XXH3_64bits(s, len) & h->mask;; i = (i + 1) & h->mask) {
        if (!h->s[i]) {
            h->s[i] = s, h->len[i] = len;
            return 0;
        }
        if (h->len[i] == len && memcmp(h->s[i], s, len) == 0) return 1;
    }
}

/* Read a profiles record of exactly `len` bytes, strictly: a count (1..KC_BUNDLE_MAX_PROFILES,
 * bounded by the bytes left), each profile sound (kc_site_profile_check), no site twice.  The
 * list points into `p`.  KC_ECORRUPT with the reason (KC_ENOMEM). */
int kc_bundle_profiles_read_(const char *path, const uint8_t *p, size_t len, kc_prof_list *out) {
    static const char head[] = "kcache-profile 1\nsite "; /* the one written form: the name follows */
    kc_reader r = kc_reader_make(p, len);
    uint32_t n = kc_rd_next_u32(&r);
    if (r.bad || n == 0 || n > KC_BUNDLE_MAX_PROFILES || n > r.left / 2)
        return KC_BUNDLE_BAD(path, "its profiles record is malformed (its count)");
    size_t cap = 4;
    while (cap < 2 * (size_t)n) cap *= 2;
    site_set set = {kc_calloc(cap, sizeof *set.s), kc_calloc(cap, sizeof *set.len), cap - 1};
    int rc = set.s && set.len ? KC_OK : kc_err(KC_ENOMEM, "import: out of memory");
    for (uint32_t i = 0; i < n && !rc; i++) {
        char site[KC_SITE_NAME_MAX + 1];
        uint16_t pl = kc_rd_next_u16(&r);
        const uint8_t *b = kc_rd_bytes(&r, pl);
        if (r.bad || pl == 0) rc = KC_BUNDLE_BAD(path, "its profiles record is malformed (profile %u runs past it)", i);
        else if (kc_site_profile_parse_(b, pl, site, NULL) != KC_OK)
            rc = KC_BUNDLE_BAD(path, "site profile %u: %s", i, kc_error_last()->message);
        else if (site_set_add(&set, (const char *)b + sizeof head - 1, strlen(site))) /* parsed: the name is there */
            rc = KC_BUNDLE_BAD(path, "the profile of site '%s' appears twice", site);
        if (!rc) rc = prof_add(out, b, pl);
    }
    if (!rc && r.left) rc = KC_BUNDLE_BAD(path, "its profiles record is malformed (its length)");
    free(set.s);
    free(set.len);
    if (rc) kc_bundle_prof_free_(out, 0);
    return rc;
}

/* ---- seal (v4: [Note: bundle seal]) ---- */

/* The seal's key: the digest's first 16 bytes. */
static kc_key seal_key(const uint8_t digest[32]) {
    kc_key k;
    memcpy(k.bytes, digest, sizeof k.bytes);
    return k;
}

int kc_bundle_seal_put_(kc_buf *b, const kc_trust *trust) {
    uint8_t d[32];
    if (b->failed) return kc_err(KC_ENOMEM, "export: out of memory");
    if (kc_sha256(b->data, b->len, d) != KC_OK) return kc_err(KC_ERROR, "export: SHA-256 failed");
    kc_key k = seal_key(d);
    kc_entry *e = NULL;
    void *bytes = NULL;
    size_t blen = 0;
    int rc = kc_entry_new(&e, &k, SEAL_VARIANT);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_RUNTIME_META, d, sizeof d);
    if (!rc) rc = kc_entry_encode(e, &bytes, &blen);
    if (!rc) rc = kc_trust_vouch(trust, &bytes, &blen);
    kc_entry_free(e);
    if (!rc && blen > SEAL_MAX) rc = kc_err(KC_ERROR, "export: a seal of %zu bytes", blen);
    if (!rc) {
        kc_buf_put_u32(b, (uint32_t)blen);
        kc_buf_put(b, bytes, blen);
    }
    free(bytes);
    return rc;
}

int kc_bundle_seal_check_(const char *path, const uint8_t *content, size_t len, const uint8_t *seal, size_t slen,
                          const kc_trust *trust, bool *refused) {
    uint8_t d[32];
    if (slen == 0 || slen > SEAL_MAX) return KC_BUNDLE_BAD(path, "its seal is malformed (%zu bytes)", slen);
    if (kc_sha256(content, len, d) != KC_OK) return kc_err(KC_ERROR, "import: SHA-256 failed");
    kc_key k = seal_key(d);
    kc_entry *e = NULL;
    const void *p = NULL;
    size_t plen = 0;
    int rc = kc_entry_decode_as(&e, seal, slen, &k, SEAL_VARIANT);
    if (rc == KC_OK) rc = kc_entry_section(e, KC_SECTION_RUNTIME_META, &p, &plen);
    if (rc == KC_OK && (plen != sizeof d || memcmp(p, d, sizeof d) != 0))
        rc = kc_err(KC_ECORRUPT, "another content's digest");
    kc_entry_free(e);
    if (rc && rc != KC_ENOMEM)
        return KC_BUNDLE_BAD(path, "its seal is not the seal of its content: %s", kc_error_last()->message);
    if (rc) return rc;
    if (kc_trust_checks(trust) && (rc = kc_trust_check(trust, seal, slen)) != KC_OK) {
        *refused = rc == KC_EUNTRUSTED;
        return kc_err_prefix(rc,
                             "bundle '%s': its seal (which vouches for its coverage record and site profiles) is "
                             "refused",
                             path);
    }
    return KC_OK;
}
