/* SPDX-License-Identifier: Apache-2.0 */
/*
 * warmstart.c — kcache-warmstart: what a fresh process (a training rank, an inference replica)
 * pays to have every graph of its model ready from a warm cache, measured inside that process.
 *
 *   kcache-warmstart MANIFEST [--device N | --arch TARGET] [--cache-dir DIR] [--json]
 *
 * On a GPU (--device, default 0): the driver's start and the device's primary context (what the
 * runtime pays anyway), then opening the cache, then every graph of the manifest got and
 * loaded — every kernel fetched and loaded, launchable — with the time from the context's
 * creation to the last graph ready.  Without a GPU, or with --arch: the same lookups
 * compile-only (each graph entry and its images read and checked, nothing loaded).  A graph
 * that is not a hit is reported as such: the run says how many compiled, and exits 1 when any
 * did (a warm start was asked for).  Times are wall-clock of this one process; run it several
 * times (each a fresh process) for a spread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcache.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

typedef struct ws_args {
    const char *manifest, *arch, *dir;
    int device, json;
} ws_args;

/* argv into *a; 0, or -1 (usage). */
static int parse_args(int argc, char **argv, ws_args *a) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) a->device = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--arch") && i + 1 < argc) a->arch = argv[++i];
        else if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) a->dir = argv[++i];
        else if (!strcmp(argv[i], "--json")) a->json = 1;
        else if (!a->manifest && argv[i][0] != '-') a->manifest = argv[i];
        else return -1;
    }
    return a->manifest ? 0 : -1;
}

/* What getting every graph found, and when. */
typedef struct ws_run {
    int gpu;
    size_t n, hits, other, failed;
    kc_graph **gs;
    double slowest;
    const char *slowest_name;
    double t_main, t_ctx0, t_ctx, t_open0, t_open, t_done;
} ws_run;

/* Get (on a GPU: load) every graph of the manifest from `c`, counting hits, not hits and failures. */
static void get_all(const ws_args *a, kc_cache *c, const kc_manifest *m, ws_run *r) {
    r->n = kc_manifest_graph_count(m);
    r->gs = calloc(r->n + 1, sizeof *r->gs);
    r->slowest_name = "";
    for (size_t i = 0; r->gs && i < r->n; i++) {
        double t0 = now_ms();
        kc_graph_desc *d;
        if (kc_graph_desc_load(&d, kc_manifest_graph(m, i)) != KC_OK) {
            fprintf(stderr, "kcache-warmstart: %s: %s\n", kc_manifest_graph(m, i), kc_error_last()->message);
            r->failed++;
            continue;
        }
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        int rc = r->gpu ? kc_graph_get(c, d, a->device, &r->gs[i], &info) : kc_graph_compile(c, d, a->arch, &info);
        if (rc) {
            fprintf(stderr, "kcache-warmstart: %s: %s\n", kc_manifest_graph(m, i), kc_error_last()->message);
            r->failed++;
        } else if (info.source == KC_FROM_DISK || info.source == KC_FROM_MEMORY || info.source == KC_FROM_REMOTE) {
            r->hits++;
        } else {
            r->other++;
            fprintf(stderr, "kcache-warmstart: %s was not a hit (%s)\n", kc_manifest_graph(m, i), info.miss_reason);
        }
        double dt = now_ms() - t0;
        if (dt > r->slowest) r->slowest = dt, r->slowest_name = kc_manifest_graph(m, i);
        kc_graph_desc_free(d);
    }
    r->t_done = now_ms();
}

static void print_run(const ws_args *a, const ws_run *r) {
    const char *slash = strrchr(r->slowest_name, '/');
    int gpu = r->gpu;
    if (a->json)
        printf(
            "{\"gpu\": %s, \"graphs\": %zu, \"hits\": %zu, \"not_hits\": %zu, \"failed\": %zu, "
            "\"driver_and_context_ms\": %.3f, \"cache_open_ms\": %.3f, \"graphs_ms\": %.3f, \"ready_after_context_ms\": %.3f, "
            "\"slowest_graph_ms\": %.3f}\n",
            gpu ? "true" : "false", r->n, r->hits, r->other, r->failed, r->t_ctx - r->t_ctx0, r->t_open - r->t_open0,
            r->t_done - r->t_open, r->t_done - r->t_ctx, r->slowest);
    else
        printf("%s: %zu graphs, %zu hits, %zu not hits, %zu failed; %s %.1f ms, cache open %.2f ms, graphs %.2f ms "
               "(slowest %s %.2f ms): every graph %s %.2f ms after %s (%.1f ms after main)\n",
               a->manifest, r->n, r->hits, r->other, r->failed,
               gpu ? "driver + context" : "no GPU:", r->t_ctx - r->t_ctx0, r->t_open - r->t_open0,
               r->t_done - r->t_open, slash ? slash + 1 : r->slowest_name, r->slowest,
               gpu ? "loaded and launchable" : "found (compile-only)", r->t_done - r->t_ctx,
               gpu ? "the context's creation" : "the start", r->t_done - r->t_main);
}

int main(int argc, char **argv) {
    ws_run r = {0};
    r.t_main = now_ms();
    ws_args a = {0};
    if (parse_args(argc, argv, &a)) {
        fprintf(stderr, "usage: kcache-warmstart MANIFEST [--device N | --arch TARGET] [--cache-dir DIR] [--json]\n");
        return 2;
    }
    /* The driver and the context first, as the runtime creates them before asking for kernels. */
    r.t_ctx0 = r.t_ctx = now_ms();
    r.gpu = !a.arch && kc_cuda_available() == KC_OK;
    if (r.gpu) {
        if (kc_cuda_push(a.device) != KC_OK) {
            fprintf(stderr, "kcache-warmstart: device %d: %s\n", a.device, kc_error_last()->message);
            return 1;
        }
        r.t_ctx = now_ms();
    } else if (!a.arch) {
        a.arch = "sm_90";
        fprintf(stderr, "kcache-warmstart: no GPU (%s): compile-only lookups for %s\n", kc_error_last()->message,
                a.arch);
    }
    kc_manifest *m;
    if (kc_manifest_load(&m, a.manifest) != KC_OK) {
        fprintf(stderr, "kcache-warmstart: %s\n", kc_error_last()->message);
        return 2;
    }
    kc_options o = KC_OPTIONS_INIT;
    o.dir = a.dir;
    kc_cache *c;
    r.t_open0 = now_ms();
    if (kc_cache_open(&c, &o) != KC_OK) {
        fprintf(stderr, "kcache-warmstart: %s\n", kc_error_last()->message);
        kc_manifest_free(m);
        return 1;
    }
    r.t_open = now_ms();
    get_all(&a, c, m, &r);
    print_run(&a, &r);
    for (size_t i = 0; r.gs && i < r.n; i++) kc_graph_release(r.gs[i]);
    free(r.gs);
    kc_cache_close(c);
    kc_manifest_free(m);
    return r.failed || r.other ? 1 : 0;
}
