/* SPDX-License-Identifier: Apache-2.0 */
/*
 * layout.h — the entry format's byte layout (grammar in include/kcache/entry.h) and the
 * in-memory entry, shared by the entry part's files that read and write the bytes: entry.c (the
 * entry in memory, ORIGIN), encode.c (the writer), decode.c (the strict reader) and seal.c
 * (the MAC and signature trailers).
 *
 * The one idea: one place says where each field of the header and of a section descriptor
 * lies, and what the writer and the reader must agree on (the header checksum, the ratio rule),
 * so the writer and the reader cannot drift apart.  Nothing outside src/entry/ includes it.
 */
#ifndef KC_ENTRY_LAYOUT_H
#define KC_ENTRY_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "kcache/entry.h"
#include "kcache/sign.h" /* KC_SIGN_LEN, KC_SIGN_KEY_ID_LEN */

#define HEADER_SIZE 96
#define SUM_OFFSET 88
#define DESC_SIZE 40
#define MAX_SECTIONS 16
#define NTYPES (KC_SECTION_ORIGIN + 1) /* types 1..KC_SECTION_ORIGIN */
#define MAC_LEN 32
#define FLAG_MAC 1u
#define FLAG_SIG 2u /* an Ed25519 signature trailer follows ([Note: signatures]); never with FLAG_MAC */
#define SIG_TRAILER (KC_SIGN_KEY_ID_LEN + KC_SIGN_LEN)
#define MAX_DIGESTS 4096
#define CORRUPT(...) kc_err(KC_ECORRUPT, "corrupt entry: " __VA_ARGS__)

/* The eight bytes every entry starts with (entry.c). */
extern const uint8_t kc_entry_magic_[8];
#define MAGIC kc_entry_magic_

typedef struct section {
    uint8_t *data;
    size_t len;
    int present;
} section;

typedef struct named_digest {
    char *name; /* its own allocation, or inside names_block (a decoded META's) */
    kc_digest d;
} named_digest;

struct kc_entry {
    kc_key key;
    char variant[KC_VARIANT_MAX + 1];
    section sec[NTYPES];
    named_digest *digests;
    size_t ndigests, capdigests;
    char *names_block; /* the names decode_meta read, one allocation: digests[0, nblock) point into it */
    size_t nblock;
    char toolchain[256];
    uint64_t created_at;
    struct attached {
        uint8_t *buf;
        const uint8_t *data;
        size_t len;
    } * att; /* images in memory, never encoded
                                                                                (entry.h); data lies in buf */
    size_t natt;
    int partial; /* kc_entry_decode_some: some sections or META's digests left out; never encoded */
};

/* The calling thread's zstd contexts (freed at thread exit), each made when first needed; NULL out of memory. */
typedef struct zctx {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
} zctx;
zctx *kc_entry_zctx_(void);

static inline int valid_type(int t) { return t >= KC_SECTION_META && t <= KC_SECTION_ORIGIN; }

/* XXH3-64 over header bytes [0, 88) followed by the section table (which must be present). */
static inline uint64_t header_sum(const uint8_t *h, uint32_t nsec) {
    uint8_t tmp[SUM_OFFSET + MAX_SECTIONS * DESC_SIZE];
    memcpy(tmp, h, SUM_OFFSET);
    memcpy(tmp + SUM_OFFSET, h + HEADER_SIZE, (size_t)nsec * DESC_SIZE);
    return XXH3_64bits(tmp, SUM_OFFSET + (size_t)nsec * DESC_SIZE);
}

/* The ratio rule of entry.h: may a zstd section of `stored` bytes declare `raw`?  Divides,
 * so it cannot wrap.  The encoder and the decoder ask the same question. */
static inline int ratio_ok(uint64_t raw, uint64_t stored) {
    return raw <= KC_SECTION_RATIO_FLOOR || raw / KC_SECTION_MAX_RATIO <= stored;
}

/* Check ORIGIN's records (entry.h's grammar) in p[0, n); with `name`, find its value.  KC_ECORRUPT with
 * the reason; KC_MISS when `name` is not there.  (entry.c; decode.c checks every ORIGIN it reads.) */
int kc_entry_origin_scan_(const uint8_t *p, size_t n, const char *name, const uint8_t **value, uint32_t *vlen);

#endif
