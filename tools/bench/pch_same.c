/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pch_same.c — are the caches a prewarm wrote with and without precompiled headers the same?
 * (pch.c, after each pair of runs.)
 *
 * The one idea: names of graph entries and unit records are keys, so they must match one for one,
 * and each pair must hold the same sections — byte for byte, or but for their time stamps (META's
 * creation time, ORIGIN's compile times), or but for those and the ids of the images they refer
 * to.  Images are named by their bytes, so they are matched by content: byte-identical, or
 * identical once NVRTC's per-process names are masked.  NVRTC names internal-linkage symbols
 * (libcu++'s cuda::std objects, anonymous namespaces) `_INTERNAL_<8 hex>_<len>_<file>_<8 hex>_<pid>`
 * and `_GLOBAL__N__…` the same way: two processes compiling the same source write different
 * cubins whatever PCH does (kernels/rmsnorm_bf16.cu is one), so a comparison across processes
 * that did not mask them would blame PCH for NVRTC's process id.  Masking is the same on both
 * sides and touches only the hex and the digits after such a marker.
 *
 * Must not: call two files the same that differ anywhere but where said above.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bench.h"

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The entry files of the cache on `dir` ("<shard>/<name>.kce"), sorted; their count into *n. */
static char **entry_files(const char *dir, int *n) {
    char v1[4200], shard[4300];
    snprintf(v1, sizeof v1, "%s/v1", dir);
    char **v = NULL;
    int cap = 0;
    *n = 0;
    DIR *top = opendir(v1);
    struct dirent *sd, *de;
    while (top && (sd = readdir(top))) {
        if (strlen(sd->d_name) != 2 || sd->d_name[0] == '.') continue;
        snprintf(shard, sizeof shard, "%s/%s", v1, sd->d_name);
        DIR *sh = opendir(shard);
        while (sh && (de = readdir(sh))) {
            size_t l = strlen(de->d_name);
            if (de->d_name[0] == '.' || l < 5 || strcmp(de->d_name + l - 4, ".kce")) continue;
            if (*n == cap) {
                char **nv = realloc(v, (size_t)(cap = cap ? cap * 2 : 256) * sizeof *v);
                if (!nv) break;
                v = nv;
            }
            v[*n] = malloc(l + 4);
            if (v[*n]) snprintf(v[*n], l + 4, "%s/%s", sd->d_name, de->d_name), (*n)++;
        }
        if (sh) closedir(sh);
    }
    if (top) closedir(top);
    if (v) qsort(v, (size_t)*n, sizeof *v, cmp_name);
    return v;
}

static void *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = l >= 0 ? malloc((size_t)l + 1) : NULL;
    if (b && fread(b, 1, (size_t)l, f) != (size_t)l) free(b), b = NULL;
    fclose(f);
    *len = b ? (size_t)l : 0;
    return b;
}

static kc_entry *load(const char *dir, const char *name) {
    char p[4400];
    size_t len;
    snprintf(p, sizeof p, "%s/v1/%s", dir, name);
    void *b = slurp(p, &len);
    kc_entry *e = NULL;
    if (b && kc_entry_decode(&e, b, len) != KC_OK) e = NULL;
    free(b);
    return e;
}

/* ---- masking ---- */

/* Zero each image reference's id and SHA-256 in a copy of an IMAGES section (count, refs) or a UNIT
 * section (one ref first): the part that names the image's bytes. */
static void mask_refs(uint8_t *b, size_t len, int images) {
    size_t off = 0, count = 1;
    if (images) {
        if (len < 4) return;
        count = b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
        off = 4;
    }
    for (size_t i = 0; i < count && off + 52 <= len; i++) {
        memset(b + off, 0, 48);
        size_t tl = b[off + 48] | (size_t)b[off + 49] << 8 | (size_t)b[off + 50] << 16 | (size_t)b[off + 51] << 24;
        off += 52 + tl + 1 + 8;
    }
}

/* Mask NVRTC's per-process names in place: after each "_INTERNAL_" or "_GLOBAL__N__", the 8 hex
 * and the digits that follow "_<file>_" (its module id and process id).  The most digits masked
 * after one (0: no such name): two processes whose ids differ in length lay the cubin out
 * differently, and then no mask makes their images comparable. */
static int mask_internal(uint8_t *b, size_t len) {
    int most = 0;
    static const char *const marks[] = {"_INTERNAL_", "_GLOBAL__N__"};
    for (int m = 0; m < 2; m++) {
        size_t ml = strlen(marks[m]);
        for (uint8_t *p = b; (p = memmem(p, len - (size_t)(p - b), marks[m], ml)) != NULL; p += ml) {
            /* <8 hex>_<n>_<n chars of file>_<8 hex>_<digits> */
            uint8_t *q = p + ml, *end = b + len;
            if (end - q < 12 || q[8] != '_') continue;
            char *after;
            long n = strtol((const char *)q + 9, &after, 10);
            q = (uint8_t *)after;
            if (n <= 0 || q >= end || *q != '_' || end - q < n + 11 || q[n + 1] != '_' || q[n + 10] != '_') continue;
            q += n + 2;
            memset(q, '0', 8);
            int d = 0;
            for (q += 9; q < end && *q >= '0' && *q <= '9'; q++, d++) *q = '0';
            if (d > most) most = d;
        }
    }
    return most;
}

/* ---- graph entries and unit records ---- */

/* 1 when a and b hold the same in every section but the time stamps (META's creation time,
 * ORIGIN's records); with `refs`, also but the ids of the images they refer to. */
static int same_sections(const kc_entry *a, const kc_entry *b, int refs) {
    size_t n = kc_entry_digest_count(a);
    const char *ta = kc_entry_toolchain(a), *tb = kc_entry_toolchain(b);
    if (n != kc_entry_digest_count(b) || strcmp(kc_entry_variant(a), kc_entry_variant(b)) ||
        memcmp(kc_entry_key(a), kc_entry_key(b), sizeof(kc_key)) || strcmp(ta ? ta : "", tb ? tb : ""))
        return 0;
    for (size_t i = 0; i < n; i++) {
        const char *na, *nb;
        kc_digest da, db;
        if (kc_entry_digest_at(a, i, &na, &da) || kc_entry_digest_at(b, i, &nb, &db) || strcmp(na, nb) ||
            memcmp(&da, &db, sizeof da))
            return 0;
    }
    for (int t = KC_SECTION_FORWARD; t < KC_SECTION_ORIGIN; t++) {
        const void *x, *y;
        size_t lx, ly;
        int ra = kc_entry_section(a, (kc_section_type)t, &x, &lx);
        if (ra != kc_entry_section(b, (kc_section_type)t, &y, &ly)) return 0;
        if (ra != KC_OK) continue;
        if (lx != ly) return 0;
        if (!memcmp(x, y, lx)) continue;
        if (!refs || (t != KC_SECTION_IMAGES && t != KC_SECTION_UNIT)) return 0;
        uint8_t *mx = malloc(lx + 1), *my = malloc(ly + 1);
        int same = mx && my;
        if (same) {
            memcpy(mx, x, lx), memcpy(my, y, ly);
            mask_refs(mx, lx, t == KC_SECTION_IMAGES), mask_refs(my, ly, t == KC_SECTION_IMAGES);
            same = !memcmp(mx, my, lx);
        }
        free(mx), free(my);
        if (!same) return 0;
    }
    return 1;
}

/* 0: byte-identical, 1: but the time stamps, 2: but those and image ids, 3: different or unreadable. */
static int compare_file(const char *da, const char *db, const char *name) {
    char pa[4400], pb[4400];
    snprintf(pa, sizeof pa, "%s/v1/%s", da, name);
    snprintf(pb, sizeof pb, "%s/v1/%s", db, name);
    size_t la, lb;
    void *a = slurp(pa, &la), *b = slurp(pb, &lb);
    int same = a && b && la == lb && !memcmp(a, b, la);
    free(a), free(b);
    if (same) return 0;
    kc_entry *ea = load(da, name), *eb = load(db, name);
    int r = !ea || !eb ? 3 : same_sections(ea, eb, 0) ? 1 : same_sections(ea, eb, 1) ? 2 : 3;
    kc_entry_free(ea), kc_entry_free(eb);
    return r;
}

/* ---- images, by content ---- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The images of `names` in `dir`: XXH3-64 of each one's IMAGE section as stored (raw) and masked;
 * digits[0] the images that hold NVRTC's per-process names, digits[1] the most digits masked. */
static int image_hashes(const char *dir, char **names, int n, uint64_t *raw, uint64_t *masked, int digits[2]) {
    int k = 0;
    digits[0] = digits[1] = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (l < 8 || strcmp(names[i] + l - 8, ".img.kce")) continue;
        kc_entry *e = load(dir, names[i]);
        const void *s;
        size_t sl;
        raw[k] = masked[k] = (uint64_t)i; /* unreadable: matches nothing on the other side */
        if (e && kc_entry_section(e, KC_SECTION_IMAGE, &s, &sl) == KC_OK && sl > 48) {
            uint8_t *m = malloc(sl + 1);
            raw[k] = XXH3_64bits((const uint8_t *)s + 48, sl - 48); /* past the ref's id and SHA-256 */
            if (m) {
                memcpy(m, s, sl), m[sl] = 0;
                int d = mask_internal(m + 48, sl - 48);
                masked[k] = XXH3_64bits(m + 48, sl - 48);
                digits[0] += d > 0;
                if (d > digits[1]) digits[1] = d;
            }
            free(m);
        }
        kc_entry_free(e);
        k++;
    }
    qsort(raw, (size_t)k, sizeof *raw, cmp_u64), qsort(masked, (size_t)k, sizeof *masked, cmp_u64);
    return k;
}

/* How many of a[na] and b[nb] (sorted) pair up as equal. */
static int common(const uint64_t *a, int na, const uint64_t *b, int nb) {
    int i = 0, j = 0, c = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j]) c++, i++, j++;
        else if (a[i] < b[j]) i++;
        else j++;
    }
    return c;
}

static void compare_images(const char *off, const char *on, char **a, int na, char **b, int nb, pch_work *w) {
    uint64_t *h = calloc((size_t)(na + nb) * 2 + 4, sizeof *h);
    if (!h) return;
    uint64_t *ra = h, *ma = ra + na, *rb = ma + na, *mb = rb + nb;
    int da[2], db[2];
    int ia = image_hashes(off, a, na, ra, ma, da), ib = image_hashes(on, b, nb, rb, mb, db);
    int same = common(ra, ia, rb, ib), masked = common(ma, ia, mb, ib);
    w->images = ia > ib ? ia : ib;
    w->img_same_bytes = same, w->img_same_masked = masked - same;
    int left = w->images - masked, named = da[0] < db[0] ? da[0] : db[0];
    /* process ids of other lengths: the images with such names cannot be compared (counted apart) */
    int nc = da[1] && db[1] && da[1] != db[1] ? (left < named ? left : named) : 0;
    w->img_not_comparable += nc;
    w->img_differ += left - nc;
    if (left > nc && !w->first_diff[0])
        snprintf(w->first_diff, sizeof w->first_diff, "an image (%d without PCH, %d with; %d match)", ia, ib, masked);
    free(h);
}

void pch_compare_caches(const char *off, const char *on, pch_work *w) {
    int na, nb, i = 0, j = 0;
    char **a = entry_files(off, &na), **b = entry_files(on, &nb);
    w->files = w->same_bytes = w->same_but_times = w->same_but_refs = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i], b[j]);
        const char *name = c <= 0 ? a[i] : b[j];
        size_t l = strlen(name);
        if (l >= 8 && !strcmp(name + l - 8, ".img.kce")) { /* images: by content, below */
            c <= 0 ? i++ : 0, c >= 0 ? j++ : 0;
            continue;
        }
        if (c) {
            w->unmatched++;
            if (!w->first_diff[0])
                snprintf(w->first_diff, sizeof w->first_diff, "%s: %s", c < 0 ? "only without PCH" : "only with PCH",
                         name);
            c < 0 ? i++ : j++;
            continue;
        }
        int r = compare_file(off, on, name);
        w->files++;
        if (r == 0) w->same_bytes++;
        else if (r == 1) w->same_but_times++;
        else if (r == 2) w->same_but_refs++;
        else {
            w->differ++;
            if (!w->first_diff[0]) snprintf(w->first_diff, sizeof w->first_diff, "differs: %s", name);
        }
        i++, j++;
    }
    compare_images(off, on, a, na, b, nb, w);
    for (int k = 0; k < na; k++) free(a[k]);
    for (int k = 0; k < nb; k++) free(b[k]);
    free(a), free(b);
    w->reps_compared++;
}
