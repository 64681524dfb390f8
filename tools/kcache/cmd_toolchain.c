/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_toolchain.c — `kcache toolchain [--json] [--pin ID | --unpin]`: this host's NVRTC by its
 * identity (build-id, file, version), the toolchain pinned and the ones the cache recorded,
 * and the one its lookups' keys use — or why there is none.
 *
 * The one idea: every line is the library's answer (kc_toolchain_local, kc_cache_record_*,
 * kc_cache_toolchain); the command adds nothing but the pin it is asked to set.  It loads no
 * NVRTC (the identity is read from the library's file) unless asked for the targets (--targets,
 * --json: kc_cache_targets asks NVRTC which it compiles, [Note: target check] in kcache/target.h).
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_toolchain(const cli_settings *cs, int argc, char **argv);

static const cli_opt toolchain_opts[] = {
    {"json", 0, NULL, "print one JSON object"},
    {"pin", 0, "ID", "keys in this cache use toolchain ID on every host"},
    {"unpin", 0, NULL, "remove the cache's pin"},
    {"targets", 0, NULL, "list the targets the toolchain the keys use compiles (NVRTC's list, else kcache's table)"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_toolchain = {
    "toolchain",
    "kcache toolchain [--json] [--targets] [--pin ID | --unpin]",
    "Print this host's NVRTC as keys know it: its identity (the GNU build-id of its library,\n"
    "or a hash of the file's bytes when it has none), its file and the version its name\n"
    "carries — read from the file, without loading it.  Then the toolchain pinned\n"
    "(KCACHE_TOOLCHAIN, or the cache's own pin: `toolchain` in its kcache.conf), the toolchains whose entries the cache\n"
    "recorded, and the one its lookups' keys use.  A host without NVRTC uses the recorded one\n"
    "when there is exactly one; with several, pin one.\n"
    "  --pin ID   keys in this cache use toolchain ID (as printed here) on every host,\n"
    "             whatever its NVRTC; a host whose NVRTC is not ID then never compiles\n"
    "  --unpin    remove the cache's pin\n"
    "  --targets  list the targets (sm_XY, sm_XYa, sm_XYf, compute_XY, ...) the toolchain the\n"
    "             keys use compiles, one a line after a '#' line saying where the list is from:\n"
    "             this host's NVRTC (it is loaded to ask), else kcache's own table.  Every\n"
    "             --arch and manifest target is checked against it.  --json has it as \"targets\"",
    cmd_toolchain,
    toolchain_opts,
    CLI_OPERANDS_NONE};

typedef struct rec_ctx {
    int json, n;
} rec_ctx;

/* A recorded toolkit headers digest ("toolkit_headers.<digest>"). */
static int print_name(const char *name, const char *value, void *ctx) {
    (void)value;
    rec_ctx *r = ctx;
    const char *digest = name + strlen("toolkit_headers.");
    if (r->json) printf("%s\"%s\"", r->n ? ", " : "", digest);
    else printf("%-10s%s  (toolkit headers of stored entries)\n", r->n ? "" : "recorded", digest);
    r->n++;
    return 0;
}

static int print_recorded(const char *name, const char *value, void *ctx) {
    rec_ctx *r = ctx;
    const char *id = name + strlen("toolchain.");
    if (kc_toolchain_id_check(id) != KC_OK) return 0;
    if (r->json) {
        int first = 1;
        printf("%s{", r->n ? ", " : "");
        json_kv_str(stdout, &first, "id", id);
        json_kv_str(stdout, &first, "toolchain", value);
        printf("}");
    } else {
        size_t pre = strlen("nvrtc ") + strlen(id) + 1; /* "nvrtc <id> (<path>)": the id is printed already */
        printf("%-10s%s  %s\n", r->n ? "" : "recorded", id,
               strlen(value) > pre && strncmp(value + 6, id, strlen(id)) == 0 ? value + pre : value);
    }
    r->n++;
    return 0;
}

/* What the command prints, gathered first. */
typedef struct tc_view {
    kc_cache *c;
    kc_toolchain t;
    int lrc, crc;
    char lwhy[1400];
    char env[KC_TOOLCHAIN_ID_MAX + 64];  /* the pin KCACHE_TOOLCHAIN (or the options) set, or "" */
    char rpin[KC_TOOLCHAIN_ID_MAX + 64]; /* the cache's pin (kcache.conf, the system file, an older record), or "" */
    kc_toolchain_choice ch;
    char cwhy[2000];
    char headers[33], hwhy[600];
    int want_targets;       /* --targets or --json: ask (loads NVRTC) */
    kc_target_list targets; /* kc_cache_targets */
} tc_view;

static void gather(kc_cache *c, tc_view *v) {
    v->c = c;
    v->lrc = kc_toolchain_local(&v->t);
    snprintf(v->lwhy, sizeof v->lwhy, "%s", v->lrc ? kc_error_last()->message : "");
    kc_config_origin o;
    char val[KC_TOOLCHAIN_ID_MAX + 64];
    kc_config_get(kc_cache_config(c), KC_CONFIG_toolchain, val, sizeof val, &o, NULL, 0);
    snprintf(v->env, sizeof v->env, "%s", o >= KC_ORIGIN_ENVIRONMENT ? val : "");
    if (o == KC_ORIGIN_DIR_FILE || o == KC_ORIGIN_SYSTEM_FILE) snprintf(v->rpin, sizeof v->rpin, "%s", val);
    else if (kc_cache_record_get(c, "pin", v->rpin, sizeof v->rpin) != KC_OK) v->rpin[0] = '\0';
    v->crc = kc_cache_toolchain(c, &v->ch);
    snprintf(v->cwhy, sizeof v->cwhy, "%s", v->crc ? kc_error_last()->message : "");
    v->headers[0] = v->hwhy[0] = '\0';
    if (kc_toolkit_headers_id(v->headers) != KC_OK) snprintf(v->hwhy, sizeof v->hwhy, "%s", kc_error_last()->message);
    kc_target_list l = KC_TARGET_LIST_INIT;
    v->targets = l;
    if (v->want_targets) kc_cache_targets(c, &v->targets);
}

/* "targets": where the list is from, the compute capabilities and every name. */
static void print_targets_json(const kc_target_list *l) {
    char nv[32] = "";
    if (l->from == KC_TARGETS_NVRTC) snprintf(nv, sizeof nv, "%d.%d", l->nvrtc_major, l->nvrtc_minor);
    printf(", \"targets\": {\"from\": \"%s\", \"nvrtc\": ", l->from == KC_TARGETS_NVRTC ? "nvrtc" : "table");
    nv[0] ? json_str(stdout, nv) : (void)printf("null");
    printf(", \"archs\": [");
    for (size_t i = 0; i < l->n; i++) printf("%s%d", i ? ", " : "", l->cc[i]);
    char names[6 * KC_TARGET_LIST_MAX][16];
    size_t n = kc_target_list_names(l, names, 6 * KC_TARGET_LIST_MAX);
    printf("], \"names\": [");
    for (size_t i = 0; i < n && i < 6 * KC_TARGET_LIST_MAX; i++)
        printf("%s", i ? ", " : ""), json_str(stdout, names[i]);
    printf("]}");
}

/* --targets: a '#' line saying where the list is from, then one target a line. */
static void print_targets_text(const tc_view *v) {
    const kc_target_list *l = &v->targets;
    if (l->from == KC_TARGETS_NVRTC)
        printf("# NVRTC %d.%d (this host's; the keys use %s): the targets it compiles\n", l->nvrtc_major,
               l->nvrtc_minor, v->crc ? "no toolchain" : v->ch.id);
    else
        printf("# kcache's own table (%s): every target a CUDA toolkit has made\n",
               v->crc ? "no NVRTC here" : "the keys' toolchain is not this host's NVRTC");
    char names[6 * KC_TARGET_LIST_MAX][16];
    size_t n = kc_target_list_names(l, names, 6 * KC_TARGET_LIST_MAX);
    for (size_t i = 0; i < n && i < 6 * KC_TARGET_LIST_MAX; i++) printf("%s\n", names[i]);
}

static const char *from_name(kc_toolchain_from f) {
    static const char *const names[] = {[KC_TOOLCHAIN_PIN_ENV] = "KCACHE_TOOLCHAIN",
                                        [KC_TOOLCHAIN_PIN] = "pin",
                                        [KC_TOOLCHAIN_LOCAL] = "local",
                                        [KC_TOOLCHAIN_RECORDED] = "recorded"};
    return (unsigned)f < sizeof names / sizeof names[0] && names[f] ? names[f] : "recorded";
}

static void print_json(const tc_view *v) {
    int first = 1;
    printf("{");
    json_kv_str(stdout, &first, "dir", kc_cache_dir(v->c));
    printf(", \"local\": ");
    if (v->lrc) {
        printf("null");
    } else {
        int f = 1;
        printf("{");
        json_kv_str(stdout, &f, "id", v->t.id);
        json_kv_str(stdout, &f, "build_id", strncmp(v->t.id, "build-id:", 9) == 0 ? v->t.id + 9 : "");
        json_kv_str(stdout, &f, "path", v->t.path);
        json_kv_str(stdout, &f, "version", v->t.version);
        printf("}");
    }
    printf(", \"local_error\": ");
    v->lrc ? json_str(stdout, v->lwhy) : (void)printf("null");
    printf(", \"pinned\": ");
    if (v->env[0] || v->rpin[0]) {
        int f = 1;
        printf("{");
        json_kv_str(stdout, &f, "id", v->env[0] ? v->env : v->rpin);
        json_kv_str(stdout, &f, "by", v->env[0] ? "KCACHE_TOOLCHAIN" : "record");
        printf("}");
    } else {
        printf("null");
    }
    rec_ctx r = {1, 0};
    printf(", \"recorded\": [");
    kc_cache_record_foreach(v->c, "toolchain.", print_recorded, &r);
    printf("], \"keys_use\": ");
    if (v->crc) {
        printf("null");
    } else {
        int f = 1;
        printf("{");
        json_kv_str(stdout, &f, "id", v->ch.id);
        json_kv_str(stdout, &f, "from", from_name(v->ch.from));
        printf("}");
    }
    printf(", \"keys_error\": ");
    v->crc ? json_str(stdout, v->cwhy) : (void)printf("null");
    printf(", \"toolkit_headers\": ");
    v->headers[0] ? json_str(stdout, v->headers) : (void)printf("null");
    printf(", \"toolkit_headers_error\": ");
    v->headers[0] ? (void)printf("null") : json_str(stdout, v->hwhy);
    printf(", \"toolkit_headers_recorded\": [");
    rec_ctx hr = {1, 0};
    kc_cache_record_foreach(v->c, "toolkit_headers.", print_name, &hr);
    printf("]");
    print_targets_json(&v->targets);
    printf("}\n");
}

static void print_text(const tc_view *v) {
    if (v->lrc) printf("%-10snone: %s\n", "local", v->lwhy);
    else printf("%-10s%s  nvrtc%s%s (%s)\n", "local", v->t.id, v->t.version[0] ? " " : "", v->t.version, v->t.path);
    if (v->env[0]) printf("%-10s%s  (KCACHE_TOOLCHAIN)\n", "pinned", v->env);
    if (v->rpin[0]) printf("%-10s%s  (the cache's pin%s)\n", "pinned", v->rpin, v->env[0] ? ", overridden" : "");
    if (!v->env[0] && !v->rpin[0]) printf("%-10snone\n", "pinned");
    rec_ctx r = {0, 0};
    kc_cache_record_foreach(v->c, "toolchain.", print_recorded, &r);
    if (!r.n) printf("%-10snone\n", "recorded");
    if (v->crc) printf("%-10snone: %s\n", "keys use", v->cwhy);
    else printf("%-10s%s  (%s)\n", "keys use", v->ch.id, v->ch.how);
    /* The toolkit's headers, for kernels that ask for them (KCACHE_TOOLKIT_HEADERS pins it where there are none). */
    if (v->headers[0]) printf("%-10s%s  (this host's toolkit headers)\n", "headers", v->headers);
    else printf("%-10snone: %s\n", "headers", v->hwhy);
    rec_ctx hr = {0, 0};
    kc_cache_record_foreach(v->c, "toolkit_headers.", print_name, &hr);
}

/* --pin ID writes `toolchain = ID` to the cache directory's kcache.conf; --unpin removes it there
 * and the pin an older kcache kept in the record. */
static int set_pin(kc_cache *c, const char *pin) {
    if (kc_cache_config_set(c, "toolchain", pin) != KC_OK) return KC_EINVAL;
    if (!pin && kc_cache_record_set(c, "pin", NULL) != KC_OK) return KC_EINVAL;
    return KC_OK;
}

static int cmd_toolchain(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_toolchain;
    cli_args a;
    cli_parse(c0, argc, argv, 0, &a);
    int json = cli_flag(&a, "json"), unpin = cli_flag(&a, "unpin"), targets = cli_flag(&a, "targets");
    const char *pin = cli_arg(&a, "pin");
    if (pin && unpin) return cli_usage_error(c0, "--pin and --unpin together", NULL);
    if (pin && kc_toolchain_id_check(pin) != KC_OK) return cli_usage_error(c0, kc_error_last()->message, NULL);
    kc_cache *c;
    if ((pin || unpin ? cli_open_cache : cli_open_cache_readonly)(cs, &c)) return EXIT_PROBLEM;
    if ((pin || unpin) && set_pin(c, pin) != KC_OK) {
        kc_cache_close(c);
        return cli_fail(pin ? "pinning the toolchain" : "unpinning the toolchain");
    }
    tc_view *v = calloc(1, sizeof *v);
    if (!v) {
        kc_cache_close(c);
        return EXIT_PROBLEM;
    }
    v->want_targets = targets || json;
    gather(c, v);
    json ? print_json(v) : targets ? print_targets_text(v) : print_text(v);
    free(v);
    kc_cache_close(c);
    return 0;
}
