/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_explain.c — `kcache explain SPEC [--arch TARGET]`: why a graph hits or misses: its key,
 * every component's digest, and on a miss the nearest stored entry and what differs.
 *
 * The one idea: the diff is the library's (kc_graph_explain over the stored component
 * digests); this file prints it, and says what the two levels ([Note: two levels] in
 * kcache/entry.h) mean for the next lookup: a graph entry that is stored while one of its
 * images is not (the library names it "images[i]") is a miss that recompiles that image's
 * unit; and of the compile units the library keys ("unit[i]"), how many are stored — when all
 * are, a compile only writes the graph entry.  It counts and changes nothing (it peeks).
 * Only main.c's command table refers to this file; it opens the cache through cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_explain(const cli_settings *cs, int argc, char **argv);

static const cli_opt explain_opts[] = {
    {"arch", 0, "TARGET", "the target (default: GPU 0's, sm_90 without a GPU)"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_explain = {
    "explain",
    "kcache explain SPEC [--arch TARGET] [--json]",
    "Why a graph hits or misses: its key, every component's digest, and on a miss the stored\n"
    "entry nearest to it and the components that differ, down to the tensor and field\n"
    "(\"arch\", \"options\", \"inputs[0].sizes\", \"kernels[1].source\", \"toolchain\").\n"
    "A stored graph entry whose image is missing is a miss: explain names the image and the\n"
    "compile unit the next lookup recompiles.  It also says how many of the graph's compile\n"
    "units are stored (digests unit[i]: each unit's key): when all are, a compile of this\n"
    "graph only writes its graph entry.\n"
    "TARGET defaults to GPU 0's (sm_90 without a GPU).  Counts and changes nothing.",
    cmd_explain,
    explain_opts,
    CLI_OPERANDS_FILES};

#define SHOWN_CAP (4 * 4096 + 1)

/* Whether the unit record under `hex` is there with its image (what the lookup would reuse). */
static int unit_stored(kc_cache *c, const char *hex) {
    kc_key k;
    if (kc_key_from_hex(&k, hex) != KC_OK) return 0;
    kc_entry *e;
    int rc = kc_cache_peek(c, &k, KC_VARIANT_UNIT, &e);
    if (rc != KC_OK) return rc != KC_ECORRUPT && kc_cache_exists(c, &k, KC_VARIANT_UNIT) == 1; /* the remote's */
    kc_image_ref ref;
    int ok = kc_unit_entry_read(e, &ref, NULL, 0, NULL) == KC_OK && cli_image_state_of(c, &ref) == CLI_IMAGE_PRESENT;
    kc_entry_free(e);
    return ok;
}

/* What explain found of the two levels: the units' keys and states, the graph entry's missing images. */
typedef struct levels {
    size_t nunits, nstored;
    const char *unit_key[KC_EXPLAIN_MAX];
    int stored[KC_EXPLAIN_MAX];
    int graph_stored; /* the graph entry is there (a hit, or a miss for want of an image) */
    kc_entry *graph;  /* then: the entry (peeked), its references and kernels */
    kc_image_ref *refs;
    size_t nrefs;
    cli_kernel *ks;
    size_t nks;
} levels;

static void levels_read(kc_cache *c, const kc_explain *x, levels *l) {
    memset(l, 0, sizeof *l);
    for (size_t i = 0; i < x->ndigests; i++) {
        if (strncmp(x->digests[i].name, "unit[", 5) != 0) continue;
        l->unit_key[l->nunits] = x->digests[i].digest;
        l->stored[l->nunits] = unit_stored(c, x->digests[i].digest);
        l->nstored += (size_t)l->stored[l->nunits++];
    }
    char self[sizeof x->nearest];
    snprintf(self, sizeof self, "%s.%s", x->key, x->variant);
    l->graph_stored = x->hit || (x->have_nearest && strcmp(x->nearest, self) == 0);
    kc_key k;
    if (!l->graph_stored || kc_key_from_hex(&k, x->key) != KC_OK ||
        kc_cache_peek(c, &k, x->variant, &l->graph) != KC_OK)
        return;
    if (kc_entry_images(l->graph, &l->refs, &l->nrefs) != KC_OK) l->refs = NULL, l->nrefs = 0;
    else if (cli_entry_kernels(l->graph, l->nrefs, &l->ks, &l->nks) != KC_OK) l->ks = NULL, l->nks = 0;
}

static void levels_free(levels *l) {
    free(l->ks);
    free(l->refs);
    kc_entry_free(l->graph);
}

/* Image i of the graph entry, when explain named it ("images[i]"): 1 and its index. */
static int missing_image(const kc_explain *x, size_t d, const levels *l, size_t *index) {
    unsigned long i;
    char tail;
    if (sscanf(x->diffs[d], "images[%lu%c", &i, &tail) != 2 || tail != ']' || i >= l->nrefs) return 0;
    *index = (size_t)i;
    return 1;
}

static void print_levels_text(kc_cache *c, const kc_explain *x, const levels *l) {
    for (size_t d = 0; d < x->ndiffs; d++) {
        size_t i;
        if (!missing_image(x, d, l, &i)) continue;
        char id[KC_KEY_HEX_LEN + 1], kn[SHOWN_CAP];
        kc_key_to_hex(&l->refs[i].id, id);
        cli_kernels_of_image(l->ks, l->nks, (uint32_t)i, kn, sizeof kn);
        printf(
            "images    the graph entry is stored but image %s (%s %s) is %s: the next lookup recompiles unit %zu (%s)\n",
            id, l->refs[i].target, l->refs[i].is_ptx ? "ptx" : "cubin",
            cli_image_state_of(c, &l->refs[i]) == CLI_IMAGE_CORRUPT ? "corrupt" : "missing", i, kn[0] ? kn : "?");
    }
    if (!l->nunits) return;
    printf("units     %zu of %zu compile unit%s %s stored", l->nstored, l->nunits,
           l->nunits == 1 && l->nstored == 1 ? "" : "s", l->nstored == 1 ? "is" : "are"); /* "0 of 1 units are" */
    if (x->hit) printf("\n");
    else if (l->nstored == l->nunits) printf(": a compile would only write the graph entry\n");
    else if (l->nstored) printf(": a compile would compile only the other %zu\n", l->nunits - l->nstored);
    else printf(": a compile compiles every one\n");
}

static void print_levels_json(kc_cache *c, const kc_explain *x, const levels *l) {
    int f = 0;
    json_kv_bool(stdout, &f, "graph_stored", l->graph_stored);
    printf(", \"missing_images\": [");
    for (size_t d = 0, n = 0; d < x->ndiffs; d++) {
        size_t i;
        if (!missing_image(x, d, l, &i)) continue;
        char id[KC_KEY_HEX_LEN + 1];
        kc_key_to_hex(&l->refs[i].id, id);
        int g = 1;
        printf("%s{", n++ ? ", " : "");
        json_kv_u64(stdout, &g, "index", i);
        json_kv_str(stdout, &g, "id", id);
        json_kv_str(stdout, &g, "target", l->refs[i].target);
        json_kv_str(stdout, &g, "kind", l->refs[i].is_ptx ? "ptx" : "cubin");
        json_kv_str(stdout, &g, "state",
                    cli_image_state_of(c, &l->refs[i]) == CLI_IMAGE_CORRUPT ? "corrupt" : "missing");
        printf(", \"kernels\": [");
        for (size_t k = 0, m = 0; k < l->nks; k++)
            if (l->ks[k].image == i) printf("%s", m++ ? ", " : ""), json_str(stdout, l->ks[k].name);
        printf("]}");
    }
    printf("], \"units\": [");
    for (size_t i = 0; i < l->nunits; i++) {
        int g = 1;
        printf("%s{", i ? ", " : "");
        json_kv_str(stdout, &g, "key", l->unit_key[i]);
        json_kv_bool(stdout, &g, "stored", l->stored[i]);
        printf("}");
    }
    printf("]");
    json_kv_u64(stdout, &f, "units_stored", l->nstored);
}

static int cmd_explain(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_explain;
    const char *arch = NULL;
    cli_opts o;
    int rc0 = cli_spec_args(c0, argc, argv, &arch, &o);
    if (rc0) return rc0;
    char dev[16] = "sm_90";
    int major, minor;
    if (!arch && kc_cuda_capability(0, &major, &minor) == KC_OK) kc_variant_for_device(major, minor, dev);
    const char *named = arch; /* checked against the toolchain once the cache is open */
    if (!arch) arch = dev;
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, o.positional[0]) != KC_OK) {
        fputs("kcache explain: ", stderr);
        cli_put_shown(stderr, kc_error_last()->message, 1); /* it may quote the spec's name */
        fputc('\n', stderr);
        return cli_json_failed(o.json, EXIT_USAGE, NULL);
    }
    kc_cache *c = NULL;
    if (cli_open_cache_readonly(cs, &c) || (named && (rc0 = cli_target_check(c, "explain", named, "--arch", 0)))) {
        rc0 = cli_json_failed(o.json, rc0 ? rc0 : EXIT_PROBLEM, NULL); /* before the close: its error */
        kc_cache_close(c);
        kc_graph_desc_free(d);
        return rc0;
    }
    kc_explain *x = malloc(sizeof *x);
    if (x) x->version = KC_EXPLAIN_VERSION;
    int rc = x ? kc_graph_explain(c, d, arch, x) : KC_ENOMEM;
    levels l;
    memset(&l, 0, sizeof l);
    if (rc == KC_OK) levels_read(c, x, &l);
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
        printf("]");
        print_levels_json(c, x, &l);
        printf("}\n");
    } else if (rc == KC_OK) {
        printf("graph     ");
        cli_put_shown(stdout, kc_graph_desc_name(d), 0); /* a spec's name: escaped, as every name printed */
        printf("\nkey       %s\nvariant   %s\nresult    %s\ndigests\n", x->key, x->variant, x->hit ? "hit" : "miss");
        for (size_t i = 0; i < x->ndigests; i++) printf("  %-24s %s\n", x->digests[i].name, x->digests[i].digest);
        if (!x->hit && !x->have_nearest) printf("nearest   none: the cache holds no entry to compare with\n");
        if (x->have_nearest) {
            printf("nearest   "), cli_put_shown(stdout, x->nearest, 0); /* a stored object's name */
            printf("%s\ndiffers  ", x->nearest_shares_graph ? " (same graph)" : "");
            for (size_t i = 0; i < x->ndiffs; i++) printf(" %s", x->diffs[i]);
            printf("\n");
        }
        print_levels_text(c, x, &l);
    } else {
        cli_json_failed(o.json, cli_fail("explain failed"), NULL);
    }
    levels_free(&l);
    free(x);
    kc_cache_close(c);
    kc_graph_desc_free(d);
    return rc == KC_OK ? 0 : EXIT_PROBLEM;
}
