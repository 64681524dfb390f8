/*
 * cmd_show.c — `kcache show KEY[.VARIANT]`: everything one key's entries hold — kernels with
 * their targets and sizes, sections, toolchain, creation time, every component digest — and,
 * with --extract DIR, their cubins and PTX as files for cuobjdump and nvdisasm.
 *
 * The one idea: a key is named by a unique hex prefix (at least 4 digits), found by one walk
 * over the cache that copies what it keeps (the walker's strings are borrowed for one
 * callback); a prefix that matches two keys is a usage error, not a guess.  Every name taken
 * from an entry (kernels, symbols, targets, toolchain, digests) is printed through cli_shown(), so
 * an imported entry cannot send escape sequences to the terminal.
 * Only main.c's command table refers to this file; it opens the cache through
 * cli_open_cache().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_show(const cli_settings *cs, int argc, char **argv);

const cli_cmd cli_cmd_show = {
    "show", "kcache show KEY[.VARIANT] [--json] [--extract DIR]",
    "Show the entries of a key (a unique prefix of at least 4 hex digits is enough):\n"
    "kernels with their targets and sizes, sections, toolchain, creation time and every\n"
    "component digest.  --extract DIR writes each cubin and PTX to DIR, for cuobjdump and\n"
    "nvdisasm.",
    cmd_show};

typedef struct show_ctx {
    char prefix[KC_KEY_HEX_LEN + 1];
    const char *variant;
    kc_cache_item found[64];
    char variants[64][KC_VARIANT_MAX + 1];
    kc_key keys[64];
    char paths[64][4096]; /* the walker's path is borrowed for one callback only */
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
    if (s->n < 64) {
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

#define SHOWN_CAP (4 * 4096 + 1) /* a name of the entry's longest, every byte escaped */

static const char *section_name(int t) {
    switch (t) {
    case KC_SECTION_META: return "META";
    case KC_SECTION_FORWARD: return "FORWARD";
    case KC_SECTION_BACKWARD: return "BACKWARD";
    case KC_SECTION_KERNELS: return "KERNELS";
    case KC_SECTION_WRAPPERS: return "WRAPPERS";
    case KC_SECTION_RUNTIME_META: return "RUNTIME_META";
    case KC_SECTION_PARAMS: return "PARAMS";
    default: return "?";
    }
}

typedef struct kctx {
    int json, first;
} kctx;

static void print_kernel(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes,
                         void *ctx) {
    kctx *k = ctx;
    if (k->json) {
        int first = 1;
        printf("%s{", k->first ? "" : ", ");
        json_kv_str(stdout, &first, "name", name);
        json_kv_str(stdout, &first, "symbol", lowered);
        json_kv_str(stdout, &first, "target", target);
        json_kv_str(stdout, &first, "kind", is_ptx ? "ptx" : "cubin");
        json_kv_u64(stdout, &first, "bytes", bytes);
        printf("}");
        k->first = 0;
    } else {
        char n[SHOWN_CAP], t[SHOWN_CAP], l[SHOWN_CAP];
        printf("    %-22s %-10s %-5s %8zu bytes  %s\n", cli_shown(name, n, sizeof n), cli_shown(target, t, sizeof t),
               is_ptx ? "ptx" : "cubin", bytes, cli_shown(lowered, l, sizeof l));
    }
}

/* One kernel's parameter table: "8@0 4@8:int …" (size@offset, with the class when the image says it). */
static void print_params(const char *name, const char *lowered, const kc_param_info *p, size_t n, void *ctx) {
    kctx *k = ctx;
    (void)lowered;
    if (k->json) {
        int first = 1;
        printf("%s{", k->first ? "" : ", ");
        json_kv_str(stdout, &first, "kernel", name);
        printf(", \"params\": [");
        for (size_t i = 0; i < n; i++) {
            int f = 1;
            printf("%s{", i ? ", " : "");
            json_kv_u64(stdout, &f, "offset", p[i].offset);
            json_kv_u64(stdout, &f, "size", p[i].size);
            json_kv_u64(stdout, &f, "align", p[i].align);
            json_kv_str(stdout, &f, "class", p[i].cls);
            printf("}");
        }
        printf("]}");
        k->first = 0;
        return;
    }
    char nm[SHOWN_CAP];
    printf("    %-22s (", cli_shown(name, nm, sizeof nm));
    for (size_t i = 0; i < n; i++)
        printf("%s%u@%u%s%s", i ? " " : "", p[i].size, p[i].offset, strcmp(p[i].cls, "any") ? ":" : "",
               strcmp(p[i].cls, "any") ? p[i].cls : "");
    printf(")  %zu parameter%s, %u bytes\n", n, n == 1 ? "" : "s", n ? p[n - 1].offset + p[n - 1].size : 0);
}

static int cmd_show(const cli_settings *cs, int argc, char **argv) {
    cli_opts o;
    const char *extract = NULL;
    int n = 0;
    for (int i = 1; i < argc; i++) { /* take --extract DIR out, leave the rest to cli_parse_opts */
        if (strcmp(argv[i], "--extract") == 0 && i + 1 < argc) extract = argv[++i];
        else if (strcmp(argv[i], "--extract") == 0) return cli_usage_error(&cli_cmd_show, "--extract needs a folder", NULL);
        else argv[++n] = argv[i];
    }
    argc = n + 1;
    cli_parse_opts(&cli_cmd_show, argc, argv, &o, 1, 0, 1);
    if (o.npos != 1) return cli_usage_error(&cli_cmd_show, "a KEY is required", NULL);
    show_ctx *s = calloc(1, sizeof *s);
    if (!s) return cli_fail("out of memory");
    const char *arg = o.positional[0];
    const char *dot = strchr(arg, '.');
    size_t klen = dot ? (size_t)(dot - arg) : strlen(arg);
    if (klen < 4 || klen > KC_KEY_HEX_LEN || strspn(arg, "0123456789abcdef") < klen) {
        free(s);
        return cli_usage_error(&cli_cmd_show, "KEY must be 4 to 32 lowercase hex digits", arg);
    }
    memcpy(s->prefix, arg, klen);
    s->variant = dot ? dot + 1 : NULL;
    kc_cache *c;
    if (cli_open_cache(cs, &c)) {
        free(s);
        return EXIT_PROBLEM;
    }
    int rc = kc_cache_foreach(c, show_match, s);
    int ret = 0;
    if (rc != KC_OK) {
        ret = cli_fail("listing failed");
    } else if (s->other_key) {
        fprintf(stderr, "kcache show: '%s' matches more than one key; give more digits\n", arg);
        ret = EXIT_USAGE;
    } else if (s->n == 0) {
        fprintf(stderr, "kcache show: no entry matches '%s'\n", arg);
        ret = EXIT_PROBLEM;
    }
    if (ret == 0 && o.json) printf("[");
    for (int i = 0; ret == 0 && i < s->n; i++) {
        kc_entry *e;
        char hex[KC_KEY_HEX_LEN + 1], t[32];
        kc_key_to_hex(&s->keys[i], hex);
        rc = kc_cache_get(c, &s->keys[i], s->variants[i], &e);
        if (rc != KC_OK) {
            fprintf(stderr, "kcache show: %s.%s: %s\n", hex, s->variants[i], kc_error_last()->message);
            ret = EXIT_PROBLEM;
            continue;
        }
        cli_iso_time((int64_t)(kc_entry_created_at(e) / 1000000000ull), t, sizeof t);
        if (o.json) {
            int first = 1;
            printf("%s{", i ? ", " : "");
            json_kv_str(stdout, &first, "key", hex);
            json_kv_str(stdout, &first, "variant", s->variants[i]);
            json_kv_u64(stdout, &first, "bytes", s->found[i].bytes);
            json_kv_str(stdout, &first, "path", s->found[i].path);
            json_kv_str(stdout, &first, "toolchain", kc_entry_toolchain(e));
            json_kv_u64(stdout, &first, "created_at_ns", kc_entry_created_at(e));
            printf(", \"sections\": {");
            int f2 = 1;
            for (int ty = KC_SECTION_FORWARD; ty <= KC_SECTION_PARAMS; ty++) {
                const void *d;
                size_t len;
                if (kc_entry_section(e, (kc_section_type)ty, &d, &len) == KC_OK)
                    json_kv_u64(stdout, &f2, section_name(ty), len);
            }
            printf("}, \"kernels\": [");
            kctx kc = {1, 1};
            kc_entry_kernels(e, print_kernel, &kc);
            printf("], \"parameters\": [");
            kc.first = 1;
            kc_entry_params(e, print_params, &kc);
            printf("], \"digests\": {");
            f2 = 1;
            for (size_t k = 0; k < kc_entry_digest_count(e); k++) {
                const char *name;
                kc_digest d;
                char dh[KC_KEY_HEX_LEN + 1];
                kc_entry_digest_at(e, k, &name, &d);
                kc_digest_to_hex(&d, dh);
                json_kv_str(stdout, &f2, name, dh);
            }
            printf("}}");
        } else {
            char buf[SHOWN_CAP];
            printf("%s.%s\n", hex, cli_shown(s->variants[i], buf, sizeof buf));
            printf("  file       %s (%llu bytes)\n", cli_shown(s->found[i].path, buf, sizeof buf),
                   (unsigned long long)s->found[i].bytes);
            printf("  created    %s\n", t);
            printf("  toolchain  %s\n", kc_entry_toolchain(e)[0] ? cli_shown(kc_entry_toolchain(e), buf, sizeof buf) : "(none)");
            printf("  kernels\n");
            kctx kc = {0, 1};
            if (kc_entry_kernels(e, print_kernel, &kc) != KC_OK) printf("    (none)\n");
            printf("  parameters (size@offset, as the compiler laid them out; every launch step was checked against them)\n");
            if (kc_entry_params(e, print_params, &kc) != KC_OK) printf("    (none: %s)\n", kc_error_last()->message);
            printf("  sections\n");
            for (int ty = KC_SECTION_FORWARD; ty <= KC_SECTION_PARAMS; ty++) {
                const void *d;
                size_t len;
                if (kc_entry_section(e, (kc_section_type)ty, &d, &len) == KC_OK)
                    printf("    %-13s %zu bytes\n", section_name(ty), len);
            }
            printf("  digests\n");
            for (size_t k = 0; k < kc_entry_digest_count(e); k++) {
                const char *name;
                kc_digest d;
                char dh[KC_KEY_HEX_LEN + 1];
                kc_entry_digest_at(e, k, &name, &d);
                kc_digest_to_hex(&d, dh);
                printf("    %-24s %s\n", cli_shown(name, buf, sizeof buf), dh);
            }
        }
        if (extract) {
            int count = 0;
            if (kc_entry_extract(e, extract, &count) != KC_OK) ret = cli_fail("extract failed");
            else fprintf(o.json ? stderr : stdout, "  extracted %d image(s) to %s\n", count, extract);
        }
        kc_entry_free(e);
    }
    if (ret == 0 && o.json) printf("]\n");
    kc_cache_close(c);
    free(s);
    return ret;
}
