/*
 * bundle.c — export and import one-file bundles (format in include/kcache/bundle.h).
 *
 * The one idea: import is two phases.  Phase one reads the whole file and proves it
 * sound — header checksum, payload checksum, exact decompressed length, a table of
 * contents whose every offset and name is checked, and every entry decoded in full and
 * matched to its name — holding nothing but memory.  Only then does phase two write, each
 * entry atomically; an entry already present with the same bytes is left alone, so
 * importing twice is a no-op.
 *
 * Callers: the public kc_bundle_export/kc_bundle_import (kcache export/import).
 * Must not: write anything before phase one has passed; accept a name that is not
 * "<32 hex>.<variant>"; trust a length it has not bounded ([Note: sizes] in bundle.h:
 * the header's sizes and compression ratio before inflating, each toc size against the room
 * left before adding it).
 */
#include "kcache/bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>
#include <zstd.h>

#include "../cache/internal.h" /* kc_cache_local_, kc_cache_mac_key_ */
#include "../common/fs.h"
#include "../common/internal.h"
#include "../cache/record.h"      /* kc_cache_toolchain_note_ */
#include "../store/local.h"       /* kc_local_read/put/quarantine; KC_NAME_MAX, kc_store_name (store/name.h) */

#define HEADER 48
static const uint8_t MAGIC[8] = {0x89, 'K', 'C', 'B', '\r', '\n', 0x1a, '\n'};

/* The ratio rule of bundle.h: may `stored` payload bytes declare `raw`?  Cannot wrap. */
static int ratio_ok(uint64_t raw, uint64_t stored) {
    return raw <= KC_BUNDLE_RATIO_FLOOR || raw / KC_BUNDLE_MAX_RATIO <= stored;
}

/* One zstd frame holding `len` bytes in raw blocks (RFC 8878: single segment, 8-byte content
 * size, no checksum), for content that compresses past the ratio.  `out` has room for
 * stored_frame_bound(len); returns the frame's length. */
#define ZBLOCK (128u << 10)
static size_t stored_frame_bound(size_t len) { return 4 + 1 + 8 + (len / ZBLOCK + 1) * 3 + len; }
static size_t stored_frame(uint8_t *out, const uint8_t *src, size_t len) {
    size_t o = 0;
    kc_wr_u32(out, 0xFD2FB528u);
    out[4] = 0xE0; /* content size in 8 bytes, single segment */
    kc_wr_u64(out + 5, len);
    o = 13;
    size_t done = 0;
    do {
        size_t n = len - done < ZBLOCK ? len - done : ZBLOCK;
        uint32_t bh = (uint32_t)(n << 3) | (done + n == len ? 1u : 0u); /* type 0: raw */
        out[o] = (uint8_t)bh;
        out[o + 1] = (uint8_t)(bh >> 8);
        out[o + 2] = (uint8_t)(bh >> 16);
        if (n) memcpy(out + o + 3, src + done, n);
        o += 3 + n;
        done += n;
    } while (done < len);
    return o;
}

/* ---- export ---- */

typedef struct ex_item {
    char name[KC_NAME_MAX + 1];
    uint8_t *data;
    size_t len;
} ex_item;

typedef struct ex_ctx {
    kc_cache *c;
    const kc_bundle_filter *f;
    ex_item *items;
    size_t n, cap;
    int rc;
} ex_ctx;

static int selected(const kc_bundle_filter *f, const kc_cache_item *it) {
    if (!f) return 1;
    int ok = f->nvariants == 0;
    for (size_t i = 0; i < f->nvariants && !ok; i++) ok = strcmp(f->variants[i], it->variant) == 0;
    if (!ok) return 0;
    if (f->nkeys == 0) return 1;
    for (size_t i = 0; i < f->nkeys; i++)
        if (memcmp(f->keys[i].bytes, it->key.bytes, 16) == 0) return 1;
    return 0;
}

static int export_item(const kc_cache_item *it, void *ctx) {
    ex_ctx *x = ctx;
    if (!selected(x->f, it)) return 0;
    char name[KC_NAME_MAX + 1];
    kc_store_name(&it->key, it->variant, name);
    void *data;
    size_t len;
    int rc = kc_local_read(kc_cache_local_(x->c), name, &data, &len);
    if (rc == KC_MISS) return 0; /* removed meanwhile */
    if (rc) return x->rc = rc, 1;
    kc_entry *e;
    rc = kc_entry_decode_as(&e, data, len, &it->key, it->variant); /* the entry its name promises */
    kc_entry_free(e);
    if (rc) { /* never ship a bad entry */
        free(data);
        if (rc == KC_ENOMEM) return x->rc = rc, 1;
        kc_local_quarantine(kc_cache_local_(x->c), name);
        return 0;
    }
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        ex_item *p = kc_realloc(x->items, cap * sizeof *p);
        if (!p) {
            free(data);
            return x->rc = kc_err(KC_ENOMEM, "export: out of memory"), 1;
        }
        x->items = p;
        x->cap = cap;
    }
    ex_item *i = &x->items[x->n++];
    snprintf(i->name, sizeof i->name, "%s", name);
    i->data = data;
    i->len = len;
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(((const ex_item *)a)->name, ((const ex_item *)b)->name); }

int kc_bundle_export(kc_cache *c, const char *path, const kc_bundle_filter *filter, kc_bundle_report *out) {
    if (!c || !path) return kc_err(KC_EINVAL, "kc_bundle_export: NULL argument");
    if (out) memset(out, 0, sizeof *out);
    if (!kc_cache_local_(c)) return kc_err(KC_EREADONLY, "the cache is disabled");
    ex_ctx x = {c, filter, NULL, 0, 0, KC_OK};
    int rc = kc_cache_foreach(c, export_item, &x);
    if (x.rc) rc = x.rc;
    kc_buf content = {0};
    uint8_t *file = NULL;
    if (rc == KC_OK) {
        qsort(x.items, x.n, sizeof *x.items, by_name); /* the same cache gives the same bundle */
        uint64_t off = 0;
        for (size_t i = 0; i < x.n; i++) {
            size_t nl = strlen(x.items[i].name);
            kc_buf_put_u16(&content, (uint16_t)nl);
            kc_buf_put(&content, x.items[i].name, nl);
            kc_buf_put_u64(&content, off);
            kc_buf_put_u64(&content, x.items[i].len);
            kc_buf_put_u64(&content, XXH3_64bits(x.items[i].data, x.items[i].len));
            off += x.items[i].len;
        }
        for (size_t i = 0; i < x.n; i++) kc_buf_put(&content, x.items[i].data, x.items[i].len);
        if (content.failed) rc = kc_err(KC_ENOMEM, "export: out of memory");
        else if (content.len > KC_BUNDLE_MAX_BYTES) rc = kc_err(KC_EINVAL, "bundle over the %llu-byte cap", (unsigned long long)KC_BUNDLE_MAX_BYTES);
    }
    size_t flen = 0;
    if (rc == KC_OK) {
        size_t bound = ZSTD_compressBound(content.len), sbound = stored_frame_bound(content.len);
        if (sbound > bound) bound = sbound;
        file = kc_malloc(HEADER + bound);
        if (!file) rc = kc_err(KC_ENOMEM, "export: out of memory");
        size_t z = file ? ZSTD_compress(file + HEADER, bound, content.data, content.len, 9) : 0;
        if (!rc && ZSTD_isError(z)) rc = kc_err(KC_ERROR, "export: zstd: %s", ZSTD_getErrorName(z));
        if (!rc && !ratio_ok(content.len, z)) z = stored_frame(file + HEADER, content.data, content.len);
        if (!rc) {
            memcpy(file, MAGIC, 8);
            kc_wr_u16(file + 8, 1);
            kc_wr_u16(file + 10, 0);
            kc_wr_u32(file + 12, (uint32_t)x.n);
            kc_wr_u64(file + 16, content.len);
            kc_wr_u64(file + 24, z);
            kc_wr_u64(file + 32, XXH3_64bits(content.data, content.len));
            kc_wr_u64(file + 40, XXH3_64bits(file, 40));
            flen = HEADER + z;
            rc = kc_fs_write_atomic(path, file, flen);
        }
    }
    if (rc == KC_OK && out) {
        out->entries = x.n;
        for (size_t i = 0; i < x.n; i++) out->bytes += x.items[i].len;
    }
    for (size_t i = 0; i < x.n; i++) free(x.items[i].data);
    free(x.items);
    kc_buf_free(&content);
    free(file);
    return rc;
}

/* ---- import ---- */

typedef struct im_item {
    char name[KC_NAME_MAX + 1];
    const uint8_t *data;
    size_t len;
} im_item;

static int by_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

#define BAD(p, fmt, ...) kc_err(KC_ECORRUPT, "bundle '%s': " fmt, (p), ##__VA_ARGS__)

/* Phase one: everything verified, nothing written.  *content_out owns the bytes items point into. */
static int verify(const char *path, const uint8_t *mac_key, size_t mac_key_len, uint8_t **content_out,
                  im_item **items_out, size_t *n_out, bool *mac_refused) {
    void *file;
    size_t flen;
    int rc = kc_fs_read_input(path, KC_BUNDLE_MAX_BYTES + HEADER, &file, &flen, NULL);
    if (rc == KC_MISS) return kc_err(KC_EINVAL, "bundle '%s': no such file", path);
    if (rc) return rc;
    const uint8_t *h = file;
    uint8_t *content = NULL;
    im_item *items = NULL;
    struct toc_row { uint64_t off, size, sum; } *toc = NULL;
    const char **order = NULL;
    if (flen < HEADER) { rc = BAD(path, "%zu bytes is shorter than its header (truncated)", flen); goto fail; }
    if (memcmp(h, MAGIC, 8) != 0) { rc = BAD(path, "not a kcache bundle (bad magic)"); goto fail; }
    if (XXH3_64bits(h, 40) != kc_rd_u64(h + 40)) { rc = BAD(path, "header checksum mismatch"); goto fail; }
    if (kc_rd_u16(h + 8) != 1 || kc_rd_u16(h + 10) != 0) { rc = BAD(path, "format version %u is not supported", kc_rd_u16(h + 8)); goto fail; }
    uint32_t count = kc_rd_u32(h + 12);
    uint64_t raw = kc_rd_u64(h + 16), stored = kc_rd_u64(h + 24);
    if (raw > KC_BUNDLE_MAX_BYTES || count > raw / 27 + 1) { rc = BAD(path, "implausible sizes in its header"); goto fail; }
    if (stored != flen - HEADER) {
        rc = BAD(path, "%zu payload bytes present, header says %llu (truncated or padded)", flen - HEADER, (unsigned long long)stored);
        goto fail;
    }
    if (!ratio_ok(raw, stored)) { /* before anything is allocated or inflated */
        rc = BAD(path, "%llu payload bytes declare %llu, past the compression ratio cap of %u (a decompression bomb?)",
                 (unsigned long long)stored, (unsigned long long)raw, KC_BUNDLE_MAX_RATIO);
        goto fail;
    }
    content = kc_malloc(raw ? (size_t)raw : 1);
    if (!content) { rc = kc_err(KC_ENOMEM, "import: out of memory"); goto fail; }
    unsigned long long fcs = ZSTD_getFrameContentSize(h + HEADER, (size_t)stored);
    size_t fsz = ZSTD_findFrameCompressedSize(h + HEADER, (size_t)stored);
    size_t got = (fcs == raw && !ZSTD_isError(fsz) && fsz == stored)
                     ? ZSTD_decompress(content, (size_t)raw, h + HEADER, (size_t)stored) : (size_t)-1;
    if (ZSTD_isError(got) || got != raw) { rc = BAD(path, "payload does not decompress to its length"); goto fail; }
    if (XXH3_64bits(content, (size_t)raw) != kc_rd_u64(h + 32)) { rc = BAD(path, "payload checksum mismatch"); goto fail; }
    items = kc_calloc(count ? count : 1, sizeof *items);
    if (!items) { rc = kc_err(KC_ENOMEM, "import: out of memory"); goto fail; }
    kc_reader r = kc_reader_make(content, (size_t)raw);
    uint64_t expect = 0;
    toc = kc_calloc(count ? count : 1, sizeof *toc);
    if (!toc) { rc = kc_err(KC_ENOMEM, "import: out of memory"); goto fail; }
    for (uint32_t i = 0; i < count; i++) {
        uint16_t nl = kc_rd_next_u16(&r);
        const uint8_t *nm = kc_rd_bytes(&r, nl);
        toc[i].off = kc_rd_next_u64(&r);
        toc[i].size = kc_rd_next_u64(&r);
        toc[i].sum = kc_rd_next_u64(&r);
        if (r.bad) { rc = BAD(path, "table of contents is truncated"); goto fail; }
        if (nl == 0 || nl > KC_NAME_MAX || memchr(nm, 0, nl)) { rc = kc_err(KC_EPERM, "bundle '%s': entry %u has an invalid name", path, i); goto fail; }
        memcpy(items[i].name, nm, nl);
        items[i].name[nl] = '\0';
        if (kc_store_name_check(items[i].name) != KC_OK) {
            rc = kc_err(KC_EPERM, "bundle '%s': entry %u is named '%s', not <key>.<variant>: refused", path, i, items[i].name);
            goto fail;
        }
        if (toc[i].off != expect) { rc = BAD(path, "entry %u is out of place", i); goto fail; }
        if (toc[i].size > KC_ENTRY_MAX_BYTES || toc[i].size > raw - expect) { /* expect ≤ raw: no wrap */
            rc = BAD(path, "entry %u's size %llu is over the cap or runs past the bundle", i, (unsigned long long)toc[i].size);
            goto fail;
        }
        expect += toc[i].size;
    }
    if (expect != r.left) { rc = BAD(path, "entries do not fill the bundle"); goto fail; }
    /* A name twice: sorted copies side by side (n log n; comparing each with every earlier one
     * was quadratic in the count). */
    order = kc_calloc(count ? count : 1, sizeof *order);
    if (!order) { rc = kc_err(KC_ENOMEM, "import: out of memory"); goto fail; }
    for (uint32_t i = 0; i < count; i++) order[i] = items[i].name;
    qsort(order, count, sizeof *order, by_str);
    for (uint32_t i = 1; i < count; i++)
        if (strcmp(order[i - 1], order[i]) == 0) { rc = BAD(path, "'%s' appears twice", order[i]); goto fail; }
    for (uint32_t i = 0; i < count; i++) {
        items[i].data = r.p + toc[i].off;
        items[i].len = (size_t)toc[i].size;
        if (XXH3_64bits(items[i].data, items[i].len) != toc[i].sum) { rc = BAD(path, "entry '%s' checksum mismatch", items[i].name); goto fail; }
        if (mac_key && (rc = kc_entry_mac_check(items[i].data, items[i].len, mac_key, mac_key_len))) {
            if (rc == KC_EPERM) rc = kc_err(KC_EPERM, "bundle '%s': entry '%s' refused: %s", path, items[i].name,
                                            kc_error_last()->message);
            *mac_refused = rc == KC_EPERM; /* only this counts as mac_rejected, not a name refused (also EPERM) */
            goto fail;
        }
        /* The one identity check (kc_entry_decode_as): the entry holds the key and variant its name says. */
        kc_key want;
        char hex[KC_KEY_HEX_LEN + 1];
        memcpy(hex, items[i].name, KC_KEY_HEX_LEN); /* the name passed kc_store_name_check */
        hex[KC_KEY_HEX_LEN] = '\0';
        kc_entry *e = NULL;
        if ((rc = kc_key_from_hex(&want, hex)) == KC_OK)
            rc = kc_entry_decode_as(&e, items[i].data, items[i].len, &want, items[i].name + KC_KEY_HEX_LEN + 1);
        kc_entry_free(e);
        if (rc) {
            if (rc != KC_ENOMEM) rc = BAD(path, "entry '%s': %s", items[i].name, kc_error_last()->message);
            goto fail;
        }
    }
    free(toc);
    free(order);
    free(file);
    *content_out = content;
    *items_out = items;
    *n_out = count;
    return KC_OK;
fail:
    free(toc);
    free(order);
    free(file);
    free(content);
    free(items);
    return rc;
}

int kc_bundle_import(kc_cache *c, const char *path, int dry_run, kc_bundle_report *out) {
    if (!c || !path) return kc_err(KC_EINVAL, "kc_bundle_import: NULL argument");
    if (out) memset(out, 0, sizeof *out);
    uint8_t *content = NULL;
    im_item *items = NULL;
    size_t n = 0;
    size_t klen;
    const uint8_t *key = kc_cache_mac_key_(c, &klen);
    bool mac_refused = false;
    int rc = verify(path, key, klen, &content, &items, &n, &mac_refused);
    if (mac_refused) kc_cache_count(c, NULL, KC_STAT_MAC_REJECTED, 1);
    if (rc) return rc;
    kc_bundle_report rep = {n, 0, 0, 0};
    for (size_t i = 0; i < n; i++) rep.bytes += items[i].len;
    kc_local *l = kc_cache_local_(c);
    if (!dry_run && (!l || kc_cache_mode(c) != KC_CACHE_READWRITE)) rc = kc_err(KC_EREADONLY, "the cache is read-only or disabled");
    for (size_t i = 0; !dry_run && !rc && i < n; i++) {
        void *old;
        size_t olen;
        if (kc_local_read(l, items[i].name, &old, &olen) == KC_OK) {
            int same = olen == items[i].len && memcmp(old, items[i].data, olen) == 0;
            free(old);
            if (same) {
                rep.unchanged++;
                continue;
            }
        }
        rc = kc_local_put(l, items[i].name, items[i].data, items[i].len);
        if (rc == KC_OK) rep.written++;
        else if (rep.written) /* a full disk mid-way: say what is already in, never "unchanged" */
            kc_err_prefix(rc, "bundle '%s': import stopped at entry %zu of %zu ('%s') after writing %llu (they stay in "
                          "the cache; importing again writes the rest)", path, i + 1, n, items[i].name,
                          (unsigned long long)rep.written);
    }
    /* The toolchains whose entries are now here, for a host without NVRTC (cache/record.h). */
    for (size_t i = 0; !dry_run && !rc && i < n; i++) {
        kc_entry *e;
        if (kc_entry_decode(&e, items[i].data, items[i].len) != KC_OK) continue;
        kc_cache_toolchain_note_(c, kc_entry_toolchain(e));
        kc_cache_toolkit_note_(c, kc_entry_toolchain(e));
        kc_entry_free(e);
    }
    free(content);
    free(items);
    if (out) *out = rep;
    return rc;
}
