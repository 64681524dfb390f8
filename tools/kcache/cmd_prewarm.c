/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_prewarm.c — `kcache prewarm MANIFEST`: compile every graph of a manifest for every
 * target on N threads (kc_prewarm), with a progress bar on a terminal or one line per graph
 * otherwise, and --remote URL to publish every variant to the fleet's remote.
 *
 * The one idea: the library does the work and calls back as each variant ends; this file
 * only draws progress and the summary (or --json), compile units included (what NVRTC
 * compiled, what was found stored).  `--remote URL` replaces the global
 * --remote in a copy of the settings (never the environment), so it beats both --remote and
 * KCACHE_REMOTE.  Only main.c's command table refers to this file; it opens the cache through
 * cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

static int cmd_prewarm(const cli_settings *cs, int argc, char **argv);

static const cli_opt prewarm_opts[] = {
    {"arch", 0, "LIST", "the targets (sm_80,sm_90,compute_80), instead of the manifest's \"archs\""},
    {"jobs", 'j', "N", "compile on N threads (1 to 1024; default: the number of cores)"},
    {"remote", 0, "URL", "publish every variant to this remote, and wait until it is sent"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_prewarm = {
    "prewarm",
    "kcache prewarm MANIFEST [--arch LIST] [-j N] [--remote URL] [--json]",
    "Compile every graph of MANIFEST for every target (the manifest's \"archs\", or --arch\n"
    "sm_80,sm_90,compute_80) on N threads (default: the number of cores), storing each\n"
    "variant; variants already present are hits.  No GPU needed.  Concurrent prewarms (and\n"
    "kc_graph_get) compile each variant once.  Exit 0: all succeeded; 1: some failed (with\n"
    "NVRTC's log); 2: bad usage or manifest.  --json prints {graphs, variants, compiled,\n"
    "hits, failed, seconds, units, units_compiled, unit_hits, compile_ms, results}.  A compile\n"
    "unit (one NVRTC program) is compiled once per target: a graph whose units are stored\n"
    "(another graph's, or another shape's) compiles nothing; units_compiled counts what NVRTC\n"
    "did, unit_hits what was found stored.  --remote URL publishes every variant to the fleet's\n"
    "remote (compiled ones, and local hits the remote lacks) and waits until it is sent; an object\n"
    "neither compiled here nor verified now under a trusted key is not published: counted\n"
    "(publish_refused) and named (--json: skipped, each with its name and reason).",
    cmd_prewarm,
    prewarm_opts,
    CLI_OPERANDS_FILES};

typedef struct pw_view {
    const kc_manifest *m;
    int tty, json;
    size_t *graph_left; /* variants of each graph not yet done */
} pw_view;

static void pw_bar(const kc_prewarm_report *r) {
    double el = r->seconds;
    double eta = r->done ? el / (double)r->done * (double)(r->variants - r->done) : 0;
    int width = 30, fill = r->variants ? (int)((size_t)width * r->done / r->variants) : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r[%s] %zu/%zu  compiled %zu  hit %zu  failed %zu  %.1fs  ETA %.1fs ", bar, r->done, r->variants,
            r->compiled + r->bypassed, r->hits, r->failed, el, eta);
    fflush(stderr);
}

static const char *pw_result_word(const kc_prewarm_result *x) {
    return x->status                          ? "failed"
           : x->info.source == KC_FROM_DISK   ? "hit"
           : x->info.source == KC_FROM_REMOTE ? "remote_hit"
           : x->info.source == KC_FROM_BYPASS ? "bypassed"
                                              : "compiled";
}

/* Progress: a bar on a terminal, else one line per graph once all its targets are done. */
static void pw_progress(const kc_prewarm_report *r, size_t i, void *ctx) {
    pw_view *v = ctx;
    const kc_prewarm_result *res = &r->results[i];
    if (v->tty && !v->json) {
        if (res->status) { /* a spec's name and its error, escaped as every name printed (cli_shown) */
            fputs("\r\033[K", stderr);
            cli_put_shown(stderr, res->name, 0);
            fprintf(stderr, " %s failed:\n", kc_manifest_arch(v->m, res->arch));
            cli_put_shown(stderr, res->error, 1);
            fputc('\n', stderr);
        }
        pw_bar(r);
        return;
    }
    if (--v->graph_left[res->graph] != 0) return;
    FILE *o = v->json ? stderr : stdout;
    char nm[4 * 256 + 1];
    fprintf(o, "%-14s", cli_shown(res->name, nm, sizeof nm));
    size_t na = kc_manifest_arch_count(v->m), first = res->graph * na;
    for (size_t k = first; k < first + na; k++) {
        const kc_prewarm_result *x = &r->results[k];
        const char *arch = kc_manifest_arch(v->m, x->arch);
        if (x->status || x->info.source != KC_FROM_COMPILE) fprintf(o, "  %s %s", arch, pw_result_word(x));
        else if (x->info.units_compiled > 0)
            fprintf(o, "  %s compiled %.0f ms (%d of %d units)", arch, x->info.compile_ms, x->info.units_compiled,
                    x->info.units);
        else
            fprintf(o, "  %s built from %d stored unit%s (nothing compiled)", arch, x->info.units,
                    x->info.units == 1 ? "" : "s");
    }
    fprintf(o, "\n");
    for (size_t k = first; k < first + na; k++)
        if (r->results[k].status)
            fprintf(stderr, "%s %s: ", nm, kc_manifest_arch(v->m, r->results[k].arch)),
                cli_put_shown(stderr, r->results[k].error, 1), fputc('\n', stderr);
}

/* What publishing refused ([Note: provenance] in src/store/local.c): object names and reasons. */
typedef struct pw_skip {
    char name[KC_KEY_HEX_LEN + KC_VARIANT_MAX + 2];
    char *why;
} pw_skip;

typedef struct pw_skips {
    pw_skip *v;
    size_t n, cap;
} pw_skips;

static void skip_add(pw_skips *s, const kc_key *key, const char *variant, const char *why) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        pw_skip *v = realloc(s->v, cap * sizeof *v);
        if (!v) return; /* counted all the same (publish_refused); only its name is lost */
        s->v = v, s->cap = cap;
    }
    pw_skip *k = &s->v[s->n];
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(key, hex);
    snprintf(k->name, sizeof k->name, "%s.%s", hex, variant);
    size_t nl = strlen(k->name); /* the library's message names the object first: said once */
    if (strncmp(why, k->name, nl) == 0 && strncmp(why + nl, ": ", 2) == 0) why += nl + 2;
    if ((k->why = strdup(why)) != NULL) s->n++;
}

/* Offer a local hit to the remote as kc_prewarm's publish would (its images first, then the graph
 * entry: [Note: two levels]), naming what is refused: an object neither compiled here nor verified
 * now under a trusted key (KC_EUNTRUSTED, counted publish_refused by the library), and a graph entry
 * held back because one of its images was.  Other failures are the remote's, counted there. */
static void publish_hit(kc_cache *c, const kc_key *key, const char *arch, pw_skips *sk) {
    kc_entry *e;
    if (kc_cache_peek(c, key, arch, &e) != KC_OK) return;
    kc_image_ref *refs = NULL;
    size_t n = 0;
    int ok = kc_entry_images(e, &refs, &n) == KC_OK;
    char held[256] = "";
    for (size_t i = 0; ok && i < n; i++) {
        int rc = kc_cache_publish(c, &refs[i].id, KC_VARIANT_IMAGE);
        if (rc == KC_EUNTRUSTED) {
            skip_add(sk, &refs[i].id, KC_VARIANT_IMAGE, kc_error_last()->message);
            char hex[KC_KEY_HEX_LEN + 1];
            kc_key_to_hex(&refs[i].id, hex);
            snprintf(held, sizeof held, "not published: its image %s.%s was refused", hex, KC_VARIANT_IMAGE);
        }
        ok = rc >= 0;
    }
    free(refs);
    kc_entry_free(e);
    if (held[0]) skip_add(sk, key, arch, held);
    else if (ok && kc_cache_publish(c, key, arch) == KC_EUNTRUSTED) skip_add(sk, key, arch, kc_error_last()->message);
}

/* What publishing to the remote did (when it did): counted from the statistics, and what it skipped. */
typedef struct pw_pub {
    int on; /* a writable remote: local hits published */
    kc_remote_state rs;
    uint64_t published, dropped, refused;
    pw_skips sk;
} pw_pub;

static void pw_print_json(const kc_prewarm_report *r, const kc_manifest *m, const pw_pub *p) {
    const kc_remote_state *rs = &p->rs;
    const pw_skips *sk = &p->sk;
    int publish = p->on;
    uint64_t published = p->published, dropped = p->dropped, refused = p->refused;
    int first = 1;
    printf("{");
    json_kv_u64(stdout, &first, "graphs", r->graphs);
    json_kv_u64(stdout, &first, "variants", r->variants);
    json_kv_u64(stdout, &first, "compiled", r->compiled + r->bypassed);
    json_kv_u64(stdout, &first, "hits", r->hits);
    json_kv_u64(stdout, &first, "failed", r->failed);
    json_kv_f64(stdout, &first, "seconds", r->seconds);
    json_kv_u64(stdout, &first, "units", r->units);
    json_kv_u64(stdout, &first, "units_compiled", r->units_compiled);
    json_kv_u64(stdout, &first, "unit_hits", r->units - r->units_compiled);
    json_kv_f64(stdout, &first, "compile_ms", r->compile_ms);
    if (publish) {
        json_kv_str(stdout, &first, "remote", rs->url);
        json_kv_u64(stdout, &first, "published", published);
        json_kv_u64(stdout, &first, "publish_failed", dropped);
        json_kv_u64(stdout, &first, "publish_refused", refused);
        json_key(stdout, &first, "skipped");
        printf("[");
        for (size_t i = 0; i < sk->n; i++) {
            int f = 1;
            printf("%s{", i ? ", " : "");
            json_kv_str(stdout, &f, "name", sk->v[i].name);
            json_kv_str(stdout, &f, "reason", sk->v[i].why);
            printf("}");
        }
        printf("]");
    }
    printf(", \"results\": [");
    for (size_t k = 0; k < r->variants; k++) {
        const kc_prewarm_result *x = &r->results[k];
        int f2 = 1;
        printf("%s{", k ? ", " : "");
        json_kv_str(stdout, &f2, "graph", x->name);
        json_kv_str(stdout, &f2, "arch", kc_manifest_arch(m, x->arch));
        json_kv_str(stdout, &f2, "key", x->info.key);
        json_kv_str(stdout, &f2, "result", pw_result_word(x));
        json_kv_f64(stdout, &f2, "compile_ms", x->info.compile_ms);
        json_kv_u64(stdout, &f2, "units", (uint64_t)(x->info.units > 0 ? x->info.units : 0));
        json_kv_u64(stdout, &f2, "units_compiled", (uint64_t)(x->info.units_compiled > 0 ? x->info.units_compiled : 0));
        if (x->status) json_kv_str(stdout, &f2, "status", kc_status_str(x->status));
        if (x->status) json_kv_str(stdout, &f2, "error", x->error);
        printf("}");
    }
    printf("]}\n");
}

/* The command's arguments. */
typedef struct pw_args {
    cli_settings mine; /* --remote URL replaces the global one */
    const char *arch, *path;
    int json, threads;
} pw_args;

/* Parse the arguments: -1 to go on, else the exit code. */
static int pw_parse(int argc, char **argv, pw_args *a) {
    const cli_cmd *c0 = &cli_cmd_prewarm;
    cli_args o;
    cli_parse(c0, argc, argv, 1, &o);
    a->path = o.pos[0], a->arch = cli_arg(&o, "arch"), a->json = cli_flag(&o, "json");
    if (cli_arg(&o, "remote")) a->mine.remote = cli_arg(&o, "remote"); /* beats --remote and KCACHE_REMOTE */
    const char *j = cli_arg(&o, "jobs");
    if (j) {
        char *end;
        long v = strtol(j, &end, 10);
        if (!*j || *end || v < 1 || v > 1024) return cli_usage_error(c0, "-j needs a number from 1 to 1024", j);
        a->threads = (int)v;
    }
    if (!a->path) return cli_usage_error(c0, "a MANIFEST is required", NULL);
    return -1;
}

/* Publish the local hits the remote may lack, wait for the remote writes, and count them. */
static void pw_publish(kc_cache *c, const kc_prewarm_report *r, const kc_manifest *m, const kc_stats *s0, pw_pub *p) {
    for (size_t k = 0; k < r->variants; k++) {
        const kc_prewarm_result *x = &r->results[k];
        kc_key key;
        if (x->status == KC_OK && x->info.source == KC_FROM_DISK && kc_key_from_hex(&key, x->info.key) == KC_OK)
            publish_hit(c, &key, kc_manifest_arch(m, x->arch), &p->sk);
    }
    kc_stats s1;
    kc_cache_remote_flush(c);
    kc_cache_stats(c, &s1);
    p->published = s1.v[KC_STAT_REMOTE_PUTS] - s0->v[KC_STAT_REMOTE_PUTS];
    p->dropped = s1.v[KC_STAT_REMOTE_DROPPED] - s0->v[KC_STAT_REMOTE_DROPPED] + s1.v[KC_STAT_REMOTE_ERRORS] -
                 s0->v[KC_STAT_REMOTE_ERRORS] + s1.v[KC_STAT_REMOTE_TIMEOUTS] - s0->v[KC_STAT_REMOTE_TIMEOUTS];
    p->refused = s1.v[KC_STAT_PUBLISH_REFUSED] - s0->v[KC_STAT_PUBLISH_REFUSED];
}

static void pw_print_text(const kc_prewarm_report *r, const pw_pub *p) {
    printf("prewarm: %zu graphs, %zu variants: %zu compiled, %zu hits, %zu failed in %.1f s\n", r->graphs, r->variants,
           r->compiled + r->bypassed, r->hits, r->failed, r->seconds);
    if (r->units)
        printf("compile units: %zu compiled (%.0f ms of NVRTC), %zu found stored\n", r->units_compiled, r->compile_ms,
               r->units - r->units_compiled);
    if (p->on)
        printf("remote %s: %llu published, %llu not (see kcache stats), %llu refused (neither compiled here nor "
               "verified under a trusted key)\n",
               p->rs.url, (unsigned long long)p->published, (unsigned long long)p->dropped,
               (unsigned long long)p->refused);
}

/* Run the prewarm on the open cache and report; the exit code. */
static int pw_run(kc_cache *c, kc_manifest *m, const pw_args *a) {
    pw_pub p = {0};
    p.on = kc_cache_remote_state(c, &p.rs) == KC_OK && !cli_setting_on(kc_cache_config(c), KC_CONFIG_remote_readonly);
    kc_stats s0;
    kc_cache_stats(c, &s0);
    size_t ng = kc_manifest_graph_count(m);
    pw_view v = {m, isatty(2), a->json, calloc(ng, sizeof(size_t))};
    for (size_t g = 0; g < ng; g++) v.graph_left[g] = kc_manifest_arch_count(m);
    kc_prewarm_options po = KC_PREWARM_OPTIONS_INIT;
    po.jobs = a->threads;
    po.publish = 0; /* the local hits are published below, each refusal named */
    po.progress = pw_progress;
    po.ctx = &v;
    kc_prewarm_report *r = NULL;
    if (v.tty && !a->json) fprintf(stderr, "[%30s] 0/%zu ", "", ng * kc_manifest_arch_count(m));
    int rc = kc_prewarm(c, m, &po, &r);
    if (!r) { /* nothing ran: a spec could not be read or parsed */
        fprintf(stderr, "%skcache prewarm: %s: %s\n", v.tty && !a->json ? "\n" : "", a->path, kc_error_last()->message);
        free(v.graph_left);
        return cli_json_failed(a->json, rc == KC_EINVAL ? EXIT_USAGE : EXIT_PROBLEM, NULL);
    }
    if (p.on) pw_publish(c, r, m, &s0, &p);
    char shown[512];
    for (size_t i = 0; i < p.sk.n; i++)
        fprintf(stderr, "kcache prewarm: %s: %s\n", p.sk.v[i].name, cli_shown(p.sk.v[i].why, shown, sizeof shown));
    if (v.tty && !a->json) fprintf(stderr, "\n");
    a->json ? pw_print_json(r, m, &p) : pw_print_text(r, &p);
    for (size_t i = 0; i < p.sk.n; i++) free(p.sk.v[i].why);
    free(p.sk.v);
    size_t failed = r->failed;
    kc_prewarm_report_free(r);
    free(v.graph_left);
    return failed ? EXIT_PROBLEM : 0;
}

static int cmd_prewarm(const cli_settings *cs, int argc, char **argv) {
    pw_args a = {*cs, NULL, NULL, 0, 0};
    int rc = pw_parse(argc, argv, &a);
    if (rc >= 0) return rc;
    kc_manifest *m;
    if ((rc = cli_manifest_open("prewarm", a.path, a.arch, &m))) return cli_json_failed(a.json, rc, NULL);
    if (kc_manifest_arch_count(m) == 0) {
        kc_manifest_free(m);
        fprintf(stderr, "kcache prewarm: %s has no \"archs\"; give --arch\n", a.path);
        return cli_json_failed(a.json, EXIT_USAGE, "the manifest has no \"archs\"; give --arch");
    }
    kc_cache *c = NULL;
    if (cli_open_cache(&a.mine, &c) || (rc = cli_manifest_targets_check(c, "prewarm", m, a.path, a.arch))) {
        rc = cli_json_failed(a.json, rc ? rc : EXIT_PROBLEM, NULL); /* before the close: its error */
        kc_cache_close(c);
        kc_manifest_free(m);
        return rc;
    }
    rc = pw_run(c, m, &a);
    kc_cache_close(c);
    kc_manifest_free(m);
    return rc;
}
