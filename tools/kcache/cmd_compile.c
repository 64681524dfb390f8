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
#include <fcntl.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

static int cmd_compile(const cli_settings *cs, int argc, char **argv);

static const cli_opt compile_opts[] = {
    {"name", 'n', "EXPR", "a kernel's name expression (\"k\", \"f<float>\"); repeatable, one at least"},
    {"target", 't', "TARGET", "sm_XY, sm_XYa (a cubin) or compute_XY (PTX)"},
    {"option", 0, "OPT", "an NVRTC option (\"-DN=4\", \"--use_fast_math\"); repeatable"},
    {"header", 0, "NAME=FILE", "serve FILE's text when the source includes NAME; repeatable"},
    {"toolkit-headers", 0, NULL, "the source may include the CUDA toolkit's headers"},
    {"file-name", 0, "NAME", "the source's file name as the key holds it (default none, as C's and Python's)"},
    {"output", 'o', "OUT", "write the image (cubin, or PTX text) to OUT"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

const cli_cmd cli_cmd_compile = {
    "compile",
    "kcache compile FILE.cu --name EXPR [--name EXPR...] --target TARGET [--option OPT...] [--header NAME=FILE...] "
    "[--toolkit-headers] [--file-name NAME] [-o OUT] [--json]",
    "Compile one CUDA source through the cache, as kc_cache_compile does: under the key a graph's\n"
    "compile unit of the same source, options, name expressions and target has, found stored\n"
    "(locally or in the remote) or compiled by NVRTC and stored.  Prints the key, where it came\n"
    "from (memory, disk, remote, compile; bypass for a source that reads the clock, which is\n"
    "compiled and never stored), the target, each name expression with its lowered symbol and\n"
    "parameter table, and the image's size; -o OUT writes the image.  No GPU is needed.  The key does\n"
    "not hold how FILE is spelled: as kc_cache_compile with kc_kernel_src.file NULL and Python's\n"
    "cache.compile(source, ...) without file=, unless --file-name NAME gives the name (what\n"
    "__FILE__ and NVRTC's messages say).  A must-hit\n"
    "cache (KCACHE_REQUIRE_HIT) refuses to compile what is not stored.  A failure is said on\n"
    "stderr with its status (an NVRTC log whole); with --json, also as an object on stdout\n"
    "(\"result\": \"failed\", \"status\", \"error\").",
    cmd_compile,
    compile_opts,
    CLI_OPERANDS_FILES};

#define MAX_FILE (64u << 20)
#define MAX_REPEAT 256

/* Why the command failed after parsing: a library error's status and message, or the command's own
 * (a file it could not read or write): said on stderr with its status, and by --json's object. */
static struct {
    int status;
    char msg[4600];
} failure;

__attribute__((format(printf, 2, 3))) static int fail_with(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    failure.status = status;
    vsnprintf(failure.msg, sizeof failure.msg, fmt, ap);
    va_end(ap);
    return EXIT_PROBLEM;
}

/* The library's last error, after `what` when not NULL. */
static int fail_lib(const char *what) {
    const kc_error *e = kc_error_last();
    return fail_with(e->code ? e->code : KC_EIO, "%s%s%s", what ? what : "", what ? ": " : "",
                     e->message[0] ? e->message : "failed");
}

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

/*
 * A text file whole: a regular file (opened without waiting: a FIFO, device, socket or folder is
 * refused before any read, never waited on), at most MAX_FILE (refused by its size before reading),
 * no NUL inside (a C string is what NVRTC and the key take).  The library's discipline for the
 * files a user names (kc_fs_read_input: specs, manifests, bundles), here because the tool sees the
 * public API only.  NULL with `failure` saying why.
 */
static char *read_text(const char *path, const char *what) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fail_with(KC_EIO, "cannot open %s '%s': %s", what, path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *b = NULL;
    size_t len = 0;
    int rc = 0;
    if (fstat(fd, &st) != 0) rc = fail_with(KC_EIO, "cannot read %s '%s': %s", what, path, strerror(errno));
    else if (!S_ISREG(st.st_mode)) rc = fail_with(KC_EINVAL, "%s '%s' is not a regular file", what, path);
    else if ((uint64_t)st.st_size > MAX_FILE)
        rc = fail_with(KC_EINVAL, "%s '%s' is %lld bytes, over the cap of 64 MiB", what, path, (long long)st.st_size);
    /* Read to the end, not to st_size: a file that says 0 bytes may have more (/proc, some FUSE). */
    size_t cap = rc ? 0 : (size_t)st.st_size + 2; /* the text, its NUL, and room to see the end */
    while (!rc) {
        if (len + 1 >= cap || !b) {
            char *nb = len + 1 >= cap ? realloc(b, cap *= 2) : malloc(cap);
            if (!nb) rc = fail_with(KC_ENOMEM, "%s '%s': out of memory", what, path);
            else b = nb;
            if (rc) break;
        }
        ssize_t r = read(fd, b + len, cap - 1 - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) rc = fail_with(KC_EIO, "cannot read %s '%s': %s", what, path, strerror(errno));
        if (r <= 0) break;
        if ((len += (size_t)r) > MAX_FILE) rc = fail_with(KC_EINVAL, "%s '%s' is over the cap of 64 MiB", what, path);
    }
    close(fd);
    if (!rc && memchr(b, 0, len)) rc = fail_with(KC_EINVAL, "%s '%s': a NUL byte inside (not a text file)", what, path);
    if (rc) {
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
    int f = 1;
    printf("{");
    json_kv_str(stdout, &f, "result", "failed");
    json_kv_str(stdout, &f, "target", target);
    json_kv_str(stdout, &f, "status", kc_status_str(failure.status));
    json_kv_str(stdout, &f, "error", failure.msg);
    printf("}\n");
}

/* The image to OUT; 0 or the exit code. */
static int write_image(const kc_program *p, const char *out) {
    FILE *f = fopen(out, "wb");
    int ok = f && fwrite(p->image, 1, p->len, f) == p->len;
    if (f && fclose(f) != 0) ok = 0;
    if (ok) return 0;
    return fail_with(KC_EIO, "cannot write the image to '%s': %s", out, strerror(errno));
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
        if (!name) return fail_with(KC_ENOMEM, "out of memory");
        memcpy(name, in->headers[i], n), name[n] = '\0';
        h[i].name = name, h[i].source = texts[i];
    }
    return 0;
}

/* Every failure after parsing: said on stderr with its status, and with --json as the object too. */
static int run(const cli_settings *cs, const char *file, const inputs *in, const char *target, unsigned flags,
               const char *const outs[2], int json) {
    static kc_header_src h[MAX_REPEAT];
    static char *texts[MAX_REPEAT];
    const char *out = outs[0], *file_name = outs[1];
    char *source = read_text(file, "source");
    int rc = source ? read_headers(in, h, texts) : EXIT_PROBLEM;
    kc_cache *c = NULL;
    if (!rc && cli_open_cache(cs, &c) != KC_OK) rc = fail_lib("cannot open the cache");
    kc_program *p = NULL;
    if (!rc) {
        kc_kernel_src k = KC_KERNEL_SRC_INIT; /* file NULL unless named: the key C and Python give by default */
        k.file = file_name, k.source = source, k.headers = h, k.nheaders = in->nheaders;
        k.options = in->options, k.noptions = in->noptions, k.flags = flags;
        rc = kc_cache_compile(c, &k, in->names, in->nnames, target, &p) != KC_OK ? fail_lib(NULL) : 0;
    }
    if (!rc && out) rc = write_image(p, out);
    if (rc == EXIT_PROBLEM) {
        if (json) print_failure_json(target);
        fputs("kcache: ", stderr);
        cli_put_shown(stderr, file, 0);
        fputs(": ", stderr);
        cli_put_shown(stderr, failure.msg, 1);
        fprintf(stderr, " (%s)\n", kc_status_str(failure.status));
        /* NVRTC's name for a source whose key holds none: its log's lines "kernel.cu(LINE): …" */
        if ((!file_name || !*file_name) && failure.status == KC_ECOMPILE && strstr(failure.msg, "kernel.cu(")) {
            fputs("kcache: 'kernel.cu' above is ", stderr);
            cli_put_shown(stderr, file, 0);
            fputs(" (the key holds no file name; --file-name NAME gives NVRTC and __FILE__ one)\n", stderr);
        }
    }
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
    const char *outs[2] = {cli_arg(&a, "output"), cli_arg(&a, "file-name")};
    return run(cs, a.pos[0], &in, target, cli_flag(&a, "toolkit-headers") ? KC_KERNEL_TOOLKIT_HEADERS : 0u, outs,
               cli_flag(&a, "json"));
}
