/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_show.c — `kcache show KEY[.VARIANT] | SPEC`: everything a stored object holds.  A graph
 * entry: its images (id, target, kind, size, SHA-256, the kernels that run each, whether it is
 * there), kernels with their targets and sizes, parameter tables, sections, toolchain, creation
 * time, every component digest — and, with --extract DIR, its cubins and PTX as files for
 * cuobjdump and nvdisasm.  An image (its id): its reference, whether its bytes are its digests',
 * and the graph entries and unit records that refer to it.  A unit record (its key): the image
 * the unit compiled to and each name expression's lowered name.  A graph spec: its entries.
 *
 * The one idea: an object is named by a unique hex prefix (at least 4 digits) of its key, or
 * by a spec whose key kcache computes (kc_graph_explain, with the cache's toolchain), found by one
 * walk over the cache that copies what it keeps (the walker's strings are borrowed for one
 * callback); a prefix that matches two keys is a usage error, not a guess.  A graph entry's
 * images are resolved as a lookup resolves them (kc_entry_resolve: local, then the remote, each
 * checked), so "present" means what a lookup would find.  Every name taken from an object
 * (kernels, symbols, targets, toolchain, digests, name expressions, error messages) is printed
 * through cli_shown(), so an imported object cannot send escape sequences to the terminal.
 * This file parses the arguments and finds the objects; what it prints of each is
 * show_object.c's (show.h).  Only main.c's command table refers to this file; it opens the cache
 * through cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "json.h"
#include "show.h"

static int cmd_show(const cli_settings *cs, int argc, char **argv);

static const cli_opt show_opts[] = {
    {"arch", 0, "TARGET", "with a SPEC: the variant of TARGET"},
    {"json", 0, NULL, "print one JSON object"},
    {"extract", 0, "DIR", "write each cubin and PTX of a graph entry to DIR"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_show = {
    "show",
    "kcache show KEY[.VARIANT] | SPEC [--arch TARGET] [--json] [--extract DIR]",
    "Show what is stored under a key (a unique prefix of at least 4 hex digits is enough), or\n"
    "for a graph SPEC (a .json file: its key as a lookup computes it; --arch picks a variant).\n"
    "A graph entry: its images (id, target, kind, bytes, SHA-256, the kernels that run each,\n"
    "and whether each is there: a graph whose image is missing is a miss), kernels with their\n"
    "targets and sizes, parameter tables, sections, toolchain, creation time and every\n"
    "component digest.  An image id: the image and the graph entries and unit records that\n"
    "refer to it.  A unit key: the image the compile unit compiled to, and its names.\n"
    "--extract DIR writes each cubin and PTX of a graph entry to DIR, for cuobjdump and nvdisasm.",
    cmd_show,
    show_opts,
    CLI_OPERANDS_FILES};

#define SHOW_MAX 64

typedef struct show_ctx {
    char prefix[KC_KEY_HEX_LEN + 1];
    const char *variant;
    kc_cache_item found[SHOW_MAX];
    char variants[SHOW_MAX][KC_VARIANT_MAX + 1];
    kc_key keys[SHOW_MAX];
    char paths[SHOW_MAX][4096]; /* the walker's path is borrowed for one callback only */
    int n;
    int other_key; /* prefix matched two different keys */
} show_ctx;

static int show_match(const kc_cache_item *it, void *ctx) {
    show_ctx *s = ctx;
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(&it->key, hex);
    if (strncmp(hex, s->prefix, strlen(s->prefix)) != 0) return 0;
    if (s->variant && strcmp(s->variant, it->variant) != 0) return 0;
    if (s->n > 0 && memcmp(s->keys[0].bytes, it->key.bytes, 16) != 0) {
        s->other_key = 1;
        return 0;
    }
    if (s->n < SHOW_MAX) {
        s->keys[s->n] = it->key;
        snprintf(s->variants[s->n], sizeof s->variants[0], "%s", it->variant);
        s->found[s->n] = *it;
        snprintf(s->paths[s->n], sizeof s->paths[0], "%s", it->path);
        s->found[s->n].path = s->paths[s->n];
        s->found[s->n].variant = s->variants[s->n];
        s->n++;
    }
    return 0;
}

/* Whether the argument names a graph spec rather than a key: a .json name, or a file that exists. */
static int is_spec(const char *arg) {
    size_t n = strlen(arg);
    struct stat st;
    return (n > 5 && strcmp(arg + n - 5, ".json") == 0) || (stat(arg, &st) == 0 && S_ISREG(st.st_mode));
}

/* The key of a graph spec as a lookup computes it (the cache's toolchain), into s->prefix; 0 or an exit code. */
static int spec_key(kc_cache *c, const char *path, const char *arch, show_ctx *s, char *name, size_t cap) {
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, path) != KC_OK) {
        char buf[SHOWN_CAP];
        fprintf(stderr, "kcache show: %s\n", cli_shown(kc_error_last()->message, buf, sizeof buf));
        return EXIT_USAGE;
    }
    kc_explain *x = malloc(sizeof *x);
    if (x) x->version = KC_EXPLAIN_VERSION;
    int rc = x ? kc_graph_explain(c, d, arch ? arch : "sm_90", x) : KC_ENOMEM;
    if (rc == KC_OK) snprintf(s->prefix, sizeof s->prefix, "%s", x->key);
    snprintf(name, cap, "%s", kc_graph_desc_name(d));
    free(x);
    kc_graph_desc_free(d);
    return rc == KC_OK ? 0 : cli_fail("cannot compute the graph's key");
}

/* What the command line asks for: the object (KEY or SPEC), --arch, --extract, --json. */
typedef struct show_args {
    cli_opts o;
    const char *extract, *arch, *arg;
    int spec;
} show_args;

/* The arguments into *a; 0, or an exit code (said). */
static int show_parse(int argc, char **argv, show_args *a) {
    cli_args o;
    cli_parse(&cli_cmd_show, argc, argv, 1, &o);
    a->extract = cli_arg(&o, "extract"), a->arch = cli_arg(&o, "arch");
    a->o.json = cli_flag(&o, "json");
    if ((a->o.npos = o.npos) == 1) a->o.positional[0] = o.pos[0];
    if (a->o.npos != 1) return cli_usage_error(&cli_cmd_show, "a KEY or a SPEC is required", NULL);
    int rc; /* a stored variant is read, never compiled: checked against kcache's table ([Note: target check]) */
    if (a->arch && (rc = cli_target_check(NULL, "show", a->arch, "--arch", 1))) return rc;
    a->arg = a->o.positional[0];
    a->spec = is_spec(a->arg);
    return 0;
}

/* A KEY[.VARIANT] argument into s->prefix and s->variant (a SPEC: only the variant); 0, or an exit code (said). */
static int show_name(const show_args *a, show_ctx *s) {
    if (a->spec) {
        s->variant = a->arch;
        return 0;
    }
    const char *arg = a->arg, *dot = strchr(arg, '.');
    size_t klen = dot ? (size_t)(dot - arg) : strlen(arg);
    if (klen < 4 || klen > KC_KEY_HEX_LEN || strspn(arg, "0123456789abcdef") < klen)
        return cli_usage_error(&cli_cmd_show, "KEY must be 4 to 32 lowercase hex digits (or give a SPEC file)", arg);
    memcpy(s->prefix, arg, klen);
    s->variant = dot ? dot + 1 : a->arch;
    return 0;
}

/* Find what the argument names (one walk); 0, or an exit code with the reason said. */
static int show_find(kc_cache *c, const show_args *a, show_ctx *s) {
    char graph[256] = "";
    int ret = a->spec ? spec_key(c, a->arg, a->arch, s, graph, sizeof graph) : 0;
    if (ret) return ret; /* reported by spec_key */
    if (kc_cache_foreach(c, show_match, s) != KC_OK) return cli_fail("listing failed");
    if (s->other_key) {
        fprintf(stderr, "kcache show: '%s' matches more than one key; give more digits\n", a->arg);
        return EXIT_USAGE;
    }
    if (s->n == 0 && a->spec) {
        char buf[SHOWN_CAP];
        fprintf(stderr, "kcache show: graph '%s' (key %s) has no stored entry%s%s\n", cli_shown(graph, buf, sizeof buf),
                s->prefix, a->arch ? " for " : "", a->arch ? a->arch : "");
        return EXIT_PROBLEM;
    }
    if (s->n == 0) {
        fprintf(stderr, "kcache show: no entry matches '%s'\n", a->arg);
        return EXIT_PROBLEM;
    }
    return 0;
}

/* Show the i-th object found (`first`: the first shown); 0 or an exit code. */
static int show_one(kc_cache *c, const show_args *a, const show_ctx *s, int i, int first) {
    kc_entry *e;
    char hex[KC_KEY_HEX_LEN + 1], v[SHOWN_CAP], msg[SHOWN_CAP];
    kc_key_to_hex(&s->keys[i], hex);
    cli_shown(s->variants[i], v, sizeof v);
    /* A peek, not a get: showing an entry is not a use — no hit is counted and the LRU
     * time (the file's mtime) is left as it is, so `show` never keeps an entry from gc. */
    if (kc_cache_peek(c, &s->keys[i], s->variants[i], &e) != KC_OK) {
        fprintf(stderr, "kcache show: %s.%s: %s\n", hex, v, cli_shown(kc_error_last()->message, msg, sizeof msg));
        return -EXIT_PROBLEM; /* not shown */
    }
    int r;
    switch (cli_kind_of(s->variants[i])) {
    case CLI_IMAGE: r = show_image(c, &s->found[i], e, a->o.json, first); break;
    case CLI_UNIT: r = show_unit(c, &s->found[i], e, a->o.json, first); break;
    default: r = show_graph(c, &s->found[i], e, a->o.json, first, a->extract); break;
    }
    if (a->extract && cli_kind_of(s->variants[i]) != CLI_GRAPH) {
        fprintf(stderr, "kcache show: %s.%s is not a graph entry: --extract writes a graph's images\n", hex, v);
        r = EXIT_PROBLEM;
    }
    kc_entry_free(e);
    return r;
}

static int cmd_show(const cli_settings *cs, int argc, char **argv) {
    show_args a = {0};
    int ret = show_parse(argc, argv, &a);
    if (ret) return ret;
    show_ctx *s = calloc(1, sizeof *s);
    if (!s) return cli_fail("out of memory");
    ret = show_name(&a, s);
    if (ret) {
        free(s);
        return ret;
    }
    kc_cache *c;
    if (cli_open_cache_readonly(cs, &c)) { /* --extract writes outside the cache */
        free(s);
        return EXIT_PROBLEM;
    }
    ret = show_find(c, &a, s);
    int go = ret == 0, shown = 0;
    if (go && a.o.json) printf("[");
    for (int i = 0; go && i < s->n; i++) {
        int r = show_one(c, &a, s, i, !shown);
        if (r < 0) {
            ret = -r;
            continue;
        }
        if (r) ret = r;
        shown++;
    }
    if (go && a.o.json) printf("]\n");
    kc_cache_close(c);
    free(s);
    return ret;
}
