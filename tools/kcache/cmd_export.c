/*
 * cmd_export.c — `kcache export FILE`: write the cache's entries (of --arch's targets, of
 * --manifest's graphs, when given) to one compressed bundle with a table of contents and
 * per-entry checksums.
 *
 * The one idea: this file turns the options into a kc_bundle_filter (targets, and the keys of
 * the manifest's graphs) and the library does the rest, validating each entry it ships.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int cmd_export(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_export = {
    "export", "kcache export FILE [--arch LIST] [--manifest MANIFEST] [--json]",
    "Write the cache's entries (those of LIST's targets, and of MANIFEST's graphs, when\n"
    "given) to one compressed bundle FILE with a table of contents and per-entry checksums.\n"
    "Every entry is validated before it is shipped.",
    cmd_export};

static int cmd_export(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_export;
    const char *file = NULL, *arch = NULL, *mpath = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_help(c0);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) arch = argv[++i];
        else if (strcmp(argv[i], "--manifest") == 0 && i + 1 < argc) mpath = argv[++i];
        else if (argv[i][0] == '-') return cli_usage_error(c0, "unknown or incomplete option", argv[i]);
        else if (!file) file = argv[i];
        else return cli_usage_error(c0, "unexpected argument", argv[i]);
    }
    if (!file) return cli_usage_error(c0, "a FILE is required", NULL);
    kc_manifest *m = NULL;
    kc_key *keys = NULL;
    int rc = 0;
    char **archs = NULL;
    size_t narchs = 0;
    if (mpath && (rc = cli_manifest_open("export", mpath, NULL, &m))) return rc;
    if (arch) { /* --arch filters variants whether or not a manifest is given */
        archs = calloc(KC_MANIFEST_MAX_ARCHS, sizeof *archs);
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", arch);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
            kc_target tg;
            if (kc_target_parse(t, &tg) != KC_OK || narchs >= KC_MANIFEST_MAX_ARCHS) rc = cli_usage_error(c0, "not a target", t);
            else archs[narchs++] = strdup(t);
        }
        if (!rc && narchs == 0) rc = cli_usage_error(c0, "--arch needs at least one target", NULL);
    }
    kc_bundle_filter f = {(const char *const *)archs, narchs, NULL, 0};
    size_t ng = kc_manifest_graph_count(m);
    if (mpath && !rc) {
        keys = calloc(ng + 1, sizeof *keys);
        for (size_t i = 0; i < ng; i++) {
            kc_graph_desc *d = NULL;
            if (kc_graph_desc_load(&d, kc_manifest_graph(m, i)) != KC_OK || kc_graph_key(d, &keys[i], NULL) != KC_OK) {
                fprintf(stderr, "kcache export: %s: graphs[%zu]: %s\n", mpath, i, kc_error_last()->message);
                kc_graph_desc_free(d);
                rc = EXIT_USAGE;
                break;
            }
            kc_graph_desc_free(d);
        }
        f.keys = keys;
        f.nkeys = ng;
    }
    kc_cache *c = NULL;
    if (!rc && cli_open_cache(cs, &c)) rc = EXIT_PROBLEM;
    if (rc) {
        for (size_t i = 0; i < narchs; i++) free(archs[i]);
        free(archs);
        free(keys);
        kc_manifest_free(m);
        return rc;
    }
    kc_bundle_report r;
    rc = kc_bundle_export(c, file, &f, &r);
    kc_cache_close(c);
    for (size_t i = 0; i < narchs; i++) free(archs[i]);
    free(archs);
    free(keys);
    kc_manifest_free(m);
    if (rc) return cli_fail("export failed");
    cli_print_bundle_report("exported", &r, json, file);
    return 0;
}
