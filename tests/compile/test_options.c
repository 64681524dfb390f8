/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_options.c — options, includes and cacheability (options.c), with the real NVRTC:
 * no folder is searched (a header in the working directory or beside a named file is not
 * found, and the error says how to provide it); a listed header wins over the disk and,
 * edited, changes the graph key (the stale-header reproducer); options reach NVRTC
 * as written (["-DX","-UX","-DX"] defines X; --device-debug, --relocatable-device-code=true,
 * --pre-include accepted); the key form keeps order, repeats and dashes and joins only the
 * proven "-opt" "value" spellings; refusals (target, include folders, pre-includes not in
 * memory, options that read or write files, include_digest) give the reason; the
 * __DATE__/__TIME__/__TIMESTAMP__ bypass sees through splices, raw strings and token
 * pasting, and computed or absolute includes bypass.  Needs NVRTC (it comes with the
 * machine), not a GPU.
 */
#include "helpers.h"

#include "common/internal.h"
#include "compile/elf.h"
#include "kcache.h"

#define NOPTS(a) (sizeof(a) / sizeof((a)[0]))

static kc_kernel_src src_of(const char *file, const char *source, const kc_header_src *h, size_t nh,
                            const char *const *opts, size_t no) {
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, file, source, "k", h, nh, opts, no, NULL, 0};
    return k;
}

static char *normalized(const kc_kernel_src *k) {
    char *n = NULL;
    if (kc_options_normalize(k, &n) != KC_OK) fail_msg("normalize: %s", kc_error_last()->message);
    return n;
}

static int compile(const kc_kernel_src *k, const char *target, kc_compiled **out) {
    kc_compiled *c = NULL;
    int rc = kc_compile_kernel(k, target, &c);
    if (out) *out = c;
    else kc_compiled_free(c);
    return rc;
}

static void must_compile(const kc_kernel_src *k, const char *target) {
    if (compile(k, target, NULL) != KC_OK) fail_msg("%s: %s", target, kc_error_last()->message);
}

static int toolkit_present(void) {
    char id[33];
    return kc_toolkit_headers_id(id) == KC_OK;
}

/* Run f with the working directory set to dir, then go back. */
static void in_dir(const char *dir, void (*f)(const char *dir)) {
    char back[4096];
    assert_non_null(getcwd(back, sizeof back));
    assert_int_equal(chdir(dir), 0);
    f(dir);
    assert_int_equal(chdir(back), 0);
}

static const char *SCALE_SRC = "#include \"scale.cuh\"\n"
                               "extern \"C\" __global__ void k(float *x, int n) { if (n) x[0] *= SCALE; }\n";

/* ---- 1. NVRTC searches no folder ---- */

static void unlisted_header_is_not_found(const char *dir) {
    /* A relative program name: before -no-source-include, NVRTC found scale.cuh here. */
    kc_kernel_src k = src_of("k.cu", SCALE_SRC, NULL, 0, NULL, 0);
    assert_int_equal(compile(&k, "sm_90", NULL), KC_ECOMPILE);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "\"scale.cuh\"") || !strstr(m, "k.cu:1") || !strstr(m, "\"headers\"") ||
        !strstr(m, "\"toolkit_headers\": true"))
        fail_msg("the error does not name the header and say how to provide it: %s", m);
    /* A named file: the header beside it is not found either. */
    char named[600];
    snprintf(named, sizeof named, "%s/k.cu", dir);
    k.file = named;
    assert_int_equal(compile(&k, "sm_90", NULL), KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "\"scale.cuh\""));
    /* Listed, the header in memory is the one compiled (the disk says 2.0f). */
    kc_header_src h = {"scale.cuh", "#define SCALE 3.0f\n"};
    const char *src = "#include \"scale.cuh\"\nstatic_assert(SCALE == 3.0f, \"the header in memory\");\n"
                      "extern \"C\" __global__ void k(float *x, int n) { if (n) x[0] *= SCALE; }\n";
    kc_kernel_src l = src_of("k.cu", src, &h, 1, NULL, 0);
    must_compile(&l, "sm_90");
    l.file = named;
    must_compile(&l, "compute_80");
}

static void test_no_folder_is_searched(void **state) {
    (void)state;
    char *dir = kct_tmpdir("opts");
    char p[600];
    snprintf(p, sizeof p, "%s/scale.cuh", dir);
    assert_int_equal(kct_write(p, "#define SCALE 2.0f\n", 19), 0);
    in_dir(dir, unlisted_header_is_not_found);
    kct_rmtree(dir);
    free(dir);
}

static void test_missing_header_messages(void **state) {
    (void)state;
    /* Included from a listed header: the place is that header's line. */
    kc_header_src h = {"a.cuh", "// a\n#include \"nope.cuh\"\n"};
    kc_kernel_src k = src_of("k.cu", "#include \"a.cuh\"\nextern \"C\" __global__ void k() {}\n", &h, 1, NULL, 0);
    assert_int_equal(compile(&k, "sm_90", NULL), KC_ECOMPILE);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "a.cuh:2 includes \"nope.cuh\"") || !strstr(m, "toolkit_headers")) fail_msg("%s", m);
    /* <angle> includes are headers like any other. */
    k = src_of("k.cu", "#include <cuda_fp16.h>\nextern \"C\" __global__ void k() {}\n", NULL, 0, NULL, 0);
    assert_int_equal(compile(&k, "sm_90", NULL), KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "\"cuda_fp16.h\""));
    assert_non_null(strstr(kc_error_last()->message, "\"toolkit_headers\": true"));
    if (!toolkit_present()) return;
    /* A toolkit kernel: the header is not the toolkit's either. */
    k.source = "#include \"nope.cuh\"\nextern \"C\" __global__ void k() {}\n";
    k.flags = KC_KERNEL_TOOLKIT_HEADERS;
    assert_int_equal(compile(&k, "sm_90", NULL), KC_ECOMPILE);
    m = kc_error_last()->message;
    if (!strstr(m, "\"nope.cuh\"") || !strstr(m, "not one of the CUDA toolkit's headers")) fail_msg("%s", m);
}

static void test_files_by_path_are_refused(void **state) {
    (void)state;
    char *dir = kct_tmpdir("opts");
    char p[600], src[1400];
    snprintf(p, sizeof p, "%s/scale.cuh", dir);
    assert_int_equal(kct_write(p, "#define SCALE 2.0f\n", 19), 0);
    /* NVRTC opens an absolute path even with -no-source-include: refused before compiling. */
    snprintf(src, sizeof src, "#include \"%s\"\nextern \"C\" __global__ void k(float *x) { x[0] *= SCALE; }\n", p);
    kc_kernel_src k = src_of("k.cu", src, NULL, 0, NULL, 0);
    assert_int_equal(compile(&k, "sm_90", NULL), KC_ECOMPILE);
    const char *m = kc_error_last()->message;
    if (!strstr(m, p) || !strstr(m, "absolute path") || !strstr(m, "\"headers\"")) fail_msg("%s", m);
    snprintf(src, sizeof src, "#if __has_include(<%s>)\n#endif\nextern \"C\" __global__ void k() {}\n", p);
    assert_int_equal(compile(&k, "sm_90", NULL), KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "__has_include"));
    /* In a listed header too. */
    kc_header_src h = {"a.cuh", src};
    kc_kernel_src ka = src_of("k.cu", "#include \"a.cuh\"\n", &h, 1, NULL, 0);
    assert_int_equal(compile(&ka, "sm_90", NULL), KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "header a.cuh"));
    /* A header given in memory under that absolute name is found in memory: fine. */
    kc_header_src mem = {p, "#define SCALE 3.0f\n"};
    snprintf(src, sizeof src,
             "#include \"%s\"\nstatic_assert(SCALE == 3.0f, \"in memory\");\n"
             "extern \"C\" __global__ void k(float *x) { x[0] *= SCALE; }\n",
             p);
    kc_kernel_src km = src_of("k.cu", src, &mem, 1, NULL, 0);
    must_compile(&km, "sm_90");
    assert_int_equal(kc_kernel_cacheable(&km, NULL), 1);
    if (toolkit_present()) { /* with an include folder, ".." could climb out of it */
        kc_kernel_src kt = src_of("k.cu", "#include \"../include/cuda_fp16.h\"\nextern \"C\" __global__ void k() {}\n",
                                  NULL, 0, NULL, 0);
        kt.flags = KC_KERNEL_TOOLKIT_HEADERS;
        assert_int_equal(compile(&kt, "sm_90", NULL), KC_ECOMPILE);
        assert_non_null(strstr(kc_error_last()->message, "'..'"));
    }
    kct_rmtree(dir);
    free(dir);
}

/* ---- 2. options as written ---- */

#define PLAIN_K "extern \"C\" __global__ void k(float *x) { x[0] = 1; }\n"
static const char *PLAIN = PLAIN_K;
static const char *NEEDS_X = "#ifndef X\n#error X is not defined\n#endif\n" PLAIN_K;

static void test_options_reach_nvrtc_as_written(void **state) {
    (void)state;
    const char *dud[] = {"-DX", "-UX", "-DX"}, *dd_u[] = {"-DX", "-DX", "-UX"}, *du[] = {"-DX", "-UX"};
    kc_kernel_src a = src_of("x.cu", NEEDS_X, NULL, 0, dud, 3);
    must_compile(&a, "sm_90"); /* NVRTC given the original: X is defined */
    kc_kernel_src b = src_of("x.cu", NEEDS_X, NULL, 0, dd_u, 3);
    assert_int_equal(compile(&b, "sm_90", NULL), KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "X is not defined"));
    kc_kernel_src c = src_of("x.cu", NEEDS_X, NULL, 0, du, 2);
    char *na = normalized(&a), *nb = normalized(&b), *nc = normalized(&c);
    assert_string_equal(na, "-DX\n-UX\n-DX\n"); /* order and repeats kept */
    assert_string_equal(nb, "-DX\n-DX\n-UX\n");
    assert_string_equal(nc, "-DX\n-UX\n"); /* what deduplication made of a: another key now */
    assert_string_not_equal(na, nc);
    free(na), free(nb), free(nc);
}

static void test_long_options_are_accepted(void **state) {
    (void)state;
    kc_header_src pre = {"pre.h", "#define X 1\n"};
    const char *sets[][3] = {{"--device-debug"},
                             {"-G"},
                             {"--relocatable-device-code=true"},
                             {"-rdc=true"},
                             {"--relocatable-device-code", "true"},
                             {"-dc"},
                             {"--pre-include=pre.h"},
                             {"-include", "pre.h"},
                             {"--dopt=on", "-G"},
                             {"--use_fast_math"},
                             {"-Xptxas", "-O1"},
                             {"--maxrregcount", "32"},
                             {"-time=-"},
                             {"--std=c++17", "-DX"}};
    for (size_t s = 0; s < NOPTS(sets); s++) {
        size_t n = 0;
        while (n < 3 && sets[s][n]) n++;
        const char *const *o = sets[s];
        /* A pre-include of pre.h (which defines X) or -DX: the kernel needs X, so it proves the option worked. */
        int x = strstr(sets[s][0], "include") || strcmp(sets[s][n - 1], "-DX") == 0;
        kc_kernel_src k = src_of("x.cu", x ? NEEDS_X : PLAIN, &pre, 1, o, n);
        char *norm = normalized(&k);
        if (strncmp(norm, sets[s][0], strlen(sets[s][0])) != 0) fail_msg("'%s' became '%s'", sets[s][0], norm);
        free(norm);
        kc_compiled *c;
        if (compile(&k, "sm_90", &c) != KC_OK) fail_msg("%s: %s", sets[s][0], kc_error_last()->message);
        assert_int_equal(kc_elf_has_function(c->image, c->len, "k"), 1);
        if (strstr(sets[s][0], "relocatable") || strstr(sets[s][0], "rdc") || strcmp(sets[s][0], "-dc") == 0)
            assert_int_equal(kc_rd_u16(c->image + 16), 1); /* ET_REL: NVRTC's relocatable cubin, stored as made */
        kc_compiled_free(c);
        must_compile(&k, "compute_80");
    }
    /* -G is debug code: not the same machine code as without it. */
    const char *g[] = {"--device-debug"};
    kc_kernel_src plain = src_of("x.cu", PLAIN, NULL, 0, NULL, 0), dbg = src_of("x.cu", PLAIN, NULL, 0, g, 1);
    kc_compiled *c1, *c2;
    assert_int_equal(compile(&plain, "sm_90", &c1), KC_OK);
    assert_int_equal(compile(&dbg, "sm_90", &c2), KC_OK);
    assert_true(c1->len != c2->len || memcmp(c1->image, c2->image, c1->len) != 0);
    kc_compiled_free(c1), kc_compiled_free(c2);
}

static void test_key_form_spellings(void **state) {
    (void)state;
    kc_header_src pre = {"pre.h", "\n"};
    struct {
        const char *o[3];
        const char *want;
    } cases[] = {
        {{"--maxrregcount", "32"}, "--maxrregcount=32\n"}, /* NVRTC reads the pair as one: joined */
        {{"--maxrregcount=32"}, "--maxrregcount=32\n"},
        {{"-maxrregcount=32"}, "-maxrregcount=32\n"}, /* dashes as written: no alias made one */
        {{" -G\t", "-DY=1 "}, "-G\n-DY=1\n"},         /* NVRTC trims each argument */
        {{"-std", "c++17"}, "-std\nc++17\n"},         /* NVRTC rejects this pair: not joined */
        {{"-D", "X"}, "-D\nX\n"},                     /* single letter: not joined */
        {{"-include", " pre.h "}, "-include=pre.h\n"},
        {{"-Xptxas", "-O1"}, "-Xptxas=-O1\n"},              /* -Xptxas values start with '-' */
        {{"--maxrregcount", "-G"}, "--maxrregcount\n-G\n"}, /* a value starting with '-': not joined */
        {{"-default-device", "--device-as-default-execution-space"},
         "-default-device\n--device-as-default-execution-space\n"},
    };
    for (size_t i = 0; i < NOPTS(cases); i++) {
        size_t n = 0;
        while (n < 3 && cases[i].o[n]) n++;
        kc_kernel_src k = src_of("x.cu", "", &pre, 1, cases[i].o, n);
        char *got = normalized(&k);
        if (strcmp(got, cases[i].want) != 0) fail_msg("case %zu: '%s', want '%s'", i, got, cases[i].want);
        free(got);
    }
    /* The one canonicalisation that matters for machine code, proven: the same cubin. */
    const char *split[] = {"--maxrregcount", "32"}, *joined[] = {"--maxrregcount=32"};
    const char *src = "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = sqrtf(x[threadIdx.x]); }\n";
    kc_kernel_src a = src_of("x.cu", src, NULL, 0, split, 2), b = src_of("x.cu", src, NULL, 0, joined, 1);
    kc_compiled *ca, *cb;
    assert_int_equal(compile(&a, "sm_90", &ca), KC_OK);
    assert_int_equal(compile(&b, "sm_90", &cb), KC_OK);
    assert_int_equal(ca->len, cb->len);
    assert_memory_equal(ca->image, cb->image, ca->len);
    kc_compiled_free(ca), kc_compiled_free(cb);
}

/* ---- 3. refusals ---- */

static void test_refusals_say_why(void **state) {
    (void)state;
    kc_header_src pre[] = {{"pre.h", "\n"}, {"/abs/in/memory.h", "\n"}};
    struct {
        const char *o[3];
        unsigned flags;
        const char *want;
    } cases[] = {
        {{"-arch=sm_80"}, 0, "variant"},
        {{"--gpu-architecture=sm_80"}, 0, "variant"},
        {{"-arch", "sm_90"}, 0, "variant"},
        {{"-code=sm_80"}, 0, "variant"},
        {{"--gpu-code", "sm_80"}, 0, "variant"},
        {{"-I/usr/include"}, 0, "include folder"},
        {{"-I", "/usr/include"}, 0, "include folder"},
        {{"-I /usr/include"}, 0, "include folder"},
        {{"-I=/usr/include"}, 0, "include folder"},
        {{"--include-path=/usr/include"}, 0, "include folder"},
        {{"--include-path", "/usr/include"}, 0, "include folder"},
        {{"-Idir"}, KC_KERNEL_TOOLKIT_HEADERS, "toolkit_headers"},
        {{"-include=/etc/pre.h"}, 0, "in memory"},
        {{"--pre-include=other.h"}, 0, "list \"other.h\""},
        {{"-include"}, 0, "-include=NAME"},
        {{"-include", "-G"}, 0, "-include=NAME"},
        {{"-include=cuda_fp16.h"}, KC_KERNEL_TOOLKIT_HEADERS, "working directory first"},
        {{"-time=/tmp/times.csv"}, 0, "file"},
        {{"--fdevice-time-trace=/tmp/t.json"}, 0, "trace file"},
        {{"-pch"}, 0, "precompiled"},
        {{"--create-pch=x.pch"}, 0, "precompiled"},
        {{"--use-pch=x.pch"}, 0, "precompiled"},
        {{"--pch-dir=/tmp"}, 0, "precompiled"},
        {{"-dlto"}, 0, "LTO"},
        {{"--dlink-time-opt"}, 0, "LTO"},
        {{"--optix-ir"}, 0, "OptiX"},
        {{"-fdevice-syntax-only"}, 0, "no device code"},
        {{"-Xptxas=--options-file=/tmp/o"}, 0, "options file"},
        {{"-Xptxas", "-optf=/tmp/o"}, 0, "options file"},
        {{"--ptxas-options=-o=/tmp/x"}, 0, "write"},
        {{"-Xptxas", "--gpu-name=sm_90"}, 0, "variant"},
        {{"-Xptxas=-arch=sm_90"}, 0, "variant"},
        {{"-G", NULL}, 0, NULL},
    };
    for (size_t i = 0; i < NOPTS(cases); i++) {
        size_t n = 0;
        while (n < 3 && cases[i].o[n]) n++;
        kc_kernel_src k = src_of("x.cu", "", pre, 2, cases[i].o, n);
        k.flags = cases[i].flags;
        char *out = NULL;
        int rc = kc_options_normalize(&k, &out);
        if (!cases[i].want) {
            assert_int_equal(rc, KC_OK);
            free(out);
            continue;
        }
        if (rc != KC_EINVAL) fail_msg("case %zu ('%s') was accepted", i, cases[i].o[0]);
        const char *m = kc_error_last()->message;
        if (!strstr(m, cases[i].want) || !strstr(m, cases[i].o[0]))
            fail_msg("case %zu: '%s' lacks '%s'", i, m, cases[i].want);
    }
    /* Allowed: a listed header pre-included (any name, absolute too), timing into the log, ptxas code options. */
    const char *ok[][2] = {
        {"-include=pre.h"}, {"-include=/abs/in/memory.h"}, {"-time=-"}, {"-Xptxas=-v"}, {"-Xptxas", "-O3"}};
    for (size_t i = 0; i < NOPTS(ok); i++) {
        kc_kernel_src k = src_of("x.cu", "", pre, 2, ok[i], ok[i][1] ? 2 : 1);
        char *out = NULL;
        if (kc_options_normalize(&k, &out) != KC_OK) fail_msg("'%s' refused: %s", ok[i][0], kc_error_last()->message);
        free(out);
    }
    /* include_digest: no longer trusted. */
    kc_kernel_src k = src_of("x.cu", "", NULL, 0, NULL, 0);
    k.include_digest = "0123abcd";
    char *out = NULL;
    assert_int_equal(kc_options_normalize(&k, &out), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "include_digest is no longer accepted"));
    /* The description says which kernel of which graph. */
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "g"), KC_OK);
    const char *inc[] = {"-include", "/etc/passwd"};
    k = src_of("x.cu", "extern \"C\" __global__ void k() {}\n", NULL, 0, inc, 2);
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "graph 'g', kernel 'k'"));
    kc_graph_desc_free(d);
}

/* ---- 4. cacheability ---- */

static void test_bypass_sees_through_spellings(void **state) {
    (void)state;
    kc_header_src hdr = {"h.cuh", "#define WHEN __TIMESTAMP__\n"};
    struct {
        const char *src;
        const char *opt;
        const char *name;
        const char *want;
    } bypass[] = {
        {"const char *t = __TI\\\nME__;", NULL, NULL, "uses __TIME__"},                      /* a line splice */
        {"const char *t = __TI\\\r\nME__;", NULL, NULL, "uses __TIME__"},                    /* CR-LF */
        {"const char *t = _\\\n_DA\\\n\\\nTE__;", NULL, NULL, "uses __DATE__"},              /* several */
        {"#define T0 __TI ## ME__\nconst char *t = T0;", NULL, NULL, "pasting"},             /* ## directly */
        {"#define CAT(a, b) a##b\nconst char *t = CAT(__TI, ME__);", NULL, NULL, "pasting"}, /* a pasting macro */
        {"#define CAT(a, b) a %:%: b\nconst char *t = CAT(__DA, TE__);", NULL, NULL, "__DATE__ by token pasting"},
        {"#define CAT(a, b) a##b\nconst char *t = CAT(__TIMES, TAMP__);", NULL, NULL, "__TIMESTAMP__ by token pasting"},
        {"#define CAT(a,b) a##b\n#define C2(a,b) CAT(a,b)\nconst char *t = C2(A, B);", "-DA=__TI", NULL, "pasting"},
        {"__location__(TIME) int v;", NULL, NULL, "pasting"},                     /* NVRTC's own __##a##__ */
        {"const char *t = _NV_CONCAT_EVAL1(__TI, ME__);", NULL, NULL, "pasting"}, /* NVRTC's own, no ## here */
        {"int f(int); int v = f(__TIME/**/__);", NULL, NULL, "pasting"},          /* in parentheses: could be pasted */
        {"#define OPEN CAT(\nconst char *t = OPEN __TI, ME__);", NULL, NULL, "pasting"}, /* a macro opened it */
        {"const char *t = WHEN;", "-DWHEN=__TIME__", NULL, "an option uses __TIME__"},
        {"template <int N> __global__ void f() {}", NULL, "f<sizeof(__DATE__)>", "entry name uses __DATE__"},
        {"const char *s = R\"x(\")x\" __TIME__;", NULL, NULL, "uses __TIME__"}, /* a quote in a raw string */
        {"const char *s = u8R\"(a\\)\" __TIME__;", NULL, NULL, "uses __TIME__"},
        {"int n = 1'000; const char *t = __TIME__; char c = 'a';", NULL, NULL, "uses __TIME__"}, /* digit separator */
        {"#include \"h.cuh\"\nconst char *t = WHEN;", NULL, NULL, "a header uses __TIMESTAMP__"},
        {"#define H \"x.cuh\"\n#include H\n", NULL, NULL, "computed name"},
        {"#if __has_include(H)\n#endif\n", NULL, NULL, "__has_include with a computed name"},
        {"#define HAS __has_include\n", NULL, NULL, "__has_include with a computed name"},
        {"# /* c */ include \"/etc/x.h\"\n", NULL, NULL, "absolute path"},
        {"#if __has_include(\"/etc/hostname\")\n#endif\n", NULL, NULL, "absolute path"},
    };
    for (size_t i = 0; i < NOPTS(bypass); i++) {
        const char *o[] = {bypass[i].opt, "-DB=ME__"};
        kc_kernel_src k = src_of("t.cu", bypass[i].src, &hdr, strstr(bypass[i].src, "h.cuh") ? 1 : 0, o,
                                 bypass[i].opt ? 2 : 0);
        if (bypass[i].name) k.name = bypass[i].name;
        const char *why = NULL;
        if (kc_kernel_cacheable(&k, &why) != 0) fail_msg("case %zu was cacheable: %s", i, bypass[i].src);
        if (!strstr(why, bypass[i].want)) fail_msg("case %zu: reason '%s' lacks '%s'", i, why, bypass[i].want);
    }
    const char *cacheable[] = {
        "// __DATE__ in a comment\n__global__ void k() {}",
        "/* __TIME__ */ __global__ void k() { const char *s = \"__DATE__\"; }",
        "__global__ void k() { int MY__DATE__X = 0; }",
        "const char *t = __TIME/**/__;",              /* two tokens: not the macro (NVRTC agrees) */
        "const char *t = __TIM\\u0045__;",            /* another identifier for NVRTC */
        "// a comment \\\nconst char *t = __TIME__;", /* the splice continues the comment */
        "const char *s = \"\\\"__TIME__\";",
        "const char *s = R\"(__TIME__)\";",
        "#if defined(__has_include)\n#if __has_include(\"h.cuh\")\n#endif\n#endif\n",
        "#include \"../up.cuh\"\n", /* no include folder: NVRTC cannot climb anywhere */
        ("template <typename T> __global__ void k(T *x, int n) { for (int _ = 0; _ < n; _++) x[_] = T(); "
         "__syncthreads(); }\n#define CAT(a, b) a##b\n"),
    };
    for (size_t i = 0; i < NOPTS(cacheable); i++) {
        kc_kernel_src k = src_of("t.cu", cacheable[i], &hdr, 0, NULL, 0);
        const char *why = "unset";
        if (kc_kernel_cacheable(&k, &why) != 1) fail_msg("case %zu bypassed (%s): %s", i, why, cacheable[i]);
    }
    /* With the toolkit's include folder, ".." could leave it. */
    kc_kernel_src t = src_of("t.cu", "#include \"../up.cuh\"\n", NULL, 0, NULL, 0);
    t.flags = KC_KERNEL_TOOLKIT_HEADERS;
    const char *why = NULL;
    assert_int_equal(kc_kernel_cacheable(&t, &why), 0);
    assert_non_null(strstr(why, "'..'"));
}

/* The bypassed spellings really are the macro for NVRTC (a string of 8 characters and NUL),
 * and the comment-split one is not. */
static void test_nvrtc_agrees(void **state) {
    (void)state;
    const char *macro[] = {
        "static_assert(sizeof(__TI\\\nME__) == 9, \"\");\n",
        "#define CAT(a, b) a##b\nstatic_assert(sizeof(CAT(__TI, ME__)) == 9, \"\");\n",
        "#define CAT(a, b) a##b\n#define C2(a, b) CAT(a, b)\nstatic_assert(sizeof(C2(A, B)) == 9, \"\");\n",
    };
    const char *opts[] = {"-DA=__TI", "-DB=ME__"};
    for (size_t i = 0; i < NOPTS(macro); i++) {
        char src[512];
        snprintf(src, sizeof src, "%sextern \"C\" __global__ void k() {}\n", macro[i]);
        kc_kernel_src k = src_of("t.cu", src, NULL, 0, opts, 2);
        must_compile(&k, "sm_90");
        assert_int_equal(kc_kernel_cacheable(&k, NULL), 0);
    }
    kc_kernel_src k = src_of("t.cu", "const char *t = __TIME/**/__;\nextern \"C\" __global__ void k() {}\n", NULL, 0,
                             NULL, 0);
    assert_int_equal(compile(&k, "sm_90", NULL), KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "\"__TIME\" is undefined"));
}

/* ---- 5. the reproducer, through a graph description ---- */

static kc_graph_desc *scale_graph(const kc_header_src *h, size_t nh) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "scale"), KC_OK);
    kc_kernel_src k = src_of("k.cu", SCALE_SRC, h, nh, NULL, 0);
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[] = {"1", "1", "1"}, *block[] = {"1", "1", "1"}, *args[] = {"input:0", "e32:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    return d;
}

static void stale_header_reproducer(const char *dir) {
    char cdir[600];
    snprintf(cdir, sizeof cdir, "%s/cache", dir);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = cdir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *cache;
    assert_int_equal(kc_cache_open(&cache, &o), KC_OK);
    /* Unlisted, with scale.cuh in the working directory: an error that names it. */
    kc_graph_desc *d = scale_graph(NULL, 0);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_ECOMPILE);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "\"scale.cuh\"") || !strstr(m, "\"headers\"")) fail_msg("%s", m);
    kc_graph_desc_free(d);
    /* Listed: compiled and stored; edited: another key, a miss that compiles. */
    kc_header_src h = {"scale.cuh", "#define SCALE 2.0f\n"};
    d = scale_graph(&h, 1);
    kc_key k1, k2;
    assert_int_equal(kc_graph_key(d, &k1, NULL), KC_OK);
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_not_equal(info.source, KC_FROM_COMPILE); /* the same header: a hit */
    kc_graph_desc_free(d);
    h.source = "#define SCALE 3.0f\n";
    d = scale_graph(&h, 1);
    assert_int_equal(kc_graph_key(d, &k2, NULL), KC_OK);
    assert_memory_not_equal(k1.bytes, k2.bytes, sizeof k1.bytes);
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    kc_graph_desc_free(d);
    kc_cache_close(cache);
}

static void test_stale_header_reproducer(void **state) {
    (void)state;
    char *dir = kct_tmpdir("opts");
    char p[600];
    snprintf(p, sizeof p, "%s/scale.cuh", dir);
    assert_int_equal(kct_write(p, "#define SCALE 2.0f\n", 19), 0);
    in_dir(dir, stale_header_reproducer);
    kct_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_folder_is_searched),
        cmocka_unit_test(test_missing_header_messages),
        cmocka_unit_test(test_files_by_path_are_refused),
        cmocka_unit_test(test_options_reach_nvrtc_as_written),
        cmocka_unit_test(test_long_options_are_accepted),
        cmocka_unit_test(test_key_form_spellings),
        cmocka_unit_test(test_refusals_say_why),
        cmocka_unit_test(test_bypass_sees_through_spellings),
        cmocka_unit_test(test_nvrtc_agrees),
        cmocka_unit_test(test_stale_header_reproducer),
    };
    if (kc_nvrtc_available() != KC_OK) {
        fprintf(stderr, "test_options: %s\n", kc_error_last()->message);
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
