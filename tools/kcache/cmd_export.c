/*
 * cmd_export.c — `kcache export FILE`: write the cache's graph entries (of --arch's targets, of
 * --manifest's graphs, when given), with every image they refer to (once each) and those images'
 * unit records, to one compressed bundle with a table of contents and per-entry checksums.
 *
 * The one idea: this file turns the options into a kc_bundle_filter (targets, and the keys of
 * the manifest's graphs) and the library does the rest, validating each entry it ships and
 * refusing to ship a graph whose image is missing or corrupt; it prints what went in, by kind.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 *
 * FILE is a regular file or nothing yet: the library writes a temporary beside it and renames
 * it over FILE (kc_fs_write_atomic), so a device node, FIFO, socket, directory or symbolic link
 * at FILE is refused here, before any work, instead of being replaced (issue 15: `export
 * /dev/full` as root replaced the system's /dev/full).  "-" is refused too: a bundle is
 * written whole and renamed into place, never streamed to stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "json.h"

static int cmd_export(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_export = {
    "export", "kcache export FILE [--arch LIST] [--manifest MANIFEST] [--json]",
    "Write the cache's graph entries (those of LIST's targets, and of MANIFEST's graphs, when\n"
    "given) to one compressed bundle FILE with a table of contents and per-entry checksums,\n"
    "with every image they refer to (each once) and those images' unit records.  Every entry\n"
    "is validated before it is shipped; a graph whose image is missing or corrupt fails the\n"
    "export, naming both.",
    cmd_export};

/* Whether FILE may be written: absent, or a regular file (replaced atomically).  Prints why
 * not and returns EXIT_USAGE/EXIT_PROBLEM; 0 when it may. */
static int export_target_check(const char *file) {
    if (strcmp(file, "-") == 0) {
        fprintf(stderr, "kcache export: '-': a bundle is written to a file, not to stdout; name a file\n");
        return EXIT_USAGE;
    }
    struct stat st;
    if (lstat(file, &st) != 0) {
        if (errno == ENOENT) return 0;
        fprintf(stderr, "kcache export: '%s': %s\n", file, strerror(errno));
        return EXIT_PROBLEM;
    }
    if (S_ISREG(st.st_mode)) return 0;
    const char *what = S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
    fprintf(stderr, "kcache export: '%s' is %s: export writes regular files only (it replaces one whole); "
                    "name a new file or a regular one\n", file, what);
    return EXIT_USAGE;
}

/* What went into the bundle, by kind ([Note: two levels] in kcache/entry.h). */
static void print_report(const kc_bundle_report *r, int json, const char *file) {
    if (json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "file", file);
        json_kv_u64(stdout, &first, "entries", r->entries);
        json_kv_u64(stdout, &first, "bytes", r->bytes);
        json_kv_u64(stdout, &first, "graphs", r->graphs);
        json_kv_u64(stdout, &first, "images", r->images);
        json_kv_u64(stdout, &first, "units", r->units);
        json_kv_u64(stdout, &first, "graph_bytes", r->graph_bytes);
        json_kv_u64(stdout, &first, "image_bytes", r->image_bytes);
        json_kv_u64(stdout, &first, "unit_bytes", r->unit_bytes);
        printf("}\n");
        return;
    }
    printf("exported %s: %llu entries, %llu bytes: %llu graph entries (%llu bytes), %llu images (%llu bytes), "
           "%llu unit records (%llu bytes)\n", file, (unsigned long long)r->entries, (unsigned long long)r->bytes,
           (unsigned long long)r->graphs, (unsigned long long)r->graph_bytes, (unsigned long long)r->images,
           (unsigned long long)r->image_bytes, (unsigned long long)r->units, (unsigned long long)r->unit_bytes);
}

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
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error(c0, "unknown or incomplete option", argv[i]);
        else if (!file) file = argv[i];
        else return cli_usage_error(c0, "unexpected argument", argv[i]);
    }
    if (!file) return cli_usage_error(c0, "a FILE is required", NULL);
    int bad = export_target_check(file);
    if (bad) return bad;
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
    print_report(&r, json, file);
    return 0;
}
