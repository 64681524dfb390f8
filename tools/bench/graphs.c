/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graphs.c — kcache-bench per graph of kernels/: what one graph's compile costs cold, what its warm
 * disk hit costs, and what the same graph costs under the caches users have today.
 *
 * The one idea: each graph is measured on its own scratch cache, cold (NVRTC compiles every unit:
 * an empty cache, NVRTC's own cache off), warm (key + the graph entry's read + its images' reads,
 * each checked and decompressed, no driver) and at the limit (levels.c), against nvcc -cubin
 * under ccache (cold, then warm) and NVRTC's own cache (a repeated compile with it on, measured
 * in a child process: the setting is read once per process).  Then the rows of the main table,
 * the in-process hits over their floors and the second level's price are printed from them.
 * Callers: bench.c (the full run's graph step) and report.c (each graph's JSON object).
 *
 * Must not: report a cold compile that compiled less than every unit, or a warm lookup that was
 * not a disk hit (the benchmark stops, saying which graph).
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#ifndef KC_KERNELS_DIR
#define KC_KERNELS_DIR "kernels"
#endif

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
        for (int i = 0; i < nf; i++)
            dup |= (size_t)(e - q - 1) == strlen(files[i]) && !strncmp(files[i], q + 1, (size_t)(e - q - 1));
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

int bench_nvrtc_child(const char *spec) {
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
 * Each in-process hit over its own floor, timed in the same rounds on the same files, the order of
 * each pair alternating (levels.c): a compile-path hit (kc_graph_compile, images checked, not
 * inflated) over read + check; a lookup that hands out the bytes (key, graph entry, images
 * attached) over read + check + inflate (the limit).  r_wc, r_fl per graph; m[0], m[1] their medians.
 */
static void print_in_process(const gres *g, int ns, double *r_wc, double *r_fl, double *m) {
    printf("\nin-process hits over their floors, each pair timed in the same loop (median [p10 .. p90] us):\n"
           "%-14s %22s %22s %9s %22s %22s %9s\n",
           "graph", "compile-path hit", "read+check", "ratio", "lookup with bytes", "read+check+inflate", "ratio");
    double a[32], b[32];
    for (int i = 0; i < ns; i++) {
        const levels_res *l = &g[i].lv;
        r_wc[i] = a[i] = ratio(l->hit.med, l->check.med);
        r_fl[i] = b[i] = ratio(l->fetch.med, l->limit.med);
        printf(
            "%-14s %7.1f [%5.1f .. %5.1f] %7.1f [%5.1f .. %5.1f] %8.2fx %7.1f [%5.1f .. %5.1f] %7.1f [%5.1f .. %5.1f] %8.2fx\n",
            g[i].name, l->hit.med, l->hit.p10, l->hit.p90, l->check.med, l->check.p10, l->check.p90, a[i], l->fetch.med,
            l->fetch.p10, l->fetch.p90, l->limit.med, l->limit.p10, l->limit.p90, b[i]);
    }
    m[0] = median_of(a, ns), m[1] = median_of(b, ns);
    printf("medians: compile-path hit / read+check %.2fx (target <= 1.2x); lookup with bytes / read+check+inflate "
           "%.2fx (target <= 1.1x)\n",
           m[0], m[1]);
    fflush(stdout);
}

/*
 * --hits-only: the in-process hits over their floors and nothing else, per graph of `specs` (a
 * scratch cache under `root` each, the graph compiled once, then `iters` rounds); 0, or 1 when a
 * graph could not be compiled or measured.  For iterating on the hit path in seconds, not minutes.
 */
int bench_hits(const char (*specs)[1024], int ns, const char *root, int iters) {
    static graphs_res r; /* large: not on the stack */
    printf("kcache-bench: in-process hits of %d graphs for %s, %d rounds each\n", ns, arch, iters);
    for (int i = 0; i < ns; i++) {
        gres *g = &r.g[i];
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/g%d", root, i);
        mkdir(dir, 0700);
        kc_graph_desc *d = NULL;
        kc_cache *c = open_at(dir);
        kc_key key;
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        if (kc_graph_desc_load(&d, specs[i]) || kc_graph_compile(c, d, arch, &info) || kc_graph_key(d, &key, NULL)) {
            fprintf(stderr, "kcache-bench: %s: %s\n", specs[i], kc_error_last()->message);
            return 1;
        }
        snprintf(g->name, sizeof g->name, "%s", kc_graph_desc_name(d));
        bench_levels(c, d, &key, dir, iters, &g->lv);
        kc_cache_close(c);
        kc_graph_desc_free(d);
        rm_rf(dir);
        if (!g->lv.have) {
            fprintf(stderr, "kcache-bench: %s: %s\n", g->name, g->lv.why);
            return 1;
        }
    }
    print_in_process(r.g, ns, r.r_wc, r.r_fl, r.m_in);
    return 0;
}

double warm_one_file_reads(const gres *g) { return g->warm.med - (g->lv.limit.med - g->lv.one_file.med); }
double warm_one_file_lib(const gres *g) {
    return g->warm.med - g->lv.resolve.med + (g->lv.one_file.med - g->lv.entry_read.med);
}

static void print_levels(const gres *g, int ns, const double *r_rd, const double *r_lib, const double *m) {
    printf("\nthe second level's price: a hit reads the graph entry file and each image file it refers to. The limit\n"
           "(read() + XXH3 + zstd; images also XXH3-128) split in two, against the same bytes as one file (samples\n"
           "interleaved); resolve: the library fetching a graph entry's images (kc_entry_resolve). The one-file\n"
           "layout's warm hit, estimated: w1 reads = warm - (limit - one file) (a lower bound on the price);\n"
           "w1 lib = warm - resolve + (one file - entry read):\n");
    printf("%-14s %4s %10s %11s %11s %10s %11s %10s %10s %10s %10s %10s %8s\n", "graph", "imgs", "entry read",
           "image reads", "limit (1+N)", "one file", "extra reads", "resolve", "warm", "w1 reads", "w1 lib", "warm/w1r",
           "warm/w1l");
    for (int i = 0; i < ns; i++) {
        const levels_res *l = &g[i].lv;
        printf(
            "%-14s %4d %7.1f us %8.1f us %8.1f us %7.1f us %8.1f us %7.1f us %7.1f us %7.1f us %7.1f us %9.2fx %7.2fx\n",
            g[i].name, l->images, l->entry_read.med, l->image_reads.med, l->limit.med, l->one_file.med,
            l->limit.med - l->one_file.med, l->resolve.med, g[i].warm.med, warm_one_file_reads(&g[i]),
            warm_one_file_lib(&g[i]), r_rd[i], r_lib[i]);
    }
    printf(
        "warm (two levels) / one-file warm, estimated: reads median %.2fx (most %.2fx), lib median %.2fx (most %.2fx)"
        " (acceptance: within 1.2x)\n",
        m[0], m[1], m[2], m[3]);
    fflush(stdout);
}


/* ---- the graph step: the main table, its medians, then the two tables above ---- */

/* One graph's two rows of the main table, and its ratios into r[i]. */
static void graph_row(graphs_res *r, int i) {
    const gres *g = &r->g[i];
    r->r_cw[i] = ratio(g->cold.med, g->warm.med);
    r->r_wl[i] = ratio(g->warm.med, g->lv.limit.med);
    r->r_ccw[i] = ratio(g->ccache_warm.n ? g->ccache_warm.med : NAN, g->warm.med);
    r->r_nv[i] = ratio(g->nvrtc_cache.med, g->warm.med);
    r->r_rd[i] = ratio(g->warm.med, warm_one_file_reads(g));
    r->r_lib[i] = ratio(g->warm.med, warm_one_file_lib(g));
    char a[32], b[32], c[32], d[32], e[32], f[32], sz[16], isz[16];
    fmt_us(g->cold.med, a, sizeof a);
    fmt_us(g->warm.med, b, sizeof b);
    fmt_us(g->lv.limit.med, c, sizeof c);
    fmt_us(g->ccache_cold.n ? g->ccache_cold.med : NAN, d, sizeof d);
    fmt_us(g->ccache_warm.n ? g->ccache_warm.med : NAN, e, sizeof e);
    fmt_us(g->nvrtc_cache.n ? g->nvrtc_cache.med : NAN, f, sizeof f);
    snprintf(sz, sizeof sz, "%.1f KB", (double)g->lv.graph_bytes / 1024);
    snprintf(isz, sizeof isz, "%.1f KB", (double)g->lv.image_bytes / 1024);
    printf("%-14s %5d %4d %8s %8s %10s %10s %10s %12s %12s %11s %8.0fx %7.2fx %7.0fx\n", g->name, g->units,
           g->lv.images, sz, isz, a, b, c, d, e, f, r->r_cw[i], r->r_wl[i], r->r_ccw[i]);
    printf("%-14s %5s %4s %8s %8s %10s [%.1f .. %.1f] [%.1f .. %.1f] us; warm = key %.1f us + lookup %.1f us\n", "", "",
           "", "", "", "", g->warm.p10, g->warm.p90, g->lv.limit.p10, g->lv.limit.p90, g->warm_key.med,
           g->warm_lookup.med);
    fflush(stdout);
}

/* The median of the values of v[0, n) that were measured (not NAN), or NAN; *most their largest. */
static double median_measured(const double *v, int n, double *most) {
    double w[32];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(v[i])) w[k++] = v[i];
    double m = k ? median_of(w, k) : NAN; /* median_of sorts */
    if (most) *most = k ? w[k - 1] : NAN;
    return m;
}

void bench_graphs(const char *self, const char (*specs)[1024], int ns, const char *root, int largest, graphs_res *r) {
    r->ns = ns;
    printf("kcache-bench: %d graphs for %s, %s, largest store %d entries (%s); NVRTC: %s\n\n", ns, arch,
           quick ? "quick" : "full", largest, "median [p10 .. p90]", kc_nvrtc_toolchain());
    printf("%-14s %5s %4s %8s %8s %10s %10s %10s %12s %12s %11s %9s %8s %8s\n", "graph", "units", "imgs", "entry",
           "images", "cold", "warm", "limit", "ccache cold", "ccache warm", "nvrtc cache", "cold/warm", "warm/lim",
           "ccw/warm");
    for (int i = 0; i < ns; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/g%d", root, i);
        mkdir(dir, 0700);
        bench_graph(self, specs[i], dir, &r->g[i]);
        graph_row(r, i);
        rm_rf(dir);
    }
    /* median_of sorts r_cw and r_wl in place, so the results file's per-graph cold_over_warm and
     * warm_over_limit are those sorted values: kept as they were (the file's format stays). */
    r->m_cw = median_of(r->r_cw, ns), r->m_wl = median_of(r->r_wl, ns);
    r->m_ccw = median_measured(r->r_ccw, ns, NULL), r->m_nv = median_measured(r->r_nv, ns, NULL);
    r->m_lv[0] = median_measured(r->r_rd, ns, &r->m_lv[1]);
    r->m_lv[2] = median_measured(r->r_lib, ns, &r->m_lv[3]);
    printf("\nmedians over graphs: cold/warm %.0fx   warm/limit %.2fx   ccache-warm/kcache-warm %.0fx   "
           "nvrtc-own-cache/kcache-warm %.0fx\n",
           r->m_cw, r->m_wl, r->m_ccw, r->m_nv);
    print_in_process(r->g, ns, r->r_wc, r->r_fl, r->m_in);
    print_levels(r->g, ns, r->r_rd, r->r_lib, r->m_lv);
}
