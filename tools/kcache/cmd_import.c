/*
 * cmd_import.c — `kcache import FILE [--dry-run]`: verify a whole bundle, then write its
 * entries into the cache.
 *
 * The one idea: the library verifies everything before it writes anything, so a refused
 * bundle leaves the cache untouched; this file only reports.  Only main.c's command table
 * refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_import(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_import = {
    "import", "kcache import FILE [--dry-run] [--json]",
    "Verify the whole bundle FILE, then write its entries into the cache.  A truncated,\n"
    "corrupt or altered bundle is refused with the reason and the cache is left untouched;\n"
    "importing twice changes nothing.  --dry-run verifies only.",
    cmd_import};

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
    cli_print_bundle_report(dry ? "verified" : "imported", &r, json, file);
    return 0;
}
