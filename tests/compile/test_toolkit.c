/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_toolkit.c — the toolkit's headers as a first-class input (src/compile/toolkit.c):
 * the digest is of contents and relative paths (a copy elsewhere is the same toolkit), any
 * change — a header edited in place with its mtime put back, a file added — changes it, the
 * memo across processes is used only while nothing changed, and a graph asking for the
 * toolkit's headers changes its key with them while one that does not is untouched.  Then
 * for real: a bf16 + cooperative-groups graph (kernels/rmsnorm_bf16.json) compiles for
 * sm_80, sm_90 and compute_80, and the kcache shims serve the standard headers NVRTC lacks.
 * Each digest is taken in a child process: the digest is memoised once per process.
 */
#include "helpers.h"

#include <dirent.h>
#include <sys/wait.h>

#include "common/internal.h"
#include "compile/toolkit.h"
#include "graph/graph_internal.h"
#include "kcache.h"

static char *tmp;

static int setup(void **state) {
    (void)state;
    tmp = kct_tmpdir("toolkit");
    return tmp ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    unsetenv("KCACHE_CUDA_INCLUDE");
    kct_rmtree(tmp);
    free(tmp);
    return 0;
}

static void put(const char *dir, const char *rel, const char *text) { assert_int_equal(kct_put(dir, rel, text), 0); }

/* A small fake toolkit include folder (cuda_fp16.h marks one). */
static void make_toolkit(const char *dir) {
    mkdir(dir, 0700);
    put(dir, "cuda_fp16.h", "// fp16\n");
    put(dir, "crt/host_defines.h", "#define X 1\n");
    put(dir, "cccl/cuda/std/version", "// version\n");
}

/* The standard headers the children serve: NULL the built-in ones, else another set (another build of kcache). */
static const kc_header_src *child_shims;
static size_t child_nshims;
/* Whether the children may write the memo (0: a read-only cache's). */
static int child_write_memo = 1;

/* In a child (the digest is memoised per process): the digest of KCACHE_CUDA_INCLUDE=inc. */
static int digest_in_child(const char *inc, const char *memo, char out[33]) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        setenv("KCACHE_CUDA_INCLUDE", inc, 1);
        kc_toolkit_shims_set_(child_shims, child_nshims);
        char d[33] = "";
        int rc = kc_toolkit_digest(memo, child_write_memo, d);
        char msg[64];
        snprintf(msg, sizeof msg, "%d %s", rc, d);
        ssize_t w = write(fd[1], msg, strlen(msg) + 1);
        _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    char buf[64] = "";
    ssize_t r = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (r <= 0) return -1;
    int rc;
    if (sscanf(buf, "%d %32s", &rc, out) < 1) return -1;
    if (rc != 0) out[0] = '\0';
    return rc;
}

static void test_digest_is_of_contents_and_paths(void **state) {
    (void)state;
    char a[4096], b[4096], d1[33], d2[33];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(b, sizeof b, "%s/elsewhere/b", tmp);
    make_toolkit(a);
    char parent[4096];
    snprintf(parent, sizeof parent, "%s/elsewhere", tmp);
    mkdir(parent, 0700);
    make_toolkit(b);
    assert_int_equal(digest_in_child(a, NULL, d1), 0);
    assert_int_equal(strlen(d1), 32);
    assert_int_equal(digest_in_child(a, NULL, d2), 0);
    assert_string_equal(d1, d2); /* stable */
    assert_int_equal(digest_in_child(b, NULL, d2), 0);
    assert_string_equal(d1, d2); /* a copy elsewhere: the same toolkit */
    put(b, "crt/new_header.h", "\n");
    assert_int_equal(digest_in_child(b, NULL, d2), 0);
    assert_string_not_equal(d1, d2); /* a file added */
}

static void test_edit_in_place_changes_the_digest_even_through_the_memo(void **state) {
    (void)state;
    char a[4096], memo[4096], p[4096], plain[33], memoed[33], again[33], edited[33], fresh[33];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(memo, sizeof memo, "%s/memo", tmp);
    make_toolkit(a);
    assert_int_equal(digest_in_child(a, NULL, plain), 0);
    assert_int_equal(digest_in_child(a, memo, memoed), 0); /* computes and writes the memo */
    assert_string_equal(plain, memoed);
    assert_int_equal(kct_count_files(memo, ".toolkit"), 1);
    assert_int_equal(digest_in_child(a, memo, again), 0); /* from the memo */
    assert_string_equal(plain, again);
    /* Same size, same mtime (put back), other contents: only ctime and the bytes say so. */
    snprintf(p, sizeof p, "%s/crt/host_defines.h", a);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    put(a, "crt/host_defines.h", "#define X 2\n");
    struct timespec ts[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    assert_int_equal(digest_in_child(a, memo, edited), 0);
    assert_string_not_equal(plain, edited);
    assert_int_equal(digest_in_child(a, NULL, fresh), 0);
    assert_string_equal(edited, fresh); /* the memo never holds a stale digest */
}

static void test_a_poisoned_memo_is_not_trusted_beyond_its_signature(void **state) {
    (void)state;
    char a[4096], memo[4096], d[33], plain[33];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(memo, sizeof memo, "%s/memo", tmp);
    make_toolkit(a);
    assert_int_equal(digest_in_child(a, memo, plain), 0);
    /* A damaged memo (not the format, a digest that is not hex) is ignored and rewritten. */
    char path[8192];
    DIR *dir = opendir(memo);
    assert_non_null(dir);
    struct dirent *de;
    while ((de = readdir(dir)))
        if (strstr(de->d_name, ".toolkit")) snprintf(path, sizeof path, "%s/%s", memo, de->d_name);
    closedir(dir);
    assert_int_equal(kct_write(path, "kcache-toolkit 1\nsig 0\ndigest zz\n", 33), 0);
    assert_int_equal(digest_in_child(a, memo, d), 0);
    assert_string_equal(d, plain);
}

/* A read-only cache reads the memo (a memo with another digest under the tree's signature is what it
 * returns: read, not hashed) and never writes one: without a memo it hashes, and creates no folder. */
static void test_a_reader_reads_the_memo_and_writes_none(void **state) {
    (void)state;
    char a[4096], memo[4096], d[33], plain[33], path[8192] = "", text[256];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(memo, sizeof memo, "%s/memo", tmp);
    make_toolkit(a);
    child_write_memo = 0;
    assert_int_equal(digest_in_child(a, memo, plain), 0); /* no memo: hashed */
    struct stat st;
    assert_int_equal(stat(memo, &st), -1); /* the folder was not created */
    child_write_memo = 1;
    assert_int_equal(digest_in_child(a, memo, d), 0); /* a writer writes it */
    assert_string_equal(d, plain);
    DIR *dir = opendir(memo);
    assert_non_null(dir);
    struct dirent *de;
    while ((de = readdir(dir)))
        if (strstr(de->d_name, ".toolkit")) snprintf(path, sizeof path, "%s/%s", memo, de->d_name);
    closedir(dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *dg = strstr(text, "digest ");
    assert_non_null(dg);
    memcpy(dg + 7, "0123456789abcdef0123456789abcdef", 32); /* same signature, another digest */
    assert_int_equal(kct_write(path, text, n), 0);
    child_write_memo = 0;
    assert_int_equal(digest_in_child(a, memo, d), 0);
    child_write_memo = 1;
    assert_string_equal(d, "0123456789abcdef0123456789abcdef"); /* read from the memo */
    assert_int_equal(kct_count_files(memo, ".toolkit"), 1);
}

static int key_in_child(const char *inc, unsigned flags, char out[KC_KEY_HEX_LEN + 1]);

/* The built-in standard headers with <math.h> changed: what another build of kcache serves. */
static kc_header_src other_shims[64];

static void use_other_shims(void) {
    size_t n;
    const kc_header_src *sh = kc_toolkit_shims(&n);
    assert_true(n <= 64);
    memcpy(other_shims, sh, n * sizeof *sh);
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(other_shims[i].name, "math.h") == 0) other_shims[i].source = "/* another math.h */\n", found = 1;
    assert_true(found);
    child_shims = other_shims, child_nshims = n;
}

/* The shims are read by NVRTC like any header: another set is another digest and another key — through a memo
 * written under the first set too (the bug: the memo's signature was of the tree's stats alone, so a kcache
 * with a new <math.h> got the old digest, and the old key, from the memo). */
static void test_a_changed_shim_changes_the_digest_and_the_key_even_through_the_memo(void **state) {
    (void)state;
    char a[4096], memo[4096], d1[33], d2[33], d3[33], k1[40], k2[40];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(memo, sizeof memo, "%s/memo", tmp);
    make_toolkit(a);
    child_shims = NULL;
    assert_int_equal(digest_in_child(a, memo, d1), 0); /* writes the memo */
    assert_int_equal(digest_in_child(a, memo, d3), 0);
    assert_string_equal(d1, d3);
    use_other_shims();
    assert_int_equal(digest_in_child(a, NULL, d3), 0);
    assert_string_not_equal(d1, d3); /* the shims are in the digest */
    assert_int_equal(digest_in_child(a, memo, d2), 0);
    assert_string_equal(d2, d3); /* and the memo of the first set does not vouch for it */
    if (kc_nvrtc_available() == KC_OK) {
        assert_int_equal(key_in_child(a, KC_KERNEL_TOOLKIT_HEADERS, k2), 0);
        child_shims = NULL;
        assert_int_equal(key_in_child(a, KC_KERNEL_TOOLKIT_HEADERS, k1), 0);
        assert_string_not_equal(k1, k2); /* so in the key of a graph that reads them */
    }
    child_shims = NULL;
}

static void test_not_a_toolkit_is_a_clear_error(void **state) {
    (void)state;
    char d[33];
    assert_int_equal(digest_in_child(tmp, NULL, d), KC_ENONVRTC); /* no cuda_fp16.h */
    char nowhere[4096];
    snprintf(nowhere, sizeof nowhere, "%s/nowhere", tmp);
    assert_int_equal(digest_in_child(nowhere, NULL, d), KC_ENONVRTC);
}

static void test_a_loop_is_an_error_not_a_hang(void **state) {
    (void)state;
    char a[4096], link[4096], d[33];
    snprintf(a, sizeof a, "%s/a", tmp);
    make_toolkit(a);
    snprintf(link, sizeof link, "%s/crt/loop", a);
    assert_int_equal(symlink(a, link), 0);
    assert_int_equal(digest_in_child(a, NULL, d), KC_EINVAL);
}

/* The key of a one-kernel graph, in a child with KCACHE_CUDA_INCLUDE=inc (or the real one). */
static int key_in_child(const char *inc, unsigned flags, char out[KC_KEY_HEX_LEN + 1]) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        if (inc) setenv("KCACHE_CUDA_INCLUDE", inc, 1);
        kc_toolkit_shims_set_(child_shims, child_nshims);
        kc_graph_desc *d;
        kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                           "k.cu",
                           "extern \"C\" __global__ void k(float *x) { x[0] = 1.f; }\n",
                           "k",
                           NULL,
                           0,
                           NULL,
                           0,
                           NULL,
                           flags};
        kc_key key;
        char msg[80] = "";
        int rc = kc_graph_desc_new(&d, "g");
        if (!rc) rc = kc_graph_add_kernel(d, &k, NULL);
        if (!rc) rc = kc_graph_key(d, &key, NULL);
        if (!rc) kc_key_to_hex(&key, msg);
        char line[120];
        snprintf(line, sizeof line, "%d %s", rc, msg);
        ssize_t w = write(fd[1], line, strlen(line) + 1);
        kc_graph_desc_free(d);
        _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    char buf[120] = "";
    ssize_t r = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st, rc = -1;
    waitpid(pid, &st, 0);
    if (r > 0) sscanf(buf, "%d %32s", &rc, out);
    return rc;
}

static void test_the_key_follows_the_toolkit_only_when_asked(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char a[4096], k1[40], k2[40], p1[40], p2[40];
    snprintf(a, sizeof a, "%s/a", tmp);
    make_toolkit(a);
    assert_int_equal(key_in_child(a, KC_KERNEL_TOOLKIT_HEADERS, k1), 0);
    assert_int_equal(key_in_child(a, 0, p1), 0);
    assert_string_not_equal(k1, p1); /* asking for the toolkit is in the key */
    put(a, "crt/host_defines.h", "#define X 3\n");
    assert_int_equal(key_in_child(a, KC_KERNEL_TOOLKIT_HEADERS, k2), 0);
    assert_string_not_equal(k1, k2); /* a toolkit header changed: another key */
    assert_int_equal(key_in_child(a, 0, p2), 0);
    assert_string_equal(p1, p2); /* a kernel that never asked: untouched */
    char nowhere[4096];
    snprintf(nowhere, sizeof nowhere, "%s/nowhere", tmp);
    assert_int_equal(key_in_child(nowhere, KC_KERNEL_TOOLKIT_HEADERS, k2), KC_ENONVRTC);
}

/* [Note: key memo]: the digest a key was computed under is compared, never assumed.  Where the
 * toolkit is absent the digest is pinned (the cache's toolkit_headers setting): one description
 * keyed under pin A, then B, then A again (three caches), in one process, gets A's key, B's, A's. */
static void test_a_pin_changed_mid_process_never_gets_the_memo(void **state) {
    (void)state;
    char nowhere[4096];
    snprintf(nowhere, sizeof nowhere, "%s/nowhere", tmp);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        setenv("KCACHE_CUDA_INCLUDE", nowhere, 1);
        static const char *const pins[3] = {"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210",
                                            "0123456789abcdef0123456789abcdef"};
        kc_graph_desc *d;
        kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                           "k.cu",
                           "extern \"C\" __global__ void k(float *x) { x[0] = 1.f; }\n",
                           "k",
                           NULL,
                           0,
                           NULL,
                           0,
                           NULL,
                           KC_KERNEL_TOOLKIT_HEADERS};
        char line[200] = "", hex[KC_KEY_HEX_LEN + 1];
        int rc = kc_graph_desc_new(&d, "g");
        if (!rc) rc = kc_graph_add_kernel(d, &k, NULL);
        for (int i = 0; i < 3 && !rc; i++) { /* the pin is a cache's setting: one cache per pin (its kcache.conf) */
            kc_key key;
            char cdir[4200], conf[100];
            snprintf(cdir, sizeof cdir, "%s/pin%d", tmp, i);
            snprintf(conf, sizeof conf, "toolkit_headers = %s\n", pins[i]);
            kc_options o = KC_OPTIONS_INIT;
            o.dir = cdir, o.flags = KC_OPEN_NO_ENV;
            kc_cache *c = NULL;
            mkdir(cdir, 0700);
            if (kct_put(cdir, "kcache.conf", conf) || (rc = kc_cache_open(&c, &o))) rc = rc ? rc : -1;
            else if (!(rc = kc_graph_key_in(c, d, &key, NULL)))
                kc_key_to_hex(&key, hex), strcat(line, hex), strcat(line, " ");
            kc_cache_close(c);
        }
        char out[260];
        snprintf(out, sizeof out, "%d %s", rc, line);
        ssize_t w = write(fd[1], out, strlen(out) + 1);
        kc_graph_desc_free(d);
        _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    char buf[260] = "", k[3][40];
    ssize_t r = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st, rc = -1;
    waitpid(pid, &st, 0);
    assert_true(r > 0);
    if (sscanf(buf, "%d %32s %32s %32s", &rc, k[0], k[1], k[2]) != 4) fail_msg("child: %s", buf);
    assert_int_equal(rc, KC_OK);
    assert_string_not_equal(k[0], k[1]); /* another pin: another key, not the memo */
    assert_string_equal(k[0], k[2]);
}

static void test_inputs_keep_the_working_directory_out(void **state) {
    (void)state;
    kc_toolkit_inputs in;
    assert_int_equal(kc_toolkit_inputs_for("dir/k\"x.cu", &in), KC_OK);
    assert_string_equal(in.program, "/dev/null/dir/k_x.cu"); /* under a device: nothing is ever found there */
    assert_string_equal(in.prefix, "#line 1 \"dir/k_x.cu\"\n");
    assert_true(in.ninclude >= 1);
    assert_int_equal(strncmp(in.include[0], "-I/", 3), 0);
    assert_true(in.nshims > 5);
}

/* A kernel using every constant glibc's <math.h> defines (C99, POSIX, GNU's float ones). */
#define MATH_KERNEL                                                                                                 \
    "extern \"C\" __global__ void f(float *x, double *y, int *c) {\n"                                               \
    "  x[0] = INFINITY; x[1] = NAN; x[2] = HUGE_VALF; x[3] = MAXFLOAT; y[0] = HUGE_VAL;\n"                          \
    "  y[1] = M_E + M_LOG2E + M_LOG10E + M_LN2 + M_LN10 + M_PI + M_PI_2 + M_PI_4 + M_1_PI + M_2_PI + M_2_SQRTPI;\n" \
    "  y[2] = M_SQRT2 + M_SQRT1_2;\n"                                                                               \
    "  x[4] = M_Ef + M_LOG2Ef + M_LOG10Ef + M_LN2f + M_LN10f + M_PIf + M_PI_2f + M_PI_4f + M_1_PIf + M_2_PIf;\n"    \
    "  x[5] = M_2_SQRTPIf + M_SQRT2f + M_SQRT1_2f;\n"                                                               \
    "  c[0] = FP_NAN + FP_INFINITE + FP_ZERO + FP_SUBNORMAL + FP_NORMAL; c[1] = FP_ILOGB0; c[2] = FP_ILOGBNAN;\n"   \
    "  static_assert(M_PI > 3.14159 && M_PI < 3.1416 && HUGE_VAL > 1e308 && INFINITY > 3e38f, \"\");\n"             \
    "  long double l = HUGE_VALL; (void)l;\n"                                                                       \
    "}\n"

/* For real: NVRTC with the toolkit route. */
static int compile_src(const char *src, unsigned flags, const char *target) {
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "t.cu", src, "f", NULL, 0, NULL, 0, NULL, flags};
    kc_compiled *c = NULL;
    int rc = kc_compile_kernel(&k, target, &c);
    kc_compiled_free(c);
    return rc;
}

static void test_real_kernels_with_toolkit_and_standard_headers(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    static const char *srcs[] = {
        "#include <stdint.h>\n#include <cstdint>\nextern \"C\" __global__ void f(int64_t *x) { x[0] = INT64_MAX; "
        "std::uint8_t a = 1; (void)a; }\n",
        "#include <type_traits>\n#include <limits>\nextern \"C\" __global__ void f(float *x) { "
        "static_assert(std::is_same<int, int>::value, \"\"); x[0] = std::numeric_limits<float>::infinity(); }\n",
        "#include <math.h>\n#include <cmath>\nextern \"C\" __global__ void f(float *x) { x[0] = sqrtf(x[0]) + std::exp(x[1]); }\n",
        "#include <assert.h>\nextern \"C\" __global__ void f(int *x) { assert(x[0] > 0); }\n",
        "#include <limits.h>\n#include <float.h>\n#include <stddef.h>\nstruct S { int a, b; };\n"
        "extern \"C\" __global__ void f(float *x) { x[0] = FLT_MAX + INT_MAX + offsetof(S, b); }\n",
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\nextern \"C\" __global__ void f(__half *x, __nv_bfloat16 *y) { "
        "x[0] = __float2half(1.f); y[0] = __float2bfloat16(2.f); }\n",
        /* glibc's <math.h> constants, alone and with <cmath> in either order (libcu++ defines INFINITY and NAN). */
        "#include <math.h>\n" MATH_KERNEL,
        "#include <math.h>\n#include <cmath>\n" MATH_KERNEL,
        "#include <cmath>\n#include <math.h>\n" MATH_KERNEL,
        "#include <cmath>\n" MATH_KERNEL,
    };
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
        int rc = compile_src(srcs[i], KC_KERNEL_TOOLKIT_HEADERS, "sm_80");
        if (rc) fail_msg("source %zu: %s", i, kc_error_last()->message);
        assert_int_equal(compile_src(srcs[i], 0, "sm_80"), KC_ECOMPILE); /* without asking: not found */
    }
}

static void test_bf16_cooperative_groups_graph_for_every_target(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    kc_graph_desc *d;
    int rc = kc_graph_desc_load(&d, KC_KERNELS_DIR "/rmsnorm_bf16.json");
    if (rc) fail_msg("%s", kc_error_last()->message);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    const char *targets[] = {"sm_80", "sm_90", "compute_80"};
    for (size_t i = 0; i < 3; i++) {
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        rc = kc_graph_compile(c, d, targets[i], &info);
        if (rc) fail_msg("%s: %s", targets[i], kc_error_last()->message);
        assert_int_equal(info.source, KC_FROM_COMPILE);
        assert_int_equal(kc_graph_compile(c, d, targets[i], &info), KC_OK);
        assert_int_equal(info.source, KC_FROM_DISK); /* the toolkit's identity is stable */
    }
    char memo[4096];
    snprintf(memo, sizeof memo, "%s/v1/toolkits", dir);
    assert_int_equal(kct_count_files(memo, ".toolkit"), 1); /* the cache keeps the memo */
    kc_cache_close(c);
    kc_graph_desc_free(d);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_digest_is_of_contents_and_paths),
        T(test_edit_in_place_changes_the_digest_even_through_the_memo),
        T(test_a_poisoned_memo_is_not_trusted_beyond_its_signature),
        T(test_a_reader_reads_the_memo_and_writes_none),
        T(test_a_changed_shim_changes_the_digest_and_the_key_even_through_the_memo),
        T(test_not_a_toolkit_is_a_clear_error),
        T(test_a_loop_is_an_error_not_a_hang),
        T(test_the_key_follows_the_toolkit_only_when_asked),
        T(test_a_pin_changed_mid_process_never_gets_the_memo),
        T(test_inputs_keep_the_working_directory_out),
        T(test_real_kernels_with_toolkit_and_standard_headers),
        T(test_bf16_cooperative_groups_graph_for_every_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
