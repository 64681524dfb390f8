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

int main(int argc, char **argv) {
    double t_main = now_ms();
    const char *manifest = NULL, *arch = NULL, *dir = NULL;
    int device = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) device = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
        else if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!manifest && argv[i][0] != '-') manifest = argv[i];
        else {
            fprintf(stderr, "usage: kcache-warmstart MANIFEST [--device N | --arch TARGET] [--cache-dir DIR] [--json]\n");
            return 2;
        }
    }
    if (!manifest) {
        fprintf(stderr, "usage: kcache-warmstart MANIFEST [--device N | --arch TARGET] [--cache-dir DIR] [--json]\n");
        return 2;
    }
    /* The driver and the context first, as the runtime creates them before asking for kernels. */
    double t_ctx0 = now_ms(), t_ctx = t_ctx0;
    int gpu = !arch && kc_cuda_available() == KC_OK;
    if (gpu) {
        if (kc_cuda_push(device) != KC_OK) {
            fprintf(stderr, "kcache-warmstart: device %d: %s\n", device, kc_error_last()->message);
            return 1;
        }
        t_ctx = now_ms();
    } else if (!arch) {
        arch = "sm_90";
        fprintf(stderr, "kcache-warmstart: no GPU (%s): compile-only lookups for %s\n", kc_error_last()->message, arch);
    }
    kc_manifest *m;
    if (kc_manifest_load(&m, manifest) != KC_OK) {
        fprintf(stderr, "kcache-warmstart: %s\n", kc_error_last()->message);
        return 2;
    }
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    kc_cache *c;
    double t_open0 = now_ms();
    if (kc_cache_open(&c, &o) != KC_OK) {
        fprintf(stderr, "kcache-warmstart: %s\n", kc_error_last()->message);
        kc_manifest_free(m);
        return 1;
    }
    double t_open = now_ms();
    size_t n = kc_manifest_graph_count(m), hits = 0, other = 0, failed = 0;
    kc_graph **gs = calloc(n + 1, sizeof *gs);
    double slowest = 0;
    const char *slowest_name = "";
    for (size_t i = 0; gs && i < n; i++) {
        double t0 = now_ms();
        kc_graph_desc *d;
        if (kc_graph_desc_load(&d, kc_manifest_graph(m, i)) != KC_OK) {
            fprintf(stderr, "kcache-warmstart: %s: %s\n", kc_manifest_graph(m, i), kc_error_last()->message);
            failed++;
            continue;
        }
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        int rc = gpu ? kc_graph_get(c, d, device, &gs[i], &info) : kc_graph_compile(c, d, arch, &info);
        if (rc) {
            fprintf(stderr, "kcache-warmstart: %s: %s\n", kc_manifest_graph(m, i), kc_error_last()->message);
            failed++;
        } else if (info.source == KC_FROM_DISK || info.source == KC_FROM_MEMORY || info.source == KC_FROM_REMOTE) {
            hits++;
        } else {
            other++;
            fprintf(stderr, "kcache-warmstart: %s was not a hit (%s)\n", kc_manifest_graph(m, i), info.miss_reason);
        }
        double dt = now_ms() - t0;
        if (dt > slowest) slowest = dt, slowest_name = kc_manifest_graph(m, i);
        kc_graph_desc_free(d);
    }
    double t_done = now_ms();
    const char *slash = strrchr(slowest_name, '/');
    if (json)
        printf("{\"gpu\": %s, \"graphs\": %zu, \"hits\": %zu, \"not_hits\": %zu, \"failed\": %zu, "
               "\"driver_and_context_ms\": %.3f, \"cache_open_ms\": %.3f, \"graphs_ms\": %.3f, \"ready_after_context_ms\": %.3f, "
               "\"slowest_graph_ms\": %.3f}\n",
               gpu ? "true" : "false", n, hits, other, failed, t_ctx - t_ctx0, t_open - t_open0, t_done - t_open,
               t_done - t_ctx, slowest);
    else
        printf("%s: %zu graphs, %zu hits, %zu not hits, %zu failed; %s %.1f ms, cache open %.2f ms, graphs %.2f ms "
               "(slowest %s %.2f ms): every graph %s %.2f ms after %s (%.1f ms after main)\n",
               manifest, n, hits, other, failed, gpu ? "driver + context" : "no GPU:", t_ctx - t_ctx0, t_open - t_open0,
               t_done - t_open, slash ? slash + 1 : slowest_name, slowest, gpu ? "loaded and launchable" : "found (compile-only)",
               t_done - t_ctx, gpu ? "the context's creation" : "the start", t_done - t_main);
    for (size_t i = 0; gs && i < n; i++) kc_graph_release(gs[i]);
    free(gs);
    kc_cache_close(c);
    kc_manifest_free(m);
    return failed || other ? 1 : 0;
}
