/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutate_entry.h — a structure-aware mutator for the entry format (kcache/entry.h), shared by the
 * entry targets' LLVMFuzzerCustomMutator (fuzz_entry_sums.c, fuzz_entry_sig.c).
 *
 * The one idea: a byte flipped in an entry almost always lands in a checksum, a length or a zstd
 * frame, so libFuzzer's own mutations mostly test the first check.  This mutator decodes the
 * container itself (header, section table, each section's bytes inflated when zstd), changes one
 * thing — a section's raw bytes (libFuzzer's mutation, with the target's dictionary), a header
 * field (the version among every one ever written, 1 to 5; flags; the variant among every kind
 * of object; the key), the table (a type, a codec, a section dropped, doubled, swapped or added) —
 * and encodes it again with every length, offset and checksum right (zstd sections compressed
 * again, header_sum over the new table, total_len).  So the mutations reach the section
 * parsers behind the checks, under every codec, and the version check sees every version's
 * shape (the golden v2 and v3 entries are seeds: their sections, relabelled v4, reach the v4
 * parsers too).  One time in eight the bytes are mutated raw and only the checksums made right
 * (fz_fix_entry), so a length or an offset the encoder would never write is tried as well.
 *
 * Bytes that are not an entry's shape are mutated raw.  A MAC or signature trailer is kept as
 * its length of bytes (flags bit 0: 32, bit 1: 72); a target that checks one seals or signs after
 * mutating (fuzz_entry_sig.c signs).  Must not: write past `max`; fail (it always returns a size).
 */
#ifndef KCACHE_FUZZ_MUTATE_ENTRY_H
#define KCACHE_FUZZ_MUTATE_ENTRY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "harness.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

enum { FZ_E_HDR = 96, FZ_E_DESC = 40, FZ_E_MAXSEC = 16, FZ_E_SECMAX = 1 << 20 };

typedef struct {
    uint32_t type, codec;
    uint8_t *raw;
    size_t len;
} fz_esec;

typedef struct {
    uint8_t hdr[FZ_E_HDR];
    fz_esec s[FZ_E_MAXSEC];
    size_t n;
    size_t trailer; /* bytes after the last section (MAC, signature) */
} fz_ent;

static inline uint32_t fz_rand(uint64_t *st) {
    *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
    return (uint32_t)(*st >> 11);
}

static inline void fz_ent_free(fz_ent *e) {
    for (size_t i = 0; i < e->n; i++) free(e->s[i].raw);
    e->n = 0;
}

/* The sections of an entry as written (each inflated when zstd and its frame sound); 0 when the
 * bytes are not an entry's shape (the header, table and sections must lie inside them). */
static inline int fz_ent_parse(const uint8_t *p, size_t n, fz_ent *e) {
    memset(e, 0, sizeof *e);
    if (n < FZ_E_HDR || memcmp(p, "\x89KCE\r\n\x1a\n", 8) != 0) return 0;
    uint32_t nsec = fz_rd32(p + 72), flags = fz_rd32(p + 12);
    if (nsec < 1 || nsec > FZ_E_MAXSEC || FZ_E_HDR + (size_t)nsec * FZ_E_DESC > n) return 0;
    memcpy(e->hdr, p, FZ_E_HDR);
    e->trailer = (flags & 1) ? 32 : (flags & 2) ? 72 : 0;
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *d = p + FZ_E_HDR + (size_t)i * FZ_E_DESC;
        uint64_t raw = fz_rd64(d + 8), stored = fz_rd64(d + 16), off = fz_rd64(d + 24);
        if (off > n || stored > n - off || stored > FZ_E_SECMAX) return fz_ent_free(e), 0;
        fz_esec *s = &e->s[e->n++];
        s->type = fz_rd32(d);
        s->codec = fz_rd32(d + 4);
        s->raw = malloc(stored + 1);
        if (!s->raw) return fz_ent_free(e), 0;
        s->len = stored;
        memcpy(s->raw, p + off, stored);
        if (s->codec == 1 && raw <= FZ_E_SECMAX) {
            uint8_t *r = malloc(raw + 1);
            size_t got = r ? ZSTD_decompress(r, raw, p + off, stored) : 0;
            if (r && !ZSTD_isError(got) && got == raw) {
                free(s->raw);
                s->raw = r, s->len = raw;
            } else {
                free(r);
                s->codec = 0; /* a frame that does not inflate: its bytes, stored as they are */
            }
        }
    }
    return 1;
}

/* Encode: header (version, flags, key, variant as they are), the table, the sections contiguous
 * (zstd ones compressed at level 1; one whose codec is neither is stored as it is, so the decoder
 * sees the unknown codec), the trailer's length of zero bytes; total_len, checksums, header_sum.
 * 0 when it does not fit in max. */
static inline size_t fz_ent_build(const fz_ent *e, uint8_t *out, size_t max) {
    size_t at = FZ_E_HDR + e->n * FZ_E_DESC;
    if (e->n < 1 || at > max) return 0;
    memcpy(out, e->hdr, FZ_E_HDR);
    out[72] = (uint8_t)e->n, out[73] = out[74] = out[75] = 0;
    for (size_t i = 0; i < e->n; i++) {
        const fz_esec *s = &e->s[i];
        size_t stored = s->len;
        if (s->codec == 1) {
            size_t bound = ZSTD_compressBound(s->len);
            if (bound > max - at) return 0;
            stored = ZSTD_compress(out + at, max - at, s->raw, s->len, 1);
            if (ZSTD_isError(stored)) return 0;
        } else {
            if (s->len > max - at) return 0;
            memcpy(out + at, s->raw, s->len);
        }
        uint8_t *d = out + FZ_E_HDR + i * FZ_E_DESC;
        for (int k = 0; k < 4; k++) d[k] = (uint8_t)(s->type >> (8 * k)), d[4 + k] = (uint8_t)(s->codec >> (8 * k));
        fz_wr64(d + 8, s->codec == 1 ? s->len : stored);
        fz_wr64(d + 16, stored);
        fz_wr64(d + 24, at);
        fz_wr64(d + 32, XXH3_64bits(out + at, stored));
        at += stored;
    }
    if (e->trailer > max - at) return 0;
    memset(out + at, 0, e->trailer);
    at += e->trailer;
    fz_fix_entry(out, at); /* total_len and header_sum (the section sums are already right) */
    return at;
}

static const char *const fz_variants[] = {"sm_80", "sm_90a", "compute_80", "img", "unit", "profile", "sm_80x", "A"};

/* One change to the decoded entry. */
static inline void fz_ent_change(fz_ent *e, uint64_t *rs) {
    uint32_t r = fz_rand(rs) % 16;
    fz_esec *s = &e->s[fz_rand(rs) % e->n];
    if (r < 8) { /* a section's bytes, as libFuzzer mutates (its dictionary included) */
        size_t cap = s->len * 2 + 64;
        if (cap > FZ_E_SECMAX) cap = FZ_E_SECMAX;
        if (cap < s->len) cap = s->len;
        uint8_t *b = realloc(s->raw, cap + 1);
        if (!b) return;
        s->raw = b;
        s->len = LLVMFuzzerMutate(b, s->len, cap);
    } else if (r == 8) { /* the version: every one ever written, and the next */
        static const uint16_t v[] = {1, 2, 3, 4, 4, 4, 5};
        uint16_t x = v[fz_rand(rs) % 7];
        e->hdr[8] = (uint8_t)x, e->hdr[9] = (uint8_t)(x >> 8);
    } else if (r == 9) { /* flags: none, MAC, signature, both, unknown */
        static const uint8_t f[] = {0, 0, 1, 2, 3, 4};
        uint8_t x = f[fz_rand(rs) % 6];
        e->hdr[12] = x;
        e->trailer = (x & 1) ? 32 : (x & 2) ? 72 : 0;
    } else if (r == 10) { /* the variant: each kind of object, and malformed ones */
        memset(e->hdr + 32, 0, 32);
        const char *v = fz_variants[fz_rand(rs) % (sizeof fz_variants / sizeof *fz_variants)];
        memcpy(e->hdr + 32, v, strlen(v));
    } else if (r == 11) { /* a section's type (1..11, and 0 or 12 past them) */
        s->type = fz_rand(rs) % 13;
    } else if (r == 12) { /* its codec: none, zstd, unknown */
        s->codec = fz_rand(rs) % 3;
    } else if (r == 13 && e->n > 1) { /* one dropped */
        free(s->raw);
        *s = e->s[--e->n];
    } else if (r == 14 && e->n < FZ_E_MAXSEC) { /* one added: a copy, or an empty one of any type */
        fz_esec *t = &e->s[e->n];
        t->type = fz_rand(rs) & 1 ? s->type : fz_rand(rs) % 13;
        t->codec = s->codec;
        t->len = fz_rand(rs) & 1 ? s->len : 0;
        t->raw = malloc(t->len + 1);
        if (!t->raw) return;
        memcpy(t->raw, s->raw, t->len);
        e->n++;
    } else if (e->n > 1) { /* two swapped */
        fz_esec *t = &e->s[fz_rand(rs) % e->n], x = *s;
        *s = *t, *t = x;
    }
}

/* The mutator: structured seven times in eight, raw (checksums made right) otherwise. */
static inline size_t fz_entry_mutate(uint8_t *data, size_t size, size_t max, unsigned seed) {
    uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 1;
    fz_ent e;
    if (fz_rand(&rs) % 8 != 0 && fz_ent_parse(data, size, &e)) {
        int times = 1 + (int)(fz_rand(&rs) % 3);
        for (int i = 0; i < times; i++) fz_ent_change(&e, &rs);
        uint8_t *out = malloc(max ? max : 1);
        size_t n = out ? fz_ent_build(&e, out, max) : 0;
        if (n) memcpy(data, out, n);
        free(out);
        fz_ent_free(&e);
        if (n) return n;
    }
    size = LLVMFuzzerMutate(data, size, max);
    fz_fix_entry(data, size);
    return size;
}

#endif
