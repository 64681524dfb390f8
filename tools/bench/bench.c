/*
 * bench.c — kcache-bench: cold vs warm vs the physical limit, and peers, side by side in one
 * run, reported as medians with their spread and as ratios (these machines are noisy).
 *
 *   kcache-bench [--quick] [--json FILE] [--plot FILE.png] [--arch TARGET] [--kernels DIR]
 *                [--kcache PATH] [--process-floor] [--gpu-only] [--largest N]
 *                [--warmstart-only] [--synth N] [--warmstart-runs N] [--warmstart-evict N] [--no-peers]
 *                [--write-synth DIR [--synth N]]
 *
 * Per graph of kernels/: cold (NVRTC compiles every unit: an empty cache, NVRTC's own cache
 * off), warm disk hit (key + the graph entry's read + its images' reads, each checked and
 * decompressed, no driver), the limit (read() + XXH3 + zstd of the graph entry file and of
 * each image file, done directly; split into the two, and against the same bytes as one
 * file: levels.c), nvcc -cubin under ccache cold and warm (the compile cache users have
 * today), and NVRTC's own cache (a repeated compile with it on).  Per graph with a symbolic
 * dimension, a second static shape cold against after a first shape; a cold prewarm of
 * kernels/manifest.json for the target (units compiled, stored bytes by kind, against every
 * graph carrying its own images).  Then: site-cache hits with 1, 8 and 64 entries, key
 * throughput, lookups at 10^3..10^6 entries and a gc that halves the largest store; on a GPU,
 * a hit including the driver load against a bare cuLibraryLoadData of the same images, and a
 * PTX (JIT) load against a cubin load.  And the process floor: fresh processes of a warm
 * `kcache get` of one graph against fresh processes of `kcache --help` (the tool beside this
 * benchmark, or --kcache PATH; --process-floor measures only that, e.g. for an older build of
 * the tool).  And warm start as processes (procs.c; --warmstart-only measures only that): fresh
 * processes that get every graph of the bundled manifest and of a synthetic one of --synth N
 * graphs (300; --quick 60) against an empty main and a minimal reader of the same entry files,
 * and one graph's warm `kcache get` against ccache, sccache, cuda.core's and Triton's caches.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#ifndef KC_KERNELS_DIR
#define KC_KERNELS_DIR "kernels"
#endif

int quick;
const char *arch = "sm_90";

double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* ---- samples ---- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

stat_s summarize(double *v, int n) {
    stat_s s = {NAN, NAN, NAN, n};
    if (n <= 0) return s;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    s.p10 = v[(int)(0.1 * (n - 1))];
    s.p90 = v[(int)ceil(0.9 * (n - 1))];
    return s;
}

double median_of(double *v, int n) { return summarize(v, n).med; }

/* ---- running a command (nvcc under ccache) ---- */

static double run_cmd(char *const argv[], const char *ccache_dir) {
    double t0 = now_us();
    pid_t p = fork();
    if (p == 0) {
        setenv("CCACHE_DIR", ccache_dir, 1);
        setenv("CCACHE_NOHASHDIR", "1", 1);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1), dup2(null, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return now_us() - t0;
}

/* nvcc -cubin of every .cu file a spec names, under ccache; -1 when it could not run. */
static double ccache_graph(const char *spec_path, const char *ccache_dir, const char *outdir) {
    FILE *f = fopen(spec_path, "rb");
    if (!f) return -1;
    char text[65536];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    char files[16][256];
    int nf = 0;
    for (char *p = text; (p = strstr(p, "\"file\"")) && nf < 16;) {
        char *q = strchr(p + 6, '"'), *e = q ? strchr(q + 1, '"') : NULL;
        if (!q || !e) break;
        int dup = 0;
        for (int i = 0; i < nf; i++) dup |= (size_t)(e - q - 1) == strlen(files[i]) && !strncmp(files[i], q + 1, (size_t)(e - q - 1));
        if (!dup && e - q - 1 < 255) memcpy(files[nf], q + 1, (size_t)(e - q - 1)), files[nf++][e - q - 1] = 0;
        p = e + 1;
    }
    double total = 0;
    char archflag[32];
    snprintf(archflag, sizeof archflag, "-arch=%s", arch);
    for (int i = 0; i < nf; i++) {
        char src[1024], out[1024], inc[1024];
        snprintf(src, sizeof src, "%s/%s", KC_KERNELS_DIR, files[i]);
        snprintf(out, sizeof out, "%s/%s.cubin", outdir, files[i]);
        snprintf(inc, sizeof inc, "-I%s", KC_KERNELS_DIR);
        char *argv[] = {"ccache", "/usr/local/cuda/bin/nvcc", "-c", "-cubin", archflag, inc, "-o", out, src, NULL};
        double t = run_cmd(argv, ccache_dir);
        if (t < 0) return -1;
        total += t;
    }
    return total;
}

/* ---- NVRTC's own cache, measured in a child (the setting is read once per process) ---- */

static int measure_nvrtc_cache(const char *spec) {
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, spec)) return 1;
    char tmpl[] = "/tmp/kcbench-nv-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = tmpl;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) return 1;
    double best = -1;
    for (int i = 0; i < (quick ? 3 : 5); i++) {
        kc_cache_clear(c); /* its units too: with them stored, the compile would run no NVRTC */
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        double t0 = now_us();
        if (kc_graph_compile(c, d, arch, &info)) return 1;
        double t = now_us() - t0;
        if (i > 0 && (best < 0 || t < best)) best = t; /* runs after the first hit NVRTC's cache */
    }
    printf("%.3f\n", best);
    kc_cache_clear(c);
    kc_cache_close(c);
    rmdir(tmpl);
    kc_graph_desc_free(d);
    return 0;
}

static double nvrtc_cache_us(const char *self, const char *spec) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "KCACHE_NVRTC_OWN_CACHE=1 '%s' %s--arch %s --measure-nvrtc-cache '%s' 2>/dev/null", self,
             quick ? "--quick " : "", arch, spec);
    FILE *p = popen(cmd, "r");
    double v = -1;
    if (p) {
        if (fscanf(p, "%lf", &v) != 1) v = -1;
        pclose(p);
    }
    return v;
}

/* ---- per graph ---- */

typedef struct gres {
    char name[64];
    stat_s cold, warm, ccache_cold, ccache_warm, nvrtc_cache, warm_key, warm_lookup;
    int units;     /* compile units (NVRTC programs) of the graph */
    levels_res lv; /* the limit of its hit: graph entry + image files, and as one file */
} gres;

kc_cache *open_at(const char *dir) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) {
        fprintf(stderr, "kcache-bench: %s\n", kc_error_last()->message);
        exit(1);
    }
    return c;
}

static void bench_graph(const char *self, const char *spec, const char *dir, gres *g) {
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, spec)) {
        fprintf(stderr, "kcache-bench: %s\n", kc_error_last()->message);
        exit(1);
    }
    snprintf(g->name, sizeof g->name, "%s", kc_graph_desc_name(d));
    kc_cache *c = open_at(dir);
    kc_key key;
    kc_graph_key(d, &key, NULL);
    int ncold = quick ? 3 : 5, nwarm = quick ? 300 : 2000;
    double *v = calloc((size_t)nwarm + 16, sizeof *v);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    for (int i = 0; i < ncold; i++) {
        kc_cache_clear(c); /* cold: the graph entry, its images and its unit records all gone */
        double t0 = now_us();
        if (kc_graph_compile(c, d, arch, &info)) {
            fprintf(stderr, "kcache-bench: %s: %s\n", g->name, kc_error_last()->message);
            exit(1);
        }
        v[i] = now_us() - t0;
        if (info.units < 1 || info.units_compiled != info.units) {
            fprintf(stderr, "kcache-bench: %s: a cold compile compiled %d of %d units\n", g->name, info.units_compiled,
                    info.units);
            exit(1);
        }
        g->units = info.units;
    }
    g->cold = summarize(v, ncold);
    for (int i = 0; i < nwarm; i++) {
        double t0 = now_us();
        kc_graph_compile(c, d, arch, &info);
        v[i] = now_us() - t0;
        if (info.source != KC_FROM_DISK) {
            fprintf(stderr, "kcache-bench: %s: warm lookup was not a disk hit\n", g->name);
            exit(1);
        }
    }
    g->warm = summarize(v, nwarm);
    double *vk = calloc((size_t)nwarm + 1, sizeof *vk), *vl = calloc((size_t)nwarm + 1, sizeof *vl);
    for (int i = 0; i < nwarm; i++) {
        kc_graph_compile(c, d, arch, &info);
        vk[i] = info.key_us, vl[i] = info.lookup_us;
    }
    g->warm_key = summarize(vk, nwarm);
    g->warm_lookup = summarize(vl, nwarm);
    free(vk), free(vl);
    bench_levels(c, d, &key, dir, nwarm, &g->lv);
    if (!g->lv.have) {
        fprintf(stderr, "kcache-bench: %s: the limit: %s\n", g->name, g->lv.why);
        exit(1);
    }
    /* ccache + nvcc: a fresh ccache directory for the cold run, then hits. */
    char cdir[4096], odir[4096];
    snprintf(cdir, sizeof cdir, "%s/ccache-%s", dir, g->name);
    snprintf(odir, sizeof odir, "%s/out-%s", dir, g->name);
    mkdir(cdir, 0700);
    mkdir(odir, 0700);
    double cc = ccache_graph(spec, cdir, odir);
    g->ccache_cold = (stat_s){cc, cc, cc, cc < 0 ? 0 : 1};
    int nccw = quick ? 3 : 7, okw = 0;
    for (int i = 0; cc >= 0 && i < nccw; i++) {
        double t = ccache_graph(spec, cdir, odir);
        if (t >= 0) v[okw++] = t;
    }
    g->ccache_warm = summarize(v, okw);
    double nv = nvrtc_cache_us(self, spec);
    g->nvrtc_cache = (stat_s){nv, nv, nv, nv < 0 ? 0 : 1};
    free(v);
    kc_cache_close(c);
    kc_graph_desc_free(d);
}

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

/* ---- GPU ---- */

typedef struct gpu_res {
    int have;
    char why[256];
    double hit_load_us, bare_load_us, hand_us, ptx_load_us, cubin_load_us;
    double key_us, lookup_us, load_us; /* the hit's own split (kc_graph_info), medians */
} gpu_res;

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

static void bench_gpu(const char *spec, const char *dir, gpu_res *out) {
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
                fprintf(stderr, "kcache-bench: GPU: loading the extracted images by hand failed: %s\n", kc_error_last()->message);
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

static void print_gpu(const gpu_res *gp, const char *name) {
    if (gp->have)
        printf("GPU (%s, medians of 15): a disk hit with its load %.1f us (key %.1f, lookup %.1f, load %.1f) against the "
               "same images by hand %.1f us (read, load, fetch each kernel; %.2fx) and the driver's load alone %.1f us "
               "(%.2fx); PTX (JIT) load %.1f us vs cubin %.1f us (%.0fx)\n",
               name, gp->hit_load_us, gp->key_us, gp->lookup_us, gp->load_us, gp->hand_us,
               ratio(gp->hit_load_us, gp->hand_us), gp->bare_load_us, ratio(gp->hit_load_us, gp->bare_load_us),
               gp->ptx_load_us, gp->cubin_load_us, ratio(gp->ptx_load_us, gp->cubin_load_us));
    else printf("GPU: not measured (%s)\n", gp->why);
}

/* ---- the process floor: a fresh process's warm `kcache get` against `kcache --help` ---- */

typedef struct floor_res {
    int have;
    char why[512], name[64];
    stat_s help, get;
} floor_res;

/* Run argv with stdout/stderr to /dev/null: wall microseconds from fork to exit, or -1. */
static double run_quiet(char *const argv[]) {
    double t0 = now_us();
    pid_t p = fork();
    if (p == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1), dup2(null, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return now_us() - t0;
}

/*
 * N fresh processes of `kcache --help` (the floor: exec, the dynamic loader, libc, the
 * tool's own start) against N fresh processes of a warm `kcache get SPEC --arch A` (the same
 * cache, one graph, compiled once first), interleaved so that drift hits both alike.
 */
static void bench_process_floor(const char *kcache, const char *spec, const char *dir, floor_res *out) {
    memset(out, 0, sizeof *out);
    if (access(kcache, X_OK) != 0) {
        snprintf(out->why, sizeof out->why, "no kcache tool at %s (--kcache PATH)", kcache);
        return;
    }
    const char *slash = strrchr(spec, '/');
    snprintf(out->name, sizeof out->name, "%.*s", (int)strcspn(slash ? slash + 1 : spec, "."), slash ? slash + 1 : spec);
    char *help[] = {(char *)kcache, "--help", NULL};
    char *get[] = {(char *)kcache, "--cache-dir", (char *)dir, "get", (char *)spec, "--arch", (char *)arch, NULL};
    if (run_quiet(get) < 0) { /* the one compile */
        snprintf(out->why, sizeof out->why, "'%s --cache-dir %s get %s --arch %s' failed", kcache, dir, spec, arch);
        return;
    }
    char cmd[8192], line[4096] = "";
    snprintf(cmd, sizeof cmd, "'%s' --cache-dir '%s' get '%s' --arch %s --json 2>&1", kcache, dir, spec, arch);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (!fgets(line, sizeof line, p)) line[0] = '\0';
        pclose(p);
    }
    if (!strstr(line, "\"disk\"")) {
        snprintf(out->why, sizeof out->why, "the second get was no disk hit: %.400s", line);
        return;
    }
    int n = quick ? 30 : 200, nh = 0, ng = 0;
    double *vh = calloc((size_t)n, sizeof *vh), *vg = calloc((size_t)n, sizeof *vg);
    for (int i = 0; i < 3; i++) run_quiet(help), run_quiet(get); /* warm the page cache */
    for (int i = 0; i < n; i++) {
        double h = run_quiet(help), g = run_quiet(get);
        if (h >= 0) vh[nh++] = h;
        if (g >= 0) vg[ng++] = g;
    }
    out->help = summarize(vh, nh);
    out->get = summarize(vg, ng);
    out->have = nh > 0 && ng > 0;
    if (!out->have) snprintf(out->why, sizeof out->why, "the runs failed");
    free(vh);
    free(vg);
}

static void print_process_floor(const floor_res *pf) {
    if (pf->have)
        printf("process floor (%s, %d fresh processes each): warm `kcache get` %.0f us [%.0f .. %.0f], "
               "`kcache --help` %.0f us [%.0f .. %.0f]: %.2fx the floor (+%.0f us)\n",
               pf->name, pf->get.n, pf->get.med, pf->get.p10, pf->get.p90, pf->help.med, pf->help.p10, pf->help.p90,
               pf->get.med / pf->help.med, pf->get.med - pf->help.med);
    else printf("process floor: not measured (%s)\n", pf->why);
    fflush(stdout);
}

/* ---- output ---- */

static void jnum(FILE *f, const char *k, double v, int last) {
    if (isnan(v) || v < 0) fprintf(f, "\"%s\": null%s", k, last ? "" : ", ");
    else fprintf(f, "\"%s\": %.4g%s", k, v, last ? "" : ", ");
}

static void jstat(FILE *f, const char *k, stat_s s) {
    fprintf(f, "\"%s\": {", k);
    jnum(f, "median_us", s.n ? s.med : NAN, 0);
    jnum(f, "p10_us", s.n ? s.p10 : NAN, 0);
    jnum(f, "p90_us", s.n ? s.p90 : NAN, 0);
    fprintf(f, "\"n\": %d}, ", s.n);
}

double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : NAN; }

static void jfloor(FILE *f, const floor_res *pf) {
    fprintf(f, "\"process_floor\": ");
    if (!pf->have) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"graph\": \"%s\", ", pf->name);
    jstat(f, "kcache_help", pf->help);
    jstat(f, "warm_get", pf->get);
    jnum(f, "warm_get_over_help", ratio(pf->get.med, pf->help.med), 0);
    jnum(f, "warm_get_minus_help_us", pf->get.med - pf->help.med, 1);
    fprintf(f, "}");
}

static void fmt_us(double us, char *out, size_t cap) {
    if (isnan(us) || us < 0) snprintf(out, cap, "-");
    else if (us >= 1e6) snprintf(out, cap, "%.2f s", us / 1e6);
    else if (us >= 1e3) snprintf(out, cap, "%.1f ms", us / 1e3);
    else snprintf(out, cap, "%.1f us", us);
}

/*
 * The one-file layout's warm hit, estimated two ways from this run (the older layout itself cannot
 * be written by this build):
 *   reads: the warm hit less what its extra file reads cost at the limit, warm - (limit - one file):
 *          takes off only the extra opens and reads, so warm / it is a lower bound on the price;
 *   lib:   the warm hit less the library's whole image fetch (kc_entry_resolve: each image's get,
 *          decode, checks, attach), plus what one file must still do with those bytes at the limit,
 *          warm - resolve + (one file - entry read).
 */
/*
 * Each in-process hit over its own floor, measured in the same loop on the same files
 * (levels.c): a compile-path hit (warm: kc_graph_compile, images checked, not inflated) over
 * read + check; a lookup that hands out the bytes (key, graph entry, images attached) over
 * read + check + inflate (the limit).  r_wc, r_fl per graph; m[0], m[1] their medians.
 */
static void print_in_process(const gres *g, int ns, double *r_wc, double *r_fl, double *m) {
    printf("\nin-process hits over their floors (median [p10 .. p90]):\n%-14s %22s %22s %9s %22s %22s %9s\n", "graph",
           "compile-path hit", "read+check", "ratio", "lookup with bytes", "read+check+inflate", "ratio");
    double a[32], b[32];
    for (int i = 0; i < ns; i++) {
        const levels_res *l = &g[i].lv;
        r_wc[i] = a[i] = ratio(g[i].warm.med, l->check.med);
        r_fl[i] = b[i] = ratio(l->fetch.med, l->limit.med);
        printf("%-14s %7.1f [%5.1f .. %5.1f] %7.1f [%5.1f .. %5.1f] %8.2fx %7.1f [%5.1f .. %5.1f] %7.1f [%5.1f .. %5.1f] %8.2fx\n",
               g[i].name, g[i].warm.med, g[i].warm.p10, g[i].warm.p90, l->check.med, l->check.p10, l->check.p90, a[i],
               l->fetch.med, l->fetch.p10, l->fetch.p90, l->limit.med, l->limit.p10, l->limit.p90, b[i]);
    }
    m[0] = median_of(a, ns), m[1] = median_of(b, ns);
    printf("medians: compile-path hit / read+check %.2fx (target <= 1.2x); lookup with bytes / read+check+inflate "
           "%.2fx (target <= 1.1x)\n", m[0], m[1]);
}

static double warm_one_file_reads(const gres *g) { return g->warm.med - (g->lv.limit.med - g->lv.one_file.med); }
static double warm_one_file_lib(const gres *g) {
    return g->warm.med - g->lv.resolve.med + (g->lv.one_file.med - g->lv.entry_read.med);
}

static void print_levels(const gres *g, int ns, const double *r_rd, const double *r_lib, const double *m) {
    printf("\nthe second level's price: a hit reads the graph entry file and each image file it refers to. The limit\n"
           "(read() + XXH3 + zstd; images also XXH3-128) split in two, against the same bytes as one file (samples\n"
           "interleaved); resolve: the library fetching a graph entry's images (kc_entry_resolve). The one-file\n"
           "layout's warm hit, estimated: w1 reads = warm - (limit - one file) (a lower bound on the price);\n"
           "w1 lib = warm - resolve + (one file - entry read):\n");
    printf("%-14s %4s %10s %11s %11s %10s %11s %10s %10s %10s %10s %10s %8s\n", "graph", "imgs", "entry read",
           "image reads", "limit (1+N)", "one file", "extra reads", "resolve", "warm", "w1 reads", "w1 lib",
           "warm/w1r", "warm/w1l");
    for (int i = 0; i < ns; i++) {
        const levels_res *l = &g[i].lv;
        printf("%-14s %4d %7.1f us %8.1f us %8.1f us %7.1f us %8.1f us %7.1f us %7.1f us %7.1f us %7.1f us %9.2fx %7.2fx\n",
               g[i].name, l->images, l->entry_read.med, l->image_reads.med, l->limit.med, l->one_file.med,
               l->limit.med - l->one_file.med, l->resolve.med, g[i].warm.med, warm_one_file_reads(&g[i]),
               warm_one_file_lib(&g[i]), r_rd[i], r_lib[i]);
    }
    printf("warm (two levels) / one-file warm, estimated: reads median %.2fx (most %.2fx), lib median %.2fx (most %.2fx)"
           " (acceptance: within 1.2x)\n", m[0], m[1], m[2], m[3]);
    fflush(stdout);
}

static void print_prewarm(const prewarm_res *pw, const char *manifest) {
    if (!pw->have) {
        printf("\ncold prewarm: not measured (%s)\n", pw->why);
        return;
    }
    size_t stored = pw->graph_bytes + pw->image_bytes + pw->unit_bytes;
    printf("\ncold prewarm of %s for %s into an empty cache: %zu graphs in %.2f s; NVRTC ran %ld units "
           "(sum of units_compiled) of %ld unit uses (sum of units); %zu unit records, %zu images, %zu graph entries stored\n",
           manifest, arch, pw->graphs, pw->seconds, pw->units_compiled, pw->unit_uses, pw->unit_records, pw->nimages, pw->ngraph);
    printf("stored: graph entries %.1f KB + images %.1f KB + unit records %.1f KB = %.1f KB; every graph carrying its own "
           "images (graph entry + its images' files, shared ones again): %.1f KB = %.2fx\n",
           (double)pw->graph_bytes / 1024, (double)pw->image_bytes / 1024, (double)pw->unit_bytes / 1024,
           (double)stored / 1024, (double)pw->one_file_bytes / 1024, ratio((double)pw->one_file_bytes, (double)stored));
    if (pw->have_shapes)
        printf("then two more static shapes of every graph (every symbol 384, then 768): NVRTC ran %ld units; %zu graph "
               "entries, stored %.1f KB against %.1f KB were every graph to carry its own images = %.2fx (one-file / two levels)\n",
               pw->shape_units_compiled, pw->shape_ngraph, (double)pw->shape_stored / 1024, (double)pw->shape_one_file / 1024,
               ratio((double)pw->shape_one_file, (double)pw->shape_stored));
    fflush(stdout);
}

static void jlevels(FILE *f, const gres *g) {
    fprintf(f, "\"units\": %d, \"images\": %d, \"graph_entry_bytes\": %zu, \"image_bytes\": %zu, ", g->units, g->lv.images,
            g->lv.graph_bytes, g->lv.image_bytes);
}

static void jshape(FILE *f, const shape_res *s) {
    fprintf(f, "{\"name\": \"%s\", \"shapes\": \"%s\", \"units\": %d, ", s->name, s->shapes, s->units);
    jstat(f, "cold", s->cold);
    jstat(f, "second", s->second);
    fprintf(f, "\"second_units_compiled\": %d, ", s->second_units_compiled);
    jnum(f, "cold_over_second", ratio(s->cold.med, s->second.med), 1);
    fprintf(f, "}");
}

static void jprewarm(FILE *f, const prewarm_res *pw) {
    fprintf(f, "\"prewarm\": ");
    if (!pw->have) {
        fprintf(f, "null");
        return;
    }
    size_t stored = pw->graph_bytes + pw->image_bytes + pw->unit_bytes;
    fprintf(f, "{\"graphs\": %zu, \"unit_uses\": %ld, \"units_compiled\": %ld, \"unit_records\": %zu, \"images\": %zu, "
            "\"graph_entries\": %zu, \"graph_entry_bytes\": %zu, \"image_bytes\": %zu, \"unit_record_bytes\": %zu, "
            "\"stored_bytes\": %zu, \"one_file_layout_bytes\": %zu, ",
            pw->graphs, pw->unit_uses, pw->units_compiled, pw->unit_records, pw->nimages, pw->ngraph, pw->graph_bytes,
            pw->image_bytes, pw->unit_bytes, stored, pw->one_file_bytes);
    jnum(f, "seconds", pw->seconds, 0);
    jnum(f, "one_file_layout_over_stored", ratio((double)pw->one_file_bytes, (double)stored), 1);
    fprintf(f, "}");
}

void rm_rf(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "kcache-bench: could not remove %s\n", dir);
}

int main(int argc, char **argv) {
    const char *json = NULL, *plot = NULL, *kdir = KC_KERNELS_DIR, *nvspec = NULL, *kcache = NULL, *synth_dir = NULL;
    int floor_only = 0, gpu_only = 0, largest = 0, ws_only = 0, synth_n = 0, ws_runs = 0, ws_peers = 1, ws_evict = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--kcache") && i + 1 < argc) kcache = argv[++i];
        else if (!strcmp(argv[i], "--process-floor")) floor_only = 1;
        else if (!strcmp(argv[i], "--gpu-only")) gpu_only = 1;
        else if (!strcmp(argv[i], "--warmstart-only")) ws_only = 1;
        else if (!strcmp(argv[i], "--synth") && i + 1 < argc) synth_n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmstart-runs") && i + 1 < argc) ws_runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-peers")) ws_peers = 0;
        else if (!strcmp(argv[i], "--warmstart-evict") && i + 1 < argc) ws_evict = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--write-synth") && i + 1 < argc) synth_dir = argv[++i];
        else if (!strcmp(argv[i], "--largest") && i + 1 < argc) largest = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--plot") && i + 1 < argc) plot = argv[++i];
        else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) kdir = argv[++i];
        else if (!strcmp(argv[i], "--measure-nvrtc-cache") && i + 1 < argc) nvspec = argv[++i];
        else {
            fprintf(stderr, "usage: kcache-bench [--quick] [--json FILE] [--plot FILE.png] [--arch TARGET] [--kernels DIR]\n"
                            "                    [--kcache PATH] [--process-floor] [--gpu-only] [--largest N]\n"
                            "                    [--warmstart-only] [--synth N] [--warmstart-runs N] [--warmstart-evict N] [--no-peers]\n"
                            "                    [--write-synth DIR [--synth N]]\n");
            return 2;
        }
    }
    if (nvspec) return measure_nvrtc_cache(nvspec);
    if (synth_dir) { /* only write the synthetic manifest (e.g. to profile a warm start of it) */
        char mpath[4200];
        if (synth_manifest(synth_dir, synth_n > 0 ? synth_n : 300, arch, mpath, sizeof mpath)) {
            fprintf(stderr, "kcache-bench: could not write the synthetic manifest in %s\n", synth_dir);
            return 1;
        }
        printf("%s\n", mpath);
        return 0;
    }
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sl > 0 ? sl : 0] = 0;
    char kc_default[4200];
    const char *bdir = strrchr(self, '/');
    snprintf(kc_default, sizeof kc_default, "%.*s/../kcache/kcache", bdir ? (int)(bdir - self) : 1, bdir ? self : ".");
    if (!kcache) kcache = kc_default; /* the tool built beside this benchmark */
    /* warm start as processes (procs.c): the programs built beside this benchmark */
    char ws_paths[3][4200];
    const char *ws_names[3] = {"kcache-warmstart", "kcache-minread", "kcache-empty"};
    for (int i = 0; i < 3; i++)
        snprintf(ws_paths[i], sizeof ws_paths[i], "%.*s/%s", bdir ? (int)(bdir - self) : 1, bdir ? self : ".", ws_names[i]);
    char ws_libs[4200];
    snprintf(ws_libs, sizeof ws_libs, "%s-libs", ws_paths[2]);
    ws_tools wst = {kcache, ws_paths[0], ws_paths[1], ws_paths[2], ws_libs, ws_evict};
    if (synth_n < 1) synth_n = quick ? 60 : 300; /* --synth: the synthetic manifest's graphs */
    if (ws_runs < 1) ws_runs = quick ? 30 : 200; /* --warmstart-runs: fresh processes of each program */
    ws_result ws;
    if (ws_only) { /* only the warm start as processes */
        const char *tmp = getenv("TMPDIR");
        char wroot[4096];
        snprintf(wroot, sizeof wroot, "%s/kcache-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(wroot)) return 1;
        printf("kcache-bench: warm start as processes for %s (%d runs; synthetic manifest of %d graphs)\n", arch, ws_runs,
               synth_n);
        bench_warmstart(&wst, kdir, wroot, synth_n, ws_runs, ws_peers, &ws);
        rm_rf(wroot);
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) return 1;
            fprintf(f, "{\"arch\": \"%s\", \"quick\": %s, ", arch, quick ? "true" : "false");
            json_warmstart(f, &ws);
            fprintf(f, "}\n");
            fclose(f);
            printf("wrote %s\n", json);
        }
        return ws.m[0].have && ws.m[1].have ? 0 : 1;
    }
    if (floor_only) { /* only the process floor, of any kcache tool (--kcache: e.g. an older build) */
        const char *tmp = getenv("TMPDIR");
        char fdir[4096], spec[4096];
        snprintf(fdir, sizeof fdir, "%s/kcache-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(fdir)) return 1;
        snprintf(spec, sizeof spec, "%s/softmax.json", kdir);
        floor_res pf;
        bench_process_floor(kcache, spec, fdir, &pf);
        printf("kcache-bench: process floor of %s for %s\n", kcache, arch);
        print_process_floor(&pf);
        rm_rf(fdir);
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) return 1;
            fprintf(f, "{\"arch\": \"%s\", \"kcache\": \"%s\", ", arch, kcache);
            jfloor(f, &pf);
            fprintf(f, "}\n");
            fclose(f);
            printf("wrote %s\n", json);
        }
        return pf.have ? 0 : 1;
    }
    if (kc_nvrtc_available() != KC_OK) {
        fprintf(stderr, "kcache-bench: %s\n", kc_error_last()->message);
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    char root[4096];
    snprintf(root, sizeof root, "%s/kcache-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) return 1;

    /* graphs */
    char specs[32][1024];
    int ns = 0;
    DIR *dd = opendir(kdir);
    struct dirent *de;
    while (dd && (de = readdir(dd)) && ns < 32) {
        size_t l = strlen(de->d_name);
        if (l > 5 && !strcmp(de->d_name + l - 5, ".json") && strcmp(de->d_name, "manifest.json"))
            snprintf(specs[ns++], sizeof specs[0], "%s/%s", kdir, de->d_name);
    }
    if (dd) closedir(dd);
    qsort(specs, (size_t)ns, sizeof specs[0], (int (*)(const void *, const void *))strcmp);
    if (gpu_only) { /* only the GPU part, on the first graph (or --kernels DIR's) */
        gpu_res gp;
        char gdir[4200], *base = strrchr(specs[0], '/');
        snprintf(gdir, sizeof gdir, "%s/gpu", root);
        mkdir(gdir, 0700);
        bench_gpu(specs[0], gdir, &gp);
        print_gpu(&gp, base ? base + 1 : specs[0]);
        rm_rf(root);
        return gp.have ? 0 : 1;
    }
    gres g[32];
    memset(g, 0, sizeof g);
    if (largest < 1000) largest = quick ? 100000 : 1000000; /* --largest: the largest store (lookups, gc) */
    printf("kcache-bench: %d graphs for %s, %s, largest store %d entries (%s); NVRTC: %s\n\n", ns, arch,
           quick ? "quick" : "full", largest, "median [p10 .. p90]", kc_nvrtc_toolchain());
    printf("%-14s %5s %4s %8s %8s %10s %10s %10s %12s %12s %11s %9s %8s %8s\n", "graph", "units", "imgs", "entry",
           "images", "cold", "warm", "limit", "ccache cold", "ccache warm", "nvrtc cache", "cold/warm", "warm/lim",
           "ccw/warm");
    double r_cw[32], r_wl[32], r_ccw[32], r_nv[32], r_rd[32], r_lib[32];
    for (int i = 0; i < ns; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/g%d", root, i);
        mkdir(dir, 0700);
        bench_graph(self, specs[i], dir, &g[i]);
        r_cw[i] = ratio(g[i].cold.med, g[i].warm.med);
        r_wl[i] = ratio(g[i].warm.med, g[i].lv.limit.med);
        r_ccw[i] = ratio(g[i].ccache_warm.n ? g[i].ccache_warm.med : NAN, g[i].warm.med);
        r_nv[i] = ratio(g[i].nvrtc_cache.med, g[i].warm.med);
        r_rd[i] = ratio(g[i].warm.med, warm_one_file_reads(&g[i]));
        r_lib[i] = ratio(g[i].warm.med, warm_one_file_lib(&g[i]));
        char a[32], b[32], c[32], d[32], e[32], f[32], sz[16], isz[16];
        fmt_us(g[i].cold.med, a, sizeof a);
        fmt_us(g[i].warm.med, b, sizeof b);
        fmt_us(g[i].lv.limit.med, c, sizeof c);
        fmt_us(g[i].ccache_cold.n ? g[i].ccache_cold.med : NAN, d, sizeof d);
        fmt_us(g[i].ccache_warm.n ? g[i].ccache_warm.med : NAN, e, sizeof e);
        fmt_us(g[i].nvrtc_cache.n ? g[i].nvrtc_cache.med : NAN, f, sizeof f);
        snprintf(sz, sizeof sz, "%.1f KB", (double)g[i].lv.graph_bytes / 1024);
        snprintf(isz, sizeof isz, "%.1f KB", (double)g[i].lv.image_bytes / 1024);
        printf("%-14s %5d %4d %8s %8s %10s %10s %10s %12s %12s %11s %8.0fx %7.2fx %7.0fx\n", g[i].name, g[i].units,
               g[i].lv.images, sz, isz, a, b, c, d, e, f, r_cw[i], r_wl[i], r_ccw[i]);
        printf("%-14s %5s %4s %8s %8s %10s [%.1f .. %.1f] [%.1f .. %.1f] us; warm = key %.1f us + lookup %.1f us\n", "",
               "", "", "", "", "", g[i].warm.p10, g[i].warm.p90, g[i].lv.limit.p10, g[i].lv.limit.p90,
               g[i].warm_key.med, g[i].warm_lookup.med);
        fflush(stdout);
        rm_rf(dir);
    }
    double m_cw = median_of(r_cw, ns), m_wl = median_of(r_wl, ns);
    int nccw = 0, nnv = 0, nrd = 0, nlib = 0;
    double ccw[32], nvv[32], rdv[32], libv[32];
    for (int i = 0; i < ns; i++) {
        if (!isnan(r_ccw[i])) ccw[nccw++] = r_ccw[i];
        if (!isnan(r_nv[i])) nvv[nnv++] = r_nv[i];
        if (!isnan(r_rd[i])) rdv[nrd++] = r_rd[i];
        if (!isnan(r_lib[i])) libv[nlib++] = r_lib[i];
    }
    double m_ccw = nccw ? median_of(ccw, nccw) : NAN, m_nv = nnv ? median_of(nvv, nnv) : NAN;
    double m_lv[4] = {nrd ? median_of(rdv, nrd) : NAN, nrd ? rdv[nrd - 1] : NAN, /* median_of sorts */
                      nlib ? median_of(libv, nlib) : NAN, nlib ? libv[nlib - 1] : NAN};
    printf("\nmedians over graphs: cold/warm %.0fx   warm/limit %.2fx   ccache-warm/kcache-warm %.0fx   "
           "nvrtc-own-cache/kcache-warm %.0fx\n", m_cw, m_wl, m_ccw, m_nv);
    double r_wc[32], r_fl[32], m_in[2];
    print_in_process(g, ns, r_wc, r_fl, m_in);
    print_levels(g, ns, r_rd, r_lib, m_lv);

    /* a second static shape, per graph with a symbolic dimension */
    shape_res sh[32];
    double r_sh[32];
    int nsh = 0;
    printf("\nsecond static shape (the graph's symbols set to 256, then 512; %d run%s each; median [p10 .. p90] ms):\n"
           "%-14s %-16s %5s %24s %24s %9s %10s\n", quick ? 1 : 5, quick ? "" : "s", "graph", "shapes", "units",
           "cold (empty cache)", "after the first shape", "compiled", "cold/2nd");
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
    double m_sh = nsh ? median_of(r_sh, nsh) : NAN, min_sh = nsh ? r_sh[0] : NAN; /* sorted by median_of */
    printf("second shape, cold / after the first shape: median %.0fx, least %.0fx over %d graphs (acceptance: >= 10x)\n", m_sh,
           min_sh, nsh);

    /* a cold prewarm of the bundled manifest for the target */
    prewarm_res pw;
    char pdir[4200], manifest[4200];
    snprintf(pdir, sizeof pdir, "%s/prewarm", root);
    snprintf(manifest, sizeof manifest, "%s/manifest.json", kdir);
    mkdir(pdir, 0700);
    bench_prewarm(manifest, pdir, &pw);
    rm_rf(pdir);
    print_prewarm(&pw, manifest);

    /* the process floor, on the softmax graph */
    floor_res pf;
    char fdir[4200], fspec[4200];
    snprintf(fdir, sizeof fdir, "%s/floor", root);
    snprintf(fspec, sizeof fspec, "%s/softmax.json", kdir);
    mkdir(fdir, 0700);
    bench_process_floor(kcache, fspec, fdir, &pf);
    print_process_floor(&pf);
    rm_rf(fdir);

    /* warm start as processes: whole manifests, and one graph against ccache, sccache, the Python peers */
    bench_warmstart(&wst, kdir, root, synth_n, ws_runs, ws_peers, &ws);

    /* site hits, key throughput */
    double site[3];
    const int sizes[3] = {1, 8, 64};
    for (int i = 0; i < 3; i++) site[i] = site_hit_ns(sizes[i]);
    printf("site-cache hit: %.0f ns (1 entry), %.0f ns (8), %.0f ns (64)\n", site[0], site[1], site[2]);
    double k_small = key_mbps(4096), k_large = key_mbps(1 << 20);
    printf("key: %.0f MB/s on 4 KB sources, %.0f MB/s on 1 MB sources\n", k_small, k_large);

    /* scale */
    const int scale_n[3] = {1000, largest / 10 > 1000 ? largest / 10 : 1000, largest};
    stat_s sc[3];
    double gc_ms = NAN;
    for (int i = 0; i < 3; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/scale%d", root, i);
        double t0 = now_us();
        uint64_t filled = fill_store(dir, scale_n[i]);
        double fill_s = (now_us() - t0) / 1e6;
        sc[i] = lookup_at(dir, scale_n[i]);
        printf("lookup at %7d entries: %.1f us [%.1f .. %.1f] (filled in %.1f s)\n", scale_n[i], sc[i].med, sc[i].p10,
               sc[i].p90, fill_s);
        fflush(stdout);
        if (i == 2) {
            kc_cache *c = open_at(dir);
            kc_gc_report rep = KC_GC_REPORT_INIT;
            t0 = now_us();
            kc_cache_gc(c, filled / 2, &rep); /* gc recounts from the directory: the fill bypassed the counters */
            gc_ms = (now_us() - t0) / 1e3;
            printf("gc halving %d entries: %.0f ms (%llu of %llu evicted)\n", scale_n[i], gc_ms,
                   (unsigned long long)rep.evicted, (unsigned long long)rep.entries_before);
            kc_cache_close(c);
        }
        rm_rf(dir);
    }
    double scale_ratio = ratio(sc[2].med, sc[0].med);
    printf("lookup at %d / at %d entries: %.2fx\n", scale_n[2], scale_n[0], scale_ratio);
    stat_s imp = import_at(root, 300, quick ? 5 : 9);
    printf("import of 300 entries into an empty cache: %.1f ms [%.1f .. %.1f]\n", imp.med, imp.p10, imp.p90);

    /* GPU */
    gpu_res gp;
    char gdir[4200];
    snprintf(gdir, sizeof gdir, "%s/gpu", root);
    mkdir(gdir, 0700);
    bench_gpu(specs[0], gdir, &gp);
    print_gpu(&gp, g[0].name);
    rm_rf(gdir);

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "kcache-bench: %s: %s\n", json, strerror(errno));
            return 1;
        }
        fprintf(f, "{\"arch\": \"%s\", \"quick\": %s, \"nvrtc\": \"%s\", \"graphs\": [", arch, quick ? "true" : "false",
                kc_nvrtc_toolchain());
        for (int i = 0; i < ns; i++) {
            fprintf(f, "%s\n  {\"name\": \"%s\", ", i ? "," : "", g[i].name);
            jlevels(f, &g[i]);
            jstat(f, "cold", g[i].cold);
            jstat(f, "warm", g[i].warm);
            jstat(f, "warm_key", g[i].warm_key);
            jstat(f, "warm_lookup", g[i].warm_lookup);
            jstat(f, "limit", g[i].lv.limit);
            jstat(f, "limit_graph_entry", g[i].lv.entry_read);
            jstat(f, "limit_images", g[i].lv.image_reads);
            jstat(f, "limit_one_file", g[i].lv.one_file);
            jstat(f, "resolve", g[i].lv.resolve);
            jstat(f, "read_check", g[i].lv.check);
            jstat(f, "lookup_with_bytes", g[i].lv.fetch);
            jnum(f, "warm_over_read_check", r_wc[i], 0);
            jnum(f, "lookup_with_bytes_over_limit", r_fl[i], 0);
            jnum(f, "warm_one_file_reads_us", warm_one_file_reads(&g[i]), 0);
            jnum(f, "warm_one_file_lib_us", warm_one_file_lib(&g[i]), 0);
            jnum(f, "warm_over_warm_one_file_reads", r_rd[i], 0);
            jnum(f, "warm_over_warm_one_file_lib", r_lib[i], 0);
            jstat(f, "ccache_cold", g[i].ccache_cold);
            jstat(f, "ccache_warm", g[i].ccache_warm);
            jstat(f, "nvrtc_cache", g[i].nvrtc_cache);
            jnum(f, "cold_over_warm", r_cw[i], 0);
            jnum(f, "warm_over_limit", r_wl[i], 0);
            jnum(f, "ccache_warm_over_warm", r_ccw[i], 0);
            jnum(f, "nvrtc_cache_over_warm", r_nv[i], 1);
            fprintf(f, "}");
        }
        fprintf(f, "\n], \"medians\": {");
        jnum(f, "cold_over_warm", m_cw, 0);
        jnum(f, "warm_over_limit", m_wl, 0);
        jnum(f, "warm_over_read_check", m_in[0], 0);
        jnum(f, "lookup_with_bytes_over_limit", m_in[1], 0);
        jnum(f, "ccache_warm_over_warm", m_ccw, 0);
        jnum(f, "nvrtc_cache_over_warm", m_nv, 0);
        jnum(f, "warm_over_warm_one_file_reads", m_lv[0], 0);
        jnum(f, "warm_over_warm_one_file_reads_most", m_lv[1], 0);
        jnum(f, "warm_over_warm_one_file_lib", m_lv[2], 0);
        jnum(f, "warm_over_warm_one_file_lib_most", m_lv[3], 0);
        jnum(f, "second_shape_cold_over_second", m_sh, 0);
        jnum(f, "second_shape_cold_over_second_least", min_sh, 0);
        jnum(f, "load_over_bare_load", gp.have ? ratio(gp.hit_load_us, gp.bare_load_us) : NAN, 0);
        jnum(f, "load_over_by_hand", gp.have ? ratio(gp.hit_load_us, gp.hand_us) : NAN, 0);
        jnum(f, "nvrtc_cache_over_hit", gp.have ? ratio(g[0].nvrtc_cache.med, gp.hit_load_us) : NAN, 0);
        jnum(f, "ptx_load_over_cubin_load", gp.have ? ratio(gp.ptx_load_us, gp.cubin_load_us) : NAN, 1);
        fprintf(f, "},\n \"site_hit_ns\": {\"1\": %.1f, \"8\": %.1f, \"64\": %.1f},", site[0], site[1], site[2]);
        fprintf(f, " \"key_mb_per_s\": {\"4KB\": %.0f, \"1MB\": %.0f},\n", k_small, k_large);
        fprintf(f, " \"second_shape\": [");
        for (int i = 0, k = 0; i < ns; i++)
            if (sh[i].have) fprintf(f, "%s\n  ", k++ ? "," : ""), jshape(f, &sh[i]);
        fprintf(f, "],\n ");
        jprewarm(f, &pw);
        fprintf(f, ",\n \"scale\": [");
        for (int i = 0; i < 3; i++) {
            fprintf(f, "%s{\"entries\": %d, \"lookup\": {", i ? ", " : "", scale_n[i]);
            jnum(f, "median_us", sc[i].med, 0);
            jnum(f, "p10_us", sc[i].p10, 0);
            jnum(f, "p90_us", sc[i].p90, 1);
            fprintf(f, "}}");
        }
        fprintf(f, "], ");
        jnum(f, "lookup_largest_over_smallest", scale_ratio, 0);
        jnum(f, "gc_halving_ms", gc_ms, 0);
        jnum(f, "import_300_ms", imp.med, 0);
        jfloor(f, &pf);
        fprintf(f, ",\n ");
        json_warmstart(f, &ws);
        fprintf(f, ",\n \"gpu\": ");
        if (gp.have) {
            fprintf(f, "{");
            jnum(f, "hit_with_load_us", gp.hit_load_us, 0);
            jnum(f, "bare_load_us", gp.bare_load_us, 0);
            jnum(f, "by_hand_us", gp.hand_us, 0);
            jnum(f, "hit_key_us", gp.key_us, 0);
            jnum(f, "hit_lookup_us", gp.lookup_us, 0);
            jnum(f, "hit_load_part_us", gp.load_us, 0);
            jnum(f, "ptx_load_us", gp.ptx_load_us, 0);
            jnum(f, "cubin_load_us", gp.cubin_load_us, 1);
            fprintf(f, "}}\n");
        } else {
            fprintf(f, "null}\n");
        }
        fclose(f);
        printf("wrote %s\n", json);
    }
    if (plot) {
        char dat[4200];
        snprintf(dat, sizeof dat, "%s/plot.dat", root);
        FILE *f = fopen(dat, "w");
        for (int i = 0; f && i < ns; i++)
            fprintf(f, "%s %.3f %.3f %.3f %.3f\n", g[i].name, g[i].cold.med, g[i].warm.med, g[i].lv.limit.med,
                    g[i].lv.one_file.med);
        if (f) fclose(f);
        FILE *gp2 = popen("gnuplot 2>&1", "w");
        if (!gp2) fprintf(stderr, "kcache-bench: gnuplot not found: no plot\n");
        else {
            fprintf(gp2,
                    "set terminal pngcairo size 1000,560 noenhanced\nset output '%s'\n"
                    "set title 'kcache: cold compile vs warm disk hit vs the read+XXH3+zstd limit (%s, median)'\n"
                    "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                    "set logscale y\nset ylabel 'microseconds (log scale)'\nset grid ytics\nset xtics rotate by -20\n"
                    "set key below\n"
                    "plot '%s' using 2:xtic(1) title 'cold (NVRTC)', '' using 3 title 'warm (kcache disk hit)', "
                    "'' using 4 title 'limit (read+XXH3+zstd, graph entry + image files)', "
                    "'' using 5 title 'limit, the same bytes as one file'\n",
                    plot, arch, dat);
            int rc = pclose(gp2);
            if (rc == 0) printf("wrote %s\n", plot);
            else fprintf(stderr, "kcache-bench: gnuplot failed (%d)\n", rc);
        }
    }
    rm_rf(root);
    return 0;
}
