/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.c — kcache-bench: cold vs warm vs the physical limit, and peers, side by side in one
 * run, reported as medians with their spread and as ratios (these machines are noisy).
 *
 *   kcache-bench [--quick] [--json FILE] [--plot FILE.png] [--arch TARGET] [--kernels DIR]
 *                [--kcache PATH] [--process-floor] [--gpu-only] [--load-calls] [--largest N]
 *                [--warmstart-only] [--synth N] [--warmstart-runs N] [--warmstart-evict N] [--no-peers]
 *                [--write-synth DIR [--synth N]] [--hits-only]
 *                [--pch-only] [--pch-runs N] [--pch-graphs N] [--pch-single N] [--pch-targets LIST]
 *                [--write-bf16 DIR [--pch-graphs N] [--pch-targets LIST]]
 *                [--fleet [--hosts N] [--fleet-graphs N] [--remote URL | --servers LIST]]
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
 * And a cold build host (pch.c; --pch-only): fresh `kcache prewarm` processes into empty caches
 * with NVRTC precompiled headers off and on, interleaved, of the bundled toolkit-header graphs and
 * of a generated manifest of --pch-graphs N llm.c-style bf16 graphs (32; synth_bf16.c) for
 * --pch-targets (sm_80,sm_90,sm_100), and of --pch-single N (10) of them for --arch; --pch-runs
 * pairs each (3); the entries both wrote compared.  And a fleet's cold start (fleet.c; --fleet): --hosts N
 * processes (16), each its own cache directory, released together on a cold manifest of --fleet-graphs N
 * synthetic graphs (8) against --remote URL or each server of --servers (tests/servers/NAME.sh; all of
 * them by default), with the lease and without: NVRTC compiles per key, lookups/s, latency, bytes.
 */
#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "fleet.h"

#ifndef KC_KERNELS_DIR
#define KC_KERNELS_DIR "kernels"
#endif

/*
 * Where each measurement lives: graphs.c (per graph), levels.c (the two levels, second shapes,
 * prewarm), stores.c (site cache, key, scale), floor.c (the process floor), procs.c (warm start as
 * processes), gpu.c (the driver), report.c (the results file and plot).  This file holds what they
 * share (the clock, samples, JSON numbers, scratch folders), the options, and the modes: a table of
 * named runs, the first one asked for runs; the full run is a table of named steps.
 */

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

void jnum(FILE *f, const char *k, double v, int last) {
    if (isnan(v) || v < 0) fprintf(f, "\"%s\": null%s", k, last ? "" : ", ");
    else fprintf(f, "\"%s\": %.4g%s", k, v, last ? "" : ", ");
}

void jstat(FILE *f, const char *k, stat_s s) {
    fprintf(f, "\"%s\": {", k);
    jnum(f, "median_us", s.n ? s.med : NAN, 0);
    jnum(f, "p10_us", s.n ? s.p10 : NAN, 0);
    jnum(f, "p90_us", s.n ? s.p90 : NAN, 0);
    fprintf(f, "\"n\": %d}, ", s.n);
}

double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : NAN; }

void fmt_us(double us, char *out, size_t cap) {
    if (isnan(us) || us < 0) snprintf(out, cap, "-");
    else if (us >= 1e6) snprintf(out, cap, "%.2f s", us / 1e6);
    else if (us >= 1e3) snprintf(out, cap, "%.1f ms", us / 1e3);
    else snprintf(out, cap, "%.1f us", us);
}

void rm_rf(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "kcache-bench: could not remove %s\n", dir);
}


/* ---- options ---- */

typedef struct bench_opts {
    const char *json, *plot, *kdir, *nvspec, *kcache, *synth_dir, *arch, *bf16_dir, *pch_targets;
    int quick, floor_only, gpu_only, hits_only, ws_only, largest, synth_n, ws_runs, ws_peers, ws_evict;
    int load_calls, pch_only, pch_runs, pch_graphs, pch_single;
    int fleet, hosts, fleet_graphs;        /* --fleet (fleet.c) */
    int contended, ct_runs, ct_unfiltered; /* --contended-only (contended.c) */
    const char *ct_child;
    const char *remote, *servers;
    /* the programs beside this one (find_tools) */
    char self[4096], kc_default[4200], ws_paths[3][4200], ws_libs[4200];
    ws_tools wst;
} bench_opts;

enum { OPT_SET, OPT_CLEAR, OPT_INT, OPT_STR };

/* One option: its flag, its kind (a switch set or cleared, or one argument) and its field. */
static const struct option_row {
    const char *flag;
    int kind;
    size_t field;
} options[] = {
    {"--quick", OPT_SET, offsetof(bench_opts, quick)},
    {"--kcache", OPT_STR, offsetof(bench_opts, kcache)},
    {"--process-floor", OPT_SET, offsetof(bench_opts, floor_only)},
    {"--gpu-only", OPT_SET, offsetof(bench_opts, gpu_only)},
    {"--load-calls", OPT_SET, offsetof(bench_opts, load_calls)},
    {"--hits-only", OPT_SET, offsetof(bench_opts, hits_only)},
    {"--warmstart-only", OPT_SET, offsetof(bench_opts, ws_only)},
    {"--synth", OPT_INT, offsetof(bench_opts, synth_n)},
    {"--warmstart-runs", OPT_INT, offsetof(bench_opts, ws_runs)},
    {"--no-peers", OPT_CLEAR, offsetof(bench_opts, ws_peers)},
    {"--warmstart-evict", OPT_INT, offsetof(bench_opts, ws_evict)},
    {"--write-synth", OPT_STR, offsetof(bench_opts, synth_dir)},
    {"--largest", OPT_INT, offsetof(bench_opts, largest)},
    {"--pch-only", OPT_SET, offsetof(bench_opts, pch_only)},
    {"--pch-runs", OPT_INT, offsetof(bench_opts, pch_runs)},
    {"--pch-graphs", OPT_INT, offsetof(bench_opts, pch_graphs)},
    {"--pch-single", OPT_INT, offsetof(bench_opts, pch_single)},
    {"--pch-targets", OPT_STR, offsetof(bench_opts, pch_targets)},
    {"--write-bf16", OPT_STR, offsetof(bench_opts, bf16_dir)},
    {"--fleet", OPT_SET, offsetof(bench_opts, fleet)},
    {"--hosts", OPT_INT, offsetof(bench_opts, hosts)},
    {"--fleet-graphs", OPT_INT, offsetof(bench_opts, fleet_graphs)},
    {"--remote", OPT_STR, offsetof(bench_opts, remote)},
    {"--servers", OPT_STR, offsetof(bench_opts, servers)},
    {"--contended-only", OPT_SET, offsetof(bench_opts, contended)},
    {"--contended-runs", OPT_INT, offsetof(bench_opts, ct_runs)},
    {"--contended-child", OPT_STR, offsetof(bench_opts, ct_child)},
    {"--contended-unfiltered", OPT_SET, offsetof(bench_opts, ct_unfiltered)},
    {"--json", OPT_STR, offsetof(bench_opts, json)},
    {"--plot", OPT_STR, offsetof(bench_opts, plot)},
    {"--arch", OPT_STR, offsetof(bench_opts, arch)},
    {"--kernels", OPT_STR, offsetof(bench_opts, kdir)},
    {"--measure-nvrtc-cache", OPT_STR, offsetof(bench_opts, nvspec)},
};

/* argv into *o (its defaults set first); 0, or -1 on an unknown option or a missing argument. */
static int parse_options(int argc, char **argv, bench_opts *o) {
    o->kdir = KC_KERNELS_DIR, o->arch = arch, o->ws_peers = 1, o->ws_evict = -1;
    o->pch_targets = "sm_80,sm_90,sm_100", o->pch_runs = 3, o->pch_graphs = 32, o->pch_single = 10;
    for (int i = 1; i < argc; i++) {
        size_t k = 0, n = sizeof options / sizeof options[0];
        while (k < n && strcmp(argv[i], options[k].flag)) k++;
        if (k == n || (options[k].kind >= OPT_INT && i + 1 >= argc)) return -1;
        char *field = (char *)o + options[k].field;
        if (options[k].kind == OPT_SET) *(int *)field = 1;
        else if (options[k].kind == OPT_CLEAR) *(int *)field = 0;
        else if (options[k].kind == OPT_INT) *(int *)field = atoi(argv[++i]);
        else *(const char **)field = argv[++i];
    }
    quick = o->quick, arch = o->arch;
    return 0;
}

/* The kcache tool and the warm start's programs: the ones built beside this benchmark (or --kcache). */
static void find_tools(bench_opts *o) {
    ssize_t sl = readlink("/proc/self/exe", o->self, sizeof o->self - 1);
    o->self[sl > 0 ? sl : 0] = 0;
    const char *bdir = strrchr(o->self, '/');
    int blen = bdir ? (int)(bdir - o->self) : 1;
    const char *base = bdir ? o->self : ".";
    snprintf(o->kc_default, sizeof o->kc_default, "%.*s/../kcache/kcache", blen, base);
    if (!o->kcache) o->kcache = o->kc_default;
    const char *ws_names[3] = {"kcache-warmstart", "kcache-minread", "kcache-empty"};
    for (int i = 0; i < 3; i++) snprintf(o->ws_paths[i], sizeof o->ws_paths[i], "%.*s/%s", blen, base, ws_names[i]);
    snprintf(o->ws_libs, sizeof o->ws_libs, "%s-libs", o->ws_paths[2]);
    o->wst = (ws_tools){o->kcache, o->ws_paths[0], o->ws_paths[1], o->ws_paths[2], o->ws_libs, o->ws_evict};
    if (o->synth_n < 1) o->synth_n = quick ? 60 : 300; /* --synth: the synthetic manifest's graphs */
    if (o->ws_runs < 1) o->ws_runs = quick ? 30 : 200; /* --warmstart-runs: fresh processes of each program */
}

/* A fresh scratch folder under $TMPDIR (or /tmp) into out; 0, or -1. */
static int scratch_root(char *out, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    snprintf(out, cap, "%s/kcache-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(out) ? 0 : -1;
}

/* ---- the modes: each a named run; main runs the first one asked for ---- */

/* --measure-nvrtc-cache SPEC: the child's part of NVRTC's own cache (graphs.c). */
static int run_nvrtc_child(bench_opts *o) { return bench_nvrtc_child(o->nvspec); }

/* --contended-child DIR: the cold compile of contended.c's pass, in a fresh process. */
static int run_contended_child(bench_opts *o) {
    char spec[4200];
    snprintf(spec, sizeof spec, "%s/rmsnorm_bf16.json", o->kdir);
    return bench_contended_child(o->ct_child, spec, o->ct_unfiltered);
}

/* --contended-only: a cold compile alone and beside a neighbour reading the toolkit (contended.c). */
static int run_contended(bench_opts *o) {
    find_tools(o);
    char root[4096];
    if (scratch_root(root, sizeof root)) return 1;
    ct_plan p = {o->self, o->kcache, o->kdir, root, o->ct_runs > 0 ? o->ct_runs : quick ? 20 : 100};
    return bench_contended_mode(&p, o->json);
}

/* --write-synth DIR: only write the synthetic manifest (e.g. to profile a warm start of it). */
static int run_write_synth(bench_opts *o) {
    char mpath[4200];
    if (synth_manifest(o->synth_dir, o->synth_n > 0 ? o->synth_n : 300, arch, mpath, sizeof mpath)) {
        fprintf(stderr, "kcache-bench: could not write the synthetic manifest in %s\n", o->synth_dir);
        return 1;
    }
    printf("%s\n", mpath);
    return 0;
}

/* --warmstart-only: only the warm start as processes (procs.c). */
static int run_warmstart_only(bench_opts *o) {
    find_tools(o);
    ws_result ws;
    char wroot[4096];
    if (scratch_root(wroot, sizeof wroot)) return 1;
    printf("kcache-bench: warm start as processes for %s (%d runs; synthetic manifest of %d graphs)\n", arch,
           o->ws_runs, o->synth_n);
    bench_warmstart(&o->wst, o->kdir, wroot, o->synth_n, o->ws_runs, o->ws_peers, &ws);
    rm_rf(wroot);
    if (o->json) {
        FILE *f = fopen(o->json, "w");
        if (!f) return 1;
        fprintf(f, "{\"arch\": \"%s\", \"quick\": %s, ", arch, quick ? "true" : "false");
        json_warmstart(f, &ws);
        fprintf(f, "}\n");
        fclose(f);
        printf("wrote %s\n", o->json);
    }
    return ws.m[0].have && ws.m[1].have ? 0 : 1;
}

/* --write-bf16 DIR: only write the generated bf16 manifest (--pch-graphs N for --pch-targets). */
static int run_write_bf16(bench_opts *o) {
    char mpath[4200];
    mkdir(o->bf16_dir, 0700); /* made when missing (EEXIST: written into) */
    if (o->pch_graphs < 1 || synth_bf16_manifest(o->bf16_dir, o->pch_graphs, o->pch_targets, mpath, sizeof mpath)) {
        fprintf(stderr, "kcache-bench: could not write the bf16 manifest in %s\n", o->bf16_dir);
        return 1;
    }
    printf("%s\n", mpath);
    return 0;
}

/* --pch-only: only the cold prewarm with and without precompiled headers (pch.c). */
static int run_pch_only(bench_opts *o) {
    find_tools(o);
    if (o->pch_runs < 1 || o->pch_graphs < 1 || o->pch_single < 1) {
        fprintf(stderr, "kcache-bench: --pch-runs, --pch-graphs and --pch-single take a count of at least 1\n");
        return 2;
    }
    char root[4096];
    if (scratch_root(root, sizeof root)) return 1;
    pch_plan p = {o->kcache, o->kdir, root, o->pch_graphs, o->pch_single, o->pch_runs, o->pch_targets, arch};
    static pch_result r;
    printf("kcache-bench: cold prewarm with and without precompiled headers (KCACHE_PCH=0 / 1, interleaved; %d "
           "pair%s; NVRTC's own cache off; %s)\n",
           o->pch_runs, o->pch_runs == 1 ? "" : "s", o->kcache);
    int rc = bench_pch(&p, &r);
    printf("prewarm threads: the default, %d (the cores)\n", r.jobs);
    rm_rf(root);
    if (o->json) {
        FILE *f = fopen(o->json, "w");
        if (!f) return 1;
        fprintf(f, "{\"kcache\": \"%s\", ", o->kcache);
        json_pch(f, &r);
        fprintf(f, "}\n");
        fclose(f);
        printf("wrote %s\n", o->json);
    }
    return rc;
}

/* --process-floor: only the process floor, of any kcache tool (--kcache: e.g. an older build). */
static int run_floor_only(bench_opts *o) {
    find_tools(o);
    char fdir[4096], spec[4096];
    if (scratch_root(fdir, sizeof fdir)) return 1;
    snprintf(spec, sizeof spec, "%s/softmax.json", o->kdir);
    floor_res pf;
    bench_process_floor(o->kcache, spec, fdir, &pf);
    printf("kcache-bench: process floor of %s for %s\n", o->kcache, arch);
    print_process_floor(&pf);
    rm_rf(fdir);
    if (o->json) {
        FILE *f = fopen(o->json, "w");
        if (!f) return 1;
        fprintf(f, "{\"arch\": \"%s\", \"kcache\": \"%s\", ", arch, o->kcache);
        jfloor(f, &pf);
        fprintf(f, "}\n");
        fclose(f);
        printf("wrote %s\n", o->json);
    }
    return pf.have ? 0 : 1;
}

/* NVRTC there, a scratch root, and the graph specs of --kernels (sorted, manifest.json left out); 0, or 1. */
static int prepare_graphs(const bench_opts *o, full_run *r, int *ns) {
    if (kc_nvrtc_available() != KC_OK) {
        fprintf(stderr, "kcache-bench: %s\n", kc_error_last()->message);
        return 1;
    }
    if (scratch_root(r->root, sizeof r->root)) return 1;
    *ns = 0;
    DIR *dd = opendir(o->kdir);
    struct dirent *de;
    while (dd && (de = readdir(dd)) && *ns < 32) {
        size_t l = strlen(de->d_name);
        if (l > 5 && !strcmp(de->d_name + l - 5, ".json") && strcmp(de->d_name, "manifest.json"))
            snprintf(r->specs[(*ns)++], sizeof r->specs[0], "%s/%s", o->kdir, de->d_name);
    }
    if (dd) closedir(dd);
    qsort(r->specs, (size_t)*ns, sizeof r->specs[0], (int (*)(const void *, const void *))strcmp);
    return 0;
}

/* --gpu-only: only the GPU part, on the first graph (or --kernels DIR's). */
static int run_gpu_only(bench_opts *o) {
    find_tools(o);
    full_run *r = calloc(1, sizeof *r);
    int ns, rc = r ? prepare_graphs(o, r, &ns) : 1;
    if (rc) return free(r), rc;
    char gdir[4200], *base = strrchr(r->specs[0], '/');
    snprintf(gdir, sizeof gdir, "%s/gpu", r->root);
    mkdir(gdir, 0700);
    bench_gpu(r->specs[0], gdir, &r->gp);
    print_gpu(&r->gp, base ? base + 1 : r->specs[0]);
    rm_rf(r->root);
    rc = r->gp.have ? 0 : 1;
    free(r);
    return rc;
}

/* --load-calls: the driver calls of each bundled graph's load, on the driver double (gpu.c). */
static int run_load_calls(bench_opts *o) {
    if (bench_double_open()) return 1;
    full_run *r = calloc(1, sizeof *r);
    int ns, rc = r ? prepare_graphs(o, r, &ns) : 1;
    if (rc) return free(r), rc;
    rc = bench_load_calls((const char(*)[1024])r->specs, ns, r->root);
    rm_rf(r->root);
    free(r);
    return rc;
}

/* --hits-only: only the in-process hits over their floors (graphs.c), each pair in the same loop. */
static int run_hits_only(bench_opts *o) {
    full_run *r = calloc(1, sizeof *r);
    int ns, rc = r ? prepare_graphs(o, r, &ns) : 1;
    if (!rc) rc = bench_hits((const char(*)[1024])r->specs, ns, r->root, quick ? 300 : 2000);
    if (r && r->root[0]) rm_rf(r->root);
    free(r);
    return rc;
}

/* --fleet: a fleet's cold start against a remote (fleet.c). */
static int run_fleet(bench_opts *o) {
    fleet_plan p = {o->hosts ? o->hosts : 16,
                    o->fleet_graphs ? o->fleet_graphs : 8,
                    o->remote,
                    o->servers ? o->servers : "redis,redis_tls,redis_cluster,nginx_dav,s3",
                    KC_SERVERS_DIR,
                    NULL};
    if (p.hosts < 1 || p.hosts > FLEET_MAX_HOSTS || p.graphs < 1 || p.graphs > FLEET_MAX_GRAPHS) {
        fprintf(stderr, "kcache-bench: --hosts takes 1..%d and --fleet-graphs 1..%d\n", FLEET_MAX_HOSTS,
                FLEET_MAX_GRAPHS);
        return 2;
    }
    char root[4096];
    static fleet_result r;
    if (fleet_nvrtc_check()) return 1;
    if (scratch_root(root, sizeof root)) return 1;
    p.root = root;
    printf("kcache-bench: a fleet's cold start: %d hosts (processes, each its own cache directory) x %d graphs for %s, "
           "released together\n",
           p.hosts, p.graphs, arch);
    int rc = bench_fleet(&p, &r);
    for (int i = 0; i < r.nskip; i++) printf("not run: %s: %s\n", r.skipped[i][0], r.skipped[i][1]);
    rm_rf(root);
    FILE *f = o->json ? fopen(o->json, "w") : NULL;
    if (f) {
        fprintf(f, "{");
        json_fleet(f, &p, &r);
        fprintf(f, "}\n");
        fclose(f);
        printf("wrote %s\n", o->json);
    }
    return rc || (o->json && !f);
}

/* ---- the full run: its steps, in the order they print ---- */

static int step_graphs(full_run *r, const bench_opts *o) {
    bench_graphs(o->self, (const char(*)[1024])r->specs, r->gr.ns, r->root, o->largest, &r->gr);
    return 0;
}

static int step_shapes(full_run *r, const bench_opts *o) {
    (void)o;
    bench_shapes((const char(*)[1024])r->specs, r->gr.ns, r->root, r->sh, &r->m_sh, &r->min_sh);
    return 0;
}

/* a cold prewarm of the bundled manifest for the target */
static int step_prewarm(full_run *r, const bench_opts *o) {
    char pdir[4200], manifest[4200];
    snprintf(pdir, sizeof pdir, "%s/prewarm", r->root);
    snprintf(manifest, sizeof manifest, "%s/manifest.json", o->kdir);
    mkdir(pdir, 0700);
    bench_prewarm(manifest, pdir, &r->pw);
    rm_rf(pdir);
    print_prewarm(&r->pw, manifest);
    return 0;
}

/* the process floor, on the softmax graph */
static int step_floor(full_run *r, const bench_opts *o) {
    char fdir[4200], fspec[4200];
    snprintf(fdir, sizeof fdir, "%s/floor", r->root);
    snprintf(fspec, sizeof fspec, "%s/softmax.json", o->kdir);
    mkdir(fdir, 0700);
    bench_process_floor(o->kcache, fspec, fdir, &r->pf);
    print_process_floor(&r->pf);
    rm_rf(fdir);
    return 0;
}

/* warm start as processes: whole manifests, and one graph against ccache, sccache, the Python peers */
static int step_warmstart(full_run *r, const bench_opts *o) {
    bench_warmstart(&o->wst, o->kdir, r->root, o->synth_n, o->ws_runs, o->ws_peers, &r->ws);
    return 0;
}

/* site hits, key throughput, scale, import */
static int step_stores(full_run *r, const bench_opts *o) {
    bench_stores(r->root, o->largest, &r->st);
    return 0;
}

static int step_gpu(full_run *r, const bench_opts *o) {
    (void)o;
    char gdir[4200];
    snprintf(gdir, sizeof gdir, "%s/gpu", r->root);
    mkdir(gdir, 0700);
    bench_gpu(r->specs[0], gdir, &r->gp);
    print_gpu(&r->gp, r->gr.g[0].name);
    rm_rf(gdir);
    return 0;
}

static int step_json(full_run *r, const bench_opts *o) { return o->json ? write_json(r, o->json) : 0; }

static int step_plot(full_run *r, const bench_opts *o) {
    if (o->plot) write_plot(r, o->plot);
    return 0;
}

static const struct full_step {
    const char *name;
    int (*run)(full_run *r, const bench_opts *o); /* nonzero: the benchmark stops, exit 1 */
} full_steps[] = {
    {"graphs", step_graphs},
    {"second shape", step_shapes},
    {"prewarm", step_prewarm},
    {"process floor", step_floor},
    {"warm start", step_warmstart},
    {"stores", step_stores},
    {"gpu", step_gpu},
    {"json", step_json},
    {"plot", step_plot},
};

static int run_full(bench_opts *o) {
    find_tools(o);
    full_run *r = calloc(1, sizeof *r);
    int ns, rc = r ? prepare_graphs(o, r, &ns) : 1;
    if (rc) return free(r), rc;
    r->gr.ns = ns;
    if (o->largest < 1000) o->largest = quick ? 100000 : 1000000; /* --largest: the largest store (lookups, gc) */
    for (size_t i = 0; i < sizeof full_steps / sizeof full_steps[0] && !rc; i++) rc = full_steps[i].run(r, o);
    if (!rc) rm_rf(r->root);
    free(r);
    return rc ? 1 : 0;
}

static const struct bench_mode {
    const char *name;
    size_t asked; /* the option that asks for it (a string or an int field); full: always */
    int is_str;
    int (*run)(bench_opts *o);
} modes[] = {
    {"measure-nvrtc-cache", offsetof(bench_opts, nvspec), 1, run_nvrtc_child},
    {"write-synth", offsetof(bench_opts, synth_dir), 1, run_write_synth},
    {"write-bf16", offsetof(bench_opts, bf16_dir), 1, run_write_bf16},
    {"pch-only", offsetof(bench_opts, pch_only), 0, run_pch_only},
    {"contended-child", offsetof(bench_opts, ct_child), 1, run_contended_child},
    {"fleet", offsetof(bench_opts, fleet), 0, run_fleet},
    {"contended-only", offsetof(bench_opts, contended), 0, run_contended},
    {"warmstart-only", offsetof(bench_opts, ws_only), 0, run_warmstart_only},
    {"process-floor", offsetof(bench_opts, floor_only), 0, run_floor_only},
    {"gpu-only", offsetof(bench_opts, gpu_only), 0, run_gpu_only},
    {"load-calls", offsetof(bench_opts, load_calls), 0, run_load_calls},
    {"hits-only", offsetof(bench_opts, hits_only), 0, run_hits_only},
    {"full", (size_t)-1, 0, run_full},
};

static int asked(const bench_opts *o, const struct bench_mode *m) {
    if (m->asked == (size_t)-1) return 1;
    const char *field = (const char *)o + m->asked;
    return m->is_str ? *(const char *const *)field != NULL : *(const int *)field != 0;
}

int main(int argc, char **argv) {
    static bench_opts o; /* large (paths): not on the stack */
    if (parse_options(argc, argv, &o)) {
        fprintf(
            stderr,
            "usage: kcache-bench [--quick] [--json FILE] [--plot FILE.png] [--arch TARGET] [--kernels DIR]\n"
            "                    [--kcache PATH] [--process-floor] [--gpu-only] [--load-calls] [--largest N]\n"
            "                    [--warmstart-only] [--synth N] [--warmstart-runs N] [--warmstart-evict N] [--no-peers]\n"
            "                    [--write-synth DIR [--synth N]] [--hits-only]\n"
            "                    [--pch-only] [--pch-runs N] [--pch-graphs N] [--pch-single N] [--pch-targets LIST]\n"
            "                    [--write-bf16 DIR [--pch-graphs N] [--pch-targets LIST]]\n"
            "                    [--fleet [--hosts N] [--fleet-graphs N] [--remote URL | --servers LIST]]\n"
            "                    [--contended-only [--contended-runs N]]\n");
        return 2;
    }
    size_t i = 0;
    while (!asked(&o, &modes[i])) i++;
    return modes[i].run(&o);
}
