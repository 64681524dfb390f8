/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pch_report.c — what the cold prewarm with and without precompiled headers (pch.c) prints and
 * writes: per workload a table of PCH off and on, their ratio against the goal, whether the two
 * caches held the same entries, and what each process left in its temporary folder; and the
 * `"pch"` object of --json.
 *
 * The one idea: pch.c only measures into a pch_result; this file turns one into lines and JSON.
 * Callers: pch.c (prints each workload as it ends), bench.c (--pch-only's summary and --json).
 *
 * Must not: measure anything, or rename a figure (older results are compared by those names).
 */
#include <math.h>
#include <stdio.h>

#include "bench.h"

static void row(const char *what, stat_s s) {
    if (!s.n) printf("  %-10s not measured\n", what);
    else printf("  %-10s %9.2f s  [%.2f .. %.2f] (%d)\n", what, s.med / 1e6, s.p10 / 1e6, s.p90 / 1e6, s.n);
}

static const char *verdict(double r, double goal) { return isnan(r) ? "not measured" : r >= goal ? "met" : "not met"; }

/* The entries' comparison: one line, the words the docs quote. */
static void print_same(const pch_work *w) {
    if (!w->reps_compared) {
        printf("  entries: not compared (no pair where both runs exited 0)\n");
        return;
    }
    printf("  entries with and without PCH (%d pair%s compared): %d graph entries and unit records by name: %d "
           "byte-identical, %d but their time stamps, %d but those and their images' ids, %d differ, %d in one cache "
           "only; %d images by content: %d byte-identical, %d but NVRTC's per-process internal names, %d differ%s\n"
           "  (images not comparable, their processes' ids of other lengths: %d)\n",
           w->reps_compared, w->reps_compared == 1 ? "" : "s", w->files, w->same_bytes, w->same_but_times,
           w->same_but_refs, w->differ, w->unmatched, w->images, w->img_same_bytes, w->img_same_masked, w->img_differ,
           w->differ || w->unmatched || w->img_differ ? "  <- NOT THE SAME" : "", w->img_not_comparable);
    if (w->first_diff[0]) printf("    first: %s\n", w->first_diff);
}

void print_pch_work(const pch_work *w, double goal) {
    if (!w->have) {
        printf("cold prewarm, %s: not measured (%s)\n", w->label, w->why[0] ? w->why : "?");
        return;
    }
    printf("cold prewarm, %s for %s: %ld variants, %ld compile units; fresh `kcache prewarm` processes, each "
           "into an empty cache\n",
           w->label, w->targets, w->variants, w->units);
    printf("  %-10s %9s  [p10 .. p90] (n)\n", "", "median");
    row("PCH off", w->run[0]);
    row("PCH on", w->run[1]);
    printf("  off / on = %.2fx  (goal >= %.0fx: %s)\n", w->ratio, goal, verdict(w->ratio, goal));
    if (w->bad[0] || w->bad[1] || w->not_cold[0] || w->not_cold[1])
        printf("  runs left out: failed or exit != 0: off %d, on %d; not all compiles: off %d, on %d\n", w->bad[0],
               w->bad[1], w->not_cold[0], w->not_cold[1]);
    else printf("  every run compiled every variant (no graph or unit hit)\n");
    print_same(w);
    printf("  the process's TMPDIR while it ran, at most: PCH off %d files (%.1f MiB), PCH on %d files (%.1f MiB); "
           "left after exit: %d, %d; NVRTC automatic-PCH folders: %d, %d\n",
           w->tmp_files_peak[0], (double)w->tmp_bytes_peak[0] / 1048576.0, w->tmp_files_peak[1],
           (double)w->tmp_bytes_peak[1] / 1048576.0, w->tmp_left[0], w->tmp_left[1], w->nvrtc_auto_dirs[0],
           w->nvrtc_auto_dirs[1]);
    printf("  the library's log (KCACHE_LOG=compile), last run: PCH off: %s, %d created, %d used, %d refused; PCH on: "
           "%s, %d created, %d used, %d refused or not created\n",
           w->pch_log[0][3] ? "said on" : "said off or nothing", w->pch_log[0][0], w->pch_log[0][1], w->pch_log[0][2],
           w->pch_log[1][3] ? "said on" : "said off or nothing", w->pch_log[1][0], w->pch_log[1][1], w->pch_log[1][2]);
}

static void jstr(FILE *f, const char *k, const char *v) {
    fprintf(f, "\"%s\": \"", k);
    jesc(f, v);
    fprintf(f, "\", ");
}

static void jwork(FILE *f, const pch_work *w, double goal) {
    fprintf(f, "{");
    jstr(f, "label", w->label);
    jstr(f, "targets", w->targets);
    fprintf(f, "\"have\": %s, ", w->have ? "true" : "false");
    if (!w->have) jstr(f, "why", w->why);
    fprintf(f, "\"graphs\": %d, \"variants\": %ld, \"units\": %ld, ", w->graphs, w->variants, w->units);
    jstat(f, "pch_off", w->run[0]);
    jstat(f, "pch_on", w->run[1]);
    jnum(f, "off_over_on", w->ratio, 0);
    fprintf(f, "\"goal_met\": %s, ", isnan(w->ratio) ? "null" : w->ratio >= goal ? "true" : "false");
    fprintf(f, "\"runs_failed\": [%d, %d], \"runs_not_all_compiles\": [%d, %d], ", w->bad[0], w->bad[1], w->not_cold[0],
            w->not_cold[1]);
    fprintf(f,
            "\"pairs_compared\": %d, \"entry_files\": %d, \"byte_identical\": %d, \"identical_but_time_stamps\": %d, "
            "\"identical_but_image_ids\": %d, \"differ\": %d, \"unmatched\": %d, \"images\": %d, "
            "\"images_byte_identical\": %d, \"images_identical_but_nvrtc_internal_names\": %d, \"images_differ\": %d, "
            "\"images_not_comparable\": %d, ",
            w->reps_compared, w->files, w->same_bytes, w->same_but_times, w->same_but_refs, w->differ, w->unmatched,
            w->images, w->img_same_bytes, w->img_same_masked, w->img_differ, w->img_not_comparable);
    jstr(f, "first_difference", w->first_diff);
    fprintf(f,
            "\"tmpdir_peak_files\": [%d, %d], \"tmpdir_peak_bytes\": [%lld, %lld], \"tmpdir_left_after_exit\": [%d, "
            "%d], \"nvrtc_auto_pch_dirs\": [%d, %d], ",
            w->tmp_files_peak[0], w->tmp_files_peak[1], w->tmp_bytes_peak[0], w->tmp_bytes_peak[1], w->tmp_left[0],
            w->tmp_left[1], w->nvrtc_auto_dirs[0], w->nvrtc_auto_dirs[1]);
    fprintf(f,
            "\"log_pch_on\": [%s, %s], \"log_pch_created\": [%d, %d], \"log_pch_used\": [%d, %d], "
            "\"log_pch_refused\": [%d, %d]}",
            w->pch_log[0][3] ? "true" : "false", w->pch_log[1][3] ? "true" : "false", w->pch_log[0][0],
            w->pch_log[1][0], w->pch_log[0][1], w->pch_log[1][1], w->pch_log[0][2], w->pch_log[1][2]);
}

void json_pch(FILE *f, const pch_result *r) {
    fprintf(f, "\"pch\": {\"runs\": %d, \"jobs\": %d, \"goal\": %.4g, \"workloads\": [", r->runs, r->jobs, r->goal);
    for (int i = 0; i < 3; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        jwork(f, &r->w[i], r->goal);
    }
    fprintf(f, "]}");
}
