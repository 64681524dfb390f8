/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_export.c — `kcache export FILE`: write the cache's graph entries (of --arch's targets, of
 * --manifest's graphs, when given), with every image they refer to (once each) and those images'
 * unit records, to one compressed bundle with a table of contents and per-entry checksums.
 *
 * The one idea: this file turns the options into a kc_bundle_filter (targets, and the keys of
 * the manifest's graphs) and the library does the rest, validating each entry it ships and
 * refusing to ship a graph whose image is missing or corrupt; it prints what went in, by kind.
 * With a manifest, it first asks the library whether the cache covers the manifest's graphs ×
 * targets (kc_manifest_covered, the code `kcache coverage` runs): anything missing is listed
 * and the export refused before a byte is written, unless --allow-partial; the bundle records
 * the manifest, its graphs and targets (kc_bundle_export_covering: format v2).
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

static const cli_opt export_opts[] = {
    {"arch", 0, "LIST", "only the graph entries of these targets (sm_80,sm_90,...)"},
    {"manifest", 0, "MANIFEST", "only MANIFEST's graphs, and refuse when any is missing"},
    {"allow-partial", 0, NULL, "with --manifest: write what there is, list what is missing"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_export = {
    "export",
    "kcache export FILE [--arch LIST] [--manifest MANIFEST [--allow-partial]] [--json]",
    "Write the cache's graph entries (those of LIST's targets, and of MANIFEST's graphs, when\n"
    "given) to one compressed bundle FILE with a table of contents and per-entry checksums,\n"
    "with every image they refer to (each once) and those images' unit records.  Every entry\n"
    "is validated before it is shipped; a graph whose image is missing or corrupt fails the\n"
    "export, naming both.\n"
    "With MANIFEST, the bundle is for its graphs x targets (LIST, else the manifest's \"archs\")\n"
    "and records them, so that import can say what it brings.  If the cache lacks any of them\n"
    "(as `kcache coverage` would report), export lists every missing one and refuses, writing\n"
    "nothing (exit 1) -- a partial or empty bundle is never shipped by accident; --allow-partial\n"
    "writes what there is and still lists what is missing.",
    cmd_export,
    export_opts,
    CLI_OPERANDS_FILES};

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
    const char *what = S_ISLNK(st.st_mode)                          ? "a symbolic link"
                       : S_ISDIR(st.st_mode)                        ? "a directory"
                       : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode)                       ? "a socket"
                                                                    : "not a regular file";
    fprintf(stderr,
            "kcache export: '%s' is %s: export writes regular files only (it replaces one whole); "
            "name a new file or a regular one\n",
            file, what);
    return EXIT_USAGE;
}

/* What went into the bundle, by kind ([Note: two levels] in kcache/entry.h): the fields of a JSON object. */
static void print_fields(const kc_bundle_report *r, const char *file, int *first) {
    json_kv_str(stdout, first, "file", file);
    json_kv_u64(stdout, first, "entries", r->entries);
    json_kv_u64(stdout, first, "bytes", r->bytes);
    json_kv_u64(stdout, first, "graphs", r->graphs);
    json_kv_u64(stdout, first, "images", r->images);
    json_kv_u64(stdout, first, "units", r->units);
    json_kv_u64(stdout, first, "graph_bytes", r->graph_bytes);
    json_kv_u64(stdout, first, "image_bytes", r->image_bytes);
    json_kv_u64(stdout, first, "unit_bytes", r->unit_bytes);
    json_kv_u64(stdout, first, "profiles", r->profiles);
}

/* What went into the bundle, by kind. */
static void print_report(const kc_bundle_report *r, int json, const char *file) {
    if (json) {
        int first = 1;
        printf("{");
        print_fields(r, file, &first);
        printf("}\n");
        return;
    }
    printf("exported %s: %llu entries, %llu bytes: %llu graph entries (%llu bytes), %llu images (%llu bytes), "
           "%llu unit records (%llu bytes)\n",
           file, (unsigned long long)r->entries, (unsigned long long)r->bytes, (unsigned long long)r->graphs,
           (unsigned long long)r->graph_bytes, (unsigned long long)r->images, (unsigned long long)r->image_bytes,
           (unsigned long long)r->units, (unsigned long long)r->unit_bytes);
    if (r->profiles) /* the site profiles (bundle v3, kcache/bundle.h) */
        printf("site profiles: %llu (a kcache before format v3 cannot import this bundle)\n",
               (unsigned long long)r->profiles);
}

/* Without a manifest: every graph entry (of --arch's targets), as before; no coverage record (v1). */
static int export_all(const cli_settings *cs, const cli_cmd *c0, const char *file, const char *arch, int json) {
    int rc = 0;
    char *archs[KC_MANIFEST_MAX_ARCHS];
    size_t narchs = 0;
    if (arch) { /* --arch filters variants */
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", arch);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
            if (narchs >= KC_MANIFEST_MAX_ARCHS) rc = cli_usage_error(c0, "too many targets", t);
            else if (!(rc = cli_target_check(NULL, "export", t, "--arch", 1))) archs[narchs++] = strdup(t);
        }
        if (!rc && narchs == 0) rc = cli_usage_error(c0, "--arch needs at least one target", NULL);
    }
    kc_cache *c = NULL;
    if (!rc && cli_open_cache_readonly(cs, &c)) rc = EXIT_PROBLEM;
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    kc_bundle_filter f = {(const char *const *)archs, narchs, NULL, 0};
    if (!rc && kc_bundle_export(c, file, &f, &r) != KC_OK) rc = cli_fail("export failed");
    if (!rc) print_report(&r, json, file);
    kc_cache_close(c);
    for (size_t i = 0; i < narchs; i++) free(archs[i]);
    return rc;
}

/* The manifest's graphs × targets, for the bundle's coverage record (names and keys from `cov`). */
typedef struct ex_covers {
    const char **names, **targets;
    kc_key *keys;
    kc_bundle_covers pub;
} ex_covers;

static int covers_make(ex_covers *x, const char *mpath, const kc_coverage_report *cov) {
    memset(x, 0, sizeof *x);
    x->names = calloc(cov->graphs + 1, sizeof *x->names);
    x->keys = calloc(cov->graphs + 1, sizeof *x->keys);
    x->targets = calloc(cov->targets + 1, sizeof *x->targets);
    if (!x->names || !x->keys || !x->targets) return KC_ENOMEM;
    for (size_t g = 0; g < cov->graphs; g++) {
        const kc_coverage_result *r = &cov->results[g * cov->targets];
        x->names[g] = r->name;
        if (kc_key_from_hex(&x->keys[g], r->key) != KC_OK) return KC_EINVAL;
    }
    for (size_t t = 0; t < cov->targets; t++) x->targets[t] = cov->target_names[t];
    x->pub = (kc_bundle_covers){mpath, x->names, x->keys, cov->graphs, x->targets, cov->targets};
    return KC_OK;
}

static void covers_free(ex_covers *x) {
    free(x->names);
    free(x->keys);
    free(x->targets);
}

/* What the command line asks for. */
typedef struct export_args {
    const char *file, *arch, *mpath;
    int json, partial;
} export_args;

/* argv into *a; -1 when the help was printed, 0, or an exit code (said). */
static int export_parse(int argc, char **argv, export_args *a) {
    const cli_cmd *c0 = &cli_cmd_export;
    cli_args o;
    cli_parse(c0, argc, argv, 1, &o);
    a->file = o.pos[0], a->arch = cli_arg(&o, "arch"), a->mpath = cli_arg(&o, "manifest");
    a->json = cli_flag(&o, "json"), a->partial = cli_flag(&o, "allow-partial");
    if (!a->file) return cli_usage_error(c0, "a FILE is required", NULL);
    if (a->partial && !a->mpath) return cli_usage_error(c0, "--allow-partial goes with --manifest", NULL);
    return 0;
}

/* Whether the cache covers the manifest (*cov: its report); what is missing is listed and, without
 * --allow-partial, the export refused.  0, or an exit code (said). */
static int export_gate(kc_cache *c, const kc_manifest *m, const export_args *a, kc_coverage_report **cov) {
    int crc = kc_manifest_covered(c, m, KC_COVERAGE_ARCHS, cov);
    const kc_coverage_report *v = *cov;
    if (!v) {
        fprintf(stderr, "kcache export: %s\n", kc_error_last()->message);
        return crc == KC_EINVAL ? EXIT_USAGE : EXIT_PROBLEM;
    }
    if (!v->missing) return 0;
    cli_coverage_missing(stderr, "export", v);
    if (!a->partial) {
        fprintf(stderr,
                "kcache export: refused: %zu of %zu variants of %s (%zu graphs x %zu targets) are not in the "
                "cache, listed above; nothing written (prewarm them, or give --allow-partial to ship the %zu there)\n",
                v->missing, v->graphs * v->targets, a->mpath, v->graphs, v->targets, v->covered);
        return EXIT_PROBLEM;
    }
    fprintf(stderr, "kcache export: warning: --allow-partial: the bundle lacks the %zu variants listed above\n",
            v->missing);
    return 0;
}

/* What went in, and what the bundle covers. */
static void export_covering_report(const kc_bundle_report *r, const export_args *a, const kc_coverage_report *cov) {
    if (a->json) {
        int first = 1;
        printf("{");
        print_fields(r, a->file, &first);
        json_key(stdout, &first, "coverage");
        printf("{");
        int f2 = 1;
        cli_coverage_json(stdout, &f2, a->mpath, cov);
        printf("}}\n");
        return;
    }
    print_report(r, 0, a->file);
    printf("covers %s: %zu graphs x %zu targets: %s", a->mpath, cov->graphs, cov->targets,
           cov->missing ? "partial" : "complete");
    if (cov->missing) printf(", %zu of %zu missing (--allow-partial)", cov->missing, cov->graphs * cov->targets);
    printf("\n");
}

/* A manifest: its graphs x targets (--arch, else its own), all of them or refused. */
static int export_manifest(const cli_settings *cs, const export_args *a) {
    kc_manifest *m = NULL;
    int rc = cli_manifest_open("export", a->mpath, a->arch, &m);
    if (rc) return rc;
    if (kc_manifest_arch_count(m) == 0) {
        kc_manifest_free(m);
        return cli_usage_error(&cli_cmd_export, "the manifest names no target (\"archs\"): give --arch LIST", NULL);
    }
    kc_cache *c = NULL;
    if (cli_open_cache_readonly(cs, &c) || (rc = cli_manifest_targets_check(c, "export", m, a->mpath, a->arch))) {
        kc_cache_close(c);
        kc_manifest_free(m);
        return rc ? rc : EXIT_PROBLEM;
    }
    kc_coverage_report *cov = NULL;
    ex_covers xc;
    memset(&xc, 0, sizeof xc);
    rc = export_gate(c, m, a, &cov);
    if (!rc && covers_make(&xc, a->mpath, cov) != KC_OK) rc = cli_fail("export: out of memory");
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    if (!rc) {
        size_t ntargets = kc_manifest_arch_count(m);
        const char *targets[KC_MANIFEST_MAX_ARCHS];
        for (size_t i = 0; i < ntargets; i++) targets[i] = kc_manifest_arch(m, i);
        kc_bundle_filter f = {targets, ntargets, xc.keys, cov->graphs};
        if (kc_bundle_export_covering(c, a->file, &f, &xc.pub, &r) != KC_OK) rc = cli_fail("export failed");
    }
    if (!rc) export_covering_report(&r, a, cov);
    covers_free(&xc);
    kc_coverage_report_free(cov);
    kc_cache_close(c);
    kc_manifest_free(m);
    return rc;
}

static int cmd_export(const cli_settings *cs, int argc, char **argv) {
    export_args a = {0};
    int rc = export_parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    int bad = export_target_check(a.file);
    if (bad) return bad;
    if (!a.mpath) return export_all(cs, &cli_cmd_export, a.file, a.arch, a.json);
    return export_manifest(cs, &a);
}
