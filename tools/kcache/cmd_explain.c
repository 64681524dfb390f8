/*
 * cmd_explain.c — `kcache explain SPEC [--arch TARGET]`: why a graph hits or misses: its key,
 * every component's digest, and on a miss the nearest stored entry and what differs.
 *
 * The one idea: the diff is the library's (kc_graph_explain over the stored component
 * digests); this file prints it.  It counts and changes nothing.  Only main.c's command table
 * refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "json.h"

static int cmd_explain(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_explain = {
    "explain", "kcache explain SPEC [--arch TARGET] [--json]",
    "Why a graph hits or misses: its key, every component's digest, and on a miss the stored\n"
    "entry nearest to it and the components that differ, down to the tensor and field\n"
    "(\"arch\", \"options\", \"inputs[0].sizes\", \"kernels[1].source\", \"toolchain\").\n"
    "TARGET defaults to GPU 0's (sm_90 without a GPU).  Counts and changes nothing.",
    cmd_explain};

static int cmd_explain(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_explain;
    const char *arch = NULL;
    cli_opts o;
    int rc0 = cli_spec_args(c0, argc, argv, &arch, &o);
    if (rc0) return rc0;
    char dev[16] = "sm_90";
    int major, minor;
    if (!arch && kc_cuda_capability(0, &major, &minor) == KC_OK) kc_variant_for_device(major, minor, dev);
    if (!arch) arch = dev;
    kc_target t;
    if (kc_target_parse(arch, &t) != KC_OK) return cli_usage_error(c0, kc_error_last()->message, NULL);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, o.positional[0]) != KC_OK) {
        fprintf(stderr, "kcache explain: %s\n", kc_error_last()->message);
        return EXIT_USAGE;
    }
    kc_cache *c;
    if (cli_open_cache(cs, &c)) {
        kc_graph_desc_free(d);
        return EXIT_PROBLEM;
    }
    kc_explain *x = malloc(sizeof *x);
    int rc = x ? kc_graph_explain(c, d, arch, x) : KC_ENOMEM;
    if (rc == KC_OK && o.json) {
        int first = 1;
        printf("{");
        json_kv_str(stdout, &first, "graph", kc_graph_desc_name(d));
        json_kv_str(stdout, &first, "key", x->key);
        json_kv_str(stdout, &first, "variant", x->variant);
        printf(", \"hit\": %s, \"digests\": {", x->hit ? "true" : "false");
        int f2 = 1;
        for (size_t i = 0; i < x->ndigests; i++) json_kv_str(stdout, &f2, x->digests[i].name, x->digests[i].digest);
        printf("}, \"nearest\": ");
        if (x->have_nearest) json_str(stdout, x->nearest);
        else printf("null");
        printf(", \"shares_graph\": %s, \"differs\": [", x->nearest_shares_graph ? "true" : "false");
        for (size_t i = 0; i < x->ndiffs; i++) {
            if (i) printf(", ");
            json_str(stdout, x->diffs[i]);
        }
        printf("]}\n");
    } else if (rc == KC_OK) {
        printf("graph     %s\nkey       %s\nvariant   %s\nresult    %s\ndigests\n", kc_graph_desc_name(d), x->key,
               x->variant, x->hit ? "hit" : "miss");
        for (size_t i = 0; i < x->ndigests; i++) printf("  %-24s %s\n", x->digests[i].name, x->digests[i].digest);
        if (!x->hit && !x->have_nearest) printf("nearest   none: the cache holds no entry to compare with\n");
        if (x->have_nearest) {
            printf("nearest   %s%s\ndiffers  ", x->nearest, x->nearest_shares_graph ? " (same graph)" : "");
            for (size_t i = 0; i < x->ndiffs; i++) printf(" %s", x->diffs[i]);
            printf("\n");
        }
    } else {
        cli_fail("explain failed");
    }
    free(x);
    kc_cache_close(c);
    kc_graph_desc_free(d);
    return rc == KC_OK ? 0 : EXIT_PROBLEM;
}
