/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encode.c — an entry's bytes (grammar in include/kcache/entry.h; layout in layout.h): META
 * made from the digests, the toolchain and the creation time, each section compressed when that
 * pays, the header and its checksum.
 *
 * The one idea: the writer makes only what the strict reader (decode.c) accepts: the same caps,
 * the same ratio rule (ratio_ok), sections in type order, each once.
 *
 * Callers: kc_entry_encode (entry.h): the front door, the graph part, bundles, tools.
 * Must not: encode a partly decoded entry (kc_entry_decode_some), or the attached images.
 */
#include "kcache/entry.h"

#include <stdlib.h>

#include "../common/internal.h"
#include "layout.h"

#define ZSTD_LEVEL 3
#define COMPRESS_MIN 256 /* smaller sections are stored as they are: a frame to inflate costs more than it saves */

static int encode_meta(const kc_entry *e, uint64_t created, kc_buf *b) {
    kc_buf_put_u32(b, (uint32_t)e->ndigests);
    for (size_t i = 0; i < e->ndigests; i++) {
        size_t n = strlen(e->digests[i].name);
        kc_buf_put_u16(b, (uint16_t)n);
        kc_buf_put(b, e->digests[i].name, n);
        kc_buf_put(b, e->digests[i].d.bytes, 16);
    }
    kc_buf_put_u64(b, created);
    size_t tn = strlen(e->toolchain);
    kc_buf_put_u16(b, (uint16_t)tn);
    kc_buf_put(b, e->toolchain, tn);
    return b->failed ? kc_err(KC_ENOMEM, "encoding META: out of memory") : KC_OK;
}

typedef struct stored {
    const uint8_t *raw;
    size_t raw_len;
    uint8_t *zbuf; /* owned when compressed */
    size_t stored_len;
    uint32_t type, codec;
} stored;

/* Compress section s when it pays: a hit inflates every compressed section of a graph entry and of
 * each of its images, and a frame that saves a few bytes costs a microsecond to set up, so only when
 * it saves an eighth or more.  Past the ratio: stored as is. */
static int compress_section(zctx *z, stored *s) {
    size_t len = s->raw_len;
    if (!z->c && !(z->c = ZSTD_createCCtx())) return kc_err(KC_ENOMEM, "kc_entry_encode: out of memory (zstd)");
    size_t bound = ZSTD_compressBound(len);
    uint8_t *zb = kc_malloc(bound);
    if (!zb) return kc_err(KC_ENOMEM, "kc_entry_encode: out of memory");
    size_t zn = ZSTD_compressCCtx(z->c, zb, bound, s->raw, len, ZSTD_LEVEL);
    if (!ZSTD_isError(zn) && zn <= len - len / 8 && ratio_ok(len, zn)) {
        s->zbuf = zb;
        s->stored_len = zn;
        s->codec = KC_CODEC_ZSTD;
    } else {
        free(zb);
    }
    return KC_OK;
}

/* A section that a compile-path hit ([Note: checked, not inflated] in decode.c) must read, not only
 * check: a graph entry's IMAGES (which objects to check) and ORIGIN (the compile time the hit saved,
 * and its records validated on every read).  Stored as they are: inflating a frame costs the hit a
 * few microseconds (the tables zstd builds for it), a few hundred bytes saved are worth less. */
static int read_on_every_hit(int type) { return type == KC_SECTION_IMAGES || type == KC_SECTION_ORIGIN; }

/* The sections to write, in type order (META, made from `meta`, first): st[*nst], each compressed when
 * that pays (its zbuf owned: freed by the caller, on failure too). */
static int stored_sections(const kc_entry *e, const kc_buf *meta, stored *st, int *nst) {
    zctx *z = kc_entry_zctx_();
    if (!z) return kc_err(KC_ENOMEM, "kc_entry_encode: out of memory");
    for (int t = KC_SECTION_META; t < NTYPES; t++) {
        if (t != KC_SECTION_META && !e->sec[t].present) continue;
        stored *s = &st[(*nst)++];
        s->type = (uint32_t)t;
        s->raw = t == KC_SECTION_META ? meta->data : e->sec[t].data;
        s->raw_len = s->stored_len = t == KC_SECTION_META ? meta->len : e->sec[t].len;
        s->codec = KC_CODEC_NONE;
        int rc = s->raw_len > COMPRESS_MIN && !read_on_every_hit(t) ? compress_section(z, s) : KC_OK;
        if (rc) return rc;
    }
    return KC_OK;
}

/* The entry's bytes, `total` of them, into h: the header, the section table, the sections. */
static void write_entry(const kc_entry *e, const stored *st, int nst, size_t total, uint8_t *h) {
    memset(h, 0, HEADER_SIZE);
    memcpy(h, MAGIC, 8);
    kc_wr_u16(h + 8, KC_ENTRY_FORMAT_VERSION);
    kc_wr_u16(h + 10, HEADER_SIZE);
    kc_wr_u32(h + 12, 0);
    memcpy(h + 16, e->key.bytes, 16);
    memcpy(h + 32, e->variant, strlen(e->variant));
    kc_wr_u64(h + 64, (uint64_t)total);
    kc_wr_u32(h + 72, (uint32_t)nst);
    uint8_t *d = h + HEADER_SIZE;
    uint64_t off = HEADER_SIZE + (uint64_t)nst * DESC_SIZE;
    for (int i = 0; i < nst; i++, d += DESC_SIZE) {
        const uint8_t *bytes = st[i].zbuf ? st[i].zbuf : st[i].raw;
        kc_wr_u32(d, st[i].type);
        kc_wr_u32(d + 4, st[i].codec);
        kc_wr_u64(d + 8, st[i].raw_len);
        kc_wr_u64(d + 16, st[i].stored_len);
        kc_wr_u64(d + 24, off);
        kc_wr_u64(d + 32, XXH3_64bits(bytes, st[i].stored_len));
        if (st[i].stored_len) memcpy(h + off, bytes, st[i].stored_len);
        off += st[i].stored_len;
    }
    kc_wr_u64(h + SUM_OFFSET, header_sum(h, (uint32_t)nst));
}

int kc_entry_encode(const kc_entry *e, void **out, size_t *out_len) {
    if (out) *out = NULL; /* on every failure too */
    if (out_len) *out_len = 0;
    if (!e || !out || !out_len) return kc_err(KC_EINVAL, "kc_entry_encode: NULL argument");
    *out = NULL;
    *out_len = 0;
    if (e->partial)
        return kc_err(KC_EINVAL, "kc_entry_encode: a partly decoded entry (kc_entry_decode_some) is never encoded");
    kc_buf meta = {0}, b = {0};
    stored st[NTYPES];
    int nst = 0, rc;
    memset(st, 0, sizeof st);
    uint64_t created = e->created_at ? e->created_at : kc_now_ns();
    if ((rc = encode_meta(e, created, &meta))) goto done;
    if ((rc = stored_sections(e, &meta, st, &nst))) goto done;
    size_t total = HEADER_SIZE + (size_t)nst * DESC_SIZE;
    uint64_t raw_total = 0;
    for (int i = 0; i < nst; i++) total += st[i].stored_len, raw_total += st[i].raw_len;
    if (raw_total > KC_ENTRY_MAX_RAW || total > KC_ENTRY_MAX_BYTES) { /* each ≤ 256 MiB: no wrap */
        rc = kc_err(KC_EINVAL, "kc_entry_encode: %llu bytes of sections is over the cap of %llu",
                    (unsigned long long)raw_total, (unsigned long long)KC_ENTRY_MAX_RAW);
        goto done;
    }
    if ((rc = kc_buf_reserve(&b, total))) {
        rc = kc_err(KC_ENOMEM, "kc_entry_encode: out of memory");
        goto done;
    }
    write_entry(e, st, nst, total, b.data);
    b.len = total;
    *out = b.data;
    *out_len = total;
    b.data = NULL;
    rc = KC_OK;
done:
    for (int i = 0; i < nst; i++) free(st[i].zbuf);
    kc_buf_free(&meta);
    kc_buf_free(&b);
    return rc;
}
