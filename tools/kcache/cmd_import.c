/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_import.c — `kcache import FILE [--dry-run]`: verify a whole bundle, then write its
 * entries into the cache: images first, unit records next, graph entries last.
 *
 * The one idea: the library verifies everything before it writes anything, so a refused
 * bundle leaves the cache untouched, and never writes a graph entry (or unit record) whose
 * image is neither in the bundle nor in the cache; this file only reports, by kind, what was
 * (or, with --dry-run, would be) written, and warns on stderr of what was left out, and the
 * coverage the bundle brings: the manifest × targets its v2 record names and which of them it
 * carries (kc_bundle_coverage_read; a v1 bundle records none).  Only main.c's command table
 * refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_import(const cli_settings *cs, int argc, char **argv);

static const cli_opt import_opts[] = {
    {"dry-run", 'n', NULL, "verify only, and say what an import would write"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_import = {
    "import",
    "kcache import FILE [--dry-run] [--json]",
    "Verify the whole bundle FILE, then write its entries into the cache.  A truncated,\n"
    "corrupt or altered bundle is refused with the reason and the cache is left untouched;\n"
    "importing twice changes nothing.  A graph entry or unit record whose image is neither in\n"
    "the bundle nor in the cache is left out, with a warning.  --dry-run verifies only, and\n"
    "says what an import would write.  A bundle exported with --manifest records the manifest's\n"
    "graphs x targets: import prints the coverage it brings (complete, or what is missing);\n"
    "an older bundle prints \"coverage: not recorded\" and imports as before.",
    cmd_import,
    import_opts,
    CLI_OPERANDS_FILES};

/* "N graph entries, N images, N unit records": one kind's counts. */
static void print_kinds(uint64_t graphs, uint64_t images, uint64_t units) {
    printf("%llu graph entr%s, %llu image%s, %llu unit record%s", (unsigned long long)graphs, graphs == 1 ? "y" : "ies",
           (unsigned long long)images, images == 1 ? "" : "s", (unsigned long long)units, units == 1 ? "" : "s");
}

/* The coverage the bundle brings (its v2 record), as text or as the fields' JSON value. */
static void print_coverage(const kc_bundle_coverage *cv, int json) {
    char a[256], b[4200];
    if (json && !cv) {
        printf("null");
        return;
    }
    if (!cv) {
        printf("coverage: not recorded (a bundle exported without --manifest, or by an older kcache)\n");
        return;
    }
    if (json) {
        int f = 1;
        printf("{");
        json_kv_str(stdout, &f, "manifest", cv->manifest);
        json_kv_u64(stdout, &f, "graphs", cv->ngraphs);
        json_key(stdout, &f, "targets");
        printf("[");
        for (size_t t = 0; t < cv->ntargets; t++) printf("%s", t ? ", " : ""), json_str(stdout, cv->targets[t]);
        printf("]");
        json_kv_bool(stdout, &f, "complete", cv->missing == 0);
        json_key(stdout, &f, "missing");
        printf("[");
        for (size_t i = 0, n = 0; i < cv->ngraphs * cv->ntargets; i++) {
            if (cv->carried[i]) continue;
            int g = 1;
            printf("%s{", n++ ? ", " : "");
            json_kv_str(stdout, &g, "graph", cv->names[i / cv->ntargets]);
            json_kv_str(stdout, &g, "target", cv->targets[i % cv->ntargets]);
            printf("}");
        }
        printf("]}");
        return;
    }
    printf("coverage: %s: %zu graph%s x %zu target%s (", cli_shown(cv->manifest, b, sizeof b), cv->ngraphs,
           cv->ngraphs == 1 ? "" : "s", cv->ntargets, cv->ntargets == 1 ? "" : "s");
    for (size_t t = 0; t < cv->ntargets; t++) printf("%s%s", t ? ", " : "", cv->targets[t]);
    if (!cv->missing) {
        printf("): complete\n");
        return;
    }
    printf("): partial, %zu of %zu missing:", cv->missing, cv->ngraphs * cv->ntargets);
    for (size_t i = 0, n = 0; i < cv->ngraphs * cv->ntargets; i++)
        if (!cv->carried[i])
            printf("%s %s %s", n++ ? "," : "", cli_shown(cv->names[i / cv->ntargets], a, sizeof a),
                   cv->targets[i % cv->ntargets]);
    printf("\n");
}

/* What the bundle held and what was (a dry run: would be) written, by kind ([Note: two levels]). */
static void print_report(const kc_bundle_report *r, int json, int dry, const char *file, const kc_bundle_coverage *cv) {
    if (json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "file", file);
        json_kv_u64(stdout, &first, "dry_run", (uint64_t)dry);
        json_kv_u64(stdout, &first, "entries", r->entries);
        json_kv_u64(stdout, &first, "bytes", r->bytes);
        json_kv_u64(stdout, &first, "written", r->written);
        json_kv_u64(stdout, &first, "unchanged", r->unchanged);
        json_kv_u64(stdout, &first, "graphs", r->graphs);
        json_kv_u64(stdout, &first, "images", r->images);
        json_kv_u64(stdout, &first, "units", r->units);
        json_kv_u64(stdout, &first, "graph_bytes", r->graph_bytes);
        json_kv_u64(stdout, &first, "image_bytes", r->image_bytes);
        json_kv_u64(stdout, &first, "unit_bytes", r->unit_bytes);
        json_kv_u64(stdout, &first, "graphs_written", r->graphs_written);
        json_kv_u64(stdout, &first, "images_written", r->images_written);
        json_kv_u64(stdout, &first, "units_written", r->units_written);
        json_kv_u64(stdout, &first, "graphs_skipped", r->graphs_skipped);
        json_kv_u64(stdout, &first, "units_skipped", r->units_skipped);
        json_kv_str(stdout, &first, "first_skipped", r->first_skipped);
        json_kv_u64(stdout, &first, "profiles", r->profiles);
        json_kv_u64(stdout, &first, "profiles_written", r->profiles_written);
        json_key(stdout, &first, "coverage");
        print_coverage(cv, 1);
        printf("}\n");
    } else {
        printf("%s %s: %llu entries, %llu bytes (", dry ? "verified" : "imported", file, (unsigned long long)r->entries,
               (unsigned long long)r->bytes);
        print_kinds(r->graphs, r->images, r->units);
        printf(");%s %llu (", dry ? " would write" : " wrote", (unsigned long long)r->written);
        print_kinds(r->graphs_written, r->images_written, r->units_written);
        printf("), %llu already present\n", (unsigned long long)r->unchanged);
        if (r->profiles)
            printf("site profiles: %llu, %llu %s the local ones (a union of dynamic dimensions)\n",
                   (unsigned long long)r->profiles, (unsigned long long)r->profiles_written,
                   dry ? "would change" : "changed");
        print_coverage(cv, 0);
    }
    if (r->graphs_skipped || r->units_skipped)
        fprintf(stderr,
                "kcache import: warning: %s %llu graph entries and %llu unit records (the first: %s): an image "
                "they refer to is neither in the bundle nor in the cache (export them again from a cache that holds "
                "their images)\n",
                dry ? "would leave out" : "left out", (unsigned long long)r->graphs_skipped,
                (unsigned long long)r->units_skipped, r->first_skipped);
}

static int cmd_import(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_import;
    cli_args a;
    cli_parse(c0, argc, argv, 1, &a);
    const char *file = a.pos[0];
    int json = cli_flag(&a, "json"), dry = cli_flag(&a, "dry-run");
    if (!file) return cli_usage_error(c0, "a FILE is required", NULL);
    kc_cache *c;
    if ((dry ? cli_open_cache_readonly : cli_open_cache)(cs, &c)) return EXIT_PROBLEM;
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    int rc = kc_bundle_import(c, file, dry, &r);
    kc_cache_close(c);
    if (rc && r.written) return cli_fail("import stopped part-way; the entries it wrote stay in the cache");
    if (rc) return cli_fail("import refused; the cache is unchanged");
    /* The coverage it brings: the bundle's record (v2), read back; a v1 bundle has none. */
    kc_bundle_coverage *cv = NULL;
    rc = kc_bundle_coverage_read(file, &cv);
    if (rc && rc != KC_MISS)
        fprintf(stderr, "kcache import: warning: its coverage record: %s\n", kc_error_last()->message);
    print_report(&r, json, dry, file, cv);
    kc_bundle_coverage_free(cv);
    return 0;
}
