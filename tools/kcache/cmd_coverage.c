/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_coverage.c — `kcache coverage MANIFEST [--arch LIST | --device N] [--json]`: whether the
 * cache covers a manifest, per graph and target, before a host serves from it or ships it.
 *
 * The one idea: the answer is the library's (kc_manifest_covered: a variant is a hit only when
 * its graph entry is stored and every image it refers to is there and sound, read without
 * counting anything; a missing one carries explain's nearest-entry reason); this file chooses the
 * targets (--arch, else the manifest's; --device N: what a lookup on that GPU would accept),
 * prints the table, and turns it into an exit status a deploy script can test: 0 everything is
 * covered, 1 anything is missing (or the check failed), 2 bad usage.  It compiles nothing.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_coverage(const cli_settings *cs, int argc, char **argv);

static const cli_opt coverage_opts[] = {
    {"arch", 0, "LIST", "the targets (sm_80,sm_90,...), instead of the manifest's \"archs\""},
    {"device", 0, "N", "what a lookup on GPU N would accept (needs the GPU)"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_coverage = {
    "coverage",
    "kcache coverage MANIFEST [--arch LIST | --device N] [--json]",
    "Whether the cache covers MANIFEST: for each graph and each target (LIST, else the manifest's\n"
    "\"archs\"), hit or missing.  A hit is a graph entry that is stored with every image it refers\n"
    "to present and sound, so a lookup would not compile; each missing one comes with explain's\n"
    "reason (the nearest stored entry and what differs, or the image the graph entry lacks).\n"
    "--device N asks instead for what a lookup on GPU N would accept (any stored variant that\n"
    "device loads, in the lookup's order); it needs the GPU.  Counts and changes nothing.\n"
    "Exit 0 when everything is covered, 1 when anything is missing, 2 for bad usage.",
    cmd_coverage,
    coverage_opts,
    CLI_OPERANDS_FILES};

static void print_text(const char *mpath, const kc_coverage_report *r) {
    char a[256], b[2048];
    printf("coverage of %s: %zu graph%s x %zu target%s (", cli_shown(mpath, b, sizeof b), r->graphs,
           r->graphs == 1 ? "" : "s", r->targets, r->targets == 1 ? "" : "s");
    for (size_t t = 0; t < r->targets; t++) printf("%s%s", t ? ", " : "", r->target_names[t]);
    if (r->device >= 0) printf("%sfor device %d", r->targets ? " " : "", r->device);
    printf(")\n");
    for (size_t i = 0; i < r->graphs * r->targets; i++) {
        const kc_coverage_result *x = &r->results[i];
        printf("%-16s %-11s %s", cli_shown(x->name, a, sizeof a), r->target_names[x->target],
               x->hit ? "hit" : "missing");
        if (x->hit && strcmp(x->variant, r->target_names[x->target]) != 0) printf(" (%s)", x->variant);
        if (!x->hit) printf("  %s", cli_shown(x->reason, b, sizeof b));
        printf("\n");
    }
    if (!r->missing) printf("complete: %zu of %zu variants covered\n", r->covered, r->graphs * r->targets);
    else
        printf("incomplete: %zu of %zu variants covered, %zu missing\n", r->covered, r->graphs * r->targets,
               r->missing);
}

/* The cache, opened, and the manifest's targets checked against its toolchain before any lookup
 * ([Note: target check] in kcache/target.h): 0, or the exit code (the cache closed). */
static int open_checked(const cli_settings *cs, const kc_manifest *m, const char *mpath, const char *arch,
                        kc_cache **c) {
    *c = NULL;
    if (cli_open_cache_readonly(cs, c)) return EXIT_PROBLEM;
    int rc = cli_manifest_targets_check(*c, "coverage", m, mpath, arch);
    if (rc) kc_cache_close(*c), *c = NULL;
    return rc;
}

static int cmd_coverage(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_coverage;
    cli_args a;
    cli_parse(c0, argc, argv, 1, &a);
    const char *mpath = a.pos[0], *arch = cli_arg(&a, "arch"), *dev = cli_arg(&a, "device");
    int json = cli_flag(&a, "json");
    if (!mpath) return cli_usage_error(c0, "a MANIFEST is required", NULL);
    if (arch && dev) return cli_usage_error(c0, "--arch and --device ask different questions; give one", NULL);
    int device = KC_COVERAGE_ARCHS;
    if (dev) {
        char *end;
        long v = strtol(dev, &end, 10);
        if (!*dev || *end || v < 0 || v > 1024)
            return cli_usage_error(c0, "--device needs a GPU ordinal (0, 1, ...)", dev);
        device = (int)v;
        int major, minor;
        if (kc_cuda_capability(device, &major, &minor) != KC_OK) {
            fprintf(stderr,
                    "kcache coverage: --device %d: no such GPU here (%s); on a host without one, name the "
                    "targets with --arch\n",
                    device, kc_error_last()->message);
            return EXIT_PROBLEM;
        }
    }
    kc_manifest *m = NULL;
    int rc = cli_manifest_open("coverage", mpath, arch, &m);
    if (rc) return rc;
    if (device < 0 && kc_manifest_arch_count(m) == 0) {
        kc_manifest_free(m);
        return cli_usage_error(c0, "the manifest names no target (\"archs\"): give --arch LIST or --device N", NULL);
    }
    kc_cache *c = NULL;
    if ((rc = open_checked(cs, m, mpath, arch, &c))) {
        kc_manifest_free(m);
        return rc;
    }
    kc_coverage_report *r = NULL;
    rc = kc_manifest_covered(c, m, device, &r);
    if (r && json) {
        int first = 1;
        printf("{");
        cli_coverage_json(stdout, &first, mpath, r);
        printf("}\n");
    } else if (r) {
        print_text(mpath, r);
    } else {
        fprintf(stderr, "kcache coverage: %s\n", kc_error_last()->message);
    }
    kc_coverage_report_free(r);
    kc_cache_close(c);
    kc_manifest_free(m);
    return rc == KC_OK ? 0 : !r && rc == KC_EINVAL ? EXIT_USAGE : EXIT_PROBLEM; /* a bad spec: bad input, as prewarm */
}
