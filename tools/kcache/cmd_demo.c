/*
 * cmd_demo.c — `kcache demo`: the main job shown end to end — every graph of a manifest
 * through the cache twice, cold (its entries removed first) then warm, with where each came
 * from and its time; on a GPU, each graph's forward and backward once against its CPU
 * reference (check.h).
 *
 * The one idea: the demo uses the same lookup and printer as `kcache get` (cli_lookup,
 * cli_print_info), so what it shows is what a user gets.  Only main.c's command table refers
 * to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cli.h"

static int cmd_demo(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_demo = {
    "demo", "kcache demo [--manifest FILE] [--arch TARGET]",
    "The main job's demonstration: every graph of the manifest (default kernels/manifest.json)\n"
    "through the cache twice -- first cold (its entries removed), then warm -- with where\n"
    "each came from and its time.  On a GPU it then runs each graph's forward and backward\n"
    "once and compares them with a CPU reference (exit 1 on a mismatch).  Without a GPU it\n"
    "compiles for --arch (default sm_90).",
    cmd_demo};

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
        printf("%-14s %-4s %s\n", name, rc == KC_OK ? "ok" : rc == KC_MISS ? "-" : "FAIL", msg);
        failed += rc != KC_OK && rc != KC_MISS;
        kc_graph_release(g);
        kc_graph_desc_free(d);
    }
    printf("\n");
    return failed;
}

static int cmd_demo(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_demo;
    const char *mpath = "kernels/manifest.json", *arch = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--manifest") == 0 && i + 1 < argc) mpath = argv[++i];
        else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) arch = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_help(c0);
            return 0;
        } else return cli_usage_error(c0, "unknown argument", argv[i]);
    }
    int gpu = kc_cuda_available() == KC_OK;
    if (!gpu && !arch) arch = "sm_90";
    if (!gpu) printf("no GPU here (%s)\ncompiling for %s only\n\n", kc_error_last()->message, arch);
    kc_manifest *mf;
    int rc = cli_manifest_open("demo", mpath, NULL, &mf);
    if (rc) return rc;
    kc_cache *c;
    if (cli_open_cache(cs, &c)) {
        kc_manifest_free(mf);
        return EXIT_PROBLEM;
    }
    int failed = 0;
    for (int pass = 0; pass < 2; pass++) {
        printf("%s pass\n", pass == 0 ? "cold" : "warm");
        for (size_t i = 0; i < kc_manifest_graph_count(mf); i++) {
            kc_graph_desc *d;
            if (kc_graph_desc_load(&d, kc_manifest_graph(mf, i)) != KC_OK) {
                fprintf(stderr, "kcache demo: %s\n", kc_error_last()->message);
                failed++;
                continue;
            }
            if (pass == 0) { /* make the cold pass really cold: forget this graph's entries */
                kc_key key;
                const char *variants[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120",
                                          "compute_80", "compute_90", arch ? arch : "sm_90"};
                if (kc_graph_key(d, &key, NULL) == KC_OK)
                    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) kc_cache_remove(c, &key, variants[v]);
            }
            kc_graph_info info;
            if (cli_lookup(c, d, arch, &info) == KC_OK) cli_print_info(kc_graph_desc_name(d), &info, 0);
            else {
                cli_fail(kc_graph_desc_name(d));
                failed++;
            }
            kc_graph_desc_free(d);
        }
        printf("\n");
    }
    if (gpu) failed += demo_check(c, mf);
    kc_manifest_free(mf);
    kc_cache_close(c);
    return failed ? EXIT_PROBLEM : 0;
}
