/* SPDX-License-Identifier: Apache-2.0 */
/*
 * levels.c — what the two-level layout ([Note: two levels] in kcache/entry.h) costs a hit and
 * saves a compile, measured beside the rest of kcache-bench.
 *
 * The one idea: every figure is set against its own counterpart measured in the same run on
 * the same bytes, so a ratio says what the layout does and not what the machine did that day.
 *   - A hit's limit: read() + XXH3 + zstd of the graph entry file, then of each image file it
 *     refers to (plus the XXH3-128 that names an image) — and of the same bytes written as one
 *     file (one open, one read: the one-file layout's limit).  The difference is what the
 *     second level's extra reads cost; samples of both are interleaved.
 *   - A second static shape (kc_graph_desc_specialize): compiled in an empty cache (NVRTC runs
 *     every unit) against compiled after a first shape (its units are found: only the graph
 *     entry is written).
 *   - A cold prewarm of a manifest for one target: units compiled against unit uses, stored
 *     bytes by kind, and the bytes if every graph carried its own images.
 *
 * Must not: change what it measures to fit (a hit that is not a disk hit, a cold compile that
 * compiled less than every unit, is reported, not hidden), or read entries by any route but the
 * files the local store writes (<dir>/v1/<2 hex>/<name>.kce).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "bench.h"

/* ---- the limit: entries checked directly, the header parsed by hand (format v3, entry.h) ---- */

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

enum { HDR = 96, DESC = 40, SECTION_IMAGE = 9 };

/*
 * Check the entries that lie one after another in buf[0, n): per entry XXH3-64 of its header
 * and section table, XXH3-64 of every section's stored bytes, zstd of each compressed one, and
 * XXH3-128 of an IMAGE section's raw bytes (an image's name is that digest).  0, or -1.
 */
static int check_entries(const uint8_t *buf, size_t n, uint8_t *out, size_t outcap,
                         ZSTD_DCtx *z) { /* z NULL: no inflating */
    volatile uint64_t sink = 0;
    size_t at = 0;
    while (at < n) {
        const uint8_t *e = buf + at;
        size_t left = n - at;
        if (left < HDR) return -1;
        uint64_t total = rd64(e + 64);
        uint32_t nsec = rd32(e + 72);
        if (total < HDR || total > left || nsec < 1 || nsec > 16 || (uint64_t)HDR + DESC * nsec > total) return -1;
        sink ^= XXH3_64bits(e, HDR + (size_t)DESC * nsec);
        for (uint32_t i = 0; i < nsec; i++) {
            const uint8_t *d = e + HDR + (size_t)DESC * i;
            uint32_t type = rd32(d), codec = rd32(d + 4);
            uint64_t raw = rd64(d + 8), stored = rd64(d + 16), off = rd64(d + 24);
            if (off > total || stored > total - off) return -1;
            sink ^= XXH3_64bits(e + off, stored);
            const uint8_t *plain = e + off;
            size_t plain_len = stored;
            if (codec == 1 && z) {
                if (raw > outcap) return -1;
                size_t got = ZSTD_decompressDCtx(z, out, outcap, e + off, stored);
                if (ZSTD_isError(got)) return -1;
                plain = out, plain_len = got;
            }
            if (type == SECTION_IMAGE && (z || codec != 1)) sink ^= XXH3_128bits(plain, plain_len).low64;
        }
        at += total;
    }
    (void)sink;
    return 0;
}

/* One read() of the file at `path` (a regular file of at most cap bytes) and its check. */
static int limit_file(const char *path, uint8_t *buf, size_t cap, uint8_t *out, size_t outcap, ZSTD_DCtx *z) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap);
    close(fd);
    return n < HDR ? -1 : check_entries(buf, (size_t)n, out, outcap, z);
}

/* A stored object's file: <dir>/v1/<2 hex>/<hex>.<variant>.kce. */
static void object_path(const char *dir, const kc_key *key, const char *variant, char *out, size_t cap) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(key, hex);
    snprintf(out, cap, "%s/v1/%.2s/%s.%s.kce", dir, hex, hex, variant);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Append the file at `path` to `f`; 0 or -1. */
static int append_file(FILE *f, const char *path) {
    FILE *in = fopen(path, "rb");
    if (!in) return -1;
    char b[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(b, 1, sizeof b, in)) > 0)
        if (fwrite(b, 1, n, f) != n) rc = -1;
    fclose(in);
    return rc;
}

/* The files of one graph's hit: [0] the graph entry, [1..n] its images, [n+1] the same bytes as one file. */
typedef struct level_files {
    char (*paths)[4096];
    size_t n;
    size_t cap;   /* the largest of the files */
    size_t total; /* their bytes together */
} level_files;

/* Name the graph entry's files and write them as one file; 0, or -1 with out->why said. */
static int level_files_make(kc_cache *c, const kc_key *key, const char *dir, level_files *lf, levels_res *out) {
    kc_entry *e;
    kc_image_ref *refs = NULL;
    size_t n = 0;
    if (kc_cache_peek(c, key, arch, &e) != KC_OK) {
        snprintf(out->why, sizeof out->why, "no graph entry: %s", kc_error_last()->message);
        return -1;
    }
    int rc = kc_entry_images(e, &refs, &n);
    kc_entry_free(e);
    if (rc != KC_OK) {
        snprintf(out->why, sizeof out->why, "no images: %s", kc_error_last()->message);
        return -1;
    }
    char(*paths)[4096] = calloc(n + 2, sizeof *paths); /* [0] the graph entry, [1..n] images, [n+1] one file */
    object_path(dir, key, arch, paths[0], sizeof paths[0]);
    for (size_t i = 0; i < n; i++) object_path(dir, &refs[i].id, KC_VARIANT_IMAGE, paths[1 + i], sizeof paths[0]);
    snprintf(paths[n + 1], sizeof paths[0], "%s/one-file.kce", dir);
    free(refs);
    FILE *one = fopen(paths[n + 1], "wb");
    size_t cap = 0, total = 0;
    for (size_t i = 0; i <= n && one; i++) {
        long sz = file_size(paths[i]);
        if (sz < 0 || append_file(one, paths[i])) {
            snprintf(out->why, sizeof out->why, "cannot read %s", paths[i]);
            fclose(one);
            free(paths);
            return -1;
        }
        if (i == 0) out->graph_bytes = (size_t)sz;
        else out->image_bytes += (size_t)sz;
        if ((size_t)sz > cap) cap = (size_t)sz;
        total += (size_t)sz;
    }
    if (!one || fclose(one) != 0 || file_size(paths[n + 1]) != (long)total) {
        snprintf(out->why, sizeof out->why, "cannot write %s", paths[n + 1]);
        free(paths);
        return -1;
    }
    *lf = (level_files){paths, n, cap, total};
    return 0;
}

/* One round's samples, each its own series: entry read, image reads, both, one file, resolve, check, fetch,
 * compile-path hit. */
enum { V_ENTRY, V_IMAGES, V_LIMIT, V_ONE, V_RESOLVE, V_CHECK, V_FETCH, V_HIT, V_COUNT };

typedef struct level_round {
    kc_cache *c;
    const kc_graph_desc *d;
    const kc_key *key;
    const level_files *lf;
    uint8_t *buf, *dec;
    size_t bufcap, outcap;
    ZSTD_DCtx *z;
} level_round;

/* The N-file limit (entry, images, both) and the one-file read, which goes first alternating. */
static int limit_sample(const level_round *r, int k, double *v[V_COUNT]) {
    size_t n = r->lf->n, cap = r->lf->cap;
    char(*paths)[4096] = r->lf->paths;
    int bad = 0;
    double t0 = 0, t1 = 0, t2 = 0, s0 = 0, s1 = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == k % 2) { /* odd rounds: the one file first */
            t0 = now_us();
            bad |= limit_file(paths[0], r->buf, cap + 64, r->dec, r->outcap, r->z);
            t1 = now_us();
            for (size_t i = 1; i <= n; i++) bad |= limit_file(paths[i], r->buf, cap + 64, r->dec, r->outcap, r->z);
            t2 = now_us();
        } else {
            s0 = now_us();
            bad |= limit_file(paths[n + 1], r->buf, r->bufcap, r->dec, r->outcap, r->z);
            s1 = now_us();
        }
    }
    v[V_ENTRY][k] = t1 - t0, v[V_IMAGES][k] = t2 - t1, v[V_LIMIT][k] = t2 - t0, v[V_ONE][k] = s1 - s0;
    return bad;
}

/* One timed sample of series `which` into v[which][k]: read + check of the files, nothing inflated
 * (a compile-path hit's floor); a compile-path hit (kc_graph_compile, which must be a disk hit);
 * a lookup that hands out the bytes (the description's key, its graph entry, its images). */
static int timed_sample(const level_round *r, int which, int k, double *v[V_COUNT]) {
    int bad = 0;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_key fk;
    kc_entry *fe = NULL;
    double t0 = now_us();
    if (which == V_CHECK)
        for (size_t i = 0; i <= r->lf->n; i++)
            bad |= limit_file(r->lf->paths[i], r->buf, r->lf->cap + 64, r->dec, r->outcap, NULL);
    else if (which == V_HIT) bad = kc_graph_compile(r->c, r->d, arch, &info) != KC_OK || info.source != KC_FROM_DISK;
    else
        bad = kc_graph_key(r->d, &fk, NULL) != KC_OK || kc_cache_get(r->c, &fk, arch, &fe) != KC_OK ||
              kc_entry_resolve(r->c, fe) != KC_OK;
    v[which][k] = now_us() - t0;
    kc_entry_free(fe);
    return bad;
}

/*
 * Round k of every series into v[*][k]; nonzero when a file did not check or a hit was no disk
 * hit.  Each in-process hit is timed beside its own floor in the same round, and the order of
 * each pair alternates from round to round (the hit first, then its floor first), so that the
 * caches one leaves warm and the machine's drift favour neither.
 */
static int level_sample(const level_round *r, int k, double *v[V_COUNT]) {
    int bad = 0, odd = k % 2; /* each call its own statement: the order is the point */
    bad |= timed_sample(r, odd ? V_CHECK : V_HIT, k, v);
    bad |= timed_sample(r, odd ? V_HIT : V_CHECK, k, v);
    if (odd) bad |= limit_sample(r, k, v);
    bad |= timed_sample(r, V_FETCH, k, v);
    if (!odd) bad |= limit_sample(r, k, v);
    /* the library fetching the same images for a graph entry read beforehand (untimed) */
    kc_entry *ge;
    bad |= kc_cache_peek(r->c, r->key, arch, &ge) != KC_OK;
    if (!bad) {
        double t0 = now_us();
        bad |= kc_entry_resolve(r->c, ge) != KC_OK;
        v[V_RESOLVE][k] = now_us() - t0;
        kc_entry_free(ge);
    }
    return bad;
}

void bench_levels(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const char *dir, int iters, levels_res *out) {
    memset(out, 0, sizeof *out);
    level_files lf;
    if (level_files_make(c, key, dir, &lf, out)) return;
    size_t n = lf.n;
    out->images = (int)n;
    level_round r = {c, d, key, &lf, NULL, NULL, lf.total + 64, 64u << 20, ZSTD_createDCtx()};
    r.buf = malloc(r.bufcap), r.dec = malloc(r.outcap);
    double *v[V_COUNT];
    for (int i = 0; i < V_COUNT; i++) v[i] = calloc((size_t)iters, sizeof(double));
    int bad = 0;
    for (int k = 0; k < iters && !bad; k++) bad |= level_sample(&r, k, v);
    if (bad)
        snprintf(out->why, sizeof out->why,
                 "the files of the graph's hit did not check directly, or a hit was no disk hit");
    else {
        out->have = 1;
        out->entry_read = summarize(v[V_ENTRY], iters);
        out->image_reads = summarize(v[V_IMAGES], iters);
        out->limit = summarize(v[V_LIMIT], iters);
        out->one_file = summarize(v[V_ONE], iters);
        out->resolve = summarize(v[V_RESOLVE], iters);
        out->check = summarize(v[V_CHECK], iters);
        out->fetch = summarize(v[V_FETCH], iters);
        out->hit = summarize(v[V_HIT], iters);
    }
    ZSTD_freeDCtx(r.z);
    for (int i = 0; i < V_COUNT; i++) free(v[i]);
    free(r.buf), free(r.dec);
    unlink(lf.paths[n + 1]);
    free(lf.paths);
}

/* ---- a second static shape ---- */

enum { MAX_SYMS = 16 };

/* `d` with every symbol set to `v` (every input dimension static); 0, or -1 with why. */
static int shape_at(kc_graph_desc **out, const kc_graph_desc *d, int64_t v, char *why, size_t cap) {
    const char *names[MAX_SYMS];
    int64_t vals[MAX_SYMS];
    size_t ns = 0;
    while (ns < MAX_SYMS && (names[ns] = kc_graph_desc_symbol(d, ns))) vals[ns++] = v;
    size_t nin = kc_graph_desc_count(d, KC_ROLE_INPUT);
    kc_tensor_meta *in = calloc(nin ? nin : 1, sizeof *in);
    int rc = 0;
    for (size_t i = 0; i < nin && !rc; i++) {
        kc_graph_tensor_desc t = KC_GRAPH_TENSOR_DESC_INIT;
        rc = kc_graph_desc_tensor(d, KC_ROLE_INPUT, i, &t);
        in[i].dtype = t.dtype, in[i].device = KC_DEVICE_CUDA, in[i].rank = t.rank,
        in[i].requires_grad = t.requires_grad;
        for (int k = 0; k < t.rank && !rc; k++) {
            rc = kc_expr_eval(t.sizes[k], names, vals, ns, &in[i].sizes[k].value);
            if (!rc) rc = kc_expr_eval(t.strides[k] ? t.strides[k] : "1", names, vals, ns, &in[i].strides[k].value);
        }
    }
    if (!rc) rc = kc_graph_desc_specialize(out, d, in, nin, NULL, 0, NULL);
    if (rc) snprintf(why, cap, "%s", kc_error_last()->message);
    free(in);
    return rc ? -1 : 0;
}

static int compile_ok(kc_cache *c, const kc_graph_desc *d, kc_graph_info *info, double *us, char *why, size_t cap) {
    double t0 = now_us();
    int rc = kc_graph_compile(c, d, arch, info);
    *us = now_us() - t0;
    if (rc) snprintf(why, cap, "%s", kc_error_last()->message);
    else if (info->source != KC_FROM_COMPILE)
        snprintf(why, cap, "a compile in an empty cache was no compile (source %d)", info->source);
    return rc || info->source != KC_FROM_COMPILE ? -1 : 0;
}

void bench_second_shape(const char *spec, const char *dir, shape_res *out) {
    memset(out, 0, sizeof *out);
    kc_graph_desc *d, *a = NULL, *b = NULL;
    if (kc_graph_desc_load(&d, spec)) {
        snprintf(out->why, sizeof out->why, "%s", kc_error_last()->message);
        return;
    }
    snprintf(out->name, sizeof out->name, "%s", kc_graph_desc_name(d));
    const int64_t va = 256, vb = 512;
    if (!kc_graph_desc_symbol(d, 0)) {
        snprintf(out->why, sizeof out->why, "no symbolic dimension");
        kc_graph_desc_free(d);
        return;
    }
    size_t len = 0;
    for (size_t i = 0; kc_graph_desc_symbol(d, i) && len < sizeof out->shapes - 40; i++)
        len += (size_t)snprintf(out->shapes + len, sizeof out->shapes - len, "%s%s", i ? "," : "",
                                kc_graph_desc_symbol(d, i));
    snprintf(out->shapes + len, sizeof out->shapes - len, " %lld->%lld", (long long)va, (long long)vb);
    if (shape_at(&a, d, va, out->why, sizeof out->why) || shape_at(&b, d, vb, out->why, sizeof out->why)) {
        kc_graph_desc_free(a), kc_graph_desc_free(d);
        return;
    }
    kc_cache *c = open_at(dir);
    int reps = quick ? 1 : 5, bad = 0;
    double vc[8], vs[8];
    for (int r = 0; r < reps && !bad; r++) {
        kc_graph_info ia = KC_GRAPH_INFO_INIT, ib = KC_GRAPH_INFO_INIT;
        double ta;
        kc_cache_clear(c); /* cold: no graph entry, no image, no unit record */
        bad = compile_ok(c, b, &ib, &vc[r], out->why, sizeof out->why);
        if (!bad && (ib.units < 1 || ib.units_compiled != ib.units)) {
            snprintf(out->why, sizeof out->why, "the cold compile compiled %d of %d units", ib.units_compiled,
                     ib.units);
            bad = 1;
        }
        out->units = ib.units;
        kc_cache_clear(c);
        if (!bad) bad = compile_ok(c, a, &ia, &ta, out->why, sizeof out->why);
        if (!bad) bad = compile_ok(c, b, &ib, &vs[r], out->why, sizeof out->why);
        if (!bad && ib.units_compiled > out->second_units_compiled) out->second_units_compiled = ib.units_compiled;
    }
    if (!bad) {
        out->have = 1;
        out->cold = summarize(vc, reps);
        out->second = summarize(vs, reps);
    }
    kc_cache_clear(c);
    kc_cache_close(c);
    kc_graph_desc_free(a), kc_graph_desc_free(b), kc_graph_desc_free(d);
}

/* ---- a cold prewarm, and what it stored ---- */

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

/* Every graph entry file's bytes plus its images' files' bytes (shared images counted again). */
static size_t one_file_bytes(const char *dir, const char *path, size_t size) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint8_t *buf = malloc(size ? size : 1);
    size_t got = fread(buf, 1, size, f);
    fclose(f);
    kc_entry *e;
    kc_image_ref *refs;
    size_t n, total = 0;
    if (got == size && kc_entry_decode(&e, buf, size) == KC_OK) {
        if (kc_entry_images(e, &refs, &n) == KC_OK) {
            total = size;
            for (size_t i = 0; i < n; i++) {
                char p[4096];
                object_path(dir, &refs[i].id, KC_VARIANT_IMAGE, p, sizeof p);
                long sz = file_size(p);
                total += sz > 0 ? (size_t)sz : 0;
            }
            free(refs);
        }
        kc_entry_free(e);
    }
    free(buf);
    return total;
}

static void count_stored(const char *dir, prewarm_res *out);

void bench_prewarm(const char *manifest, const char *dir, prewarm_res *out) {
    memset(out, 0, sizeof *out);
    kc_manifest *m;
    if (kc_manifest_load(&m, manifest) || kc_manifest_set_archs(m, arch)) {
        snprintf(out->why, sizeof out->why, "%s", kc_error_last()->message);
        return;
    }
    kc_cache *c = open_at(dir);
    kc_cache_clear(c);
    kc_prewarm_options po = KC_PREWARM_OPTIONS_INIT;
    kc_prewarm_report *rep = NULL;
    double t0 = now_us();
    int rc = kc_prewarm(c, m, &po, &rep);
    out->seconds = (now_us() - t0) / 1e6;
    if (rc || !rep) {
        snprintf(out->why, sizeof out->why, "%s", kc_error_last()->message);
        kc_prewarm_report_free(rep);
        kc_cache_close(c);
        kc_manifest_free(m);
        return;
    }
    out->graphs = rep->variants;
    for (size_t i = 0; i < rep->variants; i++) {
        out->unit_uses += rep->results[i].info.units;
        out->units_compiled += rep->results[i].info.units_compiled;
    }
    kc_prewarm_report_free(rep);
    count_stored(dir, out);
    /* Two more static shapes of every graph: where units repeat, only graph entries are written. */
    size_t gb = out->graph_bytes, ib = out->image_bytes, ub = out->unit_bytes, of = out->one_file_bytes,
           ng = out->ngraph;
    size_t ni = out->nimages, nu = out->unit_records;
    int ok = 1;
    for (size_t i = 0; i < kc_manifest_graph_count(m) && ok; i++) {
        kc_graph_desc *d = NULL;
        if (kc_graph_desc_load(&d, kc_manifest_graph(m, i))) break;
        for (int s = 0; s < 2 && ok; s++) {
            kc_graph_desc *sd = NULL;
            char why[256];
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            ok = shape_at(&sd, d, s ? 768 : 384, why, sizeof why) == 0 && kc_graph_compile(c, sd, arch, &info) == KC_OK;
            if (ok) out->shape_units_compiled += info.units_compiled;
            kc_graph_desc_free(sd);
        }
        kc_graph_desc_free(d);
    }
    kc_cache_close(c);
    kc_manifest_free(m);
    if (ok) {
        count_stored(dir, out);
        out->have_shapes = 1;
        out->shape_ngraph = out->ngraph;
        out->shape_stored = out->graph_bytes + out->image_bytes + out->unit_bytes;
        out->shape_one_file = out->one_file_bytes;
    }
    out->graph_bytes = gb, out->image_bytes = ib, out->unit_bytes = ub, out->one_file_bytes = of, out->ngraph = ng;
    out->nimages = ni, out->unit_records = nu;
    out->have = 1;
}

/* What a cache directory stores, by kind, and what every graph carrying its own images would. */
static void count_stored(const char *dir, prewarm_res *out) {
    out->graph_bytes = out->image_bytes = out->unit_bytes = out->one_file_bytes = 0;
    out->ngraph = out->nimages = out->unit_records = 0;
    char v1[4096];
    snprintf(v1, sizeof v1, "%s/v1", dir);
    DIR *top = opendir(v1);
    struct dirent *sd;
    while (top && (sd = readdir(top))) {
        if (strlen(sd->d_name) != 2 || !strchr("0123456789abcdef", sd->d_name[0]) ||
            !strchr("0123456789abcdef", sd->d_name[1]))
            continue;
        char shard[4200];
        snprintf(shard, sizeof shard, "%s/%s", v1, sd->d_name);
        DIR *sh = opendir(shard);
        struct dirent *de;
        while (sh && (de = readdir(sh))) {
            if (de->d_name[0] == '.' || !ends_with(de->d_name, ".kce")) continue;
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", shard, de->d_name);
            long sz = file_size(p);
            if (sz < 0) continue;
            if (ends_with(de->d_name, ".img.kce")) out->nimages++, out->image_bytes += (size_t)sz;
            else if (ends_with(de->d_name, ".unit.kce")) out->unit_records++, out->unit_bytes += (size_t)sz;
            else {
                out->ngraph++, out->graph_bytes += (size_t)sz;
                out->one_file_bytes += one_file_bytes(dir, p, (size_t)sz);
            }
        }
        if (sh) closedir(sh);
    }
    if (top) closedir(top);
}

/* ---- printing: the second shape's table, the prewarm's lines, their JSON ---- */

void bench_shapes(const char (*specs)[1024], int ns, const char *root, shape_res *sh, double *m_sh, double *least) {
    double r_sh[32];
    int nsh = 0;
    printf("\nsecond static shape (the graph's symbols set to 256, then 512; %d run%s each; median [p10 .. p90] ms):\n"
           "%-14s %-16s %5s %24s %24s %9s %10s\n",
           quick ? 1 : 5, quick ? "" : "s", "graph", "shapes", "units", "cold (empty cache)", "after the first shape",
           "compiled", "cold/2nd");
    for (int i = 0; i < ns; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/shape%d", root, i);
        mkdir(dir, 0700);
        bench_second_shape(specs[i], dir, &sh[i]);
        rm_rf(dir);
        if (!sh[i].have) {
            printf("%-14s not measured (%s)\n", sh[i].name, sh[i].why);
            continue;
        }
        r_sh[nsh] = ratio(sh[i].cold.med, sh[i].second.med);
        char a[32], b[32];
        fmt_us(sh[i].cold.med, a, sizeof a);
        fmt_us(sh[i].second.med, b, sizeof b);
        printf("%-14s %-16s %5d %10s [%4.0f .. %4.0f] %10s [%4.1f .. %4.1f] %9d %9.0fx\n", sh[i].name, sh[i].shapes,
               sh[i].units, a, sh[i].cold.p10 / 1e3, sh[i].cold.p90 / 1e3, b, sh[i].second.p10 / 1e3,
               sh[i].second.p90 / 1e3, sh[i].second_units_compiled, r_sh[nsh]);
        nsh++;
        fflush(stdout);
    }
    *m_sh = nsh ? median_of(r_sh, nsh) : NAN;
    *least = nsh ? r_sh[0] : NAN; /* sorted by median_of */
    printf(
        "second shape, cold / after the first shape: median %.0fx, least %.0fx over %d graphs (acceptance: >= 10x)\n",
        *m_sh, *least, nsh);
}

void print_prewarm(const prewarm_res *pw, const char *manifest) {
    if (!pw->have) {
        printf("\ncold prewarm: not measured (%s)\n", pw->why);
        return;
    }
    size_t stored = pw->graph_bytes + pw->image_bytes + pw->unit_bytes;
    printf(
        "\ncold prewarm of %s for %s into an empty cache: %zu graphs in %.2f s; NVRTC ran %ld units "
        "(sum of units_compiled) of %ld unit uses (sum of units); %zu unit records, %zu images, %zu graph entries stored\n",
        manifest, arch, pw->graphs, pw->seconds, pw->units_compiled, pw->unit_uses, pw->unit_records, pw->nimages,
        pw->ngraph);
    printf(
        "stored: graph entries %.1f KB + images %.1f KB + unit records %.1f KB = %.1f KB; every graph carrying its own "
        "images (graph entry + its images' files, shared ones again): %.1f KB = %.2fx\n",
        (double)pw->graph_bytes / 1024, (double)pw->image_bytes / 1024, (double)pw->unit_bytes / 1024,
        (double)stored / 1024, (double)pw->one_file_bytes / 1024, ratio((double)pw->one_file_bytes, (double)stored));
    if (pw->have_shapes)
        printf(
            "then two more static shapes of every graph (every symbol 384, then 768): NVRTC ran %ld units; %zu graph "
            "entries, stored %.1f KB against %.1f KB were every graph to carry its own images = %.2fx (one-file / two levels)\n",
            pw->shape_units_compiled, pw->shape_ngraph, (double)pw->shape_stored / 1024,
            (double)pw->shape_one_file / 1024, ratio((double)pw->shape_one_file, (double)pw->shape_stored));
    fflush(stdout);
}

void jshape(FILE *f, const shape_res *s) {
    fprintf(f, "{\"name\": \"%s\", \"shapes\": \"%s\", \"units\": %d, ", s->name, s->shapes, s->units);
    jstat(f, "cold", s->cold);
    jstat(f, "second", s->second);
    fprintf(f, "\"second_units_compiled\": %d, ", s->second_units_compiled);
    jnum(f, "cold_over_second", ratio(s->cold.med, s->second.med), 1);
    fprintf(f, "}");
}

void jprewarm(FILE *f, const prewarm_res *pw) {
    fprintf(f, "\"prewarm\": ");
    if (!pw->have) {
        fprintf(f, "null");
        return;
    }
    size_t stored = pw->graph_bytes + pw->image_bytes + pw->unit_bytes;
    fprintf(f,
            "{\"graphs\": %zu, \"unit_uses\": %ld, \"units_compiled\": %ld, \"unit_records\": %zu, \"images\": %zu, "
            "\"graph_entries\": %zu, \"graph_entry_bytes\": %zu, \"image_bytes\": %zu, \"unit_record_bytes\": %zu, "
            "\"stored_bytes\": %zu, \"one_file_layout_bytes\": %zu, ",
            pw->graphs, pw->unit_uses, pw->units_compiled, pw->unit_records, pw->nimages, pw->ngraph, pw->graph_bytes,
            pw->image_bytes, pw->unit_bytes, stored, pw->one_file_bytes);
    jnum(f, "seconds", pw->seconds, 0);
    jnum(f, "one_file_layout_over_stored", ratio((double)pw->one_file_bytes, (double)stored), 1);
    fprintf(f, "}");
}
