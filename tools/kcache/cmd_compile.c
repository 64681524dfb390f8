/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_compile.c — `kcache compile FILE.cu --name EXPR... --target T`: one CUDA source through the
 * cache (kc_cache_compile), its key, outcome, lowered names and image.
 *
 * The one idea: every answer is the library's (kc_cache_compile under the key a graph's compile
 * unit of the same source would have); this file reads the files named, collects the repeatable
 * options and prints.  --name, --option and --header may be given many times; cli_parse keeps
 * the last of each, so they are collected here in the order given.  Only main.c's command table
 * refers to this file; it opens the cache through cli_open_cache().
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static int cmd_compile(const cli_settings *cs, int argc, char **argv);

static const cli_opt compile_opts[] = {
    {"name", 'n', "EXPR", "a kernel's name expression (\"k\", \"f<float>\"); repeatable, one at least"},
    {"target", 't', "TARGET", "sm_XY, sm_XYa (a cubin) or compute_XY (PTX)"},
    {"option", 0, "OPT", "an NVRTC option (\"-DN=4\", \"--use_fast_math\"); repeatable"},
    {"header", 0, "NAME=FILE", "serve FILE's text when the source includes NAME; repeatable"},
    {"toolkit-headers", 0, NULL, "the source may include the CUDA toolkit's headers"},
    {"output", 'o', "OUT", "write the image (cubin, or PTX text) to OUT"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_compile = {
    "compile",
    "kcache compile FILE.cu --name EXPR [--name EXPR...] --target TARGET [--option OPT...] [--header NAME=FILE...] "
    "[--toolkit-headers] [-o OUT] [--json]",
    "Compile one CUDA source through the cache, as kc_cache_compile does: under the key a graph's\n"
    "compile unit of the same source, options, name expressions and target has, found stored\n"
    "(locally or in the remote) or compiled by NVRTC and stored.  Prints the key, where it came\n"
    "from (memory, disk, remote, compile; bypass for a source that reads the clock, which is\n"
    "compiled and never stored), the target, each name expression with its lowered symbol and\n"
    "parameter table, and the image's size; -o OUT writes the image.  No GPU is needed.  A must-hit\n"
    "cache (KCACHE_REQUIRE_HIT) refuses to compile what is not stored.  A failure is said on\n"
    "stderr with its status (an NVRTC log whole); with --json, also as an object on stdout\n"
    "(\"result\": \"failed\", \"status\", \"error\").",
    cmd_compile,
    compile_opts,
    CLI_OPERANDS_FILES};

#define MAX_FILE (64u << 20)
#define MAX_REPEAT 256

/* What the command line gave, the repeatable options in order. */
typedef struct inputs {
    const char *names[MAX_REPEAT], *options[MAX_REPEAT], *headers[MAX_REPEAT];
    size_t nnames, noptions, nheaders;
} inputs;

/* Every value of the repeatable options, in order (cli_parse checked the command line already). */
static int collect(int argc, char **argv, inputs *in) {
    struct option lo[16];
    int n = 0;
    for (const cli_opt *o = compile_opts; o->name; o++)
        lo[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, 256 + n}, n++;
    lo[n] = (struct option){"help", no_argument, NULL, 'h'};
    lo[n + 1] = (struct option){NULL, 0, NULL, 0};
    optind = 0, opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "-:hn:t:o:", lo, NULL)) != -1) {
        const char *name = ch == 'n' ? "name" : ch >= 256 && ch < 256 + n ? compile_opts[ch - 256].name : "";
        const char **to = !strcmp(name, "name")     ? &in->names[in->nnames]
                          : !strcmp(name, "option") ? &in->options[in->noptions]
                          : !strcmp(name, "header") ? &in->headers[in->nheaders]
                                                    : NULL;
        size_t *count = !strcmp(name, "name")     ? &in->nnames
                        : !strcmp(name, "option") ? &in->noptions
                        : !strcmp(name, "header") ? &in->nheaders
                                                  : NULL;
        if (!to) continue;
        if (*count >= MAX_REPEAT) return cli_usage_error(&cli_cmd_compile, "too many values of --", name);
        *to = optarg, (*count)++;
    }
    return 0;
}

/* A text file whole: no NUL inside (a C string is what NVRTC and the key take), at most MAX_FILE. */
static char *read_text(const char *path, const char *what) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "kcache compile: cannot open %s '%s': %s\n", what, path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    for (size_t got = 1; b && got > 0 && len < MAX_FILE + 1;) {
        if (len + 1 >= cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) free(b);
            b = nb, cap *= 2;
            if (!b) break;
        }
        got = fread(b + len, 1, cap - len - 1, f);
        len += got;
    }
    int bad = ferror(f);
    fclose(f);
    const char *why = !b ? "out of memory" : bad ? "a read error" : len > MAX_FILE ? "over 64 MiB" : NULL;
    if (!why && memchr(b, 0, len)) why = "a NUL byte inside (not a text file)";
    if (why) {
        fprintf(stderr, "kcache compile: %s '%s': %s\n", what, path, why);
        free(b);
        return NULL;
    }
    b[len] = '\0';
    return b;
}

static void print_program_json(const kc_program *p, const char *out) {
    int f = 1;
    printf("{");
    json_kv_str(stdout, &f, "result", "ok");
    json_kv_str(stdout, &f, "key", p->key);
    json_kv_str(stdout, &f, "outcome", kc_lookup_outcome_name((kc_lookup_outcome)p->outcome));
    json_kv_str(stdout, &f, "target", p->target);
    json_kv_str(stdout, &f, "format", p->is_ptx ? "ptx" : "cubin");
    json_kv_u64(stdout, &f, "image_bytes", p->len);
    if (out) json_kv_str(stdout, &f, "output", out);
    json_kv_f64(stdout, &f, "compile_seconds", p->compile_seconds);
    json_kv_str(stdout, &f, "log", p->log);
    printf(", \"names\": [");
    for (size_t i = 0; i < p->nnames; i++) {
        int g = 1;
        printf("%s{", i ? ", " : "");
        json_kv_str(stdout, &g, "name", p->names[i]);
        json_kv_str(stdout, &g, "lowered", p->lowered_names[i]);
        printf(", \"params\": [");
        for (size_t j = 0; j < p->nparams[i]; j++) {
            int h = 1;
            const kc_param_info *q = &p->params[i][j];
            printf("%s{", j ? ", " : "");
            json_kv_u64(stdout, &h, "offset", q->offset);
            json_kv_u64(stdout, &h, "size", q->size);
            json_kv_u64(stdout, &h, "align", q->align);
            json_kv_str(stdout, &h, "class", q->cls);
            printf("}");
        }
        printf("]}");
    }
    printf("]}\n");
}

static void print_program_text(const kc_program *p, const char *out) {
    static char a[4 * 4096 + 1], b[4 * 4096 + 1];
    printf("key       %s\n", p->key);
    printf("outcome   %s\n", kc_lookup_outcome_name((kc_lookup_outcome)p->outcome));
    printf("target    %s\n", p->target);
    printf("image     %zu bytes (%s)%s%s\n", p->len, p->is_ptx ? "ptx" : "cubin", out ? ", written to " : "",
           out ? cli_shown(out, a, sizeof a) : "");
    for (size_t i = 0; i < p->nnames; i++) {
        printf("name      %s -> %s (", cli_shown(p->names[i], a, sizeof a),
               cli_shown(p->lowered_names[i], b, sizeof b));
        for (size_t j = 0; j < p->nparams[i]; j++)
            printf("%s%u+%u %s", j ? ", " : "", p->params[i][j].offset, p->params[i][j].size, p->params[i][j].cls);
        printf(")\n");
    }
    if (p->log[0]) printf("log       %s\n", cli_shown(p->log, a, sizeof a));
}

static void print_failure_json(const char *target) {
    const kc_error *e = kc_error_last();
    int f = 1;
    printf("{");
    json_kv_str(stdout, &f, "result", "failed");
    json_kv_str(stdout, &f, "target", target);
    json_kv_str(stdout, &f, "status", kc_status_str(e->code));
    json_kv_str(stdout, &f, "error", e->message);
    printf("}\n");
}

/* The image to OUT; 0 or the exit code. */
static int write_image(const kc_program *p, const char *out) {
    FILE *f = fopen(out, "wb");
    int ok = f && fwrite(p->image, 1, p->len, f) == p->len;
    if (f && fclose(f) != 0) ok = 0;
    if (ok) return 0;
    fprintf(stderr, "kcache compile: cannot write the image to '%s': %s\n", out, strerror(errno));
    return EXIT_PROBLEM;
}

/* The headers NAME=FILE read; 0 or the exit code. */
static int read_headers(const inputs *in, kc_header_src *h, char **texts) {
    for (size_t i = 0; i < in->nheaders; i++) {
        const char *eq = strchr(in->headers[i], '=');
        if (!eq || eq == in->headers[i] || !eq[1])
            return cli_usage_error(&cli_cmd_compile, "--header takes NAME=FILE", in->headers[i]);
        if (!(texts[i] = read_text(eq + 1, "header"))) return EXIT_PROBLEM;
        size_t n = (size_t)(eq - in->headers[i]);
        char *name = malloc(n + 1);
        if (!name) return EXIT_PROBLEM;
        memcpy(name, in->headers[i], n), name[n] = '\0';
        h[i].name = name, h[i].source = texts[i];
    }
    return 0;
}

static int run(const cli_settings *cs, const char *file, const inputs *in, const char *target, unsigned flags,
               const char *out, int json) {
    static kc_header_src h[MAX_REPEAT];
    static char *texts[MAX_REPEAT];
    char *source = read_text(file, "source");
    int rc = source ? read_headers(in, h, texts) : EXIT_PROBLEM;
    kc_cache *c = NULL;
    if (!rc && cli_open_cache(cs, &c) != KC_OK) rc = cli_fail("cannot open the cache");
    kc_program *p = NULL;
    if (!rc) {
        kc_kernel_src k = KC_KERNEL_SRC_INIT;
        k.file = file, k.source = source, k.headers = h, k.nheaders = in->nheaders;
        k.options = in->options, k.noptions = in->noptions, k.flags = flags;
        if (kc_cache_compile(c, &k, in->names, in->nnames, target, &p) != KC_OK) {
            if (json) print_failure_json(target);
            rc = cli_fail(file);
        }
    }
    if (!rc && out) rc = write_image(p, out);
    if (!rc) json ? print_program_json(p, out) : print_program_text(p, out);
    kc_program_free(p);
    kc_cache_close(c);
    for (size_t i = 0; i < in->nheaders; i++) free((char *)h[i].name), free(texts[i]);
    free(source);
    return rc;
}

static int cmd_compile(const cli_settings *cs, int argc, char **argv) {
    const cli_cmd *c0 = &cli_cmd_compile;
    cli_args a;
    cli_parse(c0, argc, argv, 2, &a);
    if (a.npos != 1) return cli_usage_error(c0, a.npos ? "one source file at a time" : "name a source file", a.pos[1]);
    static inputs in;
    int rc = collect(argc, argv, &in);
    if (rc) return rc;
    const char *target = cli_arg(&a, "target");
    if (!in.nnames) return cli_usage_error(c0, "name a kernel: --name EXPR", NULL);
    if (!target || !*target)
        return cli_usage_error(c0, "name the target: --target sm_90 (or compute_90 for PTX)", NULL);
    return run(cs, a.pos[0], &in, target, cli_flag(&a, "toolkit-headers") ? KC_KERNEL_TOOLKIT_HEADERS : 0u,
               cli_arg(&a, "output"), cli_flag(&a, "json"));
}
