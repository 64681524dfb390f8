/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu.c — kcache-bench on a GPU: a disk hit including the driver's load against the same images
 * loaded by hand (read, cuLibraryLoadData, fetch each kernel) and against the driver's load
 * alone, and a PTX (JIT) load against a cubin load.
 *
 * The one idea: each round uses a distinct graph (its globals changed), so the loaded-graph table
 * cannot answer, and the images timed by hand are the very bytes of the entry, extracted before
 * either side is timed; the two sides alternate which goes first.  Without a GPU it says why.
 * Callers: bench.c (the full run's GPU step and --gpu-only).
 *
 * Must not: fail the benchmark when no GPU is present ("not measured (why)").
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"


/* An entry's kernels: name -> lowered name (kc_entry_kernels), for fetching them by hand. */
typedef struct names {
    char name[16][128], lowered[16][512];
    int n;
} names;

static void add_name(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes, void *ctx) {
    (void)target, (void)is_ptx, (void)bytes;
    names *nm = ctx;
    if (nm->n >= 16) return;
    snprintf(nm->name[nm->n], sizeof nm->name[0], "%s", name);
    snprintf(nm->lowered[nm->n], sizeof nm->lowered[0], "%s", lowered);
    nm->n++;
}

/*
 * Load every image the directory holds (extracted from the entry as <kernel>.<variant>.cubin),
 * as a runtime would by hand.  `bare`: the driver's load alone (cuLibraryLoadData); `hand`: what
 * a runtime keeping its own files must do for the same graph — read the file, load it, fetch
 * its kernel (kc_module_function: cuLibraryGetKernel, cuKernelGetFunction, cuFuncLoad).
 */
static int bare_load(const char *dir, int device, const names *nm, double *bare, double *hand) {
    DIR *dd = opendir(dir);
    if (!dd) return -1;
    struct dirent *de;
    *bare = *hand = 0;
    while ((de = readdir(dd))) {
        if (!strstr(de->d_name, ".cubin") && !strstr(de->d_name, ".ptx")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        static uint8_t img[16 << 20];
        double t0 = now_us();
        FILE *f = fopen(p, "rb");
        if (!f) continue;
        size_t n = fread(img, 1, sizeof img - 1, f);
        fclose(f);
        img[n] = 0;
        kc_module *m;
        double t1 = now_us();
        if (kc_module_load(&m, device, img, strstr(de->d_name, ".ptx") ? n + 1 : n)) return closedir(dd), -1;
        double t2 = now_us();
        const char *lowered = NULL;
        for (int k = 0; nm && k < nm->n && !lowered; k++) {
            size_t l = strlen(nm->name[k]);
            if (!strncmp(de->d_name, nm->name[k], l) && de->d_name[l] == '.') lowered = nm->lowered[k];
        }
        void *fn;
        if (lowered && kc_module_function(m, lowered, &fn)) return kc_module_free(m), closedir(dd), -1;
        double t3 = now_us();
        *bare += t2 - t1;
        *hand += t3 - t0;
        kc_module_free(m);
    }
    closedir(dd);
    return 0;
}

void bench_gpu(const char *spec, const char *dir, gpu_res *out) {
    memset(out, 0, sizeof *out);
    if (kc_cuda_available() != KC_OK) {
        snprintf(out->why, sizeof out->why, "%s", kc_error_last()->message);
        return;
    }
    out->have = 1;
    int major, minor;
    kc_cuda_capability(0, &major, &minor);
    char target[16], ptx[16];
    kc_variant_for_device(major, minor, target);
    snprintf(ptx, sizeof ptx, "compute_%d%d", major, minor);
    kc_cache *c = open_at(dir);
    int n = 15; /* cheap: a few ms each */
    double hit[16], bare[16], hand[16], jit[16], jhand[16], key[16], look[16], load[16];
    for (int i = 0; i < n; i++) {
        /* A distinct graph each time (globals), so that the loaded-graph table cannot answer. */
        kc_graph_desc *d;
        kc_graph_desc_load(&d, spec);
        kc_graph_set_globals(d, 0xbe0000u + (unsigned)i);
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        kc_graph_compile(c, d, target, &info);
        kc_graph_compile(c, d, ptx, &info);
        /* The same images extracted (no driver work) before either is timed. */
        kc_key k;
        kc_graph_key(d, &k, NULL);
        kc_entry *e;
        char xdir[4096], pdir[4096];
        snprintf(xdir, sizeof xdir, "%s/x-%d", dir, i);
        snprintf(pdir, sizeof pdir, "%s/p-%d", dir, i);
        mkdir(xdir, 0700);
        mkdir(pdir, 0700);
        int cnt;
        names nx = {0}, np = {0};
        if (kc_cache_peek(c, &k, target, &e) == KC_OK) { /* a graph entry: its images fetched and attached first */
            if (kc_entry_resolve(c, e) == KC_OK) kc_entry_extract(e, xdir, &cnt);
            kc_entry_kernels(e, add_name, &nx);
            kc_entry_free(e);
        }
        if (kc_cache_peek(c, &k, ptx, &e) == KC_OK) {
            if (kc_entry_resolve(c, e) == KC_OK) kc_entry_extract(e, pdir, &cnt);
            kc_entry_kernels(e, add_name, &np);
            kc_entry_free(e);
        }
        /* Alternated: the hit first on even rounds, the images by hand first on odd ones. */
        for (int turn = 0; turn < 2; turn++) {
            if ((turn == 0) == (i % 2 == 0)) {
                kc_graph *g = NULL;
                double t0 = now_us();
                kc_graph_get(c, d, 0, &g, &info);
                hit[i] = now_us() - t0;
                key[i] = info.key_us, look[i] = info.lookup_us, load[i] = info.load_us;
                kc_graph_release(g);
            } else if (bare_load(xdir, 0, &nx, &bare[i], &hand[i]) || bare_load(pdir, 0, &np, &jit[i], &jhand[i])) {
                fprintf(stderr, "kcache-bench: GPU: loading the extracted images by hand failed: %s\n",
                        kc_error_last()->message);
            }
        }
        kc_graph_desc_free(d);
    }
    out->hit_load_us = median_of(hit, n);
    out->bare_load_us = median_of(bare, n);
    out->hand_us = median_of(hand, n);
    out->cubin_load_us = median_of(bare, n);
    out->ptx_load_us = median_of(jit, n);
    out->key_us = median_of(key, n);
    out->lookup_us = median_of(look, n);
    out->load_us = median_of(load, n);
    kc_cache_close(c);
}

void print_gpu(const gpu_res *gp, const char *name) {
    if (gp->have)
        printf(
            "GPU (%s, medians of 15): a disk hit with its load %.1f us (key %.1f, lookup %.1f, load %.1f) against the "
            "same images by hand %.1f us (read, load, fetch each kernel; %.2fx) and the driver's load alone %.1f us "
            "(%.2fx); PTX (JIT) load %.1f us vs cubin %.1f us (%.0fx)\n",
            name, gp->hit_load_us, gp->key_us, gp->lookup_us, gp->load_us, gp->hand_us,
            ratio(gp->hit_load_us, gp->hand_us), gp->bare_load_us, ratio(gp->hit_load_us, gp->bare_load_us),
            gp->ptx_load_us, gp->cubin_load_us, ratio(gp->ptx_load_us, gp->cubin_load_us));
    else printf("GPU: not measured (%s)\n", gp->why);
}
