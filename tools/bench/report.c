/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.c — the full run's results file (--json FILE) and its plot (--plot FILE.png).
 *
 * The one idea: everything the full run measured is in one full_run, and this file only writes it
 * out, in the order and with the names docs/ and tools/bench/results/ quote (per graph, medians over
 * graphs, site hits, key, second shapes, prewarm, scale, process floor, warm start, GPU).
 * Callers: bench.c (the full run's last two steps).
 *
 * Must not: measure anything, or change a name or a number's format (older results are compared
 * with newer ones by those names).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

void jesc(FILE *f, const char *s) {
    for (; *s; s++)
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
        else fputc(*s, f);
}

static void jlevels(FILE *f, const gres *g) {
    fprintf(f, "\"units\": %d, \"images\": %d, \"graph_entry_bytes\": %zu, \"image_bytes\": %zu, ", g->units,
            g->lv.images, g->lv.graph_bytes, g->lv.image_bytes);
}

/* Graph i's object: its figures, then its ratios. */
static void jgraph(FILE *f, const graphs_res *r, int i) {
    const gres *g = &r->g[i];
    fprintf(f, "%s\n  {\"name\": \"%s\", ", i ? "," : "", g->name);
    jlevels(f, g);
    jstat(f, "cold", g->cold);
    jstat(f, "warm", g->warm);
    jstat(f, "warm_key", g->warm_key);
    jstat(f, "warm_lookup", g->warm_lookup);
    jstat(f, "limit", g->lv.limit);
    jstat(f, "limit_graph_entry", g->lv.entry_read);
    jstat(f, "limit_images", g->lv.image_reads);
    jstat(f, "limit_one_file", g->lv.one_file);
    jstat(f, "resolve", g->lv.resolve);
    jstat(f, "compile_path_hit", g->lv.hit);
    jstat(f, "read_check", g->lv.check);
    jstat(f, "lookup_with_bytes", g->lv.fetch);
    jnum(f, "warm_over_read_check", r->r_wc[i], 0);
    jnum(f, "lookup_with_bytes_over_limit", r->r_fl[i], 0);
    jnum(f, "warm_one_file_reads_us", warm_one_file_reads(g), 0);
    jnum(f, "warm_one_file_lib_us", warm_one_file_lib(g), 0);
    jnum(f, "warm_over_warm_one_file_reads", r->r_rd[i], 0);
    jnum(f, "warm_over_warm_one_file_lib", r->r_lib[i], 0);
    jstat(f, "ccache_cold", g->ccache_cold);
    jstat(f, "ccache_warm", g->ccache_warm);
    jstat(f, "nvrtc_cache", g->nvrtc_cache);
    jnum(f, "cold_over_warm", r->r_cw[i], 0);
    jnum(f, "warm_over_limit", r->r_wl[i], 0);
    jnum(f, "ccache_warm_over_warm", r->r_ccw[i], 0);
    jnum(f, "nvrtc_cache_over_warm", r->r_nv[i], 1);
    fprintf(f, "}");
}

static void jmedians(FILE *f, const full_run *r) {
    const graphs_res *gr = &r->gr;
    const gpu_res *gp = &r->gp;
    fprintf(f, "\n], \"medians\": {");
    jnum(f, "cold_over_warm", gr->m_cw, 0);
    jnum(f, "warm_over_limit", gr->m_wl, 0);
    jnum(f, "warm_over_read_check", gr->m_in[0], 0);
    jnum(f, "lookup_with_bytes_over_limit", gr->m_in[1], 0);
    jnum(f, "ccache_warm_over_warm", gr->m_ccw, 0);
    jnum(f, "nvrtc_cache_over_warm", gr->m_nv, 0);
    jnum(f, "warm_over_warm_one_file_reads", gr->m_lv[0], 0);
    jnum(f, "warm_over_warm_one_file_reads_most", gr->m_lv[1], 0);
    jnum(f, "warm_over_warm_one_file_lib", gr->m_lv[2], 0);
    jnum(f, "warm_over_warm_one_file_lib_most", gr->m_lv[3], 0);
    jnum(f, "second_shape_cold_over_second", r->m_sh, 0);
    jnum(f, "second_shape_cold_over_second_least", r->min_sh, 0);
    jnum(f, "load_over_bare_load", gp->have ? ratio(gp->hit_load_us, gp->bare_load_us) : NAN, 0);
    jnum(f, "load_over_by_hand", gp->have ? ratio(gp->hit_load_us, gp->hand_us) : NAN, 0);
    jnum(f, "nvrtc_cache_over_hit", gp->have ? ratio(gr->g[0].nvrtc_cache.med, gp->hit_load_us) : NAN, 0);
    jnum(f, "ptx_load_over_cubin_load", gp->have ? ratio(gp->ptx_load_us, gp->cubin_load_us) : NAN, 1);
    fprintf(f, "},\n \"site_hit_ns\": {\"1\": %.1f, \"8\": %.1f, \"64\": %.1f},", r->st.site[0], r->st.site[1],
            r->st.site[2]);
    fprintf(f, " \"key_mb_per_s\": {\"4KB\": %.0f, \"1MB\": %.0f},\n", r->st.k_small, r->st.k_large);
}

static void jscale(FILE *f, const stores_res *st) {
    fprintf(f, ",\n \"scale\": [");
    for (int i = 0; i < 3; i++) {
        fprintf(f, "%s{\"entries\": %d, \"lookup\": {", i ? ", " : "", st->scale_n[i]);
        jnum(f, "median_us", st->sc[i].med, 0);
        jnum(f, "p10_us", st->sc[i].p10, 0);
        jnum(f, "p90_us", st->sc[i].p90, 1);
        fprintf(f, "}}");
    }
    fprintf(f, "], ");
    jnum(f, "lookup_largest_over_smallest", st->scale_ratio, 0);
    jnum(f, "gc_halving_ms", st->gc_ms, 0);
    jnum(f, "import_300_ms", st->imp.med, 0);
}

static void jgpu(FILE *f, const gpu_res *gp) {
    fprintf(f, ",\n \"gpu\": ");
    if (!gp->have) {
        fprintf(f, "null}\n");
        return;
    }
    fprintf(f, "{");
    jnum(f, "hit_with_load_us", gp->hit_load_us, 0);
    jnum(f, "bare_load_us", gp->bare_load_us, 0);
    jnum(f, "by_hand_us", gp->hand_us, 0);
    jnum(f, "hit_key_us", gp->key_us, 0);
    jnum(f, "hit_lookup_us", gp->lookup_us, 0);
    jnum(f, "hit_load_part_us", gp->load_us, 0);
    jnum(f, "ptx_load_us", gp->ptx_load_us, 0);
    jnum(f, "cubin_load_us", gp->cubin_load_us, 1);
    fprintf(f, "}}\n");
}

int write_json(const full_run *r, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kcache-bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "{\"arch\": \"%s\", \"quick\": %s, \"nvrtc\": \"%s\", \"graphs\": [", arch, quick ? "true" : "false",
            kc_nvrtc_toolchain());
    for (int i = 0; i < r->gr.ns; i++) jgraph(f, &r->gr, i);
    jmedians(f, r);
    fprintf(f, " \"second_shape\": [");
    for (int i = 0, k = 0; i < r->gr.ns; i++)
        if (r->sh[i].have) fprintf(f, "%s\n  ", k++ ? "," : ""), jshape(f, &r->sh[i]);
    fprintf(f, "],\n ");
    jprewarm(f, &r->pw);
    jscale(f, &r->st);
    jfloor(f, &r->pf);
    fprintf(f, ",\n ");
    json_warmstart(f, &r->ws);
    jgpu(f, &r->gp);
    fclose(f);
    printf("wrote %s\n", path);
    return 0;
}

void write_plot(const full_run *r, const char *plot) {
    char dat[4200];
    snprintf(dat, sizeof dat, "%s/plot.dat", r->root);
    FILE *f = fopen(dat, "w");
    for (int i = 0; f && i < r->gr.ns; i++) {
        const gres *g = &r->gr.g[i];
        fprintf(f, "%s %.3f %.3f %.3f %.3f\n", g->name, g->cold.med, g->warm.med, g->lv.limit.med, g->lv.one_file.med);
    }
    if (f) fclose(f);
    FILE *gp2 = popen("gnuplot 2>&1", "w");
    if (!gp2) {
        fprintf(stderr, "kcache-bench: gnuplot not found: no plot\n");
        return;
    }
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
