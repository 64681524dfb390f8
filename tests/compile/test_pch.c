/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pch.c — NVRTC precompiled headers ([Note: precompiled headers] in compile/pch.c), for real:
 * images byte-identical with and without a PCH (cubin and PTX, several targets, kernels with and
 * without the toolkit's headers), two threads on one header set, a burst's counts (a set expected
 * once makes no PCH, one expected twice makes it at its first compile), the files removed when the
 * process exits (also after a compile error), a dead process's folder swept (not while another
 * process holds its lock), and the bound on their size.
 *
 * One binary, run by several CTest entries: no argument runs the in-process tests; "exit", "sweep"
 * and "bound" run one group (the bound with KCACHE_PCH_MAX_SIZE set by CTest); "child-exit",
 * "child-error" and "child-kill" are the child processes those groups start.  Needs NVRTC >= 12.8
 * (skipped without it).  Compiles are few: a header set's first compile is plain, its second makes
 * the PCH, its third uses it.  The first test passes no -frandom-seed (kcache's own fixes NVRTC's
 * internal-linkage names, which otherwise differ in every compile); the others pass their own.
 */
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/internal.h"
#include "compile/pch.h"
#include "compile/units.h"
#include "kcache.h"

static const char *HALF = "// half-precision scale, with the toolkit's headers\n"
                          "#include <cuda_fp16.h>\n"
                          "#include <stdint.h>\n"
                          "\n"
                          "extern \"C\" __global__ void hscale(__half *x, float s, uint32_t n) {\n"
                          "  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (i < n) x[i] = __float2half(__half2float(x[i]) * s);\n"
                          "}\n";
static const char *BAD = "// a good header prefix, then a syntax error\n"
                         "#include <cuda_fp16.h>\n"
                         "#include <stdint.h>\n"
                         "\n"
                         "extern \"C\" __global__ void hscale(__half *x, float s, uint32_t n) { x[0] = ; }\n";
static const char *PLAIN = "/* no toolkit headers: two in memory */\n"
                           "#define N 4\n"
                           "#include \"sq.h\"\n"
                           "#include \"big.h\"\n"
                           "extern \"C\" __global__ void sqk(float *x) { x[threadIdx.x] = sq(x[threadIdx.x]) + N; }\n";
static const kc_header_src SQ[] = {{"sq.h", "#pragma once\n__device__ inline float sq(float v) { return v * v; }\n"}};

/* A header of 2,000 small functions (~100 KB). */
static char *big_header(void) {
    char *b = malloc(2000 * 80), *w = b;
    for (int i = 0; i < 2000; i++)
        w += sprintf(w, "__device__ inline float big%d(float v) { return v * %d.5f; }\n", i, i);
    return b;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    return b;
}

static kc_kernel_src toolkit_kernel(const char *file, const char *src, const char *name, const char **opts, size_t n) {
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, file, src, name, NULL, 0, opts, n, NULL, KC_KERNEL_TOOLKIT_HEADERS};
    return k;
}

static kc_compiled *compile(const kc_kernel_src *k, const char *target) {
    kc_compiled *c = NULL;
    int rc = kc_compile_kernel(k, target, &c);
    if (rc) fail_msg("%s for %s: %s", k->file, target, kc_error_last()->message);
    assert_null(strstr(c->log, "precompiled")); /* the log kcache keeps has no PCH message */
    return c;
}

static void same_bytes(const kc_compiled *a, const kc_compiled *b) {
    assert_int_equal(a->len, b->len);
    assert_memory_equal(a->image, b->image, a->len);
}

static kc_pch_stats stats(void) {
    kc_pch_stats s;
    kc_pch_stats_(&s);
    return s;
}

static void need_pch(void) {
    if (kc_nvrtc_available() != KC_OK || !stats().on) skip();
}

/* `k` and `k2` (another file, other comments, the same directives and options) give the same bytes
 * with a PCH as without: k2 compiled plain first (PCH off), then k plain (a header set's first
 * compile makes none), k again (makes it), k2 and k (use it). */
static void compiles_agree(const kc_kernel_src *k, const kc_kernel_src *k2, const char *target) {
    kc_pch_test_set_(0, 0);
    kc_compiled *plain2 = compile(k2, target);
    kc_pch_test_set_(1, 0);
    kc_pch_stats s0 = stats();
    kc_compiled *plain = compile(k, target);
    assert_int_equal(stats().created, s0.created); /* the first compile of a header set makes none */
    kc_compiled *made = compile(k, target);
    assert_int_equal(stats().created, s0.created + 1);
    kc_compiled *used2 = compile(k2, target), *used = compile(k, target);
    kc_pch_stats s1 = stats();
    assert_int_equal(s1.used, s0.used + 2);
    assert_int_equal(s1.fallbacks, s0.fallbacks);
    same_bytes(plain, made);
    same_bytes(plain, used);
    same_bytes(plain2, used2);
    kc_compiled_free(plain);
    kc_compiled_free(plain2);
    kc_compiled_free(made);
    kc_compiled_free(used);
    kc_compiled_free(used2);
}

/* The same source under another file name, its leading comment replaced. */
static char *other_comments(const char *src) {
    const char *nl = strchr(src, '\n');
    char *o = malloc(strlen(src) + 64);
    sprintf(o, "// another file\n//\n%s", nl + 1);
    return o;
}

static void test_images_identical(void **state) {
    (void)state;
    need_pch();
    /* no -frandom-seed: kcache's own makes the bytes the same ([Note: the same bytes] in nvrtc.c) */
    static const char *seed[] = {"-std=c++17"}, *lineinfo[] = {"-lineinfo"};
    /* cooperative groups and cuda_bf16.h, the costly one: 3 full compiles (plain twice, the PCH made) */
    char *rms = slurp(KC_KERNELS_DIR "/rmsnorm_bf16.cu"), *rms2 = other_comments(rms);
    kc_kernel_src a = toolkit_kernel("rmsnorm_bf16.cu", rms, "rmsnorm_fwd<256>", seed, 1);
    kc_kernel_src b = toolkit_kernel("rms_other.cu", rms2, "rmsnorm_fwd<256>", seed, 1);
    kc_pch_test_set_(0, 0);
    kc_compiled *pa = compile(&a, "sm_90"), *pb = compile(&b, "sm_90");
    kc_pch_test_set_(1, 1);
    kc_pch_stats s0 = stats();
    kc_compiled *ca = compile(&a, "sm_90"), *ub = compile(&b, "sm_90");
    kc_pch_stats s1 = stats();
    assert_int_equal(s1.created, s0.created + 1);
    assert_int_equal(s1.used, s0.used + 1);
    same_bytes(pa, ca);
    same_bytes(pb, ub);
    kc_compiled_free(pa), kc_compiled_free(pb), kc_compiled_free(ca), kc_compiled_free(ub);
    /* cuda_fp16.h: a cubin and PTX */
    char *half2 = other_comments(HALF);
    kc_kernel_src h = toolkit_kernel("half.cu", HALF, "hscale", seed, 1),
                  h2 = toolkit_kernel("h2.cu", half2, "hscale", seed, 1);
    compiles_agree(&h, &h2, "sm_100");
    compiles_agree(&h, &h2, "compute_80");
    /* no toolkit headers: headers in memory, large enough to be worth a PCH (64 KiB); with -lineinfo */
    char *plain2 = other_comments(PLAIN), *big = big_header();
    kc_header_src hs[2] = {SQ[0], {"big.h", big}};
    kc_kernel_src p = {KC_KERNEL_SRC_VERSION, "plain.cu", PLAIN, "sqk", hs, 2, lineinfo, 1, NULL, 0};
    kc_kernel_src p2 = {KC_KERNEL_SRC_VERSION, "plain2.cu", plain2, "sqk", hs, 2, lineinfo, 1, NULL, 0};
    compiles_agree(&p, &p2, "sm_80");
    compiles_agree(&p, &p2, "compute_90");
    /* Never NVRTC's automatic folders. */
    char auto_dir[64];
    snprintf(auto_dir, sizeof auto_dir, "__nvrtc_auto_pch_%ld", (long)getpid());
    DIR *d = opendir("/tmp");
    for (struct dirent *e; d && (e = readdir(d));) assert_null(strstr(e->d_name, auto_dir));
    if (d) closedir(d);
    free(rms), free(rms2), free(half2), free(plain2), free(big);
}

/* A header that names the main file (as written, or pasted) gets no PCH: one made for a.cu would
 * give b.cu the name "a.cu".  Compiled a.cu then b.cu, each would have made or used one. */
static void names_main_file(const char *line) {
    char *big = big_header(), *h = malloc(strlen(big) + 256);
    sprintf(h, "#define KC_CAT(a, b) a##b\n%s\n%s", line, big);
    kc_header_src hs[1] = {{"big.h", h}};
    static const char *src =
        "#include \"big.h\"\nextern \"C\" __global__ void k(char *o) { o[threadIdx.x] = kc_base[threadIdx.x]; }\n";
    kc_kernel_src a = {KC_KERNEL_SRC_VERSION, "a.cu", src, "k", hs, 1, NULL, 0, NULL, 0};
    kc_kernel_src b = {KC_KERNEL_SRC_VERSION, "b.cu", src, "k", hs, 1, NULL, 0, NULL, 0};
    kc_pch_test_set_(1, 1);
    kc_pch_stats s0 = stats();
    kc_compiled *ca = compile(&a, "compute_80"), *cb = compile(&b, "compute_80");
    static const char b_cu[] = "{98, 46, 99, 117}", a_cu[] = "{97, 46, 99, 117}"; /* PTX: "b.cu", "a.cu" */
    assert_non_null(memmem(cb->image, cb->len, b_cu, strlen(b_cu)));
    assert_null(memmem(cb->image, cb->len, a_cu, strlen(a_cu)));
    assert_non_null(memmem(ca->image, ca->len, a_cu, strlen(a_cu)));
    assert_int_equal(stats().created, s0.created); /* no PCH at all */
    assert_int_equal(stats().used, s0.used);
    kc_compiled_free(ca), kc_compiled_free(cb);
    free(big), free(h);
}

static void test_names_main_file(void **state) {
    (void)state;
    need_pch();
    names_main_file("__device__ const char kc_base[] = __BASE_FILE__;");
    names_main_file("__device__ const char kc_base[] = KC_CAT(__BASE, _FILE__);");
}

/* NVRTC's own PCH options keep kcache's off, however spelled; "pch" in a folder or macro does not. */
static void test_option_names_pch(void **state) {
    (void)state;
    static const char *const refused[] = {"--pch",
                                          "-pch",
                                          " --create-pch=/x",
                                          "--use-pch=y",
                                          "--pch-dir=/d",
                                          "--PCH",
                                          "--instantiate-templates-in-pch=true",
                                          "-G"};
    static const char *const kept[] = {
        "-I/opt/epoch/cuda", "-DUSE_PCH=1", "-UPCH", "--std=c++17", "--include-path=/opt/epoch/include",
        "--define-macro=PCH"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) assert_true(kc_pch_option_refused_(refused[i]));
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) assert_false(kc_pch_option_refused_(kept[i]));
}

/* An option NVRTC reads as -G keeps PCH off, however it is spaced. */
static void test_option_spaced(void **state) {
    (void)state;
    need_pch();
    static const char *opts[][1] = {{" -G"}, {"-G\r"}, {"\t--device-debug "}};
    for (size_t i = 0; i < 3; i++) {
        kc_kernel_src h = toolkit_kernel("half.cu", HALF, "hscale", opts[i], 1);
        kc_pch_test_set_(1, 1);
        kc_pch_stats s0 = stats();
        kc_compiled *c = compile(&h, "compute_80");
        assert_int_equal(stats().created, s0.created);
        kc_compiled_free(c);
    }
}

/* A creation that ends in a compile error: the next compile of the header set is plain (no second
 * creation at once; each creation tried is one compile run again without a PCH: a fallback). */
static void test_error_then_plain(void **state) {
    (void)state;
    need_pch();
    static const char *seed[] = {"-frandom-seed=7"};
    kc_kernel_src b = toolkit_kernel("bad.cu", BAD, "hscale", seed, 1);
    kc_pch_test_set_(1, 1);
    kc_pch_stats s0 = stats();
    for (int i = 0; i < 2; i++) {
        kc_compiled *c = NULL;
        assert_int_not_equal(kc_compile_kernel(&b, "sm_80", &c), KC_OK);
    }
    assert_int_equal(stats().fallbacks, s0.fallbacks + 1);
}

typedef struct job {
    kc_kernel_src k;
    const char *target;
    kc_compiled *c;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    if (kc_compile_kernel(&j->k, j->target, &j->c)) j->c = NULL;
    return NULL;
}

/* Two threads on one header set at once (one makes the PCH, the other waits for it or makes it
 * itself later), and two on two header sets at once: the bytes of a plain compile each time. */
static void test_two_threads(void **state) {
    (void)state;
    need_pch();
    static const char *o1[] = {"-frandom-seed=2", "-DTWO_THREADS=1"}, *o2[] = {"-frandom-seed=2", "-DTWO_THREADS=2"};
    kc_kernel_src a = toolkit_kernel("half.cu", HALF, "hscale", o1, 2),
                  b = toolkit_kernel("half.cu", HALF, "hscale", o2, 2);
    kc_pch_test_set_(1, 0);
    kc_compiled *pa = compile(&a, "sm_90"), *pb = compile(&b, "sm_90"); /* first compiles: plain */
    kc_pch_stats s0 = stats();
    for (int round = 0; round < 2; round++) {
        job j[2] = {{a, "sm_90", NULL}, {round ? b : a, "sm_90", NULL}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, run_job, &j[i]), 0);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        for (int i = 0; i < 2; i++) {
            assert_non_null(j[i].c);
            same_bytes(j[i].c, i == 1 && round ? pb : pa);
            kc_compiled_free(j[i].c);
        }
    }
    kc_pch_stats s1 = stats();
    assert_int_equal(s1.created, s0.created + 2); /* one per header set, never two */
    assert_true(s1.used >= s0.used + 1);
    assert_int_equal(s1.fallbacks, s0.fallbacks);
    kc_compiled_free(pa);
    kc_compiled_free(pb);
}

/* What a burst's announcer names: kernel k for target, `times` times. */
typedef struct expected {
    const kc_kernel_src *k;
    const char *target;
    int times, ran;
} expected;

static void announce(void *ctx) {
    expected *x = ctx;
    kc_target t;
    assert_int_equal(kc_target_parse(x->target, &t), KC_OK);
    for (int i = 0; i < x->times; i++) kc_compile_expect_(x->k, &t);
    x->ran++;
}

/* The PCH files in the process's folder now (none before it has one). */
static size_t files_on_disk(void) {
    kc_pch_stats ps = stats();
    size_t n = 0;
    DIR *d = ps.dir[0] ? opendir(ps.dir) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".pch") != NULL;
    if (d) closedir(d);
    assert_int_equal(n, ps.files);
    return n;
}

/* A burst (a prewarm) names what it will compile ([Note: precompiled headers]): a header set it
 * expects twice makes no PCH (in a prewarm its second compile runs beside its first and would wait for
 * the creation), one it expects three times makes it at its first compile and uses it at the next; a
 * set it did not name is plain at its first compile, as outside a burst. */
static void test_burst(void **state) {
    (void)state;
    need_pch();
    static const char *o1[] = {"-frandom-seed=6", "-DBURST=1"}, *o2[] = {"-frandom-seed=6", "-DBURST=2"},
                      *o3[] = {"-frandom-seed=6", "-DBURST=3"};
    kc_kernel_src twice = toolkit_kernel("half.cu", HALF, "hscale", o1, 2),
                  thrice = toolkit_kernel("half.cu", HALF, "hscale", o2, 2),
                  unnamed = toolkit_kernel("half.cu", HALF, "hscale", o3, 2);
    kc_pch_test_set_(1, 0);
    kc_pch_stats s0 = stats();
    size_t f0 = files_on_disk();
    expected x1 = {&twice, "sm_90", 2, 0}, x2 = {&thrice, "sm_90", 3, 0};
    kc_pch_burst_(1);
    assert_int_equal(kc_pch_announce_(announce, &x1), 0);
    assert_int_equal(kc_pch_announce_(announce, &x2), 0);
    assert_int_equal(x1.ran + x2.ran, 0); /* not before a compile */
    kc_compiled *a = compile(&twice, "sm_90");
    assert_int_equal(x1.ran + x2.ran, 2); /* once each, at the first compile */
    kc_compiled_free(compile(&twice, "sm_90"));
    assert_int_equal(stats().created, s0.created);
    assert_int_equal(files_on_disk(), f0);
    kc_compiled *b = compile(&thrice, "sm_90");
    assert_int_equal(stats().created, s0.created + 1); /* at its first compile */
    assert_int_equal(files_on_disk(), f0 + 1);
    kc_compiled *b2 = compile(&thrice, "sm_90");
    assert_int_equal(stats().used, s0.used + 1);
    assert_int_equal(stats().created, s0.created + 1);
    same_bytes(b, b2);
    kc_compiled_free(compile(&unnamed, "sm_90"));
    assert_int_equal(stats().created, s0.created + 1);
    kc_pch_announce_(NULL, &x1);
    kc_pch_announce_(NULL, &x2);
    kc_pch_burst_(0);
    assert_int_equal(x1.ran + x2.ran, 2);
    assert_int_equal(stats().fallbacks, s0.fallbacks);
    kc_compiled_free(a);
    kc_compiled_free(b);
    kc_compiled_free(b2);
}

/* An announcer that forks while it runs: the child's own compiles must not wait for it. */
static void fork_announce(void *ctx) {
    pid_t *child = ctx;
    *child = fork();
    if (*child == 0) {
        alarm(30); /* waiting for ever for its parent's announcer: killed, and the parent sees it */
        kc_pch_announce_run_();
        _exit(0);
    }
}

/* A process forked while a burst's announcer runs has none (its parent's thread is not in it). */
static void test_burst_fork(void **state) {
    (void)state;
    pid_t child = -1;
    kc_pch_burst_(1);
    assert_int_equal(kc_pch_announce_(fork_announce, &child), 0);
    kc_pch_announce_run_();
    assert_true(child > 0);
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    kc_pch_announce_(NULL, &child);
    kc_pch_burst_(0);
}

/* ---- children: a process that makes a PCH, then exits (or fails, or is killed) ---- */

static int child(const char *how) {
    static const char *seed[] = {"-frandom-seed=3"};
    kc_kernel_src h = toolkit_kernel("half.cu", HALF, "hscale", seed, 1);
    kc_compiled *c = NULL;
    for (int i = 0; i < 2; i++) {
        if (kc_compile_kernel(&h, "sm_90", &c)) return 3;
        kc_compiled_free(c);
    }
    kc_pch_stats s = stats();
    if (s.files != 1 || !s.dir[0]) return 4;
    printf("%s\n", s.dir); /* the parent checks it is gone */
    fflush(stdout);
    if (!strcmp(how, "child-error")) { /* a compile error after a good prefix: the plain error, no PCH message */
        kc_kernel_src bad = toolkit_kernel("bad.cu", BAD, "hscale", seed, 1);
        if (kc_compile_kernel(&bad, "sm_90", &c) != KC_ECOMPILE) return 5;
        if (!strstr(kc_error_last()->message, "bad.cu") || strstr(kc_error_last()->message, "precompiled")) return 6;
        if (stats().fallbacks != 1) return 7; /* it used the PCH, failed, and was compiled again without */
    }
    if (!strcmp(how, "child-kill")) raise(SIGKILL);
    return 0;
}

/* Run this binary as `how`; its folder (what it printed) in `dir`; its wait status. */
static int spawn(const char *how, char *dir, size_t cap) {
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        execl("/proc/self/exe", "test_pch", how, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], dir, cap - 1);
    dir[n > 0 ? n : 0] = '\0';
    if (n > 0 && dir[n - 1] == '\n') dir[n - 1] = '\0';
    close(fd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static int exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

static void test_removed_at_exit(void **state) {
    (void)state;
    need_pch();
    char dir[4096];
    int st = spawn("child-exit", dir, sizeof dir);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_true(dir[0] == '/' && strstr(dir, "/kcache-pch-"));
    assert_false(exists(dir)); /* the folder and its PCH are gone */
    st = spawn("child-error", dir, sizeof dir);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_true(dir[0] == '/');
    assert_false(exists(dir));
}

/* A killed process leaves its folder; the next process that makes one removes it — not a live
 * process's, not a link, not another user's. */
static void test_sweep(void **state) {
    (void)state;
    need_pch();
    char dead[4096], parent[4096], live[4200], link[4200], other[4200], path[4300];
    int st = spawn("child-kill", dead, sizeof dead);
    assert_true(WIFSIGNALED(st));
    assert_true(exists(dead));
    snprintf(parent, sizeof parent, "%s", dead);
    *strrchr(parent, '/') = '\0';
    DIR *d = opendir(parent); /* what an earlier run that failed half-way left */
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, "-live00") || strstr(e->d_name, "-link00") || strstr(e->d_name, "-othr00")) {
            snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
            if (unlink(path) != 0) rmdir(path);
        }
    if (d) closedir(d);
    snprintf(path, sizeof path, "%s/target/keep", parent);
    unlink(path);
    snprintf(path, sizeof path, "%s/target", parent);
    rmdir(path);
    snprintf(live, sizeof live, "%s/kcache-pch-%lu-%ld-live00", parent, (unsigned long)getuid(), (long)getppid());
    assert_int_equal(mkdir(live, 0700), 0);
    char target[4200];
    snprintf(target, sizeof target, "%s/target", parent);
    assert_int_equal(mkdir(target, 0700), 0);
    snprintf(path, sizeof path, "%s/keep", target);
    fclose(fopen(path, "w"));
    snprintf(link, sizeof link, "%s/kcache-pch-%lu-999999999-link00", parent, (unsigned long)getuid());
    assert_int_equal(symlink(target, link), 0);
    snprintf(other, sizeof other, "%s/kcache-pch-%lu-999999998-othr00", parent, (unsigned long)getuid());
    assert_int_equal(mkdir(other, 0700), 0);
    int chowned = geteuid() == 0 && chown(other, 65534, 65534) == 0;
    static const char *seed[] = {"-frandom-seed=4"};
    kc_kernel_src h = toolkit_kernel("half.cu", HALF, "hscale", seed, 1);
    for (int i = 0; i < 2; i++) kc_compiled_free(compile(&h, "sm_80"));
    assert_int_equal(stats().files, 1);
    int own = open(stats().dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* its owner holds its lock */
    assert_true(own >= 0);
    assert_int_equal(flock(own, LOCK_EX | LOCK_NB), -1);
    assert_int_equal(errno, EWOULDBLOCK);
    close(own);
    assert_false(exists(dead)); /* swept */
    assert_true(exists(live));
    assert_true(exists(link) && exists(path)); /* never followed */
    if (chowned) assert_true(exists(other));
    rmdir(live), unlink(link), unlink(path), rmdir(target), rmdir(other);
}

/* A folder of a pid that is not alive here, whose lock another process holds (its owner, in another
 * PID namespace sharing the folder), is kept; one whose lock is free is removed, and so is the first
 * once its holder is gone.  No compile: the sweep alone. */
static void test_sweep_lock(void **state) {
    (void)state;
    char parent[] = "/tmp/kc-pch-sweeplock-XXXXXX", held[4200], freed[4200], file[4300];
    assert_non_null(mkdtemp(parent));
    snprintf(held, sizeof held, "%s/kcache-pch-%lu-999999996-held00", parent, (unsigned long)getuid());
    snprintf(freed, sizeof freed, "%s/kcache-pch-%lu-999999995-free00", parent, (unsigned long)getuid());
    assert_int_equal(mkdir(held, 0700), 0);
    assert_int_equal(mkdir(freed, 0700), 0);
    snprintf(file, sizeof file, "%s/1.pch", held);
    fclose(fopen(file, "w"));
    snprintf(file, sizeof file, "%s/1.pch", freed);
    fclose(fopen(file, "w"));
    int locked[2], hold[2];
    assert_int_equal(pipe(locked), 0);
    assert_int_equal(pipe(hold), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* the owner: its folder locked until the parent closes `hold` */
        close(locked[0]), close(hold[1]);
        int fd = open(held, O_RDONLY | O_DIRECTORY);
        char c = fd >= 0 && flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
        if (write(locked[1], &c, 1) != 1) _exit(1);
        while (read(hold[0], &c, 1) > 0) {}
        _exit(0);
    }
    close(locked[1]), close(hold[0]);
    char c = 0;
    assert_int_equal(read(locked[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    kc_pch_sweep_(parent);
    assert_true(exists(held)); /* its pid is not alive here, but its lock is held */
    assert_false(exists(freed));
    close(hold[1]); /* the owner exits: its lock goes */
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(locked[0]);
    kc_pch_sweep_(parent);
    assert_false(exists(held));
    assert_int_equal(rmdir(parent), 0);
}

/* A long burst under a tiny bound: never more bytes than the bound, the files on disk as counted,
 * and every image right. */
static void test_bounded(void **state) {
    (void)state;
    need_pch();
    static const char *o[4][2] = {{"-frandom-seed=5", "-DSET=0"},
                                  {"-frandom-seed=5", "-DSET=1"},
                                  {"-frandom-seed=5", "-DSET=2"},
                                  {"-frandom-seed=5", "-DSET=3"}};
    const char *env = getenv("KCACHE_PCH_MAX_SIZE");
    assert_non_null(env);
    uint64_t max = strtoull(env, NULL, 10) << 20; /* CTest gives it in M */
    kc_compiled *first[4] = {0};
    for (int round = 0; round < 3; round++)
        for (int s = 0; s < 4; s++) {
            kc_kernel_src h = toolkit_kernel("half.cu", HALF, "hscale", o[s], 2);
            kc_compiled *c = compile(&h, "sm_90");
            if (!first[s]) first[s] = c;
            else {
                same_bytes(first[s], c);
                kc_compiled_free(c);
            }
            kc_pch_stats ps = stats();
            assert_true(ps.bytes <= max);
            size_t on_disk = 0;
            DIR *d = ps.dir[0] ? opendir(ps.dir) : NULL;
            for (struct dirent *e; d && (e = readdir(d));) on_disk += e->d_name[0] != '.';
            if (d) closedir(d);
            assert_int_equal(on_disk, ps.files);
            assert_true(ps.files <= 2); /* a cuda_fp16.h PCH is ~9 MB: two fit in the bound, never three */
        }
    kc_pch_stats ps = stats();
    assert_true(ps.created >= 4);
    assert_true(ps.retired >= 2); /* the bound acted */
    for (int s = 0; s < 4; s++) kc_compiled_free(first[s]);
}

/* A bound smaller than one PCH (1M; a cuda_fp16.h one is ~9 MB): a header set's PCH is made once,
 * retired at once, and not made again (its size is kept). */
static void test_too_large(void **state) {
    (void)state;
    need_pch();
    static const char *seed[] = {"-frandom-seed=6"};
    kc_kernel_src h = toolkit_kernel("half.cu", HALF, "hscale", seed, 1);
    for (int i = 0; i < 4; i++) kc_compiled_free(compile(&h, "sm_80"));
    kc_pch_stats ps = stats();
    assert_int_equal(ps.created, 1);
    assert_int_equal(ps.retired, 1);
    assert_int_equal(ps.files, 0);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The toolkit folders' walk before a creation: a header naming the main file, a link (not read) or
 * a folder that cannot be walked means no PCH; clean folders mean one may be made. */
static void test_tree_walk(void **state) {
    (void)state;
    char root[] = "/tmp/kc-pch-walk-XXXXXX", p[4200], arg[4200];
    assert_non_null(mkdtemp(root));
    const char *argv[1] = {arg};
    snprintf(p, sizeof p, "%s/clean", root), mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/clean/a.h", root), write_file(p, "#define A __FILE__\n");
    snprintf(arg, sizeof arg, "-I%s/clean", root);
    assert_int_equal(kc_pch_tree_clean_(argv, 1), 1);
    snprintf(p, sizeof p, "%s/named", root), mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/named/b.h", root), write_file(p, "static const char *b = __BASE_FILE__;\n");
    snprintf(arg, sizeof arg, "-I%s/named", root);
    assert_int_equal(kc_pch_tree_clean_(argv, 1), 0);
    snprintf(p, sizeof p, "%s/linked", root), mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/linked/c.h", root);
    assert_int_equal(symlink("../named/b.h", p), 0); /* a link is not read: in doubt, none */
    snprintf(arg, sizeof arg, "-I%s/linked", root);
    assert_int_equal(kc_pch_tree_clean_(argv, 1), 0);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* The PCH folder's parent and every folder above it: a folder others can write (no sticky bit)
 * anywhere on the way refuses it; the parent is used resolved. */
static void test_parent_path(void **state) {
    (void)state;
    char root[] = "/tmp/kc-pch-parent-XXXXXX", sub[4200], link[4200], out[PATH_MAX];
    assert_non_null(mkdtemp(root));
    snprintf(sub, sizeof sub, "%s/sub", root);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(kc_pch_parent_ok_(sub, out), 1);
    snprintf(link, sizeof link, "%s/link", root);
    assert_int_equal(symlink(sub, link), 0);
    assert_int_equal(kc_pch_parent_ok_(link, out), 1);
    assert_string_equal(out, sub);          /* resolved: re-pointing the link later changes nothing */
    assert_int_equal(chmod(root, 0777), 0); /* the folder above is writable by all, no sticky bit */
    assert_int_equal(kc_pch_parent_ok_(sub, out), 0);
    assert_string_equal(out, sub);
    assert_int_equal(chmod(root, 01777), 0); /* with the sticky bit, as /tmp */
    assert_int_equal(kc_pch_parent_ok_(sub, out), 1);
    unlink(link), rmdir(sub), rmdir(root);
}

/* A parent folder others can write, without the sticky bit (KCACHE_PCH_DIR, made 0777 by main):
 * another user could replace the process's folder there, so no PCH is made, and compiles go on. */
static void test_parent_refused(void **state) {
    (void)state;
    need_pch();
    kc_pch_test_set_(1, 1); /* a header set's first compile would make its PCH */
    static const char *seed[] = {"-frandom-seed=7"};
    kc_kernel_src h = toolkit_kernel("half.cu", HALF, "hscale", seed, 1);
    for (int i = 0; i < 2; i++) kc_compiled_free(compile(&h, "sm_80"));
    kc_pch_stats ps = stats();
    assert_int_equal(ps.created, 0);
    assert_int_equal(ps.used, 0);
    DIR *d = opendir(getenv("KCACHE_PCH_DIR"));
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) assert_null(strstr(e->d_name, "kcache-pch-"));
    closedir(d);
}

int main(int argc, char **argv) {
    const char *group = argc > 1 ? argv[1] : "";
    const char *own = getenv("KCACHE_PCH_DIR"); /* the sweep's folder of its own */
    if (own && *own) mkdir(own, 0700);
    if (own && *own && !strcmp(group, "parent")) chmod(own, 0777); /* writable by all, no sticky bit */
    if (!strncmp(group, "child-", 6)) return child(group);
    const struct CMUnitTest in_process[] = {cmocka_unit_test(test_images_identical),
                                            cmocka_unit_test(test_two_threads),
                                            cmocka_unit_test(test_burst),
                                            cmocka_unit_test(test_names_main_file),
                                            cmocka_unit_test(test_option_spaced),
                                            cmocka_unit_test(test_option_names_pch),
                                            cmocka_unit_test(test_error_then_plain),
                                            cmocka_unit_test(test_tree_walk),
                                            cmocka_unit_test(test_sweep_lock),
                                            cmocka_unit_test(test_burst_fork),
                                            cmocka_unit_test(test_parent_path)};
    const struct CMUnitTest exiting[] = {cmocka_unit_test(test_removed_at_exit)};
    const struct CMUnitTest sweeping[] = {cmocka_unit_test(test_sweep)};
    const struct CMUnitTest bounded[] = {cmocka_unit_test(test_bounded)};
    const struct CMUnitTest too_large[] = {cmocka_unit_test(test_too_large)};
    if (!strcmp(group, "exit")) return cmocka_run_group_tests(exiting, NULL, NULL);
    if (!strcmp(group, "sweep")) return cmocka_run_group_tests(sweeping, NULL, NULL);
    if (!strcmp(group, "bound")) return cmocka_run_group_tests(bounded, NULL, NULL);
    if (!strcmp(group, "toolarge")) return cmocka_run_group_tests(too_large, NULL, NULL);
    const struct CMUnitTest parent[] = {cmocka_unit_test(test_parent_refused)};
    if (!strcmp(group, "parent")) return cmocka_run_group_tests(parent, NULL, NULL);
    return cmocka_run_group_tests(in_process, NULL, NULL);
}
