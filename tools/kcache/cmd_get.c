/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_get.c — `kcache get SPEC [--arch TARGET]`: look one graph spec up, compiling and storing
 * it on a miss, and say where it came from and how long each step took.
 *
 * The one idea: with --arch it is compile-only (no GPU needed), without it loads on GPU 0 —
 * the same lookup `kcache demo` does (cli_lookup, cli_print_info).
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_get(const cli_settings *cs, int argc, char **argv);

static const cli_opt get_opts[] = {
    {"arch", 0, "TARGET", "compile for TARGET only (no GPU needed); else load on GPU 0"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_get = {"get",
                             "kcache get SPEC [--arch TARGET] [--json]",
                             "Look a graph spec up in the cache, compiling and storing it on a miss, and say where it\n"
                             "came from and how long each step took.  With --arch (sm_90, compute_80, ...) it only\n"
                             "compiles and stores (no GPU needed); without, it loads on GPU 0.  A failure is said on\n"
                             "stderr with its status (an NVRTC log whole); with --json, also as an object on stdout\n"
                             "(\"result\": \"failed\", \"status\", \"error\").",
                             cmd_get,
                             get_opts,
                             CLI_OPERANDS_FILES};

/* Whether the cache was asked to write nothing (KCACHE_READONLY, KCACHE_DISABLE, or the options'
 * flags): a compile it does not store is then what was asked for, not news. */
static int asked_not_to_store(kc_cache *c) {
    const char *rows[] = {"readonly", "disable"};
    char v[16];
    for (size_t i = 0; i < 2; i++)
        if (kc_config_get(kc_cache_config(c), kc_config_find(rows[i]), v, sizeof v, NULL, NULL, 0) == KC_OK &&
            strcmp(v, "true") == 0)
            return 1;
    return 0;
}

/* A failed lookup under --json: an object on stdout too, with the status and the whole reason (an NVRTC
 * log, a must-hit refusal), as `prewarm --json` writes a failed variant. */
static void print_failure_json(const char *name, const char *arch, const kc_graph_info *i) {
    const kc_error *e = kc_error_last();
    int first = 1;
    printf("{");
    json_kv_str(stdout, &first, "graph", name);
    json_kv_str(stdout, &first, "key", i->key);
    json_kv_str(stdout, &first, "variant", i->variant[0] ? i->variant : arch ? arch : "");
    json_kv_str(stdout, &first, "result", "failed");
    json_kv_str(stdout, &first, "status", kc_status_str(e->code));
    json_kv_str(stdout, &first, "error", e->message);
    json_kv_str(stdout, &first, "miss_reason", i->miss_reason);
    json_kv_f64(stdout, &first, "compile_ms", i->compile_ms);
    json_kv_u64(stdout, &first, "units", (uint64_t)(i->units > 0 ? i->units : 0));
    json_kv_u64(stdout, &first, "units_compiled", (uint64_t)(i->units_compiled > 0 ? i->units_compiled : 0));
    printf("}\n");
}

static int cmd_get(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_get;
    const char *arch = NULL;
    cli_opts o;
    int rc0 = cli_spec_args(c0, argc, argv, &arch, &o);
    if (rc0) return rc0;
    kc_graph_desc *d = NULL;
    kc_cache *c = NULL;
    /* The cache first: the spec's load reads its memo there ([Note: spec direct mode] in
     * src/graph/spec_direct.c). */
    int open_rc = cli_open_cache(cs, &c);
    if (!open_rc && kc_graph_desc_load(&d, o.positional[0]) != KC_OK) {
        fputs("kcache get: ", stderr);
        cli_put_shown(stderr, kc_error_last()->message, 1); /* it may quote the spec's name */
        fputc('\n', stderr);
        rc0 = cli_json_failed(o.json, EXIT_USAGE, NULL); /* before the close, which may record its own error */
        kc_cache_close(c);
        return rc0;
    }
    /* A target kcache knows passes without loading NVRTC (a warm get never does); one NVRTC
     * cannot compile is refused before the compile ([Note: target check] in kcache/target.h). */
    if (open_rc || (arch && (rc0 = cli_target_check(c, "get", arch, "--arch", 1)))) {
        rc0 = cli_json_failed(o.json, rc0 ? rc0 : EXIT_PROBLEM, NULL);
        kc_cache_close(c);
        kc_graph_desc_free(d);
        return rc0;
    }
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    int rc = cli_lookup(c, d, arch, &info);
    if (rc == KC_OK && info.store_status != KC_OK && !asked_not_to_store(c)) { /* every later process compiles again */
        char m[4096], nm[4 * 256 + 1];
        snprintf(m, sizeof m, "%s", kc_error_last()->message);
        cli_print_info(kc_graph_desc_name(d), &info, o.json); /* its JSON names the store's status and error */
        fprintf(stderr, "kcache get: %s: compiled, but not stored: ", cli_shown(kc_graph_desc_name(d), nm, sizeof nm));
        cli_put_shown(stderr, m, 1);
        fprintf(stderr, " (%s)\n", kc_status_str(info.store_status));
    } else if (rc == KC_OK) cli_print_info(kc_graph_desc_name(d), &info, o.json);
    else if (rc == KC_EARCH && arch) {
        fprintf(stderr, "kcache get: %s\n", kc_error_last()->message); /* the message says it all */
        rc0 = cli_json_failed(o.json, EXIT_USAGE, NULL);
    } else {
        if (o.json) print_failure_json(kc_graph_desc_name(d), arch, &info);
        cli_fail(kc_graph_desc_name(d));
        if (rc == KC_ENODRIVER && !arch)
            fputs("kcache get: --arch TARGET (e.g. sm_90) compiles and stores without a GPU\n", stderr);
    }
    kc_cache_close(c);
    kc_graph_desc_free(d);
    return rc == KC_OK ? 0 : rc0 ? rc0 : EXIT_PROBLEM;
}
