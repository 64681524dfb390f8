/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procs_report.c — what the warm start as processes (procs.c) prints and writes: per manifest its
 * figures against the process floor and the minimal reader, then one graph against its peers, and
 * the `"warmstart_procs"` object of the results file.
 *
 * The one idea: procs.c only measures into a ws_result; this file turns one into lines and JSON,
 * with the names and formats docs/ and tools/bench/results/ quote.  Callers: procs.c (prints as it
 * goes), bench.c and report.c (the results file).
 *
 * Must not: measure anything, or rename a figure (older results are compared by those names).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

static void line_stat(const char *what, stat_s s) {
    if (!s.n) printf("  %-44s not measured\n", what);
    else if (s.med >= 1e6)
        printf("  %-44s %8.2f s  [%.2f .. %.2f] (%d)\n", what, s.med / 1e6, s.p10 / 1e6, s.p90 / 1e6, s.n);
    else printf("  %-44s %8.2f ms [%.2f .. %.2f] (%d)\n", what, s.med / 1e3, s.p10 / 1e3, s.p90 / 1e3, s.n);
}

double ws_over_floor(stat_s x, stat_s ref, stat_s floor) {
    if (!x.n || !ref.n || !floor.n) return NAN;
    double a = x.med - floor.med, b = ref.med - floor.med;
    return b > 0 ? a / b : NAN;
}

/* "1.23x", or "-" when not measured (a floor above the reference). */
static const char *rx(double v, char *b) {
    if (isnan(v)) snprintf(b, 16, "-");
    else snprintf(b, 16, "%.2fx", v);
    return b;
}

void print_warmstart_manifest(const ws_manifest *m) {
    char b1[16], b2[16], b3[16];
    if (!m->have) {
        printf("warm start, %s manifest: not measured (%s)\n", m->label, m->why);
        fflush(stdout);
        return;
    }
    printf(
        "warm start, %s manifest (%d graphs for %s; %d entry files, %d distinct, %.1f KB), fresh processes, interleaved, "
        "median [p10 .. p90] (runs):\n",
        m->label, m->graphs, arch, m->files, m->distinct, (double)m->bytes / 1024);
    line_stat("empty main (kcache-empty)", m->empty);
    line_stat("kcache --help", m->help);
    line_stat("empty main + the library's .so (kcache-empty-libs)", m->empty_libs);
    line_stat("kcache-minread (read, check, zstd: the files)", m->minread);
    line_stat("kcache-warmstart, warm (every graph a hit)", m->warm);
    line_stat("kcache-warmstart, cold (an empty cache)", m->cold);
    if (m->warm_bad || m->minread_bad)
        printf("  (runs that exited wrongly, left out: warm start %d, minread %d)\n", m->warm_bad, m->minread_bad);
    printf("  (warm start - empty main) / (minread - empty main) = %s  [- kcache --help: %s]  (+%.2f ms over "
           "minread); cold / warm %.0fx\n",
           rx(ws_over_floor(m->warm, m->minread, m->empty), b1), rx(ws_over_floor(m->warm, m->minread, m->help), b2),
           (m->warm.med - m->minread.med) / 1e3, ratio(m->cold.med, m->warm.med));
    printf("  of warm start - empty main (%.2f ms): loading the library's shared libraries %.2f ms, the rest %.2f ms "
           "(minread - empty main: %.2f ms)\n",
           (m->warm.med - m->empty.med) / 1e3, (m->empty_libs.med - m->empty.med) / 1e3,
           (m->warm.med - m->empty_libs.med) / 1e3, (m->minread.med - m->empty.med) / 1e3);
    if (!m->evict_rounds) {
        printf("  cold page cache: not measured (--warmstart-evict 0)\n  [%s]\n", m->warm_line);
        fflush(stdout);
        return;
    }
    printf("  cold page cache: %s; ", m->evict_dropped ? "measured (the page cache dropped before each run)"
                                                       : "not measured: /proc/sys/vm/drop_caches is not writable here");
    if (!m->evict_dropped)
        printf("instead the cache's entry files evicted with posix_fadvise(DONTNEED) before each run (a partial "
               "substitute: binaries, libraries, specs and sources stay cached):\n");
    else printf("\n");
    line_stat("empty main, evicted", m->ev_empty);
    line_stat("kcache-minread, evicted", m->ev_minread);
    line_stat("kcache-warmstart, evicted", m->ev_warm);
    printf("  evicted: (warm start - empty main) / (minread - empty main) = %s\n",
           rx(ws_over_floor(m->ev_warm, m->ev_minread, m->ev_empty), b3));
    printf("  [%s]\n", m->warm_line);
    fflush(stdout);
}

void print_warmstart_peers(const ws_result *r) {
    if (!r->have_get) {
        printf("one graph, process against process: not measured (%s)\n", r->get_why);
        return;
    }
    printf(
        "one graph (softmax, %s), process against process, fresh processes, interleaved, median [p10 .. p90] (runs):\n",
        arch);
    line_stat("empty main", r->one_empty);
    line_stat("kcache --help", r->one_help);
    line_stat("kcache get, warm", r->get);
    if (r->ccache_warm.n) {
        line_stat("ccache nvcc -cubin, warm", r->ccache_warm);
        line_stat("ccache nvcc -cubin, cold", r->ccache_cold);
        printf("  ccache warm / kcache get warm = %.2fx (target >= 3x; ccache counted %ld hits)\n",
               ratio(r->ccache_warm.med, r->get.med), r->ccache_hits);
    } else printf("  ccache nvcc -cubin: not measured (%s)\n", r->ccache_why);
    if (r->sccache_warm.n) {
        line_stat("sccache nvcc -cubin, warm", r->sccache_warm);
        line_stat("sccache nvcc -cubin, cold", r->sccache_cold);
        printf("  sccache warm / kcache get warm = %.2fx (target >= 20x; sccache counted %ld hits)\n",
               ratio(r->sccache_warm.med, r->get.med), r->sccache_hits);
    } else printf("  sccache nvcc -cubin: not measured (%s)\n", r->sccache_why);
    const ws_peer *pp[2] = {&r->cuda_core, &r->triton};
    const char *names[2] = {"cuda.core FileStreamProgramCache (NVRTC, softmax.cu)",
                            "Triton cache (softmax, GPUTarget cuda 90)"};
    for (int i = 0; i < 2; i++) {
        if (!pp[i]->have) {
            printf("  %s: not measured (%s)\n", names[i], pp[i]->why);
            continue;
        }
        printf("  %s:\n", names[i]);
        line_stat("  its imports alone", pp[i]->imports);
        line_stat("  warm (a hit)", pp[i]->warm);
        line_stat("  cold (an empty cache folder)", pp[i]->cold);
        printf("    warm / kcache get warm = %.0fx; warm - imports = %.1f ms (kcache get - empty main = %.2f ms); "
               "cold / warm %.2fx\n",
               ratio(pp[i]->warm.med, r->get.med), (pp[i]->warm.med - pp[i]->imports.med) / 1e3,
               (r->get.med - r->one_empty.med) / 1e3, ratio(pp[i]->cold.med, pp[i]->warm.med));
    }
    fflush(stdout);
}

static void pnum(FILE *f, const char *k, double v, int last) {
    if (isnan(v)) fprintf(f, "\"%s\": null%s", k, last ? "" : ", ");
    else fprintf(f, "\"%s\": %.4g%s", k, v, last ? "" : ", ");
}

static void pstat(FILE *f, const char *k, stat_s s) {
    fprintf(f, "\"%s\": ", k);
    if (!s.n) {
        fprintf(f, "null, ");
        return;
    }
    fprintf(f, "{\"median_us\": %.4g, \"p10_us\": %.4g, \"p90_us\": %.4g, \"n\": %d}, ", s.med, s.p10, s.p90, s.n);
}

static void pstr(FILE *f, const char *k, const char *v) {
    fprintf(f, "\"%s\": \"", k);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        if ((unsigned char)*p >= 0x20) fputc(*p, f);
    }
    fprintf(f, "\", ");
}

void json_warmstart(FILE *f, const ws_result *r) {
    fprintf(f, "\"warmstart_procs\": {\"runs\": %d, \"synthetic_graphs\": %d, ", r->runs, r->synth_n);
    pstr(f, "page_cache_not_dropped", r->page_cache_why);
    fprintf(f, "\"manifests\": [");
    for (int i = 0; i < 2; i++) {
        const ws_manifest *m = &r->m[i];
        fprintf(f, "%s\n  {", i ? "," : "");
        pstr(f, "label", m->label);
        if (!m->have) {
            pstr(f, "not_measured", m->why);
            fprintf(f, "\"have\": false}");
            continue;
        }
        fprintf(f, "\"graphs\": %d, \"entry_files\": %d, \"distinct_entry_files\": %d, \"entry_bytes\": %zu, ",
                m->graphs, m->files, m->distinct, m->bytes);
        pstat(f, "empty_main", m->empty);
        pstat(f, "kcache_help", m->help);
        pstat(f, "empty_main_with_libs", m->empty_libs);
        pstat(f, "minread", m->minread);
        pstat(f, "warmstart_warm", m->warm);
        pstat(f, "warmstart_cold", m->cold);
        fprintf(f, "\"warm_runs_not_all_hits\": %d, ", m->warm_bad);
        pnum(f, "warm_minus_empty_over_minread_minus_empty", ws_over_floor(m->warm, m->minread, m->empty), 0);
        pnum(f, "warm_minus_help_over_minread_minus_help", ws_over_floor(m->warm, m->minread, m->help), 0);
        pnum(f, "libs_minus_empty_us", m->empty_libs.n && m->empty.n ? m->empty_libs.med - m->empty.med : NAN, 0);
        pnum(f, "cold_over_warm", ratio(m->cold.med, m->warm.med), 0);
        fprintf(f, "\"evicted\": {\"rounds\": %d, \"how\": \"%s\", ", m->evict_rounds,
                m->evict_dropped ? "drop_caches" : "posix_fadvise_dontneed_cache_files");
        pstat(f, "empty_main", m->ev_empty);
        pstat(f, "minread", m->ev_minread);
        pstat(f, "warmstart_warm", m->ev_warm);
        pnum(f, "warm_minus_empty_over_minread_minus_empty", ws_over_floor(m->ev_warm, m->ev_minread, m->ev_empty), 1);
        fprintf(f, "}, \"have\": true}");
    }
    fprintf(f, "],\n  \"one_graph\": {");
    if (!r->have_get) {
        pstr(f, "not_measured", r->get_why);
        fprintf(f, "\"have\": false}}");
        return;
    }
    pstat(f, "empty_main", r->one_empty);
    pstat(f, "kcache_help", r->one_help);
    pstat(f, "kcache_get_warm", r->get);
    pstat(f, "ccache_warm", r->ccache_warm);
    pstat(f, "ccache_cold", r->ccache_cold);
    pstr(f, "ccache_not_measured", r->ccache_warm.n ? "" : r->ccache_why);
    pstat(f, "sccache_warm", r->sccache_warm);
    pstat(f, "sccache_cold", r->sccache_cold);
    pstr(f, "sccache_not_measured", r->sccache_warm.n ? "" : r->sccache_why);
    pnum(f, "ccache_warm_over_get", r->ccache_warm.n ? ratio(r->ccache_warm.med, r->get.med) : NAN, 0);
    pnum(f, "sccache_warm_over_get", r->sccache_warm.n ? ratio(r->sccache_warm.med, r->get.med) : NAN, 0);
    const ws_peer *pp[2] = {&r->cuda_core, &r->triton};
    const char *names[2] = {"cuda_core", "triton"};
    for (int i = 0; i < 2; i++) {
        fprintf(f, "\"%s\": {", names[i]);
        if (!pp[i]->have) {
            pstr(f, "not_measured", pp[i]->why);
            fprintf(f, "\"have\": false}, ");
            continue;
        }
        pstat(f, "imports", pp[i]->imports);
        pstat(f, "warm", pp[i]->warm);
        pstat(f, "cold", pp[i]->cold);
        pnum(f, "warm_over_get", ratio(pp[i]->warm.med, r->get.med), 0);
        fprintf(f, "\"have\": true}, ");
    }
    fprintf(f, "\"have\": true}}");
}
