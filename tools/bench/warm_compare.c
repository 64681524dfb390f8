/* SPDX-License-Identifier: Apache-2.0 */
/*
 * warm_compare.c — kcache-warm-compare: warm disk hits (kc_graph_compile finding the graph
 * stored) of each graph spec given, one line per graph: "NAME TOTAL_US KEY_US LOOKUP_US", each
 * the median of ITERS hits after 50 unmeasured ones.
 *
 *   kcache-warm-compare DIR TARGET ITERS SPEC...
 *
 * The one idea: it uses only API that every kcache since the graph key's timing fields has, so
 * the same file builds against an older commit's library and the two can be run alternately on
 * one machine in one session (tools/bench/compare_warm.sh): the one way to set a hit against an
 * older format that this build can no longer write (issue 18's "within 1.2x of today's").  The
 * first pass over an empty DIR compiles each graph once.
 *
 * Must not: measure anything but a disk hit (it stops when a hit came from elsewhere).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kcache.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    if (argc < 5 || atoi(argv[3]) < 1) {
        fprintf(stderr, "usage: kcache-warm-compare DIR TARGET ITERS SPEC...\n");
        return 2;
    }
    const char *target = argv[2];
    int n = atoi(argv[3]);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = argv[1];
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) {
        fprintf(stderr, "kcache-warm-compare: %s\n", kc_error_last()->message);
        return 1;
    }
    double *v = malloc(sizeof(double) * (size_t)n), *vk = malloc(sizeof(double) * (size_t)n);
    double *vl = malloc(sizeof(double) * (size_t)n);
    int rc = 0;
    for (int a = 4; a < argc && !rc; a++) {
        kc_graph_desc *d;
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        if (kc_graph_desc_load(&d, argv[a]) || kc_graph_compile(c, d, target, &info)) {
            fprintf(stderr, "kcache-warm-compare: %s: %s\n", argv[a], kc_error_last()->message);
            return 1;
        }
        for (int i = 0; i < 50; i++) kc_graph_compile(c, d, target, &info);
        for (int i = 0; i < n && !rc; i++) {
            double t0 = now_us();
            kc_graph_compile(c, d, target, &info);
            v[i] = now_us() - t0, vk[i] = info.key_us, vl[i] = info.lookup_us;
            if (info.source != KC_FROM_DISK) {
                fprintf(stderr, "kcache-warm-compare: %s: a warm lookup was not a disk hit\n", argv[a]);
                rc = 1;
            }
        }
        if (!rc) printf("%s %.2f %.2f %.2f\n", kc_graph_desc_name(d), median(v, n), median(vk, n), median(vl, n));
        kc_graph_desc_free(d);
    }
    free(v), free(vk), free(vl);
    kc_cache_close(c);
    return rc;
}
