/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stores.c — kcache-bench beyond one graph: the site cache's hits, the key's throughput, lookups in
 * stores of 10^3..10^6 entries with a gc that halves the largest, and a bundle's import.
 *
 * The one idea: the stores are filled with synthetic entries written straight into the local
 * layout (<dir>/v1/<2 hex>/<hex>.sm_90.kce), so that a store of a million entries costs seconds,
 * and then read only through the library's API (kc_cache_get, kc_cache_gc, kc_bundle_import).
 * Callers: bench.c (the full run's site, key and scale steps).
 *
 * Must not: count a lookup that missed (the benchmark stops), or trust the stats files for the
 * store's size (the fill bypasses them: gc's target is set from the bytes written).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* ---- site-cache hits ---- */

static void destroy_value(void *v) { (void)v; }

static double site_hit_ns(int entries) {
    kc_site_options so = KC_SITE_OPTIONS_INIT;
    so.static_shapes = 1;
    so.cache_size_limit = 128;
    kc_site *s;
    kc_site_new(&s, NULL, "bench", &so);
    kc_tensor_meta t;
    memset(&t, 0, sizeof t);
    t.dtype = KC_DTYPE_F32;
    t.device = KC_DEVICE_CUDA;
    t.rank = 2;
    t.strides[1].value = 1;
    kc_call call = {&t, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    for (int i = 0; i < entries; i++) {
        t.sizes[0].value = 16 + i;
        t.sizes[1].value = 64;
        t.strides[0].value = 64;
        kc_site_lookup(s, &call, &a);
        kc_site_insert(s, &call, NULL, (void *)(uintptr_t)(i + 1), destroy_value);
    }
    t.sizes[0].value = 16 + entries - 1; /* the last inserted: the worst case for a scan */
    int iters = quick ? 200000 : 2000000;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_us();
        for (int i = 0; i < iters; i++) kc_site_lookup(s, &call, &a);
        double ns = (now_us() - t0) * 1e3 / iters;
        if (a.result != KC_SITE_HIT) return -1;
        if (ns < best) best = ns;
    }
    kc_site_free(s);
    return best;
}

/* ---- key throughput ---- */

static double key_mbps(size_t bytes) {
    char *src = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) src[i] = (char)('a' + i % 26);
    int iters = (int)((quick ? 64u : 512u) * 1048576u / bytes);
    if (iters < 10) iters = 10;
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
        kc_key_builder *kb;
        kc_key_builder_new(&kb);
        kc_key_add_bytes(kb, KC_COMP_GRAPH, "source", src, bytes);
        kc_key k;
        kc_key_finish(kb, &k);
        kc_key_builder_free(kb);
    }
    double us = now_us() - t0;
    free(src);
    return (double)bytes * iters / us; /* bytes per µs = MB/s */
}

/* ---- scale: synthetic entries written straight into the layout ---- */

/* Returns the bytes written (the store's size: gc's target is set from it, not from the stats
 * files, which the fill bypasses). */
static uint64_t fill_store(const char *dir, int n) {
    uint64_t bytes = 0;
    kc_cache *c = open_at(dir);
    kc_cache_close(c); /* creates the layout */
    uint8_t payload[200];
    for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 13);
    for (int i = 0; i < n; i++) {
        kc_key_builder *kb;
        kc_key_builder_new(&kb);
        kc_key_add_u64(kb, KC_COMP_EXTRA, "synthetic", (uint64_t)i);
        kc_key k;
        kc_key_finish(kb, &k);
        kc_key_builder_free(kb);
        kc_entry *e;
        kc_entry_new(&e, &k, "sm_90");
        kc_entry_set_section(e, KC_SECTION_KERNELS, payload, sizeof payload);
        void *data;
        size_t len;
        kc_entry_encode(e, &data, &len);
        kc_entry_free(e);
        char hex[KC_KEY_HEX_LEN + 1], path[4096];
        kc_key_to_hex(&k, hex);
        snprintf(path, sizeof path, "%s/v1/%.2s/%s.sm_90.kce", dir, hex, hex);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
            fprintf(stderr, "kcache-bench: writing %s: %s\n", path, strerror(errno));
            exit(1);
        }
        close(fd);
        free(data);
        bytes += len;
    }
    return bytes;
}

/* An import of a bundle of n synthetic entries into an empty cache, `runs` times, each into a fresh
 * folder: what [Note: batched puts] (store/local.c) makes one sync for all, where each entry was
 * made durable on its own before. */
static stat_s import_at(const char *root, int n, int runs) {
    char src[4200], bundle[4300], dst[4200];
    snprintf(src, sizeof src, "%s/import-src", root);
    snprintf(bundle, sizeof bundle, "%s/import.kcb", root);
    fill_store(src, n);
    kc_cache *c = open_at(src);
    if (kc_bundle_export(c, bundle, NULL, NULL) != KC_OK) {
        fprintf(stderr, "kcache-bench: export: %s\n", kc_error_last()->message);
        exit(1);
    }
    kc_cache_close(c);
    rm_rf(src);
    double *v = malloc(sizeof(double) * (size_t)runs);
    for (int i = 0; i < runs; i++) {
        snprintf(dst, sizeof dst, "%s/import-dst", root);
        c = open_at(dst);
        double t0 = now_us();
        int rc = kc_bundle_import(c, bundle, 0, NULL);
        v[i] = (now_us() - t0) / 1e3;
        if (rc != KC_OK) {
            fprintf(stderr, "kcache-bench: import: %s\n", kc_error_last()->message);
            exit(1);
        }
        kc_cache_close(c);
        rm_rf(dst);
    }
    stat_s st = summarize(v, runs);
    free(v);
    unlink(bundle);
    return st;
}

static stat_s lookup_at(const char *dir, int n) {
    kc_cache *c = open_at(dir);
    int iters = quick ? 2000 : 10000;
    double *v = malloc(sizeof(double) * (size_t)iters);
    unsigned s = 7;
    for (int i = 0; i < iters; i++) {
        kc_key_builder *kb;
        kc_key_builder_new(&kb);
        kc_key_add_u64(kb, KC_COMP_EXTRA, "synthetic", (uint64_t)(rand_r(&s) % n));
        kc_key k;
        kc_key_finish(kb, &k);
        kc_key_builder_free(kb);
        kc_entry *e;
        double t0 = now_us();
        int rc = kc_cache_get(c, &k, "sm_90", &e);
        v[i] = now_us() - t0;
        if (rc) {
            fprintf(stderr, "kcache-bench: synthetic lookup missed\n");
            exit(1);
        }
        kc_entry_free(e);
    }
    stat_s st = summarize(v, iters);
    free(v);
    kc_cache_close(c);
    return st;
}


/* ---- the stores step: site hits, key throughput, lookups at scale, gc, import ---- */

/* Fill a store of n entries under `dir`, time lookups in it, and (`gc`) a gc halving it; *gc_ms. */
static stat_s scale_at(const char *dir, int n, int gc, double *gc_ms) {
    double t0 = now_us();
    uint64_t filled = fill_store(dir, n);
    double fill_s = (now_us() - t0) / 1e6;
    stat_s st = lookup_at(dir, n);
    printf("lookup at %7d entries: %.1f us [%.1f .. %.1f] (filled in %.1f s)\n", n, st.med, st.p10, st.p90, fill_s);
    fflush(stdout);
    if (gc) {
        kc_cache *c = open_at(dir);
        kc_gc_report rep = KC_GC_REPORT_INIT;
        t0 = now_us();
        kc_cache_gc(c, filled / 2, &rep); /* gc recounts from the directory: the fill bypassed the counters */
        *gc_ms = (now_us() - t0) / 1e3;
        printf("gc halving %d entries: %.0f ms (%llu of %llu evicted)\n", n, *gc_ms, (unsigned long long)rep.evicted,
               (unsigned long long)rep.entries_before);
        kc_cache_close(c);
    }
    rm_rf(dir);
    return st;
}

void bench_stores(const char *root, int largest, stores_res *out) {
    const int sizes[3] = {1, 8, 64};
    for (int i = 0; i < 3; i++) out->site[i] = site_hit_ns(sizes[i]);
    printf("site-cache hit: %.0f ns (1 entry), %.0f ns (8), %.0f ns (64)\n", out->site[0], out->site[1], out->site[2]);
    out->k_small = key_mbps(4096), out->k_large = key_mbps(1 << 20);
    printf("key: %.0f MB/s on 4 KB sources, %.0f MB/s on 1 MB sources\n", out->k_small, out->k_large);
    out->scale_n[0] = 1000, out->scale_n[1] = largest / 10 > 1000 ? largest / 10 : 1000, out->scale_n[2] = largest;
    out->gc_ms = NAN;
    for (int i = 0; i < 3; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/scale%d", root, i);
        out->sc[i] = scale_at(dir, out->scale_n[i], i == 2, &out->gc_ms);
    }
    out->scale_ratio = ratio(out->sc[2].med, out->sc[0].med);
    printf("lookup at %d / at %d entries: %.2fx\n", out->scale_n[2], out->scale_n[0], out->scale_ratio);
    out->imp = import_at(root, 300, quick ? 5 : 9);
    printf("import of 300 entries into an empty cache: %.1f ms [%.1f .. %.1f]\n", out->imp.med, out->imp.p10,
           out->imp.p90);
}
