/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_purge.c — `kcache purge`: remove the objects chosen by key, unit, toolchain, producer key or
 * age (AND) from the local cache and every writable remote; --dry-run lists them and removes nothing.
 *
 * The one idea: the work is the library's (kc_cache_purge, kcache/cache.h); this file parses the
 * selectors and reports, per tier, what was chosen and removed, the read-only remotes it skipped,
 * and the tiers that failed (exit 1).  docs/incident.md is the procedure it serves.
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_purge(const cli_settings *cs, int argc, char **argv);

static const cli_opt purge_opts[] = {
    {"key", 0, "HEX", "objects whose key starts with HEX (8 to 32 hex digits): every variant"},
    {"unit", 0, "HEX", "unit records of key HEX..., their images and the graph entries using them"},
    {"toolchain", 0, "ID", "objects recorded as built by toolchain ID (as 'kcache toolchain' names it)"},
    {"producer", 0, "KEYID", "objects signed by ed25519:KEYID, or sealed by mac:KEYID (this cache's MAC key)"},
    {"older-than", 0, "DURATION", "objects created more than DURATION ago (30s, 90m, 12h, 7d, 2w)"},
    {"corrupt", 0, NULL, "also remove objects that fail validation (they are always counted)"},
    {"local", 0, NULL, "only the local cache"},
    {"remote", 0, NULL, "only the remotes (every writable one of KCACHE_REMOTE)"},
    {"dry-run", 'n', NULL, "list what would be removed; remove nothing"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_purge = {
    "purge",
    "kcache purge [--key HEX] [--unit HEX] [--toolchain ID] [--producer KEYID] [--older-than DURATION] "
    "[--corrupt] [--local | --remote] [--dry-run] [--json]",
    "Remove the objects the selectors choose (all given must match) from the local cache and\n"
    "every writable remote tier; read-only remotes are skipped and named (purge them where\n"
    "they are written).  --key HEX: graph entries, images or unit records whose key starts\n"
    "with HEX (at least 8 hex digits).  --unit HEX: the unit records of that compile unit, the\n"
    "images they name and every graph entry that refers to one.  --toolchain ID and\n"
    "--older-than DURATION read each object's recorded toolchain and creation time;\n"
    "--producer KEYID reads its signature trailer (ed25519:KEYID, or the 16 hex alone: the key\n"
    "named even when no keyring trusts it any more) or checks its MAC (mac:KEYID, this cache's\n"
    "MAC key).  Objects whose bytes fail validation are counted as corrupt, and removed\n"
    "with --corrupt.  Images only a removed graph entry used are left to 'kcache gc'.\n"
    "Exits 1 when a tier could not be walked or an object not removed.  The incident\n"
    "procedure (stop, purge, revoke, prove clean) is docs/incident.md.",
    cmd_purge,
    purge_opts,
    CLI_OPERANDS_NONE};

typedef struct obj {
    size_t tier;
    char name[80];
    uint64_t bytes;
    int corrupt, removed;
} obj;

typedef struct seen {
    obj *v;
    size_t n, cap;
    int json, dry_run;
    const kc_purge_report *r; /* NULL while the purge runs */
} seen;

static void on_object(size_t tier, const char *name, uint64_t bytes, int corrupt, int removed, void *ctx) {
    seen *s = ctx;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        obj *v = realloc(s->v, cap * sizeof *v);
        if (!v) return; /* the list is cut; the counts in the summary stay exact */
        s->v = v, s->cap = cap;
    }
    obj *o = &s->v[s->n++];
    o->tier = tier, o->bytes = bytes, o->corrupt = corrupt, o->removed = removed;
    snprintf(o->name, sizeof o->name, "%s", name);
}

static void print_json(const seen *s, const kc_purge_report *r) {
    int first = 1;
    printf("{");
    json_kv_bool(stdout, &first, "dry_run", s->dry_run);
    json_kv_u64(stdout, &first, "matched", r->matched);
    json_kv_u64(stdout, &first, "removed", r->removed);
    json_kv_u64(stdout, &first, "bytes", r->bytes);
    json_kv_u64(stdout, &first, "corrupt", r->corrupt);
    json_kv_u64(stdout, &first, "failed", r->failed);
    json_key(stdout, &first, "tiers");
    printf("[");
    for (size_t i = 0; i < r->ntiers; i++) {
        const kc_purge_tier *t = &r->tier[i];
        int f = 1;
        printf("%s{", i ? "," : "");
        json_kv_str(stdout, &f, "url", t->url);
        json_kv_bool(stdout, &f, "remote", t->remote);
        json_kv_bool(stdout, &f, "readonly", t->readonly);
        json_kv_bool(stdout, &f, "skipped", t->skipped);
        json_kv_bool(stdout, &f, "failed", t->failed);
        if (t->failed) json_kv_str(stdout, &f, "error", t->error);
        json_kv_u64(stdout, &f, "examined", t->examined);
        json_kv_u64(stdout, &f, "matched", t->matched);
        json_kv_u64(stdout, &f, "removed", t->removed);
        json_kv_u64(stdout, &f, "bytes", t->bytes);
        json_kv_u64(stdout, &f, "corrupt", t->corrupt);
        printf("}");
    }
    printf("]");
    json_key(stdout, &first, "objects");
    printf("[");
    for (size_t i = 0; i < s->n; i++) {
        const obj *o = &s->v[i];
        int f = 1;
        printf("%s{", i ? "," : "");
        json_kv_str(stdout, &f, "tier", o->tier < r->ntiers ? r->tier[o->tier].url : "?");
        json_kv_str(stdout, &f, "name", o->name);
        json_kv_u64(stdout, &f, "bytes", o->bytes);
        json_kv_bool(stdout, &f, "corrupt", o->corrupt);
        json_kv_bool(stdout, &f, "removed", o->removed);
        printf("}");
    }
    printf("]}\n");
}

static void print_text(const seen *s, const kc_purge_report *r) {
    char buf[512], size[32];
    for (size_t i = 0; i < s->n; i++) {
        const obj *o = &s->v[i];
        cli_human_size(o->bytes, size, sizeof size);
        printf("%s %s %s (%s)%s\n",
               s->dry_run   ? "would remove"
               : o->removed ? "removed"
                            : "NOT removed",
               cli_shown(o->tier < r->ntiers ? r->tier[o->tier].url : "?", buf, sizeof buf), o->name, size,
               o->corrupt ? " corrupt" : "");
    }
    for (size_t i = 0; i < r->ntiers; i++) {
        const kc_purge_tier *t = &r->tier[i];
        cli_shown(t->url, buf, sizeof buf);
        if (t->skipped && t->readonly) printf("%s: skipped: read-only (purge it where it is written)\n", buf);
        else if (t->skipped) printf("%s: skipped (--local/--remote)\n", buf);
        else {
            cli_human_size(t->bytes, size, sizeof size);
            printf("%s: %llu of %llu objects %s (%s), %llu corrupt\n", buf, (unsigned long long)t->matched,
                   (unsigned long long)t->examined, s->dry_run ? "would be removed" : "chosen", size,
                   (unsigned long long)t->corrupt);
            if (!s->dry_run) printf("%s: %llu removed\n", buf, (unsigned long long)t->removed);
        }
        if (t->failed) printf("%s: FAILED: %s\n", buf, cli_shown(t->error, buf, sizeof buf));
    }
    printf("%s %llu objects in all; images only they used are left to 'kcache gc'\n",
           s->dry_run ? "would remove" : "removed", (unsigned long long)(s->dry_run ? r->matched : r->removed));
}

static int cmd_purge(const cli_settings *cs, int argc, char **argv) {
    cli_args a;
    cli_parse(&cli_cmd_purge, argc, argv, 0, &a);
    kc_purge_options po = KC_PURGE_OPTIONS_INIT;
    seen s = {0};
    s.json = cli_flag(&a, "json"), s.dry_run = po.dry_run = cli_flag(&a, "dry-run");
    po.key = cli_arg(&a, "key"), po.unit = cli_arg(&a, "unit");
    po.toolchain = cli_arg(&a, "toolchain"), po.producer = cli_arg(&a, "producer");
    po.corrupt = cli_flag(&a, "corrupt");
    const char *age = cli_arg(&a, "older-than");
    if (age && (cli_parse_duration(age, &po.older_than_s) != 0))
        return cli_usage_error(&cli_cmd_purge,
                               "--older-than needs a DURATION: a whole number and a unit, s, m, h, d or w "
                               "(30s, 90m, 12h, 7d, 2w)",
                               age);
    if (cli_flag(&a, "local") && cli_flag(&a, "remote"))
        return cli_usage_error(&cli_cmd_purge, "--local and --remote exclude each other (neither: both)", NULL);
    po.where = cli_flag(&a, "local") ? KC_PURGE_LOCAL : cli_flag(&a, "remote") ? KC_PURGE_REMOTE : 0;
    po.on_object = on_object, po.ctx = &s;
    kc_cache *c;
    if (cli_open_cache(cs, &c)) return EXIT_PROBLEM;
    kc_purge_report r = KC_PURGE_REPORT_INIT;
    int rc = kc_cache_purge(c, &po, &r);
    kc_cache_close(c);
    if (rc == KC_EINVAL) {
        free(s.v);
        return cli_usage_error(&cli_cmd_purge, kc_error_last()->message, NULL);
    }
    if (rc != KC_OK && rc != KC_EIO) {
        free(s.v);
        return cli_fail("purge failed");
    }
    if (s.json) print_json(&s, &r);
    else print_text(&s, &r);
    free(s.v);
    if (rc == KC_EIO) fprintf(stderr, "kcache purge: %s\n", kc_error_last()->message);
    return rc == KC_OK ? 0 : EXIT_PROBLEM;
}
