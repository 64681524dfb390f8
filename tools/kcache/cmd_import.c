/*
 * cmd_import.c — `kcache import FILE [--dry-run]`: verify a whole bundle, then write its
 * entries into the cache: images first, unit records next, graph entries last.
 *
 * The one idea: the library verifies everything before it writes anything, so a refused
 * bundle leaves the cache untouched, and never writes a graph entry (or unit record) whose
 * image is neither in the bundle nor in the cache; this file only reports, by kind, what was
 * (or, with --dry-run, would be) written, and warns on stderr of what was left out.  Only main.c's command table
 * refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_import(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_import = {
    "import", "kcache import FILE [--dry-run] [--json]",
    "Verify the whole bundle FILE, then write its entries into the cache.  A truncated,\n"
    "corrupt or altered bundle is refused with the reason and the cache is left untouched;\n"
    "importing twice changes nothing.  A graph entry or unit record whose image is neither in\n"
    "the bundle nor in the cache is left out, with a warning.  --dry-run verifies only, and\n"
    "says what an import would write.",
    cmd_import};

/* "N graph entries, N images, N unit records": one kind's counts. */
static void print_kinds(uint64_t graphs, uint64_t images, uint64_t units) {
    printf("%llu graph entr%s, %llu image%s, %llu unit record%s", (unsigned long long)graphs, graphs == 1 ? "y" : "ies",
           (unsigned long long)images, images == 1 ? "" : "s", (unsigned long long)units, units == 1 ? "" : "s");
}

/* What the bundle held and what was (a dry run: would be) written, by kind ([Note: two levels]). */
static void print_report(const kc_bundle_report *r, int json, int dry, const char *file) {
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
        printf("}\n");
    } else {
        printf("%s %s: %llu entries, %llu bytes (", dry ? "verified" : "imported", file, (unsigned long long)r->entries,
               (unsigned long long)r->bytes);
        print_kinds(r->graphs, r->images, r->units);
        printf(");%s %llu (", dry ? " would write" : " wrote", (unsigned long long)r->written);
        print_kinds(r->graphs_written, r->images_written, r->units_written);
        printf("), %llu already present\n", (unsigned long long)r->unchanged);
    }
    if (r->graphs_skipped || r->units_skipped)
        fprintf(stderr, "kcache import: warning: %s %llu graph entries and %llu unit records (the first: %s): an image "
                "they refer to is neither in the bundle nor in the cache (export them again from a cache that holds "
                "their images)\n", dry ? "would leave out" : "left out", (unsigned long long)r->graphs_skipped,
                (unsigned long long)r->units_skipped, r->first_skipped);
}

static int cmd_import(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_import;
    const char *file = NULL;
    int json = 0, dry = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_help(c0);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--dry-run") == 0) dry = 1;
        else if (argv[i][0] == '-') return cli_usage_error(c0, "unknown option", argv[i]);
        else if (!file) file = argv[i];
        else return cli_usage_error(c0, "unexpected argument", argv[i]);
    }
    if (!file) return cli_usage_error(c0, "a FILE is required", NULL);
    kc_cache *c;
    if (cli_open_cache(cs, &c)) return EXIT_PROBLEM;
    kc_bundle_report r;
    int rc = kc_bundle_import(c, file, dry, &r);
    kc_cache_close(c);
    if (rc && r.written) return cli_fail("import stopped part-way; the entries it wrote stay in the cache");
    if (rc) return cli_fail("import refused; the cache is unchanged");
    print_report(&r, json, dry, file);
    return 0;
}
