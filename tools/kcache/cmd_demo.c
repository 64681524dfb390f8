/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_demo.c — `kcache demo`: the main job shown end to end — every graph of a manifest
 * through a scratch cache twice, cold then warm, with where each came from and its time; on a
 * GPU, each graph's forward and backward once against its CPU reference (check.h).
 *
 * The one idea: the demo uses the same lookup and printer as `kcache get` (cli_lookup,
 * cli_print_info), so what it shows is what a user gets — in a cache directory of its own,
 * made under $TMPDIR and removed after, so that a demo never costs a user's cache an entry
 * (it used to remove the manifest's entries from the user's cache to make the cold pass cold).
 * After each pass it says how many compile units NVRTC compiled and how many were found stored.
 * Only main.c's command table refers to this file.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"

static int cmd_demo(const cli_settings *cs, int argc, char **argv);

static const cli_opt demo_opts[] = {
    {"manifest", 0, "MANIFEST", "the graphs (default kernels/manifest.json)"},
    {"arch", 0, "TARGET", "compile for TARGET (without a GPU: default sm_90)"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_demo = {
    "demo",
    "kcache demo [--manifest FILE] [--arch TARGET]",
    "The main job's demonstration: every graph of the manifest (default kernels/manifest.json)\n"
    "through a scratch cache twice -- first cold, then warm -- with where each came from and\n"
    "its time (the scratch cache is removed after; your cache is not touched).  On a GPU it\n"
    "then runs each graph's forward and backward\n"
    "once and compares them with a CPU reference (exit 1 on a mismatch).  Without a GPU it\n"
    "compiles for --arch (default sm_90).",
    cmd_demo,
    demo_opts,
    CLI_OPERANDS_NONE};

/* On a GPU: each graph's forward and backward once, against its CPU reference. */
static int demo_check(kc_cache *c, const kc_manifest *m) {
    int failed = 0;
    printf("check on GPU 0 (forward and backward against the CPU reference)\n");
    for (size_t i = 0; i < kc_manifest_graph_count(m); i++) {
        kc_graph_desc *d;
        kc_graph *g = NULL;
        if (kc_graph_desc_load(&d, kc_manifest_graph(m, i)) != KC_OK) continue; /* reported above */
        const char *name = kc_graph_desc_name(d);
        char msg[512];
        int rc = kc_graph_get(c, d, 0, &g, NULL);
        if (rc) snprintf(msg, sizeof msg, "%s", kc_error_last()->message);
        else rc = kcc_check(g, 0, name, msg, sizeof msg);
        char nm[4 * 256 + 1];
        printf("%-14s %-4s ", cli_shown(name, nm, sizeof nm), rc == KC_OK ? "ok" : rc == KC_MISS ? "-" : "FAIL");
        cli_put_shown(stdout, msg, 1), fputc('\n', stdout);
        failed += rc != KC_OK && rc != KC_MISS;
        kc_graph_release(g);
        kc_graph_desc_free(d);
    }
    printf("\n");
    return failed;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    remove(p); /* best effort: a scratch folder left behind is only litter */
    return 0;
}

static int cmd_demo(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_demo;
    cli_args a;
    cli_parse(c0, argc, argv, 0, &a);
    const char *mpath = cli_arg(&a, "manifest") ? cli_arg(&a, "manifest") : "kernels/manifest.json";
    const char *arch = cli_arg(&a, "arch");
    int gpu = kc_cuda_available() == KC_OK;
    if (!gpu && !arch) arch = "sm_90";
    if (!gpu) printf("no GPU here (%s)\ncompiling for %s only\n\n", kc_error_last()->message, arch);
    kc_manifest *mf;
    int rc = cli_manifest_open("demo", mpath, NULL, &mf);
    if (rc) return rc;
    (void)cs;      /* the scratch cache takes no global option: no remote, no KCACHE_DIR */
    char td[4096]; /* TMPDIR, else /tmp: the process's settings (kcache/config.h) */
    kc_config_get(kc_config_process(), KC_CONFIG_tmpdir, td, sizeof td, NULL, NULL, 0);
    char scratch[4200];
    snprintf(scratch, sizeof scratch, "%s/kcache-demo-XXXXXX", td);
    kc_cache *c = NULL;
    if (!mkdtemp(scratch)) {
        kc_manifest_free(mf);
        perror("kcache demo: cannot make a scratch cache folder");
        return EXIT_PROBLEM;
    }
    kc_options o = KC_OPTIONS_INIT;
    o.dir = scratch;
    o.flags = KC_OPEN_NO_ENV | KC_OPEN_OPTIONS_WIN;
    if (kc_cache_open(&c, &o) != KC_OK) {
        cli_fail("cannot open the scratch cache");
        nftw(scratch, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        kc_manifest_free(mf);
        return EXIT_PROBLEM;
    }
    if (arch && (rc = cli_target_check(c, "demo", arch, "--arch", 0))) { /* before any work */
        kc_cache_close(c);
        nftw(scratch, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        kc_manifest_free(mf);
        return rc;
    }
    printf("a scratch cache in %s (removed after)\n\n", scratch);
    int failed = 0;
    for (int pass = 0; pass < 2; pass++) {
        int units = 0, compiled = 0;
        printf("%s pass\n", pass == 0 ? "cold" : "warm");
        for (size_t i = 0; i < kc_manifest_graph_count(mf); i++) {
            kc_graph_desc *d;
            if (kc_graph_desc_load(&d, kc_manifest_graph(mf, i)) != KC_OK) {
                fprintf(stderr, "kcache demo: %s\n", kc_error_last()->message);
                failed++;
                continue;
            }
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            if (cli_lookup(c, d, arch, &info) == KC_OK) {
                cli_print_info(kc_graph_desc_name(d), &info, 0);
                units += info.units, compiled += info.units_compiled;
            } else {
                cli_fail(kc_graph_desc_name(d));
                failed++;
            }
            kc_graph_desc_free(d);
        }
        if (units)
            printf("compile units: %d compiled, %d found stored (each unit is compiled once per target)\n", compiled,
                   units - compiled);
        printf("\n");
    }
    if (gpu) failed += demo_check(c, mf);
    kc_manifest_free(mf);
    kc_cache_close(c);
    nftw(scratch, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return failed ? EXIT_PROBLEM : 0;
}
