/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bundle/internal.h — what the bundle part's files share (format in include/kcache/bundle.h).
 *
 * The part is split along its jobs: records.c (the bundle's own records: coverage, site
 * profiles and the v4 seal), read.c (phase one of an import: the whole file verified, nothing
 * written), export.c (writing a bundle), bundle.c (phase two of an import: the writes; the
 * coverage read back).  Only these files include this header.
 */
#ifndef KC_BUNDLE_INTERNAL_H
#define KC_BUNDLE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kcache/bundle.h"
#include "kcache/entry.h"
#include "../common/internal.h"
#include "../entry/trust.h"
#include "../store/local.h" /* KC_NAME_MAX */

#define KC_BUNDLE_HEADER 48
/** The newest format this kcache reads and writes ([Note: bundle seal] in records.c). */
#define KC_BUNDLE_VERSION_MAX 4
#define KC_BUNDLE_BAD(p, fmt, ...) kc_err(KC_ECORRUPT, "bundle '%s': " fmt, (p), ##__VA_ARGS__)
extern const uint8_t kc_bundle_magic_[8];

/* The ratio rule of bundle.h: may `stored` payload bytes declare `raw`?  Cannot wrap. */
static inline int kc_bundle_ratio_ok_(uint64_t raw, uint64_t stored) {
    return raw <= KC_BUNDLE_RATIO_FLOOR || raw / KC_BUNDLE_MAX_RATIO <= stored;
}

/* ---- objects of three kinds ([Note: two levels] in kcache/entry.h) ---- */

enum { KIND_IMAGE, KIND_UNIT, KIND_GRAPH, NKINDS }; /* also the order of a bundle and of an import's writes */

/* One entry of a bundle: export's (data malloc'ed, its own) or import's (data inside the bundle). */
typedef struct kc_bundle_item {
    char name[KC_NAME_MAX + 1];
    const uint8_t *data;
    size_t len;
    int kind, skipped;
    kc_image_ref ref;   /* an image's own reference; a unit record's image */
    kc_image_ref *refs; /* a graph's images (NULL, 0: none) */
    size_t nrefs;
} kc_bundle_item;

int kc_bundle_item_read_(kc_bundle_item *it, const kc_entry *e);
const kc_image_ref *kc_bundle_item_refs_(const kc_bundle_item *it, size_t *n);
int kc_bundle_ref_cmp_(const void *a, const void *b);
int kc_bundle_by_id_(const void *a, const void *b);
void kc_bundle_report_add_(kc_bundle_report *r, int kind, size_t len);

/* ---- the bundle's own records (records.c) ---- */

/* Profiles, each a pointer and a length (export: its own copy; import: into the bundle). */
typedef struct kc_prof_list {
    const uint8_t **p;
    size_t *len;
    size_t n, cap;
} kc_prof_list;

void kc_bundle_prof_free_(kc_prof_list *l, int owned);
/** kc_site_profile_foreach's callback: a copy of each sound local profile into the kc_prof_list ctx. */
int kc_bundle_prof_collect_(const void *data, size_t len, void *ctx);
/** Append a covers record; KC_EINVAL for a record the grammar cannot hold. */
int kc_bundle_covers_put_(kc_buf *b, const kc_bundle_covers *cv);
/** Append a profiles record (its count first). */
void kc_bundle_profiles_put_(kc_buf *b, const kc_prof_list *l);
/** Read a covers record of exactly `len` bytes, strictly; NULL with *rc set. */
kc_bundle_coverage *kc_bundle_covers_read_(const char *path, const uint8_t *p, size_t len, int *rc);
/** Read a profiles record of exactly `len` bytes, strictly (no site twice, in linear time). */
int kc_bundle_profiles_read_(const char *path, const uint8_t *p, size_t len, kc_prof_list *out);
/** Append the seal of content[0, len) (v4), vouched by `trust` when it can vouch. */
int kc_bundle_seal_put_(kc_buf *b, const kc_trust *trust);
/** Check the seal `seal` (slen bytes) of content[0, len): it must be the seal of exactly those
 *  bytes, and (under a keyring or MAC key) vouched for; *refused when trust refused it. */
int kc_bundle_seal_check_(const char *path, const uint8_t *content, size_t len, const uint8_t *seal, size_t slen,
                          const kc_trust *trust, bool *refused);

/* ---- a verified bundle (read.c) ---- */

typedef struct kc_bundle_in {
    uint8_t *content;
    kc_bundle_item *items;
    size_t n;
    kc_bundle_item **images;
    size_t nimages;
    kc_prof_list prof; /* v3, v4: the site profiles, pointing into content */
} kc_bundle_in;

/** Phase one: everything verified, nothing written.  *out owns the bytes its items point into.
 *  `cov` (may be NULL) gets the coverage record, if any. */
int kc_bundle_verify_(const char *path, const kc_trust *trust, kc_bundle_in *out, bool *mac_refused,
                      kc_bundle_coverage **cov);
void kc_bundle_in_free_(kc_bundle_in *b);
/** The bundle's image of id `id`, or NULL. */
const kc_bundle_item *kc_bundle_in_image_(const kc_bundle_in *b, const kc_key *id);

#endif
