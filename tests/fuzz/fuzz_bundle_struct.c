/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_bundle_struct.c — libFuzzer target: bundles of EVERY format version (v1..v4) and record
 * kind (entries, coverage, profiles, seal), whose checksums the harness rebuilds after the
 * fuzzer's mutation, imported (dry run) and their coverage read back.  A parse-fix-reserialize
 * harness: the fuzzer mutates the inflated content; the harness frames it as bundle.h says and
 * makes right what a mutation would otherwise break at the first check.
 *
 * Input := sel:u8 count:u32 content
 *   version = 1 + sel % 4; sel & 4: the scratch cache holds a MAC key (KCACHE_HMAC_KEY's path:
 *   every entry and the seal must carry its MAC), and the harness MACs the v4 seal with it.
 *   content: as in include/kcache/bundle.h for that version (toc entry_bytes* then the records).
 * Made right: each framed entry's own checksums (harness.h fz_fix_entry) and its toc sum; in v4,
 * when the records frame (clen covers plen profiles), the seal is made again over the bytes
 * before it (SHA-256, an entry of variant "bundle", MACed when sel & 4) and ends the content;
 * then the compression, the payload sum and the header.  So mutations reach the toc's bounds,
 * the names, the entries, the coverage record, the profiles and the seal's checks of every
 * version, with and without trust.  Seeds: tests/fuzz/corpus/bundle_struct (tools/fuzz_bundle_seeds.py).
 *
 * A custom mutator (LLVMFuzzerCustomMutator) makes one mutation in four structural: it parses the
 * input's toc and the records after the entries, picks one length or offset field and sets it
 * to a boundary of what holds it — the whole content, what remains after the table, one past
 * it, zero, all ones — so the bounds of every length are tried in a few thousand runs (a byte
 * flip seldom lands on "exactly the whole content"); the others are libFuzzer's own. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/sha.h>
#include <zstd.h>

#include "harness.h"

static const char MAC_KEY[] = "fuzz-bundle-struct-mac-key";

/* Two scratch caches, made once: without trust, and with the MAC key. */
static kc_cache *scratch(int mac, char *path, size_t cap) {
    static kc_cache *cache[2];
    static char file[2][256];
    if (!cache[mac]) {
        char tmpl[96];
        snprintf(tmpl, sizeof tmpl, "/tmp/kcfuzz-bstruct%d-XXXXXX", mac);
        char *d = mkdtemp(tmpl);
        kc_options o = KC_OPTIONS_INIT;
        o.dir = d;
        o.flags = KC_OPEN_NO_ENV;
        if (mac) o.hmac_key = MAC_KEY, o.hmac_key_len = sizeof MAC_KEY - 1;
        if (!d || kc_cache_open(&cache[mac], &o) != KC_OK) abort();
        snprintf(file[mac], sizeof file[mac], "%s/in.kcb", d);
    }
    snprintf(path, cap, "%s", file[mac]);
    return cache[mac];
}

static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The seal of `len` content bytes (bundle.h: an entry of variant "bundle"); malloc'ed, or NULL. */
static uint8_t *make_seal(const uint8_t *c, size_t len, int mac, size_t *slen) {
    uint8_t d[32];
    SHA256(c, len, d);
    kc_key k;
    memcpy(k.bytes, d, 16);
    kc_entry *e = NULL;
    void *bytes = NULL;
    size_t n = 0;
    if (kc_entry_new(&e, &k, "bundle") != KC_OK) return NULL;
    int rc = kc_entry_set_section(e, KC_SECTION_RUNTIME_META, d, sizeof d);
    if (!rc) rc = kc_entry_encode(e, &bytes, &n);
    if (!rc && mac) rc = kc_entry_seal(&bytes, &n, MAC_KEY, sizeof MAC_KEY - 1);
    kc_entry_free(e);
    if (rc) return free(bytes), NULL;
    *slen = n;
    return bytes;
}

/* Fix the framed entries' checksums and toc sums; the offset where the entries end, or 0 when
 * the toc or the entries do not frame. */
static size_t fix_entries(uint8_t *c, size_t raw, uint32_t count) {
    size_t at = 0, end = 0;
    struct {
        size_t sum_at;
        uint64_t off, len;
    } toc[64];
    if (count > 64) return 0;
    for (uint32_t i = 0; i < count; i++) {
        if (raw - at < 2) return 0;
        size_t nl = (size_t)c[at] | (size_t)c[at + 1] << 8;
        if (raw - at - 2 < nl + 24) return 0;
        at += 2 + nl;
        toc[i].off = fz_rd64(c + at);
        toc[i].len = fz_rd64(c + at + 8);
        toc[i].sum_at = at + 16;
        at += 24;
    }
    int framed = 1;
    for (uint32_t i = 0; i < count; i++) {
        size_t body = raw - at; /* the entries follow the toc */
        if (toc[i].off > body || toc[i].len > body - toc[i].off) {
            framed = 0;
            continue;
        }
        uint8_t *ent = c + at + toc[i].off;
        fz_fix_entry(ent, (size_t)toc[i].len);
        fz_wr64(c + toc[i].sum_at, XXH3_64bits(ent, (size_t)toc[i].len));
        if (toc[i].off + toc[i].len > end) end = (size_t)(toc[i].off + toc[i].len);
    }
    return framed ? at + end : 0;
}

/* v4: when clen covers plen profiles frame after the entries (at `e`), the seal is made again and
 * ends the content; *raw its new length.  The buffer has room for SEAL_ROOM more bytes. */
#define SEAL_ROOM 4096
static void fix_seal(uint8_t *c, size_t *raw, size_t e, int mac) {
    size_t at = e;
    for (int rec = 0; rec < 2; rec++) { /* the coverage record, then the profiles */
        if (*raw - at < 4) return;
        uint32_t n = fz_rd32(c + at);
        if (*raw - at - 4 < n) return;
        at += 4 + n;
    }
    size_t slen = 0;
    uint8_t *seal = make_seal(c, at, mac, &slen);
    if (!seal || slen > SEAL_ROOM - 4) return free(seal);
    wr32(c + at, (uint32_t)slen);
    memcpy(c + at + 4, seal, slen);
    *raw = at + 4 + slen;
    free(seal);
}

/* ---- the structural mutator ---- */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);

typedef struct field {
    size_t at;     /* in the input */
    int wide;      /* u64 (toc) or u32 (a record's length) */
    uint64_t base; /* where what it measures starts, in the content */
} field;

/* Length and offset fields of the input: each toc row's offset and size, then (v3, v4) the
 * records' lengths after the entries; returns how many, *body where the entries start. */
static size_t fields_of(const uint8_t *d, size_t size, field *f, size_t cap, size_t *body) {
    const uint8_t *c = d + 5;
    size_t raw = size - 5, at = 0, n = 0, end = 0;
    uint32_t count = fz_rd32(d + 1);
    for (uint32_t i = 0; i < count && i < 64 && n + 2 <= cap; i++) {
        if (raw - at < 2) break;
        size_t nl = (size_t)c[at] | (size_t)c[at + 1] << 8;
        if (raw - at - 2 < nl + 24) break;
        at += 2 + nl;
        uint64_t off = fz_rd64(c + at), len = fz_rd64(c + at + 8);
        f[n++] = (field){5 + at, 1, 0};
        f[n++] = (field){5 + at + 8, 1, off};
        if (off <= raw && len <= raw - off && off + len > end) end = (size_t)(off + len);
        at += 24;
    }
    *body = at;
    for (size_t p = at + end; n < cap && raw >= 4 && p <= raw - 4;) { /* clen, plen, slen */
        f[n++] = (field){5 + p, 0, p + 4};
        uint32_t l = fz_rd32(c + p);
        if (l > raw - p - 4) break;
        p += 4 + l;
    }
    return n;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed) {
    if (seed % 4 != 0 || size < 5) return LLVMFuzzerMutate(data, size, max);
    field f[160];
    size_t body, n = fields_of(data, size, f, 160, &body);
    if (n == 0) return LLVMFuzzerMutate(data, size, max);
    const field *x = &f[(seed / 4) % n];
    uint64_t raw = size - 5, after = raw - body; /* the whole content; the bytes after the table */
    uint64_t room = x->base <= raw ? raw - x->base : 0;
    uint64_t values[] = {raw, after, after + 1, room, room + 1, room ? room - 1 : 0, 0, UINT64_MAX, raw - x->base};
    uint64_t v = values[(seed / 4 / n) % (sizeof values / sizeof *values)];
    if (x->wide) fz_wr64(data + x->at, v);
    else wr32(data + x->at, (uint32_t)v);
    return size;
}

/* ---- the target ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 5) return 0;
    int version = 1 + data[0] % 4, mac = (data[0] & 4) != 0;
    char path[256];
    kc_cache *cache = scratch(mac, path, sizeof path);
    uint32_t count = fz_rd32(data + 1);
    size_t raw = size - 5;
    uint8_t *c = malloc(raw + SEAL_ROOM);
    if (!c) return 0;
    memcpy(c, data + 5, raw);
    size_t e = fix_entries(c, raw, count);
    if (version == 4 && (e || count == 0)) fix_seal(c, &raw, e, mac);
    size_t cap = ZSTD_compressBound(raw);
    uint8_t *file = malloc(48 + cap);
    if (!file) return free(c), 0;
    size_t stored = ZSTD_compress(file + 48, cap, c, raw, 1);
    if (ZSTD_isError(stored)) abort();
    static const uint8_t magic[8] = {0x89, 'K', 'C', 'B', '\r', '\n', 0x1a, '\n'};
    memcpy(file, magic, 8);
    file[8] = (uint8_t)version, file[9] = 0, file[10] = 0, file[11] = 0;
    wr32(file + 12, count);
    fz_wr64(file + 16, raw);
    fz_wr64(file + 24, stored);
    fz_wr64(file + 32, XXH3_64bits(c, raw));
    fz_wr64(file + 40, XXH3_64bits(file, 40));
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(file, 1, 48 + stored, f);
    fclose(f);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    fz_say("import", kc_bundle_import(cache, path, 1, &r));
    kc_bundle_coverage *cov = NULL;
    fz_say("coverage", kc_bundle_coverage_read(path, &cov));
    kc_bundle_coverage_free(cov);
    free(file);
    free(c);
    return 0;
}
