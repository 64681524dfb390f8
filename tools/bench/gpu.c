/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu.c — kcache-bench and the driver: on a GPU, a disk hit including the driver's load against
 * the same images loaded by hand (read, cuLibraryLoadData, fetch and load each kernel: the calls
 * kcache must make) and against the driver's load alone, and PTX (JIT) loads beside cubin loads;
 * without one, --load-calls: the driver calls each bundled graph's load makes, counted on the
 * driver double.
 *
 * The one idea: each round uses a distinct graph (its globals changed), so the loaded-graph table
 * cannot answer, and the images timed by hand are the very bytes of the entry, extracted before
 * either side is timed; the two sides alternate which goes first.  By hand, each distinct image is
 * loaded once and every kernel of the graph fetched from it and loaded (cuFuncLoad): under lazy
 * loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) that is where the driver puts the
 * code on the device, so a baseline without it would time a load that has not happened yet.
 * Without a GPU the GPU part says why.  Callers: bench.c (the full run's GPU step, --gpu-only,
 * --load-calls).
 *
 * Must not: fail the benchmark when no GPU is present ("not measured (why)"); link the double (it
 * is opened by --load-calls alone, so that a GPU host's process never sees its cu* symbols).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"


/* An entry's kernels: the file kc_entry_extract wrote for each (its lowered name made a plain file-name part, its
 * target, .cubin or .ptx) and the lowered name to fetch, for loading them by hand. */
typedef struct names {
    char file[16][600], lowered[16][512];
    int n;
} names;

/* kc_entry_extract's file-name part: every byte outside [A-Za-z0-9_] becomes '_'. */
static void file_part(char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) *s = '_';
}

static void add_name(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes, void *ctx) {
    (void)name, (void)bytes;
    names *nm = ctx;
    if (nm->n >= 16) return;
    char base[200], tgt[64];
    snprintf(base, sizeof base, "%s", lowered);
    snprintf(tgt, sizeof tgt, "%s", target);
    file_part(base);
    file_part(tgt);
    snprintf(nm->file[nm->n], sizeof nm->file[0], "%s.%s.%s", base, tgt, is_ptx ? "ptx" : "cubin");
    snprintf(nm->lowered[nm->n], sizeof nm->lowered[0], "%s", lowered);
    nm->n++;
}

/* A whole file into buf (NUL added); its length, or -1. */
static long read_file(const char *path, uint8_t *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    return (long)n;
}

/* The images by hand: which kernels share one image (kc_entry_extract writes a unit's image once per kernel),
 * found before anything is timed, as `first[k]`: the first kernel with the same bytes. */
static int group_images(const char *dir, const names *nm, int *first) {
    static uint8_t a[16 << 20], b[16 << 20];
    for (int k = 0; k < nm->n; k++) {
        char p[4800], q[4800];
        first[k] = k;
        snprintf(p, sizeof p, "%s/%s", dir, nm->file[k]);
        long la = read_file(p, a, sizeof a);
        if (la < 0) return -1;
        for (int j = 0; j < k && first[k] == k; j++) {
            if (first[j] != j) continue;
            snprintf(q, sizeof q, "%s/%s", dir, nm->file[j]);
            if (read_file(q, b, sizeof b) == la && memcmp(a, b, (size_t)la) == 0) first[k] = j;
        }
    }
    return 0;
}

/*
 * Load a graph's images by hand, as a runtime keeping its own files would: for each distinct image,
 * read the file, load it (kc_module_load: cuLibraryLoadData), then fetch and load every kernel of
 * the graph from it (kc_module_function: cuLibraryGetKernel, cuKernelGetFunction, cuFuncLoad) —
 * what kcache's load must do too.  `bare`: the driver's load alone; `fetch`: the kernels' fetch;
 * `hand`: all of it.  0, or -1 when a file or the driver failed.
 */
static int hand_load(const char *dir, int device, const names *nm, double *bare, double *fetch, double *hand) {
    int first[16];
    *bare = *fetch = *hand = 0;
    if (nm->n == 0 || group_images(dir, nm, first)) return -1;
    static uint8_t img[16 << 20];
    for (int k = 0; k < nm->n; k++) {
        if (first[k] != k) continue;
        char p[4800];
        snprintf(p, sizeof p, "%s/%s", dir, nm->file[k]);
        int ptx = strstr(nm->file[k], ".ptx") != NULL;
        double t0 = now_us();
        long n = read_file(p, img, sizeof img);
        if (n < 0) return -1;
        kc_module *m;
        double t1 = now_us();
        if (kc_module_load(&m, device, img, ptx ? (size_t)n + 1 : (size_t)n)) return -1;
        double t2 = now_us();
        for (int j = k; j < nm->n; j++) {
            void *fn;
            if (first[j] == k && kc_module_function(m, nm->lowered[j], &fn)) return kc_module_free(m), -1;
        }
        double t3 = now_us();
        *bare += t2 - t1;
        *fetch += t3 - t2;
        *hand += t3 - t0;
        kc_module_free(m);
    }
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
    /* Zero where a round failed (said on stderr), never an uninitialised median. */
    double hit[16] = {0}, bare[16] = {0}, fetch[16] = {0}, hand[16] = {0}, jit[16] = {0}, jfetch[16] = {0},
           jhand[16] = {0}, key[16] = {0}, look[16] = {0}, load[16] = {0};
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
            } else if (hand_load(xdir, 0, &nx, &bare[i], &fetch[i], &hand[i]) ||
                       hand_load(pdir, 0, &np, &jit[i], &jfetch[i], &jhand[i])) {
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
    out->fetch_us = median_of(fetch, n);
    out->ptx_fetch_us = median_of(jfetch, n);
    out->ptx_hand_us = median_of(jhand, n);
    out->key_us = median_of(key, n);
    out->lookup_us = median_of(look, n);
    out->load_us = median_of(load, n);
    kc_cache_close(c);
}

void print_gpu(const gpu_res *gp, const char *name) {
    if (gp->have) {
        printf(
            "GPU (%s, medians of 15): a disk hit with its load %.1f us (key %.1f, lookup %.1f, load %.1f) against the "
            "same images by hand %.1f us (read, load, fetch and load each kernel; %.2fx) and the driver's load alone "
            "%.1f us (%.2fx)\n",
            name, gp->hit_load_us, gp->key_us, gp->lookup_us, gp->load_us, gp->hand_us,
            ratio(gp->hit_load_us, gp->hand_us), gp->bare_load_us, ratio(gp->hit_load_us, gp->bare_load_us));
        printf(
            "GPU (%s): by hand, cubin: load %.1f us + its kernels' fetch %.1f us = %.1f us with the read; PTX (JIT): "
            "load %.1f us + fetch %.1f us = %.1f us (%.1fx the cubin's)\n",
            name, gp->cubin_load_us, gp->fetch_us, gp->hand_us, gp->ptx_load_us, gp->ptx_fetch_us, gp->ptx_hand_us,
            ratio(gp->ptx_hand_us, gp->hand_us));
    } else {
        printf("GPU: not measured (%s)\n", gp->why);
    }
}

/* ---- --load-calls: driver calls per load, on the driver double ---- */

/* The double's control API, looked up at run time (kcache/cuda_double.h). */
typedef struct dbl {
    unsigned long (*calls)(const char *);
    void (*reset)(void);
    int (*set_devices)(const char *);
} dbl;

/* One get's calls, by kind. */
typedef struct calls {
    unsigned long loads, fetches, params, device, ctx, other, total;
} calls;

static calls count_calls(const dbl *x) {
    calls c;
    c.total = x->calls(NULL);
    c.loads = x->calls("cuLibraryLoadData") + x->calls("cuModuleLoadData");
    c.fetches = x->calls("cuLibraryGetKernel") + x->calls("cuKernelGetFunction") + x->calls("cuFuncLoad") +
                x->calls("cuModuleGetFunction");
    c.params = x->calls("cuFuncGetParamInfo");
    c.device = x->calls("cuDeviceGet") + x->calls("cuDeviceGetAttribute");
    c.ctx = x->calls("cuCtxPushCurrent_v2") + x->calls("cuCtxPopCurrent_v2");
    c.other = c.total - c.loads - c.fetches - c.params - c.device - c.ctx;
    return c;
}

/* Compile d for `target` (stored), empty the loaded table, and count the calls of a get: a disk hit with its load.
 * `units`: the compile's images; 0, or -1 (said on stderr). */
static int counted_get(const dbl *x, kc_cache *c, kc_graph_desc *d, const char *target, int *units, int *kernels,
                       calls *out) {
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(c, d, target, &info)) return -1;
    *units = info.units;
    size_t mg, mb;
    kc_graph_loaded_budget_get(&mg, &mb);
    kc_graph_loaded_budget(0, 0); /* nothing loaded: the get below loads */
    kc_graph_loaded_budget(mg, mb);
    x->reset();
    kc_graph *g = NULL;
    if (kc_graph_get(c, d, 0, &g, &info)) return -1;
    *out = count_calls(x);
    *kernels = info.kernels;
    kc_graph_release(g);
    if (info.source != KC_FROM_DISK || strcmp(info.variant, target) != 0) {
        fprintf(stderr, "kcache-bench: --load-calls: the get of %s was not a disk hit of it\n", target);
        return -1;
    }
    return 0;
}

static dbl the_double;

int bench_double_open(void) {
    dbl *x = &the_double;
    kc_target t;
    char caps[16];
    if (kc_target_parse(arch, &t) != KC_OK || t.ptx) {
        fprintf(stderr, "kcache-bench: --load-calls: --arch %s is not a cubin target\n", arch);
        return -1;
    }
    snprintf(caps, sizeof caps, "%d.%d", t.major, t.minor);
#ifdef KC_BENCH_DOUBLE
    /* Before anything reads the settings: kcache's driver is the double (the loader hands kcache's later
     * dlopen of the same file this very object, so both see one state). */
    setenv("KCACHE_CUDA_DRIVER", KC_BENCH_DOUBLE, 1);
    void *h = dlopen(KC_BENCH_DOUBLE, RTLD_NOW | RTLD_LOCAL);
    if (h) {
        *(void **)&x->calls = dlsym(h, "kcd_calls");
        *(void **)&x->reset = dlsym(h, "kcd_reset");
        *(void **)&x->set_devices = dlsym(h, "kcd_set_devices");
    }
    if (!h || !x->calls || !x->reset || !x->set_devices) {
        fprintf(stderr, "kcache-bench: --load-calls: the driver double %s did not open: %s\n", KC_BENCH_DOUBLE,
                h ? "it has no kcd_calls" : dlerror());
        return -1;
    }
    if (x->set_devices(caps) || kc_cuda_available() != KC_OK) {
        fprintf(stderr, "kcache-bench: --load-calls: %s\n", kc_error_last()->message);
        return -1;
    }
    return 0;
#else
    (void)x;
    fprintf(stderr, "kcache-bench: --load-calls: this build has no driver double (KCACHE_DRIVER_DOUBLE=OFF)\n");
    return -1;
#endif
}

static void print_calls(const char *what, const calls *k) {
    printf("  %-6s %5lu %7lu %6lu %6lu %4lu %5lu %5lu", what, k->loads, k->fetches, k->params, k->device, k->ctx,
           k->other, k->total);
}

int bench_load_calls(const char (*specs)[1024], int ns, const char *root) {
    kc_target t;
    char caps[16], ptx[24];
    if (!the_double.calls || kc_target_parse(arch, &t) != KC_OK) return 1; /* bench_double_open said why */
    snprintf(caps, sizeof caps, "%d.%d", t.major, t.minor);
    snprintf(ptx, sizeof ptx, "compute_%d%d", t.major, t.minor);
    dbl x = the_double;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/calls", root);
    mkdir(dir, 0700);
    kc_cache *c = open_at(dir);
    if (!c) return 1;
    printf("kcache-bench: driver calls per graph load, counted on the driver double (a device %s; %s and %s entries; "
           "each a disk hit's get: the lookup's capability query, 3 device calls, then the load)\n",
           caps, arch, ptx);
    printf("%-14s %6s %7s | %-6s %5s %7s %6s %6s %4s %5s %5s | loaded again: calls loads\n", "graph", "images",
           "kernels", "image", "loads", "fetches", "params", "device", "ctx", "other", "total");
    /* The process's first load also retains the device's primary context: paid here, before any count. */
    kc_graph_desc *w = NULL;
    calls wc;
    int wu, wk, rc = ns < 1 || kc_graph_desc_load(&w, specs[0]);
    if (!rc) kc_graph_set_globals(w, 0xa4du), rc = counted_get(&x, c, w, arch, &wu, &wk, &wc) != 0;
    kc_graph_desc_free(w);
    for (int i = 0; i < ns && !rc; i++) {
        kc_graph_desc *d = NULL;
        calls cub, jit, again;
        int units = 0, kernels = 0, punits = 0, pkernels = 0;
        if (kc_graph_desc_load(&d, specs[i]) || counted_get(&x, c, d, arch, &units, &kernels, &cub)) rc = 1;
        kc_graph *g = NULL;
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        if (!rc) x.reset(), rc = kc_graph_get(c, d, 0, &g, &info) != KC_OK; /* loaded already: no load */
        again = count_calls(&x);
        kc_graph_release(g);
        if (!rc) kc_graph_set_globals(d, 0x10adu); /* another graph, its PTX alone stored */
        if (!rc) rc = counted_get(&x, c, d, ptx, &punits, &pkernels, &jit) != 0;
        kc_graph_desc_free(d);
        if (rc) {
            fprintf(stderr, "kcache-bench: --load-calls: %s: %s\n", specs[i], kc_error_last()->message);
            break;
        }
        const char *base = strrchr(specs[i], '/');
        char name[64];
        snprintf(name, sizeof name, "%s", base ? base + 1 : specs[i]);
        char *dot = strrchr(name, '.');
        if (dot) *dot = '\0';
        printf("%-14s %6d %7d |", name, units, kernels);
        print_calls("cubin", &cub);
        printf(" | %5lu %5lu\n%-14s %6d %7d |", again.total, again.loads, "", punits, pkernels);
        print_calls("PTX", &jit);
        printf(" |\n");
    }
    kc_cache_close(c);
    return rc;
}
