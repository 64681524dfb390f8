/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_sign.c — `kcache sign --key FILE (BUNDLE | --local) [--json]`: sign what a build host
 * ships with its Ed25519 private key (kcache/sign.h, [Note: signatures] in src/entry/entry.c).
 *
 * The one idea: signing goes through the library's own put path — a cache opened with the
 * signing key (kc_options.signing_key_file) signs every entry it puts (kc_trust_vouch) — so
 * this file only decides which entries to read back and put again, and never writes an entry
 * file itself.
 *   - BUNDLE: imported whole into a private scratch cache (a 0700 folder beside BUNDLE, so the
 *     result can be renamed over it), every object there signed, and a new bundle exported to a
 *     temporary file in that folder, then renamed over BUNDLE.  Kept: every object, the coverage
 *     record (kc_bundle_coverage_read → kc_bundle_export_covering) and the site profiles (the
 *     import merges them into the scratch cache, whose export carries them).  The operator
 *     vouches for the bundle by signing it, so its objects are signed whatever their mode there;
 *     a bundle that could not be carried over whole (a graph entry whose image it lacks, an
 *     object no graph refers to) is refused and left as it was.  A MAC an entry carried is
 *     replaced by the signature.
 *   - --local: the cache's own compiles only ([Note: provenance] in src/store/local.c: mode
 *     0600 files) are read back (kc_cache_peek) and put again, which signs them and keeps them
 *     0600; fetched or imported ones (0400) are skipped, counted and named in --json: vouching
 *     for bytes this host did not make would launder them.  The remote tier is off for this
 *     command: re-signing the local directory sends nothing (`prewarm --remote` publishes).
 * A private key others can read is refused by the library (kc_signer_load), with its reason.
 *
 * It opens its caches with kc_cache_open directly, not cli_open_cache(), because it needs
 * kc_options.signing_key_file (and, for the scratch cache, KC_OPEN_NO_ENV: the caller's
 * KCACHE_KEYRING must not refuse the unsigned bundle it is asked to sign).  Only main.c's
 * command table refers to this file.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "kcache/sys/store.h" /* kc_provenance_read */

static int cmd_sign(const cli_settings *cs, int argc, char **argv);

static const cli_opt sign_opts[] = {
    {"key", 0, "FILE", "the Ed25519 private key (made by kcache keygen)"},
    {"local", 0, NULL, "sign every entry this cache compiled itself"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_sign = {
    "sign",
    "kcache sign --key FILE (BUNDLE | --local) [--json]",
    "Sign entries with the Ed25519 private key FILE (made by `kcache keygen`; a key file others\n"
    "can read is refused, with the reason), so hosts whose KCACHE_KEYRING holds its public key\n"
    "accept them.  BUNDLE: every object of the bundle is signed and the bundle rewritten in place\n"
    "(atomically), keeping its coverage record and site profiles.  --local: every entry this\n"
    "cache compiled itself is re-written signed; entries fetched from a remote or imported from\n"
    "a bundle are skipped and counted (never vouched for here).  A MAC an entry carried is\n"
    "replaced by the signature.  Prints how many entries were signed and skipped.",
    cmd_sign,
    sign_opts,
    CLI_OPERANDS_FILES};

/* One stored object to sign, with whether this cache compiled it ([Note: provenance]). */
typedef struct sg_item {
    kc_key key;
    char variant[KC_VARIANT_MAX + 1];
    int own;
    char why[KC_PROV_SOURCE_MAX + 160]; /* when not own: where it came from, as recorded */
} sg_item;

typedef struct sg_list {
    sg_item *v;
    size_t n, cap;
} sg_list;

/* Collect first, sign after: a walk of a directory whose files are being renamed over may
 * see a file twice or miss one. */
static int collect(const kc_cache_item *it, void *ctx) {
    sg_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        sg_item *v = realloc(l->v, cap * sizeof *v);
        if (!v) return KC_ENOMEM;
        l->v = v, l->cap = cap;
    }
    sg_item *s = &l->v[l->n++];
    s->key = it->key;
    snprintf(s->variant, sizeof s->variant, "%s", it->variant);
    struct stat st; /* as kc_local_is_own: a regular file its owner may write */
    s->own = lstat(it->path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IWUSR);
    s->why[0] = '\0';
    kc_provenance p; /* the record says where from; the mode alone decided */
    if (!s->own && kc_provenance_read(it->path, &p) == KC_OK && p.recorded)
        snprintf(s->why, sizeof s->why, "%s %s verified=%s: not compiled here", kc_provenance_kind_name(p.kind),
                 p.source, p.verifier);
    else if (!s->own)
        snprintf(s->why, sizeof s->why, "fetched or imported (mode 0400), %s: not compiled here",
                 p.unavailable ? "the file system keeps no record of where from" : "no record of where from");
    return 0;
}

/* Read one object back and put it again: the cache signs it.  KC_OK or why not. */
static int sign_one(kc_cache *c, const sg_item *s) {
    kc_entry *e = NULL;
    int rc = kc_cache_peek(c, &s->key, s->variant, &e);
    if (rc == KC_OK) rc = kc_cache_put(c, e);
    kc_entry_free(e);
    return rc;
}

static void item_name(const sg_item *s, char *out, size_t cap) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(&s->key, hex);
    snprintf(out, cap, "%s.%s", hex, s->variant);
}

/* ---- --local ---- */

static int sign_local(const cli_settings *cs, const char *keyfile, const char *key_id, int json) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = cs->dir;
    o.remote = ""; /* no remote: this re-writes the local directory and sends nothing */
    o.flags = KC_OPEN_OPTIONS_WIN | (cs->allow_unsafe_dir ? KC_OPEN_ALLOW_UNSAFE_DIR : 0u);
    o.signing_key_file = keyfile;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK) return cli_fail("cannot open the cache");
    if (kc_cache_mode(c) != KC_CACHE_READWRITE) {
        fprintf(stderr, "kcache sign: the cache '%s' is %s: nothing can be re-written signed\n", kc_cache_dir(c),
                kc_cache_mode(c) == KC_CACHE_READONLY ? "read-only" : "disabled");
        kc_cache_close(c);
        return EXIT_PROBLEM;
    }
    sg_list l = {NULL, 0, 0};
    int rc = kc_cache_foreach(c, collect, &l);
    if (rc != KC_OK) {
        free(l.v);
        kc_cache_close(c);
        return cli_fail("cannot list the cache");
    }
    uint64_t signed_n = 0, skipped = 0, failed = 0;
    char name[KC_KEY_HEX_LEN + KC_VARIANT_MAX + 2], shown[256];
    for (size_t i = 0; i < l.n; i++) {
        if (!l.v[i].own) {
            skipped++;
            continue;
        }
        if (sign_one(c, &l.v[i]) == KC_OK) {
            signed_n++;
            continue;
        }
        failed++;
        item_name(&l.v[i], name, sizeof name);
        fprintf(stderr, "kcache sign: %s: not signed: %s (%s)\n", cli_shown(name, shown, sizeof shown),
                kc_error_last()->message, kc_status_str(kc_error_last()->code));
    }
    if (json) {
        int f = 1;
        printf("{");
        json_kv_str(stdout, &f, "key_id", key_id);
        json_kv_str(stdout, &f, "dir", kc_cache_dir(c));
        json_kv_u64(stdout, &f, "signed", signed_n);
        json_kv_u64(stdout, &f, "skipped", skipped);
        json_kv_u64(stdout, &f, "failed", failed);
        json_key(stdout, &f, "skipped_entries");
        printf("[");
        for (size_t i = 0, k = 0; i < l.n; i++) {
            if (l.v[i].own) continue;
            item_name(&l.v[i], name, sizeof name);
            printf("%s", k++ ? ", " : "");
            json_str(stdout, name);
        }
        printf("]");
        json_key(stdout, &f, "skipped_reasons"); /* the same entries, in order, each with why */
        printf("[");
        for (size_t i = 0, k = 0; i < l.n; i++) {
            if (l.v[i].own) continue;
            int f2 = 1;
            item_name(&l.v[i], name, sizeof name);
            printf("%s{", k++ ? ", " : "");
            json_kv_str(stdout, &f2, "name", name);
            json_kv_str(stdout, &f2, "reason", l.v[i].why);
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("signed %llu entr%s of %s with key %s; skipped %llu (fetched or imported, not compiled here)",
               (unsigned long long)signed_n, signed_n == 1 ? "y" : "ies",
               cli_shown(kc_cache_dir(c), shown, sizeof shown), key_id, (unsigned long long)skipped);
        if (failed) printf("; %llu failed", (unsigned long long)failed);
        printf("\n");
    }
    free(l.v);
    kc_cache_close(c);
    return failed ? EXIT_PROBLEM : 0;
}

/* ---- BUNDLE ---- */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(p) != 0 && errno != ENOENT ? -1 : 0;
}

/* Whether FILE is a bundle this may replace: a regular file (not a link, a device, …). */
static int bundle_check(const char *file, struct stat *st) {
    if (lstat(file, st) != 0) {
        fprintf(stderr, "kcache sign: '%s': %s\n", file, strerror(errno));
        return EXIT_PROBLEM;
    }
    if (S_ISREG(st->st_mode)) return 0;
    fprintf(stderr, "kcache sign: '%s' is not a regular file: a bundle is signed in place, replaced whole\n", file);
    return EXIT_USAGE;
}

static void print_bundle(const char *file, const char *key_id, const kc_bundle_report *r, int coverage, int json) {
    char shown[4200];
    if (json) {
        int f = 1;
        printf("{");
        json_kv_str(stdout, &f, "key_id", key_id);
        json_kv_str(stdout, &f, "bundle", file);
        json_kv_u64(stdout, &f, "signed", r->entries);
        json_kv_u64(stdout, &f, "skipped", 0);
        json_kv_u64(stdout, &f, "graphs", r->graphs);
        json_kv_u64(stdout, &f, "images", r->images);
        json_kv_u64(stdout, &f, "units", r->units);
        json_kv_u64(stdout, &f, "bytes", r->bytes);
        json_kv_u64(stdout, &f, "profiles", r->profiles);
        json_kv_bool(stdout, &f, "coverage", coverage);
        printf("}\n");
        return;
    }
    printf(
        "signed %s with key %s: %llu entries signed (%llu graph entries, %llu images, %llu unit records), 0 skipped; "
        "%llu bytes",
        cli_shown(file, shown, sizeof shown), key_id, (unsigned long long)r->entries, (unsigned long long)r->graphs,
        (unsigned long long)r->images, (unsigned long long)r->units, (unsigned long long)r->bytes);
    if (coverage) printf("; coverage record kept");
    if (r->profiles) printf("; %llu site profile%s kept", (unsigned long long)r->profiles, r->profiles == 1 ? "" : "s");
    printf("\n");
}

/* One bundle being signed: the scratch cache beside it, what went in, what comes out. */
typedef struct sign_job {
    const char *file;
    struct stat st;
    char tmpl[4096], out[4200];
    kc_cache *c;
    kc_bundle_coverage *cov;
    kc_bundle_report ri, ro;
    sg_list l;
} sign_job;

/* The bundle imported whole into the scratch cache, its coverage record read, every object signed; 0 or an exit code. */
static int sign_in_scratch(sign_job *j) {
    const char *file = j->file;
    if (kc_bundle_import(j->c, file, 0, &j->ri) != KC_OK) return cli_fail("cannot read the bundle");
    if (j->ri.graphs_skipped || j->ri.units_skipped) {
        fprintf(stderr,
                "kcache sign: '%s' carries %llu graph entries and %llu unit records whose image it lacks "
                "(first: %s): signing would drop them; nothing changed\n",
                file, (unsigned long long)j->ri.graphs_skipped, (unsigned long long)j->ri.units_skipped,
                j->ri.first_skipped);
        return EXIT_PROBLEM;
    }
    int crc = kc_bundle_coverage_read(file, &j->cov);
    if (crc != KC_OK && crc != KC_MISS) return cli_fail("cannot read the bundle's coverage record");
    if (kc_cache_foreach(j->c, collect, &j->l) != KC_OK) return cli_fail("cannot list the scratch cache");
    for (size_t i = 0; i < j->l.n; i++) /* every object: signing the bundle vouches for all of it */
        if (sign_one(j->c, &j->l.v[i]) != KC_OK) {
            char name[KC_KEY_HEX_LEN + KC_VARIANT_MAX + 2];
            item_name(&j->l.v[i], name, sizeof name);
            fprintf(stderr, "kcache sign: %s: ", name);
            return cli_fail("not signed");
        }
    return 0;
}

/* The signed bundle exported (its coverage record kept), checked whole, and renamed over FILE; 0 or an exit code. */
static int sign_replace(sign_job *j) {
    const char *file = j->file;
    kc_bundle_coverage *cov = j->cov;
    kc_bundle_covers cv = {0};
    if (cov)
        cv = (kc_bundle_covers){cov->manifest, (const char *const *)cov->names,   cov->keys,
                                cov->ngraphs,  (const char *const *)cov->targets, cov->ntargets};
    if (kc_bundle_export_covering(j->c, j->out, NULL, cov ? &cv : NULL, &j->ro) != KC_OK)
        return cli_fail("cannot write the signed bundle");
    if (j->ro.entries != j->ri.entries || j->ro.profiles != j->ri.profiles) {
        fprintf(stderr,
                "kcache sign: '%s' holds %llu objects and %llu profiles, the signed bundle would hold %llu and "
                "%llu (an object no graph entry refers to is not exported): nothing changed\n",
                file, (unsigned long long)j->ri.entries, (unsigned long long)j->ri.profiles,
                (unsigned long long)j->ro.entries, (unsigned long long)j->ro.profiles);
        return EXIT_PROBLEM;
    }
    if (chmod(j->out, j->st.st_mode & 07777) != 0 || rename(j->out, file) != 0) {
        fprintf(stderr, "kcache sign: cannot replace '%s': %s\n", file, strerror(errno));
        return EXIT_PROBLEM;
    }
    return 0;
}

static int sign_bundle(const char *file, const char *keyfile, const char *key_id, int json) {
    sign_job *j = calloc(1, sizeof *j);
    if (!j) return cli_fail("out of memory");
    j->file = file;
    j->ri = (kc_bundle_report)KC_BUNDLE_REPORT_INIT, j->ro = (kc_bundle_report)KC_BUNDLE_REPORT_INIT;
    int rc = bundle_check(file, &j->st);
    if (rc) return free(j), rc;
    /* The scratch cache beside FILE: the signed bundle is renamed over FILE from there. */
    const char *slash = strrchr(file, '/');
    int dn = slash ? (int)(slash - file) + 1 : 0;
    if (snprintf(j->tmpl, sizeof j->tmpl, "%.*s.kcache-sign-XXXXXX", dn, file) >= (int)sizeof j->tmpl ||
        !mkdtemp(j->tmpl)) {
        fprintf(stderr, "kcache sign: cannot make a scratch folder beside '%s': %s\n", file, strerror(errno));
        free(j);
        return EXIT_PROBLEM;
    }
    snprintf(j->out, sizeof j->out, "%s/signed.kcb", j->tmpl);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = j->tmpl;
    o.flags = KC_OPEN_NO_ENV; /* the caller's keyring, MAC key, remote and size limit are not the scratch cache's */
    o.max_size = KC_BUNDLE_MAX_BYTES * 2;
    o.signing_key_file = keyfile;
    if (kc_cache_open(&j->c, &o) != KC_OK) rc = cli_fail("cannot open a scratch cache");
    if (!rc) rc = sign_in_scratch(j);
    if (!rc) rc = sign_replace(j);
    if (!rc) print_bundle(file, key_id, &j->ro, j->cov != NULL, json);
    free(j->l.v);
    kc_bundle_coverage_free(j->cov);
    kc_cache_close(j->c);
    if (nftw(j->tmpl, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "kcache sign: warning: could not remove the scratch folder '%s'\n", j->tmpl);
    free(j);
    return rc;
}

static int cmd_sign(const cli_settings *cs, int argc, char **argv) {
    cli_args o;
    cli_parse(&cli_cmd_sign, argc, argv, 2, &o);
    if (o.npos > 1) return cli_usage_error(&cli_cmd_sign, "one bundle at a time", o.pos[1]);
    const char *keyfile = cli_arg(&o, "key"), *bundle = o.pos[0];
    int local = cli_flag(&o, "local"), json = cli_flag(&o, "json");
    if (!keyfile || !*keyfile) return cli_usage_error(&cli_cmd_sign, "name the private key: --key FILE", NULL);
    if (!!bundle == local) return cli_usage_error(&cli_cmd_sign, "name a BUNDLE or --local (one of them)", NULL);
    kc_signer *s = NULL;
    if (kc_signer_load(&s, keyfile) != KC_OK) return cli_fail("cannot sign");
    char key_id[2 * KC_SIGN_KEY_ID_LEN + 1];
    snprintf(key_id, sizeof key_id, "%s", kc_signer_key_id(s));
    kc_signer_free(s);
    return local ? sign_local(cs, keyfile, key_id, json) : sign_bundle(bundle, keyfile, key_id, json);
}
