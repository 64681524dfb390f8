/*
 * cmd_get.c — `kcache get SPEC [--arch TARGET]`: look one graph spec up, compiling and storing
 * it on a miss, and say where it came from and how long each step took.
 *
 * The one idea: with --arch it is compile-only (no GPU needed), without it loads on GPU 0 —
 * the same lookup `kcache demo` does (cli_lookup, cli_print_info).
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>

#include "cli.h"

static int cmd_get(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_get = {
    "get", "kcache get SPEC [--arch TARGET] [--json]",
    "Look a graph spec up in the cache, compiling and storing it on a miss, and say where it\n"
    "came from and how long each step took.  With --arch (sm_90, compute_80, ...) it only\n"
    "compiles and stores (no GPU needed); without, it loads on GPU 0.",
    cmd_get};

static int cmd_get(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_get;
    const char *arch = NULL;
    cli_opts o;
    int rc0 = cli_spec_args(c0, argc, argv, &arch, &o);
    if (rc0) return rc0;
    kc_target t;
    if (arch && kc_target_parse(arch, &t) != KC_OK) return cli_usage_error(c0, kc_error_last()->message, NULL);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, o.positional[0]) != KC_OK) {
        fprintf(stderr, "kcache get: %s\n", kc_error_last()->message);
        return EXIT_USAGE;
    }
    kc_cache *c;
    if (cli_open_cache(cs, &c)) {
        kc_graph_desc_free(d);
        return EXIT_PROBLEM;
    }
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    int rc = cli_lookup(c, d, arch, &info);
    if (rc == KC_OK) cli_print_info(kc_graph_desc_name(d), &info, o.json);
    else cli_fail(kc_graph_desc_name(d));
    kc_cache_close(c);
    kc_graph_desc_free(d);
    return rc == KC_OK ? 0 : EXIT_PROBLEM;
}
